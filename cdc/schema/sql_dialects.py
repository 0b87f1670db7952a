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
    first_row(select)    the SELECT limited to its first row
    schema_noun          CREATE <schema_noun> IF NOT EXISTS makes a schema (MySQL: DATABASE)
    late_primary_key     ALTER TABLE ... ADD PRIMARY KEY works on an existing table (DuckDB: no)
    typed_param(type)    a placeholder whose value the database takes as ``type`` (a JSON text or
                         number for a key column; MySQL converts by itself)

Column DDL of the apply's schema evolution (docs/schema-evolution.md), each a list
of statements for ``ALTER TABLE <table>`` (the dialect's subclass spells what
differs: MySQL restates the whole column on MODIFY, Oracle MODIFYs in parentheses,
DuckDB adds no constraint with a column):

    add_column(t, col, type, default, not_null, after)   default: a SQL literal or None
    drop_column(t, col);  rename_column(t, old, new)
    alter_column(t, col, type, not_null, default, what)  what: {"type", "null", "default"}
    literal(value, type) a constant (text of a number, a string, a date) as a literal of ``type``

Oracle is spelled out for the target and the fingerprints, but no Oracle
server runs where this is built: its SQL is untested here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


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
    blob_length_fn: str = ""  # length of a binary value in bytes (default: byte_length_fn)
    key_column_type_change: bool = True  # ALTER ... TYPE of a primary-key column (DuckDB: no)
    schema_noun: str = "SCHEMA"  # CREATE <schema_noun> IF NOT EXISTS (MySQL: DATABASE)
    late_primary_key: bool = True  # ALTER TABLE ... ADD PRIMARY KEY on an existing table (DuckDB: no)
    # the first word of this database's own numeric column types (what its type map writes and its catalog
    # reports): a default of such a column is written bare (:meth:`literal`). Target spellings, not a source's.
    number_types: frozenset[str] = frozenset()

    def quote(self, name: str) -> str:
        q = self.quote_char
        return q + name.replace(q, q + q) + q

    def char_length(self, text: str) -> str:
        return f"{self.char_length_fn}({text})"

    def byte_length(self, text: str) -> str:
        return f"{self.byte_length_fn}({text})"

    def blob_length(self, value: str) -> str:
        return f"{self.blob_length_fn or self.byte_length_fn}({value})"

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

    def first_row(self, select: str) -> str:
        return f"{select} LIMIT 1"

    def typed_param(self, type_: str) -> str:
        return f"CAST({self.param} AS {type_})"

    # ---- column DDL (schema evolution) ---------------------------------------------
    def is_number_type(self, type_: str) -> bool:
        """``type_`` (this database's column type text) is one of its :attr:`number_types`."""
        return type_.lower().split("(")[0].split(" ")[0] in self.number_types

    def literal(self, value: str, type_: str) -> str:
        """``value`` (cdc.schema.evolution.default_value's constant text) as a literal for a column of
        target type ``type_``: numbers bare, everything else a quoted string the column casts."""
        if self.is_number_type(type_) and _NUMBER.fullmatch(value):
            return value
        return "'" + value.replace("'", "''") + "'"

    def _column_def(self, col: str, type_: str, not_null: bool, default: str | None) -> str:
        return f"{self.quote(col)} {type_}" + (f" DEFAULT {default}" if default is not None else "") + \
            (" NOT NULL" if not_null else "")

    def add_column(self, table: str, col: str, type_: str, default: str | None, not_null: bool,
                   after: str | None | bool = False) -> list[str]:
        """``after``: False, where the column goes is not expressed (appended); None: first; a name:
        after that column (only MySQL places columns)."""
        return [f"ALTER TABLE {table} ADD COLUMN {self._column_def(col, type_, not_null, default)}"]

    def drop_column(self, table: str, col: str) -> list[str]:
        return [f"ALTER TABLE {table} DROP COLUMN {self.quote(col)}"]

    def rename_column(self, table: str, old: str, new: str) -> list[str]:
        return [f"ALTER TABLE {table} RENAME COLUMN {self.quote(old)} TO {self.quote(new)}"]

    def alter_column(self, table: str, col: str, type_: str, not_null: bool, default: str | None,
                     what: set[str]) -> list[str]:
        c, out = self.quote(col), []
        if "type" in what:
            out.append(f"ALTER TABLE {table} ALTER COLUMN {c} TYPE {type_}" + self._using(c, type_))
        if "null" in what:
            out.append(f"ALTER TABLE {table} ALTER COLUMN {c} {'SET' if not_null else 'DROP'} NOT NULL")
        if "default" in what:
            out.append(f"ALTER TABLE {table} ALTER COLUMN {c} " +
                       (f"SET DEFAULT {default}" if default is not None else "DROP DEFAULT"))
        return out

    def _using(self, col: str, type_: str) -> str:
        return f" USING {col}::{type_}"


@dataclass(frozen=True)
class _MySqlDialect(SqlDialect):
    """MODIFY restates the whole column (type, NULL, DEFAULT); backslashes escape in strings."""

    def literal(self, value: str, type_: str) -> str:
        out = super().literal(value, type_)
        return out.replace("\\", "\\\\") if out.startswith("'") else out

    def typed_param(self, type_: str) -> str:
        return self.param  # MySQL compares a text or a number with a column of any type by converting it

    def add_column(self, table: str, col: str, type_: str, default: str | None, not_null: bool,
                   after: str | None | bool = False) -> list[str]:
        where = "" if after is False else " FIRST" if after is None else f" AFTER {self.quote(after)}"
        return [f"ALTER TABLE {table} ADD COLUMN {self._column_def(col, type_, not_null, default)}{where}"]

    def alter_column(self, table: str, col: str, type_: str, not_null: bool, default: str | None,
                     what: set[str]) -> list[str]:
        if what == {"default"}:
            return [f"ALTER TABLE {table} ALTER COLUMN {self.quote(col)} " +
                    (f"SET DEFAULT {default}" if default is not None else "DROP DEFAULT")]
        return [f"ALTER TABLE {table} MODIFY COLUMN {self._column_def(col, type_, not_null, default)}"]


@dataclass(frozen=True)
class _DuckDbDialect(SqlDialect):
    """ADD COLUMN takes no NOT NULL (set after); ALTER TYPE casts by itself."""

    def add_column(self, table: str, col: str, type_: str, default: str | None, not_null: bool,
                   after: str | None | bool = False) -> list[str]:
        out = super().add_column(table, col, type_, default, False)
        return out + (self.alter_column(table, col, type_, True, default, {"null"}) if not_null else [])

    def _using(self, col: str, type_: str) -> str:
        return ""


@dataclass(frozen=True)
class _OracleDialect(SqlDialect):
    """ADD/MODIFY in parentheses; dates and timestamps as typed literals; FETCH FIRST for one row.
    Untested here (no Oracle server runs where this is built)."""

    def first_row(self, select: str) -> str:
        return f"{select} FETCH FIRST 1 ROWS ONLY"

    def literal(self, value: str, type_: str) -> str:
        t = type_.lower()
        if t.startswith(("date", "timestamp")) and not self.is_number_type(t):
            kind = "DATE" if t.startswith("date") and len(value) <= 10 else "TIMESTAMP"
            return f"{kind} '{value}'"
        return super().literal(value, type_)

    def add_column(self, table: str, col: str, type_: str, default: str | None, not_null: bool,
                   after: str | None | bool = False) -> list[str]:
        return [f"ALTER TABLE {table} ADD ({self._column_def(col, type_, not_null, default)})"]

    def alter_column(self, table: str, col: str, type_: str, not_null: bool, default: str | None,
                     what: set[str]) -> list[str]:
        parts = [self.quote(col)]
        if "type" in what:
            parts.append(type_)
        if "default" in what:
            parts.append(f"DEFAULT {default if default is not None else 'NULL'}")
        if "null" in what:
            parts.append("NOT NULL" if not_null else "NULL")
        return [f"ALTER TABLE {table} MODIFY ({' '.join(parts)})"]


_NUMBER = re.compile(r"-?\d+(\.\d*)?([eE][-+]?\d+)?")
_SQL_NUMBERS = "smallint integer bigint numeric decimal real double float"  # the standard's names


MYSQL = _MySqlDialect("mysql", "`", "%s", "CHAR", "LONGTEXT", "CHAR_LENGTH", "LENGTH", "MD5({})", "{a} <=> {b}",
                      "START TRANSACTION WITH CONSISTENT SNAPSHOT", "on_duplicate_key", schema_noun="DATABASE",
                      number_types=frozenset(f"{_SQL_NUMBERS} int tinyint mediumint bit".split()))
POSTGRES = SqlDialect("postgres", '"', "%s", "TEXT", "TEXT", "char_length", "octet_length", "md5({})",
                      "{a} IS NOT DISTINCT FROM {b}", "BEGIN ISOLATION LEVEL REPEATABLE READ", "on_conflict",
                      number_types=frozenset(_SQL_NUMBERS.split()))
DUCKDB = _DuckDbDialect("duckdb", '"', "?", "VARCHAR", "TEXT", "length", "strlen", "md5({})",
                        "{a} IS NOT DISTINCT FROM {b}", "BEGIN TRANSACTION", "on_conflict", connection_is_cursor=True,
                        blob_length_fn="octet_length", key_column_type_change=False,
                        late_primary_key=False, number_types=frozenset(
                            f"{_SQL_NUMBERS} tinyint int ubigint utinyint usmallint uinteger hugeint".split()))
ORACLE = _OracleDialect("oracle", '"', "%s", "VARCHAR2(4000)", "CLOB", "LENGTH", "LENGTHB",
                        "LOWER(RAWTOHEX(STANDARD_HASH({}, 'MD5')))", "DECODE({a}, {b}, 1, 0) = 1",
                        "SET TRANSACTION READ ONLY", "merge",
                        number_types=frozenset(f"{_SQL_NUMBERS} number binary_float binary_double".split()))

SQL_DIALECTS: dict[str, SqlDialect] = {d.name: d for d in (MYSQL, POSTGRES, DUCKDB, ORACLE)}


def sql_dialect(name: str) -> SqlDialect:
    """The dialect called ``name``: the core's, else the one the target package of that kind declares in
    ``SQL_DIALECT``; ConfigError naming the known ones otherwise."""
    from cdc.registry import dialect  # a target package's own (streaming/targets/<kind>/: SQL_DIALECT)

    return dialect(SQL_DIALECTS, "SQL_DIALECT", name)
