"""What a table looks like in each database: columns, their type family, the primary key.

``describe(db, schema, table)`` reads the catalog of the connected database
(information_schema on MySQL/PostgreSQL/DuckDB) and returns a TableShape
whose columns carry the fingerprint family (cdc.compare.fingerprint).
Raises CompareError when the table does not exist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cdc.compare.errors import CompareError
from cdc.compare.fingerprint import ColumnInfo, Family
from cdc.sql_dialects import sql_dialect


@dataclass(frozen=True)
class TableShape:
    schema: str
    table: str
    columns: tuple[ColumnInfo, ...]
    primary_key: tuple[str, ...]

    def column(self, name: str) -> ColumnInfo:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def __str__(self) -> str:
        return f"{self.schema}.{self.table}"


_INT = re.compile(r"^(tiny|small|medium|big)?int(eger)?\b|^(int[248]|hugeint|ubigint|uinteger|usmallint|utinyint|"
                  r"uhugeint|serial|bigserial|smallserial|year)\b")
_SPATIAL = ("geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
            "geometrycollection", "geomcollection")
_PREC = re.compile(r"\((\d+)(?:\s*,\s*(\d+))?\)")


def classify(type_text: str, scale: int | None = None, dialect: str = "postgres") -> tuple[Family, int | None]:
    """Map a database's type text to (family, scale). Unknown types are 'other'.

    MySQL ``TIMESTAMP`` is an instant (stored in UTC), so it is 'timestamptz';
    PostgreSQL/DuckDB plain ``timestamp`` is wall-clock time: 'datetime'.
    """
    t = type_text.lower().strip()
    m = _PREC.search(t)
    if t.startswith("tinyint(1)") or t in ("boolean", "bool"):
        return ("bool" if t in ("boolean", "bool") else "int"), None
    if _INT.match(t):
        return "int", None
    if t.startswith(("decimal", "numeric", "number", "dec(", "fixed")):
        if scale is None and m and m.group(2) is not None:
            scale = int(m.group(2))
        return "decimal", scale
    if t.startswith(("float", "real", "binary_float")):
        return "float", 6  # single precision: compared at 6 significant digits (fingerprint)
    if t.startswith(("double", "binary_double")):
        return "float", 15
    if t.startswith(("varchar", "char", "character", "text", "tinytext", "mediumtext", "longtext", "nvarchar",
                     "nchar", "varchar2", "nvarchar2", "clob", "string", "enum", "set", "bpchar", "name")):
        return "string", None
    if t.startswith(("binary", "varbinary", "blob", "tinyblob", "mediumblob", "longblob", "bytea", "raw", "bytes")):
        return "binary", None
    if t == "date":
        return "date", None
    if t.startswith(("timestamp with time zone", "timestamptz", "timestamp(")) and "with time zone" in t \
            or t in ("timestamptz", "timestamp with time zone"):
        return "timestamptz", _frac(m, scale)
    if t.startswith("timestamp") and not t.startswith("timestamp without"):
        # MySQL TIMESTAMP is an instant (stored UTC); PostgreSQL/DuckDB plain timestamp is wall clock
        return ("timestamptz" if dialect == "mysql" else "datetime"), _frac(m, scale)
    if t.startswith(("datetime", "timestamp without", "timestamp_ns", "timestamp_ms", "timestamp_s")):
        return "datetime", _frac(m, scale)
    if t.startswith(("time", "interval")):
        return "time", _frac(m, scale)
    if dialect == "mysql" and t.startswith(("bit", "year")):
        return "int", None  # rendered as their number (fingerprint)
    if dialect == "mysql" and t.startswith(_SPATIAL):
        return "binary", None  # the internal value (SRID + WKB), which the stream carries
    return "other", None


def _frac(m: re.Match | None, scale: int | None) -> int | None:
    if scale is not None:
        return scale
    return int(m.group(1)) if m else 0


def describe(dialect: str, conn, schema: str, table: str) -> TableShape:
    """Read columns and primary key of ``schema.table`` from the catalog."""
    if dialect == "mysql":
        rows = _query(conn, "SELECT COLUMN_NAME, COLUMN_TYPE, NUMERIC_SCALE, DATETIME_PRECISION, IS_NULLABLE, "
                            "CHARACTER_SET_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=%s AND "
                            "TABLE_NAME=%s ORDER BY ORDINAL_POSITION", (schema, table))
        pk = _query(conn, "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA=%s "
                          "AND TABLE_NAME=%s AND CONSTRAINT_NAME='PRIMARY' ORDER BY ORDINAL_POSITION",
                    (schema, table))
        cols = []
        for name, ctype, nscale, dprec, nullable, charset in rows:
            family, sc = classify(ctype, nscale if nscale is not None else dprec, "mysql")
            cols.append(ColumnInfo(name, ctype, family, sc, nullable == "YES", charset))
    else:
        ph = sql_dialect(dialect).param
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
            family, sc = classify(ctype, nscale if nscale is not None else dprec, dialect)
            if family == "decimal" and ctype.lower() == "numeric" and nscale is None:
                sc = None  # unconstrained numeric: scale varies per value
            cols.append(ColumnInfo(name, ctype.lower(), family, sc, nullable == "YES"))
    if not cols:
        raise CompareError(f"table {schema}.{table} does not exist (or has no columns) in the {dialect} database",
                           table=f"{schema}.{table}")
    return TableShape(schema, table, tuple(cols), tuple(r[0] for r in pk))


def _query(conn, sql: str, params: tuple) -> list[tuple]:
    cur = conn.cursor()
    try:
        cur.execute(sql, params)
        return [tuple(r) for r in cur.fetchall()]
    finally:
        cur.close()
