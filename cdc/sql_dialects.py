"""What differs between the SQL databases we read and write: one object per database.

Compare (fingerprints, endpoints), the shadow source, maintained views
(streaming/views/dialect.py builds on these) and the apply targets take the
spellings they share from here instead of each testing ``if dialect ==``:

    quote(name)          identifier quoting, quote characters doubled
    param                the DB-API placeholder of the driver we use
    text_type            CAST(x AS <text_type>) gives the value's text
    long_text            a column type for text of any length
    char_length(x)       length in characters;  byte_length(x): in UTF-8 bytes
    md5(x)               32 lower-case hex characters of the MD5 of a text
    null_safe_eq(a, b)   a = b where NULL equals NULL
    upsert_clause(c, k)  what follows INSERT ... VALUES/SELECT to replace the row with the same key
    consistent_read      the statement that opens one consistent read
    cursor(conn)         a cursor in ``conn``'s transaction (a DuckDB cursor()
                         would be a second connection: the connection itself)

Oracle is spelled out for the target and the fingerprints, but no Oracle
server runs where this is built: its SQL is untested here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cdc.errors import ConfigError


@dataclass(frozen=True)
class SqlDialect:
    name: str
    quote_char: str
    param: str
    text_type: str
    long_text: str
    char_length_fn: str
    byte_length_fn: str
    md5_sql: str  # "{}" stands for the text
    null_safe_sql: str  # "{a}", "{b}"
    consistent_read: str
    upsert: str  # on_conflict | on_duplicate_key | merge (no INSERT clause: the Oracle target MERGEs)
    connection_is_cursor: bool = False

    def quote(self, name: str) -> str:
        q = self.quote_char
        return q + name.replace(q, q + q) + q

    def char_length(self, text: str) -> str:
        return f"{self.char_length_fn}({text})"

    def byte_length(self, text: str) -> str:
        return f"{self.byte_length_fn}({text})"

    def md5(self, text: str) -> str:
        return self.md5_sql.format(text)

    def null_safe_eq(self, a: str, b: str) -> str:
        return self.null_safe_sql.format(a=a, b=b)

    def cursor(self, conn: Any) -> Any:
        return conn if self.connection_is_cursor else conn.cursor()

    def upsert_clause(self, columns: Sequence[str], key: Sequence[str]) -> str:
        """The clause that turns ``INSERT INTO t (columns) ...`` into an upsert on ``key``:
        every other column takes the new value (nothing to update: the row stays)."""
        q, rest = self.quote, [c for c in columns if c not in key]
        if self.upsert == "on_conflict":
            action = ("DO UPDATE SET " + ", ".join(f"{q(c)} = EXCLUDED.{q(c)}" for c in rest)) if rest \
                else "DO NOTHING"
            return f"ON CONFLICT ({', '.join(q(k) for k in key)}) {action}"
        if self.upsert == "on_duplicate_key":
            return "ON DUPLICATE KEY UPDATE " + ", ".join(f"{q(c)} = VALUES({q(c)})" for c in rest or key)
        raise NotImplementedError(f"{self.name} has no INSERT upsert clause (use MERGE)")


MYSQL = SqlDialect("mysql", "`", "%s", "CHAR", "LONGTEXT", "CHAR_LENGTH", "LENGTH", "MD5({})", "{a} <=> {b}",
                   "START TRANSACTION WITH CONSISTENT SNAPSHOT", "on_duplicate_key")
POSTGRES = SqlDialect("postgres", '"', "%s", "TEXT", "TEXT", "char_length", "octet_length", "md5({})",
                      "{a} IS NOT DISTINCT FROM {b}", "BEGIN ISOLATION LEVEL REPEATABLE READ", "on_conflict")
DUCKDB = SqlDialect("duckdb", '"', "?", "VARCHAR", "TEXT", "length", "strlen", "md5({})",
                    "{a} IS NOT DISTINCT FROM {b}", "BEGIN TRANSACTION", "on_conflict", connection_is_cursor=True)
ORACLE = SqlDialect("oracle", '"', "%s", "VARCHAR2(4000)", "CLOB", "LENGTH", "LENGTHB",
                    "LOWER(RAWTOHEX(STANDARD_HASH({}, 'MD5')))", "DECODE({a}, {b}, 1, 0) = 1",
                    "SET TRANSACTION READ ONLY", "merge")

SQL_DIALECTS: dict[str, SqlDialect] = {d.name: d for d in (MYSQL, POSTGRES, DUCKDB, ORACLE)}


def sql_dialect(name: str) -> SqlDialect:
    """The dialect called ``name``; ConfigError naming the known ones otherwise."""
    try:
        return SQL_DIALECTS[name]
    except KeyError:
        raise ConfigError(f"no SQL dialect {name!r} (known: {sorted(SQL_DIALECTS)})", dialect=name) from None
