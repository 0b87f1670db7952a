"""What the apply job knows about each source table, and how SCHEMA records change it.

Learnt from SCHEMA records (the publisher emits one before a table's first
data record in each publisher process, and after every DDL) and persisted in
the target's ``cdc_schema`` table in the batch transaction, so a restarted
job knows its tables without re-reading the stream.

DDL rule (DDL is a batch barrier; the engine applies what came before it
first): a schema that only adds columns is followed (ALTER TABLE ADD
COLUMN), and so is a wider string column (a narrower one keeps the target
column as wide as it was); a first sight of a table creates the target table when missing;
any other change (dropped, renamed or retyped column, new primary key, DDL
without a table definition such as DROP TABLE) raises UnsupportedDdl naming
the table, the sequence and the statement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cdc.events import TableSchema
from cdc.table_map import TableMap
from streaming.apply import table_ddl
from streaming.errors import UnsupportedDdl
from streaming.targets import typemap
from streaming.targets.base import Target


@dataclass(slots=True)
class TableInfo:
    source_table: str
    target_table: str
    schema: TableSchema
    columns: list[str] = field(default_factory=list)
    key: tuple[str, ...] = ()
    converters: dict[str, Callable[[Any], Any]] = field(default_factory=dict)

    @classmethod
    def build(cls, source_table: str, target_table: str, schema: TableSchema, dialect: str) -> TableInfo:
        conv = {c.name: f for c in schema.columns if (f := typemap.converter(c.type, dialect)) is not None}
        return cls(source_table, target_table, schema, [c.name for c in schema.columns], schema.primary_key, conv)


class Catalog:
    def __init__(self, source: str, target: Target, table_map: TableMap) -> None:
        self.source = source
        self.target = target
        self.table_map = table_map
        self.tables: dict[str, TableInfo] = {}

    def load(self) -> None:
        for src, (dst, schema) in self.target.load_schemas(self.source).items():
            self.tables[src] = TableInfo.build(src, dst, schema, self.target.dialect)

    def get(self, source_table: str) -> TableInfo | None:
        return self.tables.get(source_table)

    def on_schema(self, meta: dict[str, Any], sequence: int) -> str | None:
        """Apply one SCHEMA record to the target (inside the batch transaction).

        Returns the target table touched, or None when the record does not
        concern an applied table. Raises UnsupportedDdl for DDL we do not follow.
        """
        if table_ddl.is_table_level(meta):  # CREATE/DROP/RENAME TABLE (streaming/apply/table_ddl.py)
            return table_ddl.apply_tables(self, meta, sequence)
        table, ddl, raw = meta.get("table"), meta.get("ddl"), meta.get("schema")
        if raw is None:
            if ddl is None or table is None or not self.table_map.wanted(table):
                return None  # e.g. CREATE DATABASE: nothing in the target to change
            raise UnsupportedDdl(f"DDL on {table} is not followed by the apply job (only ADD COLUMN is); "
                                 "the job stops before it", table=table, sequence=sequence, ddl=ddl)
        schema = TableSchema.from_json(raw)
        table = str(schema.table)
        if not self.table_map.wanted(table):
            return None
        old = self.tables.get(table)
        dst = old.target_table if old else self.table_map.target_name(table)
        if old is not None:  # primary key added, dropped, changed (a table map's shape may tell it first)
            old = table_ddl.follow_key(self, old, schema, sequence, ddl)
        if old is not None and ddl is not None:
            self._check_compatible(old.schema, schema, sequence, ddl)
        existing = self.target.table_columns(dst)
        if existing is None:
            self.target.create_table(dst, schema)
        else:
            for col in schema.columns:
                if col.name not in existing:
                    self.target.add_column(dst, col.name, col.type)
            if old is not None:  # a string column that got wider is widened; narrower keeps the target wide
                kept = {c.name: c.type for c in old.schema.columns}
                cols = []
                for col in schema.columns:
                    width = _string_width(kept[col.name], col.type) if col.name in kept else None
                    if width is not None and width[1] > width[0]:
                        self.target.widen_column(dst, col.name, col.type)
                    elif width is not None and width[1] < width[0]:
                        col = type(col)(col.name, kept[col.name], col.nullable)
                    cols.append(col)
                schema = type(schema)(schema.table, tuple(cols), schema.primary_key)
        self.tables[table] = TableInfo.build(table, dst, schema, self.target.dialect)
        self.target.save_schema(self.source, table, dst, schema, sequence)
        return dst

    @staticmethod
    def _check_compatible(old: TableSchema, new: TableSchema, sequence: int, ddl: str) -> None:
        old_cols = {c.name: c.type for c in old.columns}
        new_cols = {c.name: c.type for c in new.columns}
        dropped = sorted(set(old_cols) - set(new_cols))
        retyped = sorted(f"{n}: {old_cols[n]} -> {new_cols[n]}" for n in old_cols
                         if n in new_cols and _norm_type(old_cols[n]) != _norm_type(new_cols[n])
                         and _string_width(old_cols[n], new_cols[n]) is None)
        if dropped or retyped or tuple(old.primary_key) != tuple(new.primary_key):
            what = (f"dropped/renamed columns {dropped}" if dropped else
                    f"changed column types {retyped}" if retyped else
                    f"primary key {list(old.primary_key)} -> {list(new.primary_key)}")
            raise UnsupportedDdl(f"schema change on {old.table} is not followed ({what}; only ADD COLUMN is); "
                                 "the job stops before it", table=str(old.table), sequence=sequence, ddl=ddl)


_STRINGS = ("char", "varchar", "varchar2", "nvarchar2", "nchar", "varbinary", "binary")


def _string_width(old: str, new: str) -> tuple[int, int] | None:
    """(old width, new width) when both are the same string type with a length, else None."""
    (b1, a1, _), (b2, a2, _) = typemap.parse_type(old), typemap.parse_type(new)
    if b1 == b2 and b1 in _STRINGS and a1 and a2 and a1.isdigit() and a2.isdigit():
        return int(a1), int(a2)
    return None


def _norm_type(source_type: str) -> tuple:
    """Type identity for DDL checks: spelling differences (case, spaces, charset notes) do not count."""
    base, args, unsigned = typemap.parse_type(source_type.split(" character set")[0].split(" collate")[0])
    return base, (args or "").replace(" ", ""), unsigned
