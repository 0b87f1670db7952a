"""The apply engine: one micro-batch of stream records -> ONE target transaction.

Called from ``foreachBatch`` on the driver with the batch's rows (see
streaming.records). Guarantees, per batch:

- records are taken in stream order; a record at or below the progress row's
  ``last_sequence`` (or any earlier record of the batch) is a replay and is
  dropped; a batch with nothing new is skipped (no write at all);
- a transaction closed by ABORTED is dropped whole (everything since its
  BEGIN); a batch that ends inside a transaction is a StreamCorrupt error;
- each run of data between barriers is reduced to its net effect per key
  (streaming.net_effect), then applied: deletes of all tables first, then
  upserts/inserts, in one transaction with the progress row and the schema
  memory; maintained views (if configured) are updated in the same one;
- barriers: a SCHEMA record (DDL: ADD COLUMN followed, other DDL commits what
  precedes it and raises UnsupportedDdl at its sequence; a first-sight SCHEMA
  may sit inside the transaction that first touches the table) and a TRUNCATE;
- bad input (undecodable record, missing key, a value the target refuses)
  raises BadRecord naming table, key, sequence, offset and value, after a
  row-by-row pass found the culprit; with ``dead_letter_table`` configured the
  record goes there instead (same transaction) and the batch is retried
  without it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from cdc.envelope import ABORTED, BEGIN, END, HEARTBEAT, SCHEMA
from cdc.errors import CdcError
from cdc.runtime.metrics import ApplyMetrics
from streaming.catalog import Catalog, TableInfo
from streaming.delta import TableDelta
from streaming.errors import BadRecord, StreamCorrupt, UnsupportedDdl
from streaming.mapping import TableMap
from streaming.net_effect import DataChange, TableNet, net_effect
from streaming.progress import Progress
from streaming.records import DATA, FIELDS, UNDECODABLE, StreamRecord
from streaming.targets.base import Target

log = logging.getLogger(__name__)
MAX_DEAD_LETTERS_PER_BATCH = 1000


@dataclass(slots=True)
class BatchResult:
    batch_id: int
    skipped: bool = False
    transactions: int = 0
    aborted: int = 0
    last_sequence: int | None = None
    rows: dict[str, int] = field(default_factory=dict)
    dead_letters: int = 0


class _Stop(Exception):
    """Internal: DDL barrier reached; commit what precedes it, then raise ``error``."""

    def __init__(self, error: UnsupportedDdl) -> None:
        self.error = error


class ApplyEngine:
    def __init__(self, source: str, target: Target, table_map: TableMap, metrics: ApplyMetrics | None = None,
                 views: list[dict[str, Any]] | None = None) -> None:
        self.source = source
        self.target = target
        self.catalog = Catalog(source, target, table_map)
        self.table_map = table_map
        self.metrics = metrics or ApplyMetrics(source, target.name)
        self.views = views or []
        self.progress: Progress | None = None
        self.dead_letter_enabled = bool(target.config.dead_letter_table)
        self._wanted: dict[str, bool] = {}  # table_map.wanted() per source table (fnmatch is slow per row)

    def start(self) -> ApplyEngine:
        self.target.open()
        self.catalog.load()
        self.progress = self.target.read_progress(self.source)
        if self.views and self.catalog.tables:
            # build missing view tables before the first batch (MySQL DDL would commit mid-batch); on a
            # first start the base tables do not exist yet and the views are built in the first batch
            from streaming.views.maintainer import prepare
            prepare(self.target, self.views)
            self.target.commit()
        return self

    def close(self) -> None:
        self.target.close()

    # ---- entry points ------------------------------------------------------------------
    def apply_arrow(self, table: Any, batch_id: int, end_offsets: dict[str, Any] | None = None) -> BatchResult:
        # column-wise: one to_pylist per column is far cheaper than a dict per row
        names = set(table.column_names)
        cols = [table.column(f).to_pylist() if f in names else [None] * table.num_rows for f in FIELDS]
        records = [StreamRecord(*vals) for vals in zip(*cols)]
        return self.apply_records(records, batch_id, end_offsets)

    def apply_records(self, records: Iterable[StreamRecord], batch_id: int,
                      end_offsets: dict[str, Any] | None = None) -> BatchResult:
        started = time.monotonic()
        records = list(records)
        if any(a.part != b.part or a.offset > b.offset for a, b in zip(records, records[1:])):
            records.sort(key=lambda r: (r.part, r.offset))
        excluded: dict[int, BadRecord] = {}
        while True:
            try:
                result = self._attempt(records, batch_id, end_offsets, excluded)
                break
            except BadRecord as bad:
                self.target.rollback()
                self.metrics.error(bad)
                if not self.dead_letter_enabled or bad.fields.get("offset") is None \
                        or len(excluded) >= MAX_DEAD_LETTERS_PER_BATCH or bad.offset in excluded:
                    raise
                excluded[bad.offset] = bad
            except _Stop as stop:
                self.metrics.error(stop.error)
                raise stop.error from None
            except BaseException as exc:
                self.target.rollback()
                self.metrics.error(exc)
                raise
        if not result.skipped:
            self.metrics.batch_applied(time.monotonic() - started, result.transactions, result.last_sequence or 0,
                                       self.progress.last_commit_ts_ms if self.progress else None)
        else:
            self.metrics.batch_skipped()
        return result

    # ---- one attempt: bulk first, then a row-by-row pass to name a culprit ---------------
    def _attempt(self, records: list[StreamRecord], batch_id: int, end_offsets: dict[str, Any] | None,
                 excluded: dict[int, BadRecord]) -> BatchResult:
        try:
            return self._apply(records, batch_id, end_offsets, excluded, careful=False)
        except (CdcError, _Stop):
            raise
        except Exception as exc:  # the target refused something: find which row, name it
            log.warning("bulk apply of batch %s failed (%s); retrying row by row to find the record", batch_id, exc)
            self.target.rollback()
            self.catalog.load()
            return self._apply(records, batch_id, end_offsets, excluded, careful=True)

    def _apply(self, records: list[StreamRecord], batch_id: int, end_offsets: dict[str, Any] | None,
               excluded: dict[int, BadRecord], careful: bool) -> BatchResult:
        prev = self.progress
        last_seq = prev.last_sequence if prev else -1
        result = BatchResult(batch_id)
        position = dict(prev.last_position) if prev else {}
        commit_ts = prev.last_commit_ts_ms if prev else None
        segment: list[DataChange | StreamRecord] = []
        pending: list[DataChange | StreamRecord] | None = None
        begin_seq = last_seq
        deltas: dict[str, TableDelta] = {}
        self.target.begin()
        for bad in excluded.values():
            self.target.dead_letter(self.source, bad.fields.get("sequence"), bad.fields.get("table"),
                                    bad.fields.get("key"), bad.fields.get("value"), str(bad))
            self.metrics.dead_letter(bad.fields.get("table") or "?")
            result.dead_letters += 1
        for rec in records:
            if rec.kind == UNDECODABLE:
                if rec.offset in excluded:
                    continue
                raise BadRecord(f"stream record at offset {rec.offset} does not decode: {rec.error}", table=None,
                                key=None, sequence=None, offset=rec.offset, partition=rec.part, value=rec.meta)
            if rec.sequence <= last_seq:
                continue  # replay (or a duplicate the producer retried)
            last_seq = rec.sequence
            result.last_sequence = rec.sequence
            if rec.offset in excluded:
                continue
            if rec.kind == DATA:
                if rec.tbl is None:
                    continue
                wanted = self._wanted.get(rec.tbl)
                if wanted is None:
                    wanted = self._wanted[rec.tbl] = self.table_map.wanted(rec.tbl)
                if not wanted:
                    continue
                item = rec if rec.op == "t" else self._change(rec)
                (pending if pending is not None else segment).append(item)
            elif rec.kind == BEGIN:
                if pending is not None:
                    raise StreamCorrupt("BEGIN inside an open transaction", sequence=rec.sequence, txid=rec.txid)
                pending = []
                begin_seq = rec.sequence
            elif rec.kind == END:
                segment.extend(pending or [])
                pending = None
                result.transactions += 1
                meta = rec.meta_dict()
                position = {"txid": rec.txid, "position": meta.get("position")}
                commit_ts = rec.ts_ms
            elif rec.kind == ABORTED:
                pending = None
                result.aborted += 1
            elif rec.kind == SCHEMA:
                # A barrier. The publisher also emits a table's first-sight SCHEMA inside the transaction
                # that first touches it: committed work before it is applied first, the open
                # transaction's rows (all after it) stay pending.
                self._flush(segment, deltas, result, careful)
                segment = []
                try:
                    self.catalog.on_schema(rec.meta_dict(), rec.sequence)
                except UnsupportedDdl as err:
                    stop_at = rec.sequence - 1 if pending is None else begin_seq - 1
                    self._finish(batch_id, stop_at, position, commit_ts, end_offsets=None, deltas=deltas)
                    raise _Stop(err) from None
            elif rec.kind == HEARTBEAT:
                pass
        if pending is not None:
            raise StreamCorrupt("micro-batch ends inside a transaction (BEGIN without END/ABORTED)",
                                sequence=result.last_sequence)
        if result.last_sequence is None:
            self.target.rollback()
            result.skipped = True
            return result
        self._flush(segment, deltas, result, careful)
        self._finish(batch_id, result.last_sequence, position, commit_ts, end_offsets, deltas)
        return result

    def _finish(self, batch_id: int, last_seq: int, position: dict[str, Any], commit_ts: int | None,
                end_offsets: dict[str, Any] | None, deltas: dict[str, TableDelta]) -> None:
        if self.views and deltas:
            from streaming.views.maintainer import maintain  # H7's module, imported only when views exist
            maintain(self.target, deltas, batch_id, views=self.views, last_sequence=last_seq)
        if end_offsets is not None:
            position = {**position, "kafka": end_offsets}
        progress = Progress(self.source, last_seq, batch_id, position, commit_ts)
        self.target.write_progress(progress)
        self.target.commit()
        self.progress = progress

    # ---- records -> changes -> net effect -> target ------------------------------------------
    def _change(self, rec: StreamRecord) -> DataChange:
        try:
            before = orjson.loads(rec.before) if rec.before else None
            after = orjson.loads(rec.after) if rec.after else None
        except orjson.JSONDecodeError as exc:
            raise BadRecord(f"row image of {rec.tbl} does not decode: {exc}", table=rec.tbl, key=rec.key,
                            sequence=rec.sequence, offset=rec.offset, value=rec.after or rec.before) from None
        return DataChange(rec.sequence, rec.tbl, rec.op, before, after, rec.ts_ms, rec.offset)

    def _flush(self, segment: list, deltas: dict[str, TableDelta], result: BatchResult, careful: bool) -> None:
        run: list[DataChange] = []
        for item in segment:
            if isinstance(item, StreamRecord):  # TRUNCATE: a barrier inside the segment
                self._apply_run(run, deltas, result, careful)
                run = []
                info = self._info(item.tbl, item.sequence, item.offset)
                self.target.truncate(info.target_table)
                result.rows[info.target_table] = result.rows.get(info.target_table, 0)
            else:
                run.append(item)
        self._apply_run(run, deltas, result, careful)

    def _info(self, table: str, sequence: int, offset: int | None) -> TableInfo:
        info = self.catalog.get(table)
        if info is None:
            raise BadRecord(f"no schema known for table {table}: no SCHEMA record before its first change",
                            table=table, key=None, sequence=sequence, offset=offset, value=None)
        return info

    def _apply_run(self, run: list[DataChange], deltas: dict[str, TableDelta], result: BatchResult,
                   careful: bool) -> None:
        if not run:
            return
        infos: dict[str, TableInfo] = {}
        for ch in run:
            if ch.table not in infos:
                infos[ch.table] = self._info(ch.table, ch.sequence, ch.offset)
        nets = net_effect(run, {t: i.key for t, i in infos.items()})
        order = list(nets)
        for table in reversed(order):  # deletes first (children were touched after parents)
            self._write(infos[table], nets[table], deletes=True, careful=careful)
        for table in order:
            self._write(infos[table], nets[table], deletes=False, careful=careful)
        for table, net in nets.items():
            info = infos[table]
            n = len(net.deletes) + len(net.upserts)
            result.rows[info.target_table] = result.rows.get(info.target_table, 0) + n
            self.metrics.rows_applied(info.target_table, "delete", len(net.deletes))
            self.metrics.rows_applied(info.target_table, "upsert", len(net.upserts))
            if self.views:
                d = deltas.setdefault(info.target_table, TableDelta())
                d.deleted.extend(net.deletes)
                d.deleted.extend(net.replaced)
                d.inserted.extend(net.upserts)

    def _write(self, info: TableInfo, net: TableNet, deletes: bool, careful: bool) -> None:
        rows = net.deletes if deletes else net.upserts
        srcs = net.delete_src if deletes else net.upsert_src
        if not rows:
            return
        conv = [self._convert(info, r, s) for r, s in zip(rows, srcs)]
        t, cols, key = info.target_table, info.columns, info.key
        if not careful:
            self._op(t, cols, key, conv, deletes, info.key)
            return
        for row, src, raw in zip(conv, srcs, rows):
            try:
                self._op(t, cols, key, [row], deletes, info.key)
            except CdcError:
                raise
            except Exception as exc:  # noqa: BLE001 - the target's own error class
                k = {c: raw.get(c) for c in key} if key else None
                raise BadRecord(f"target {self.target.name!r} refused a row of {info.source_table} -> {t}: "
                                f"{str(exc).strip().splitlines()[0]}", table=info.source_table, key=k,
                                sequence=src.sequence, offset=src.offset, value=raw) from None

    def _op(self, table: str, cols: list[str], key: tuple[str, ...], rows: list[dict], deletes: bool,
            keyed: tuple[str, ...]) -> None:
        if keyed:
            if deletes:
                self.target.delete_rows(table, key, rows)
            else:
                self.target.upsert_rows(table, cols, key, rows)
        elif deletes:
            self.target.delete_copies(table, cols, rows)
        else:
            self.target.insert_rows(table, cols, rows)

    @staticmethod
    def _convert(info: TableInfo, row: dict[str, Any], src: DataChange) -> dict[str, Any]:
        extra = row.keys() - set(info.columns) if len(row) != len(info.columns) or info.converters else ()
        if extra:
            raise BadRecord(f"row of {info.source_table} has columns {sorted(extra)} not in its known schema",
                            table=info.source_table, key=None, sequence=src.sequence, offset=src.offset, value=row)
        if not info.converters:
            return row
        out = dict(row)
        for col, fn in info.converters.items():
            v = out.get(col)
            if v is not None:
                try:
                    out[col] = fn(v)
                except Exception as exc:  # noqa: BLE001
                    raise BadRecord(f"value of {info.source_table}.{col} cannot be converted: {exc}",
                                    table=info.source_table, key=None, column=col, sequence=src.sequence,
                                    offset=src.offset, value=v) from None
        return out
