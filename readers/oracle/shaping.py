"""The Oracle reader's transforms hook (``sources[].transforms``, cdc/transforms): every event leaves shaped.

:class:`Shaping` sits at the one door of :class:`readers.oracle.reader.OracleSource`: every Change the
dispatcher, the columnar stage or the snapshot yields, every ChangeBatch and every SchemaChange passes
:meth:`Shaping.events` before the publisher sees it. A table's mapper (cdc.transforms.mapper.ColumnMapper) is
built from the table's stream schema (readers/oracle/convert.py ``stream_schema``: the definition in force at the
row's SCN), so

- a Change is filtered on both clear images and shaped (columns left out, masks, computed columns); one the
  filter keeps out is not yielded (its transaction's BEGIN/END still go out: the position moves);
- a ``TRUNCATE`` (op ``t``) carries the shaped schema, never filtered;
- a SchemaChange carries the shaped schema, and its table actions too: a DDL on a left-out column leaves the
  shaped schema as it was, so the apply changes nothing; a rule that names a column the DDL dropped stops the
  source (TransformError with the way back) before the SchemaChange leaves;
- a ChangeBatch (the native pass's serialized rows) holds Changes only for shaped tables: the stage declines
  their rows (``Dispatcher.shaped``); a serialized row of a shaped table is a bug and stops the source rather
  than pass a clear value.

The mapper's errors name the table and column, never a value.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cdc.stream.events import Change, ChangeBatch, SchemaChange, TableId, TableSchema
from cdc.transforms.errors import TransformError
from cdc.transforms.mapper import ColumnMapper, SourceTransforms, oracle_spelling
from readers.oracle.config import OracleSourceConfig


class Shaping:
    """The transforms of one Oracle source (key files read when it is made: a bad one stops the start)."""

    def __init__(self, config: OracleSourceConfig) -> None:
        self.transforms = SourceTransforms(config.name, config.transforms, oracle_spelling, kind="oracle")
        self._shaped: dict[tuple[str, str], bool] = {}
        # id(schema) -> (schema, its mapper): the dispatcher hands one schema object per table until its next DDL,
        # so the mapper is found without hashing the schema (the schema is held: its id is not reused meanwhile)
        self._by_id: dict[int, tuple[TableSchema, ColumnMapper | None]] = {}

    def __bool__(self) -> bool:
        return bool(self.transforms)

    def shaped(self, owner: str, table: str) -> bool:
        """True when a rule matches ``owner.table`` (the dispatcher's and the converter's test, cached)."""
        known = self._shaped.get((owner, table))
        if known is None:
            known = self._shaped[(owner, table)] = self.transforms.rule(TableId(owner, table)) is not None
        return known

    def _mapper(self, schema: TableSchema) -> ColumnMapper | None:
        known = self._by_id.get(id(schema))
        if known is not None and known[0] is schema:
            return known[1]
        mapper = self.transforms.mapper(schema)
        if len(self._by_id) >= 4096:
            self._by_id.clear()
        self._by_id[id(schema)] = (schema, mapper)
        return mapper

    def change(self, ch: Change) -> Change | None:
        """``ch`` shaped, None when the filter keeps it out (a TRUNCATE is never filtered)."""
        if ch.schema is None:
            if self.shaped(ch.table.db, ch.table.table):  # fail closed: no schema, no shaping, no publishing
                raise TransformError(f"source {self.transforms.source}: table {ch.table} has no known definition "
                                     "at this change, so its transforms cannot be applied; the source stops before "
                                     "it. Way back: check the table's dictionary entry, then restart",
                                     source=self.transforms.source, table=str(ch.table))
            return ch
        mapper = self._mapper(ch.schema)
        if mapper is None:
            return ch
        if ch.op == "t":
            return Change(ch.table, "t", None, None, ch.source, mapper.schema)
        shaped = mapper.change(ch.op, ch.before, ch.after)
        if shaped is None:
            return None
        op, before, after = shaped
        return Change(ch.table, op, before, after, ch.source, mapper.schema)

    def batch(self, batch: ChangeBatch) -> ChangeBatch | None:
        """``batch`` with its Changes shaped (or left out); None when none is left."""
        tables, rows = [], []
        for known, row in zip(batch.tables, batch.rows, strict=True):
            if known is None:
                row = self.change(row)
                if row is None:
                    continue
            elif self.shaped(known[0].db, known[0].table):
                raise TransformError(f"source {self.transforms.source}: a serialized row of shaped table {known[0]} "
                                     "(the native pass must decline it); the source stops before publishing it",
                                     source=self.transforms.source, table=str(known[0]))
            tables.append(known)
            rows.append(row)
        return ChangeBatch(tables, rows) if rows else None

    def schema_change(self, sc: SchemaChange) -> SchemaChange:
        """``sc`` with its schema and its table actions' schemas shaped."""
        tables = sc.tables
        if tables:
            tables = [a | {"schema": self.transforms.shape(TableSchema.from_json(a["schema"])).to_json()}
                      if a.get("schema") is not None else a for a in tables]
        return SchemaChange(sc.table, sc.ddl, self.transforms.shape(sc.schema), sc.ts_ms, sc.resume, tables)

    def events(self, events: Iterator[Any]) -> Iterator[Any]:
        """``events`` shaped (see the module doc); unchanged when the source has no transforms."""
        if not self.transforms:
            yield from events
            return
        change, batch, schema_change = self.change, self.batch, self.schema_change
        try:
            for ev in events:
                kind = type(ev)
                if kind is Change:
                    ev = change(ev)
                elif kind is ChangeBatch:
                    ev = batch(ev)
                elif kind is SchemaChange:
                    ev = schema_change(ev)
                if ev is not None:
                    yield ev
        finally:
            events.close()  # the reader's generator stops with this one (a publisher that stops iterating)
