"""What a table looks like in each database: columns, their type family, the primary key.

``describe(db, schema, table)`` reads the catalog of the connected database
(information_schema on MySQL/PostgreSQL/DuckDB; each database's query is its
CompareDialect's ``describe_columns``) and returns a TableShape
whose columns carry the fingerprint family (cdc.compare.fingerprint).
Raises CompareError when the table does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass

from cdc.compare.columns import ColumnInfo, Family
from cdc.compare.dialects import compare_dialect
from cdc.compare.errors import CompareError


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


def classify(type_text: str, scale: int | None = None, dialect: str = "postgres") -> tuple[Family, int | None]:
    """Map ``dialect``'s type text to (family, scale). Unknown types are 'other'.

    MySQL ``TIMESTAMP`` is an instant (stored in UTC), so it is 'timestamptz';
    PostgreSQL/DuckDB plain ``timestamp`` is wall-clock time: 'datetime'.
    """
    return compare_dialect(dialect).classify(type_text, scale)


def describe(dialect: str, conn, schema: str, table: str) -> TableShape:
    """Read columns and primary key of ``schema.table`` from the catalog."""
    cols, pk = compare_dialect(dialect).describe_columns(conn, schema, table)
    if not cols:
        raise CompareError(f"table {schema}.{table} does not exist (or has no columns) in the {dialect} database",
                           table=f"{schema}.{table}")
    return TableShape(schema, table, tuple(cols), tuple(r[0] for r in pk))
