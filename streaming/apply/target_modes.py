"""Target-side modes per applied table (``apply[].tables[]`` mappings: ``mode``, ``metadata_columns``): one
stream, differently shaped targets. Implemented as a rewrite of a micro-batch's records before the engine
reads them (:meth:`TargetModes.rewrite`, the engine's one call), so the engine's net effect, write order,
replay and dead-letter rules apply to the rewritten records unchanged:

- ``soft_delete``: a delete becomes an update of the row to its before image with ``_cdc_deleted`` TRUE
  and ``_cdc_deleted_at`` the source commit time; inserts and updates set ``_cdc_deleted`` FALSE and
  ``_cdc_deleted_at`` NULL (a row deleted and inserted again comes back alive);
- ``history`` (append-only): every change is an insert of a row of its own: its after image (a delete's
  before image) with ``_cdc_op`` (c, u, d, r), ``_cdc_commit_ts`` and ``_cdc_sequence``; the target key is
  the source key plus ``_cdc_sequence``, so a replayed batch writes each row once;
- ``metadata_columns: true``: every row written carries ``_cdc_op``, ``_cdc_commit_ts`` (the source commit
  time), ``_cdc_txid`` (the source transaction: MySQL's GTID, Oracle's XID), ``_cdc_sequence`` (the stream
  sequence) and ``_cdc_applied_at`` (when this batch was applied).

SCHEMA records of such a table gain the columns (the history key too), so the catalog creates and evolves the
target table with them. TRUNCATE and resync ranges go through unchanged (a TRUNCATE empties a history or
soft-delete table as it does any other). ``cdc compare`` knows the modes (cdc/compare/transformed.py):
soft-deleted rows count as absent, metadata columns are not compared, a history table is refused.
"""

from __future__ import annotations

import datetime as dt
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Any

import orjson

from cdc.schema.logical import LogicalType
from cdc.schema.table_map import TableMap
from cdc.stream.envelope import SCHEMA
from cdc.stream.events import Column, TableSchema
from streaming.stream.records import DATA, Batch, StreamRecord

DELETED, DELETED_AT = "_cdc_deleted", "_cdc_deleted_at"
OP, COMMIT_TS, TXID, SEQUENCE, APPLIED_AT = "_cdc_op", "_cdc_commit_ts", "_cdc_txid", "_cdc_sequence", "_cdc_applied_at"
METADATA = (OP, COMMIT_TS, TXID, SEQUENCE, APPLIED_AT)
_TS = LogicalType("timestamp_tz", precision=3, time_zone="utc")
_COLUMNS = {DELETED: Column(DELETED, "boolean", True, None, LogicalType("boolean")),
            DELETED_AT: Column(DELETED_AT, "timestamp(3)", True, None, _TS),
            OP: Column(OP, "varchar(1)", True, None, LogicalType("string", length=1)),
            COMMIT_TS: Column(COMMIT_TS, "timestamp(3)", True, None, _TS),
            TXID: Column(TXID, "varchar(255)", True, None, LogicalType("string", length=255)),
            SEQUENCE: Column(SEQUENCE, "bigint", True, None, LogicalType("integer", length=64)),
            APPLIED_AT: Column(APPLIED_AT, "timestamp(3)", True, None, _TS)}


@dataclass(frozen=True)
class TableMode:
    """What one applied table's rows become: ``mode`` (upsert, soft_delete, history) and metadata columns."""

    mode: str = "upsert"
    metadata: bool = False

    def extra(self) -> tuple[str, ...]:
        """The columns this mode adds, in order."""
        out = {"soft_delete": (DELETED, DELETED_AT), "history": (OP, COMMIT_TS, SEQUENCE)}.get(self.mode, ())
        return out + tuple(c for c in METADATA if self.metadata and c not in out)


class TargetModes:
    """The modes of one apply job's tables (first matching mapping wins, as the table map's renames)."""

    def __init__(self, rules: list[tuple[str, TableMode]]) -> None:
        self.rules = [(glob, m) for glob, m in rules if m != TableMode()]
        self._by_table: dict[str, TableMode | None] = {}

    @staticmethod
    @functools.lru_cache(maxsize=64)
    def of_map(table_map: TableMap) -> TargetModes:
        """The modes of an apply job's table map (cdc.schema.table_map.TableMap.modes), built once per map."""
        return TargetModes([(glob, TableMode(mode, metadata)) for glob, mode, metadata in table_map.modes])

    def __bool__(self) -> bool:
        return bool(self.rules)

    def of(self, table: str | None) -> TableMode | None:
        """The mode of a source table (None: written as it is)."""
        if table is None or not self.rules:
            return None
        if table not in self._by_table:
            self._by_table[table] = next((m for glob, m in self.rules if fnmatchcase(table, glob)), None)
        return self._by_table[table]

    # ---- the rewrite ------------------------------------------------------------------------
    def rewrite(self, batch: Batch) -> Batch:
        """``batch`` with the records of tables that have a mode rewritten (the same batch when none has)."""
        if not self.rules or not batch.n:
            return batch
        names, codes = batch.table_index()
        has_schema = _has_schema(batch)
        if not any(self.of(n) is not None for n in names) and not has_schema:
            return batch
        now = _iso(int(time.time() * 1000))
        if all(self.of(n) in (None, _SOFT_DELETE) for n in names):  # plain soft-delete tables only: column-wise
            soft = {i for i, n in enumerate(names) if self.of(n) == _SOFT_DELETE}
            return _soft_delete(batch, codes, soft, now, self._schema if has_schema else None)
        out = []
        for rec in batch.records():
            mode = self.of(rec.tbl)
            if rec.kind == SCHEMA:
                out.append(self._schema(rec))
            elif mode is None:
                out.append(rec)
            elif rec.kind == DATA and rec.op in ("c", "u", "d", "r"):
                out.append(_data(rec, mode, now))
            else:
                out.append(rec)
        return Batch.from_records(out)

    def _schema(self, rec: StreamRecord) -> StreamRecord:
        """A SCHEMA record with the mode's columns in each table definition it carries (its own, and those of
        table-level DDL's ``tables`` actions: CREATE, RENAME into a table with a mode)."""
        meta, changed = rec.meta_dict(), False
        for holder in [meta, *[a for a in meta.get("tables") or [] if isinstance(a, dict)]]:
            raw = holder.get("schema")
            if not isinstance(raw, dict):
                continue
            schema = TableSchema.from_json(raw)
            mode = self.of(str(schema.table))
            if mode is not None:
                holder["schema"], changed = shaped_schema(schema, mode).to_json(), True
        return replace(rec, meta=orjson.dumps(meta).decode()) if changed else rec


def shaped_schema(schema: TableSchema, mode: TableMode) -> TableSchema:
    """``schema`` with the mode's columns (a history table's key: the source key plus ``_cdc_sequence``)."""
    have = {c.name for c in schema.columns}
    cols = schema.columns + tuple(_COLUMNS[n] for n in mode.extra() if n not in have)
    key = schema.primary_key + (SEQUENCE,) if mode.mode == "history" and schema.primary_key else schema.primary_key
    if mode.mode == "history" and schema.primary_key:
        cols = tuple(replace(c, nullable=False) if c.name == SEQUENCE else c for c in cols)
    return TableSchema(schema.table, cols, key)


_SOFT_DELETE = TableMode("soft_delete")
_ALIVE = ',"' + DELETED + '":false,"' + DELETED_AT + '":null}'


def _soft_delete(batch: Batch, codes: Any, soft: set[int], now: str,
                 schema: Callable[[StreamRecord], StreamRecord] | None) -> Batch:
    """rewrite() of a batch whose data records' shaped tables are all plain soft-delete ones (no metadata
    columns): the same records as the record-by-record rewrite, made column-wise (Arrow compute). An insert's or
    update's after image (orjson's text of a JSON object, as streaming/stream/records.py writes it) gains the
    two columns spliced before its closing brace: the text orjson gives for the merged dict. A delete, an image
    that already names a _cdc_deleted column, or any other shape takes the record-by-record rewrite (_data);
    SCHEMA records (when the batch holds any) the ``schema`` rewrite, record by record."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    t = batch.table
    mine = pa.array(np.isin(codes, np.fromiter(soft, dtype=np.int64)))
    data = pc.and_(mine, pc.equal(t.column("kind"), DATA))
    after, op = t.column("after"), t.column("op")
    alive = pc.and_(data, pc.is_in(op, pa.array(["c", "u", "r"])))
    spliced = pc.and_kleene(alive, pc.and_kleene(
        pc.and_kleene(pc.starts_with(after, "{"), pc.ends_with(after, "}")),
        pc.and_kleene(pc.not_equal(after, "{}"), pc.invert(pc.match_substring(after, '"_cdc_deleted')))))
    spliced = pc.fill_null(spliced, False)
    joined = pc.binary_join_element_wise(pc.utf8_slice_codeunits(after, 0, -1), pa.scalar(_ALIVE), "")
    t = t.set_column(t.schema.get_field_index("after"), t.schema.field("after"), pc.if_else(spliced, joined, after))
    slow_mask = pc.and_(pc.and_(data, pc.is_in(op, pa.array(["c", "u", "r", "d"]))), pc.invert(spliced))
    slow = np.flatnonzero(slow_mask.to_numpy(zero_copy_only=False)).tolist()
    if slow:
        cols = {f: t.column(f).to_pylist() for f in ("op", "key", "bkey", "before", "after")}
        for i, rec in zip(slow, batch.records_at(slow), strict=True):
            new = _data(rec, _SOFT_DELETE, now)
            for f, values in cols.items():
                values[i] = getattr(new, f)
        for f, values in cols.items():
            field = t.schema.field(f)
            t = t.set_column(t.schema.get_field_index(f), field, pa.array(values, field.type))
    if schema is not None:
        at = np.flatnonzero(pc.equal(t.column("kind"), SCHEMA).to_numpy(zero_copy_only=False)).tolist()
        metas = t.column("meta").to_pylist()
        for i, rec in zip(at, batch.records_at(at), strict=True):
            metas[i] = schema(rec).meta
        field = t.schema.field("meta")
        t = t.set_column(t.schema.get_field_index("meta"), field, pa.array(metas, field.type))
    return Batch(t)


def _has_schema(batch: Batch) -> bool:
    """Whether the batch holds a SCHEMA record (a table-level DDL may name a table with a mode)."""
    import pyarrow.compute as pc

    return bool(pc.any(pc.equal(batch.table.column("kind"), SCHEMA)).as_py())


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _data(rec: StreamRecord, mode: TableMode, now: str) -> StreamRecord:
    before = orjson.loads(rec.before) if rec.before else None
    after = orjson.loads(rec.after) if rec.after else None
    op, key, bkey = rec.op, rec.key, rec.bkey
    meta = {OP: rec.op, COMMIT_TS: _iso(rec.ts_ms), TXID: rec.txid, SEQUENCE: rec.sequence, APPLIED_AT: now}
    if mode.mode == "soft_delete":
        if op == "d":  # the row stays, marked
            op, after = "u", {**(before or {}), DELETED: True, DELETED_AT: _iso(rec.ts_ms)}
        else:
            after = {**(after or {}), DELETED: False, DELETED_AT: None}
    elif mode.mode == "history":  # a row of its own, keyed by the source key and the sequence
        image = after if after is not None else before
        after = {**(image or {}), OP: rec.op, COMMIT_TS: meta[COMMIT_TS], SEQUENCE: rec.sequence}
        k = orjson.loads(rec.bkey if op == "d" and rec.bkey else rec.key) if rec.key else None
        key = orjson.dumps({**k, SEQUENCE: rec.sequence}).decode() if isinstance(k, dict) else rec.key
        op, before, bkey = "c", None, None
    if mode.metadata and after is not None:
        after = {**after, **{c: meta[c] for c in METADATA if c not in after or mode.mode != "history"}}
    return replace(rec, op=op, key=key, bkey=bkey, before=None if before is None else orjson.dumps(before).decode(),
                   after=None if after is None else orjson.dumps(after).decode())


def rewrite(table_map: TableMap, batch: Batch) -> Batch:
    """The engine's one call: ``batch`` as the job's table modes shape it (the same batch when none applies)."""
    return TargetModes.of_map(table_map).rewrite(batch) if table_map.modes else batch
