"""The interface each database implements for cdc compare (one subclass per database).

A CompareDialect holds everything compare spells differently per database, on
top of the shared spellings of its cdc.schema.sql_dialects.SqlDialect (``self.sql``):

    fingerprints   the canonical text of each type family (``<family>_text``),
                   ``float_digits``, the NULL and length flags, ``row_text``
    bucket pass    ``bucket_digest`` (string aggregate + MD5), ``bucket_of``
                   (integer division), ``row_estimate_sql``, ``order_key``
    catalog        ``classify`` (type text -> family), ``describe_columns``
    endpoints      ``connect``, ``stream``, ``transaction``, the connect() keywords of a DSN
                   (``dsn_params``), a source (``source_params``) or a target
                   (``target_params``)

Every method that has no sensible shared default is abstract: a new database is
one subclass, and Python refuses to build it until every one is spelled out.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from cdc.compare.columns import ColumnInfo, Family
from cdc.compare.type_families import common_family
from cdc.schema.sql_dialects import SqlDialect

SEP = "|"  # between the flags and each value of a row text (cdc.compare.fingerprint)
DsnEndpoint = Callable[..., Any]  # cdc.compare.endpoints.from_dsn


class CompareDialect(ABC):
    """What compare spells differently on one database; ``name`` is its SqlDialect's."""

    buckets = True  # the bucket pass runs here (an aggregate MD5 over a bucket's row texts)
    plain_timestamp: Family = "datetime"  # the family of a bare ``timestamp``
    sha256_sql = ""  # "...{}..." the first 32 hex characters of the SHA-256 of a row text; "" none

    def __init__(self, sql: SqlDialect) -> None:
        self.sql = sql
        self.name = sql.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def quote(self, name: str) -> str:
        return self.sql.quote(name)

    # ---- fingerprints: the canonical text of one column (NULL stays NULL) -------------------------
    def render(self, col: ColumnInfo, trim_decimal: bool) -> str:
        """SQL for the canonical text of ``col`` (cdc.compare.fingerprint's module docstring)."""
        if col.expr is not None:  # a shaped column: the mask's SQL gives the text (cdc/compare/transformed.py)
            return col.expr
        c = self.quote(col.name)
        if col.family == "decimal":
            return self.decimal_text(c, col, trim_decimal)
        by_family = {"int": self.int_text, "bool": self.bool_text, "float": self.float_text,
                     "string": self.string_text, "binary": self.binary_text, "date": self.date_text,
                     "datetime": self.datetime_text, "timestamptz": self.timestamptz_text, "time": self.time_text,
                     "json": self.json_text}
        return by_family.get(col.family, self.other_text)(c, col)

    # each takes the quoted column ``c`` and its ColumnInfo
    @abstractmethod
    def int_text(self, c: str, col: ColumnInfo) -> str: ...

    @abstractmethod
    def bool_text(self, c: str, col: ColumnInfo) -> str: ...

    @abstractmethod
    def decimal_text(self, c: str, col: ColumnInfo, trim: bool) -> str:
        """``trim``: trailing zeros (and a bare '.') trimmed: the two sides' scales differ."""

    @abstractmethod
    def float_text(self, c: str, col: ColumnInfo) -> str: ...

    @abstractmethod
    def string_text(self, c: str, col: ColumnInfo) -> str: ...

    @abstractmethod
    def binary_text(self, c: str, col: ColumnInfo) -> str: ...

    @abstractmethod
    def date_text(self, c: str, col: ColumnInfo) -> str: ...

    @abstractmethod
    def datetime_text(self, c: str, col: ColumnInfo) -> str: ...

    @abstractmethod
    def timestamptz_text(self, c: str, col: ColumnInfo) -> str: ...

    @abstractmethod
    def time_text(self, c: str, col: ColumnInfo) -> str: ...

    @abstractmethod
    def other_text(self, c: str, col: ColumnInfo) -> str: ...

    def json_text(self, c: str, col: ColumnInfo) -> str:
        """A JSON document (a JSON column, or the text column compare pairs with one: cdc.compare.table_diff) as
        MySQL and PostgreSQL jsonb print it: ', ' and ': ' between tokens, keys in the stored order."""
        return self.other_text(c, col)

    @abstractmethod
    def float_digits(self, x: str, digits: int) -> str:
        """``x`` (a double) to ``digits`` significant digits: '<mantissa>e<exponent>' (fingerprint).

        The power of ten is applied in two halves so that neither overflows at the ends of the
        double range (1.7976931348623157E308, 2.2250738585072014E-308)."""

    @staticmethod
    def _float_exponents(x: str, digits: int) -> tuple[str, str]:
        """(exponent of the first digit of ``x``, the power of ten that scales it to ``digits`` digits)."""
        e = f"FLOOR(LOG10(ABS({x})))"
        return e, f"({digits - 1} - {e})"

    def null_flag(self, col: ColumnInfo, rendered: str) -> str:
        """'1' when the column is NULL, else '0'."""
        return f"(CASE WHEN {col.expr or self.quote(col.name)} IS NULL THEN '1' ELSE '0' END)"

    def length_flag(self, col: ColumnInfo, rendered: str, lengths: str = "chars") -> str:
        """The length of a string or binary column's text; ``lengths="bytes"``: in UTF-8 bytes."""
        return self.sql.byte_length(rendered) if lengths == "bytes" else self.sql.char_length(rendered)

    def row_text(self, flags: list[str], values: list[str]) -> str:
        """The flags joined by ',', then the values, all joined by SEP; NULL values skipped."""
        flag_sql = "concat_ws(','" + "".join(f", {self.flag_text(f)}" for f in flags) + ")"
        return f"concat_ws('{SEP}', {flag_sql}, " + ", ".join(values) + ")"

    def flag_text(self, flag: str) -> str:
        """A flag as concat_ws takes it."""
        return flag

    def md5(self, text: str) -> str:
        return self.sql.md5(text)

    # ---- bucket pass and row pass --------------------------------------------------------------
    @abstractmethod
    def bucket_digest(self, text: str, order_by: str, ordered: bool) -> str:
        """SQL aggregate: md5 of the bucket's row texts joined by a newline (cdc.compare.fingerprint)."""

    @abstractmethod
    def integer_division(self) -> str:
        """The operator of integer division (bucket numbers)."""

    def bucket_of(self, key: str, lo: int, width: int) -> str:
        return f"({key} - {lo}) {self.integer_division()} {width}"

    def ordered_digest_with(self, other: CompareDialect) -> bool:
        """Whether the bucket digest must order its rows when ``other`` is the other side's database."""
        return True

    @abstractmethod
    def row_estimate_sql(self) -> str:
        """SELECT of the catalog's row estimate of one table; parameters: schema, table."""

    def order_key(self, c: str, family: Family) -> str:
        """ORDER BY term of a key column: binary order for strings, on every database."""
        return c

    @abstractmethod
    def one_row(self) -> str:
        """What follows ``SELECT ... FROM t`` to read at most one row."""

    # ---- catalog -------------------------------------------------------------------------------
    # (prefixes, family, scale) of this database's own type spellings, read before the ones all databases
    # share (cdc.compare.type_families): each dialect owns its catalog's spellings
    own_types: tuple[tuple[tuple[str, ...], Family, int | None], ...] = ()

    def classify(self, type_text: str, scale: int | None = None) -> tuple[Family, int | None]:
        """Map this database's type text to (family, scale). Unknown types are 'other'."""
        t = type_text.lower().strip()
        return self.own_family(t) or common_family(t, scale, self.plain_timestamp) or ("other", None)

    def own_family(self, t: str) -> tuple[Family, int | None] | None:
        """The family of a type this database spells its own way (``t`` lower-cased), else None."""
        return self.spelled_family(t)

    def spelled_family(self, t: str) -> tuple[Family, int | None] | None:
        """The family :attr:`own_types` gives ``t`` (lower-cased), else None."""
        for prefixes, family, scale in self.own_types:
            if t.startswith(prefixes):
                return family, scale
        return None

    def value_kind(self, type_text: str, family: Family) -> str:
        """The conversion kind of a column read with a DB-API driver (cdc.schema.values.stream_value): its
        family, which a database whose driver hands some types differently refines (MySQL). A JSON document is
        read as the driver hands it ('other': psycopg parses jsonb, DuckDB gives JSON text)."""
        return "other" if family == "json" else family

    def describe_columns(self, conn: Any, schema: str, table: str) -> tuple[list[ColumnInfo], list[tuple]]:
        """(columns, primary-key rows) of ``schema.table`` from information_schema."""
        ph = self.sql.param
        rows = _query(conn, "SELECT column_name, data_type, numeric_scale, datetime_precision, is_nullable, "
                            f"NULL FROM information_schema.columns WHERE table_schema={ph} AND table_name={ph} "
                            "ORDER BY ordinal_position", (schema, table))
        pk = _query(conn, "SELECT kcu.column_name FROM information_schema.table_constraints tc JOIN "
                          "information_schema.key_column_usage kcu ON tc.constraint_name=kcu.constraint_name AND "
                          "tc.table_schema=kcu.table_schema AND tc.table_name=kcu.table_name WHERE "
                          f"tc.constraint_type='PRIMARY KEY' AND tc.table_schema={ph} AND tc.table_name={ph} "
                          "ORDER BY kcu.ordinal_position", (schema, table))
        cols = []
        for name, ctype, nscale, dprec, nullable, _ in rows:
            family, sc = self.classify(ctype, nscale if nscale is not None else dprec)
            if family == "decimal" and ctype.lower() == "numeric" and nscale is None:
                sc = None  # unconstrained numeric: scale varies per value
            cols.append(ColumnInfo(name, ctype.lower(), family, sc, nullable == "YES"))
        return cols, pk

    # ---- endpoints -----------------------------------------------------------------------------
    @abstractmethod
    def connect(self, endpoint: str, params: dict[str, Any]) -> Any:
        """A new DB-API connection, prepared for fingerprints (UTC session, ISO dates)."""

    @contextmanager
    def transaction(self, conn: Any) -> Iterator[None]:
        """The statements of the ``with`` block as one transaction on the autocommit ``conn``."""
        self._run(conn, "BEGIN")
        try:
            yield
        except BaseException:
            self._run(conn, "ROLLBACK")
            raise
        self._run(conn, "COMMIT")

    def _run(self, conn: Any, sql: str) -> None:
        cur = self.sql.cursor(conn)
        try:
            cur.execute(sql)
        finally:
            if cur is not conn:
                cur.close()

    def stream(self, conn: Any, sql: str, params: tuple, chunk: int) -> Iterator[tuple]:
        """Rows of ``sql``, ``chunk`` rows per fetch."""
        cur = self.sql.cursor(conn)
        cur.execute(sql, params or None)
        while rows := cur.fetchmany(chunk):
            yield from rows

    @abstractmethod
    def dsn_params(self, endpoint: str, dsn: str, tls: Any, login: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """(connect() keywords, default schema) of a DSN of this database."""

    def source_params(self, src: Any) -> dict[str, Any] | None:
        """connect() keywords of a config source of this kind; None: not compared here."""
        return None

    @abstractmethod
    def target_params(self, tgt: Any, from_dsn: DsnEndpoint) -> tuple[str, dict[str, Any], str | None] | None:
        """(dialect, connect() keywords, default schema) of a config target of this kind; None: not
        compared here. ``from_dsn``: cdc.compare.endpoints.from_dsn, for a target known by its DSN."""


def _query(conn: Any, sql: str, params: tuple) -> list[tuple]:
    cur = conn.cursor()
    try:
        cur.execute(sql, params)
        return [tuple(r) for r in cur.fetchall()]
    finally:
        cur.close()
