"""What a table looks like in each database: columns, their type family, the primary key.

``describe(db, schema, table)`` reads the catalog of the connected database
(information_schema on MySQL/PostgreSQL/DuckDB) and returns a TableShape
whose columns carry the fingerprint family (cdc.compare.fingerprint).
Raises CompareError when the table does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass

from cdc.compare.errors import CompareError
from cdc.compare.fingerprint import ColumnInfo
from cdc.compare.type_families import classify
from cdc.sql_dialects import sql_dialect

__all__ = ["TableShape", "classify", "describe"]


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
