"""Which source tables an apply stream takes, and what they are called in the target.

Config (one ``apply:`` item)::

    tables: [shop.orders, {source: shop.customers, target: clients}, "shop.audit_*"]
    exclude: [shop.audit_tmp]

- No ``tables``: every table of the source is applied.
- A table entry is ``db.table`` (glob patterns, cdc/schema/table_glob.py: the sources' rule too) or a mapping
  ``{source, target}`` that renames it.
- ``exclude`` wins over ``tables``.
- A source table ``db.t`` lands as ``t`` in the target's default schema
  (or the target's ``schema`` key) unless renamed.
"""

from __future__ import annotations

from dataclasses import dataclass

from cdc.config.models import ApplyConfig, TableMapping
from cdc.schema import table_glob


@dataclass(frozen=True, slots=True)
class TableMap:
    include: tuple[str, ...] | None  # glob patterns; None: all
    renames: tuple[tuple[str, str], ...]
    exclude: tuple[str, ...]
    drop_table: str = "keep"  # apply[].drop_table / rename_in: streaming/apply/table_ddl.py
    rename_in: str = "stop"
    modes: tuple[tuple[str, str, bool], ...] = ()  # (source glob, mode, metadata_columns): streaming/apply/target_modes.py

    @classmethod
    def from_config(cls, apply: ApplyConfig) -> TableMap:
        include: list[str] | None = None
        renames: list[tuple[str, str]] = []
        modes: list[tuple[str, str, bool]] = []
        if apply.tables is not None:
            include = []
            for item in apply.tables:
                if isinstance(item, TableMapping):
                    include.append(item.source)
                    if item.target:
                        renames.append((item.source, item.target))
                    if item.mode != "upsert" or item.metadata_columns:
                        modes.append((item.source, item.mode, item.metadata_columns))
                else:
                    include.append(item)
        return cls(tuple(include) if include is not None else None, tuple(renames), tuple(apply.exclude),
                   apply.drop_table, apply.rename_in, tuple(modes))

    def wanted(self, source_table: str) -> bool:
        if table_glob.matches(source_table, self.exclude):
            return False
        return self.include is None or table_glob.matches(source_table, self.include)

    def target_name(self, source_table: str) -> str:
        for src, dst in self.renames:
            if src == source_table:
                return dst
        return source_table.rpartition(".")[2]
