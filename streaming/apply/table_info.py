"""What the apply holds for one source table it writes (streaming/apply/catalog.py keeps one per table; the
table-level DDL of streaming/apply/table_ddl.py replaces it when a table's key changes): the target table,
the columns written, the key and each column's converter for the target's dialect.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cdc.stream.events import TableSchema
from streaming.targets import typemap


@dataclass(slots=True)
class TableInfo:
    source_table: str
    target_table: str
    schema: TableSchema
    columns: list[str] = field(default_factory=list)
    key: tuple[str, ...] = ()
    converters: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    ignored: frozenset[str] = frozenset()  # source columns the target does not hold (behaviour ignore)

    @classmethod
    def build(cls, source_table: str, target_table: str, schema: TableSchema, dialect: str,
              target_columns: list[str] | None = None) -> TableInfo:
        """``target_columns``: the target table's columns when only those are written (others ignored)."""
        cols = [c for c in schema.columns if target_columns is None or c.name in target_columns]
        conv = {c.name: f for c in cols if (f := typemap.converter(c, dialect)) is not None}
        ignored = frozenset(c.name for c in schema.columns) - {c.name for c in cols}
        return cls(source_table, target_table, schema, [c.name for c in cols], schema.primary_key, conv, ignored)
