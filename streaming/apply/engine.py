"""The apply engine: one micro-batch of stream records -> ONE target transaction.

Called from ``foreachBatch`` on the driver with the batch's rows (see
streaming.stream.records). Guarantees, per batch:

- records are taken in stream order; a record at or below the progress row's
  ``last_sequence`` (or any earlier record of the batch) is a replay and is
  dropped; a batch with nothing new is skipped (no data written; only when
  its end offsets lie past the progress row's, the progress row moves its
  offsets on, so Spark's checkpoint never resumes beyond the progress row);
- a jump in sequence is never applied past (cdc.stream.sequence): the new records
  must continue the progress row's ``last_sequence`` (an empty target: start
  at sequence 1, the beginning of the stream) one by one, else the batch
  raises StreamCorrupt naming the missing range, topic, partition and offset,
  before anything is written (the progress row stays before the gap);
- the new records are held to the stream's structure before anything is
  written (streaming.stream.structure, cdc.stream.stream_structure): a batch whose
  records break it is applied only up to the start of the transaction (or
  record) that breaks it, with its progress row, then StreamCorrupt names
  offset, sequence, expected and found;
- a transaction closed by ABORTED is dropped whole (everything since its
  BEGIN); a batch that ends inside a transaction is a StreamCorrupt error;
- each run of data between barriers is reduced to its net effect per key
  (streaming.apply.net_effect), then applied: deletes of all tables first, then
  upserts/inserts, in one transaction with the progress row and the schema
  memory; maintained views (if configured) are updated in the same one;
- barriers: a SCHEMA record (DDL: followed as streaming/apply/catalog.py says; one
  not followed commits what precedes it and raises UnsupportedDdl at its sequence; a first-sight SCHEMA
  may sit inside the transaction that first touches the table), a TRUNCATE and a resync range
  (cdc.stream.resync_range: the target rows of a key range that the source no longer holds are deleted there,
  in the batch transaction; a target without ``resync_ranges`` stops on it);
  on targets whose DDL commits implicitly (MySQL/MariaDB, Oracle:
  ``ddl_commits``), and on lake tables holding buffered rows (their DDL is a table
  commit of its own), what precedes a SCHEMA record is committed with its own
  progress row first, so the batch is then two (or more) transactions, each
  with its progress row;
- bad input (undecodable record, missing key, a value the target refuses)
  raises BadRecord naming table, key, sequence, offset and value, after a
  row-by-row pass found the culprit; with ``dead_letter_table`` configured the
  record goes there instead (same transaction) and the batch is retried
  without it. A constraint error (Target.is_constraint: a foreign or unique key) in the engine's own write
  order is not bad input: the batch is rolled back and applied again in stream order, one change per
  statement; only a row refused there is a BadRecord. What the target's error means is the target's call
  (``Target.classify``): only data errors are bad records; a transient one (lock
  or statement timeout, deadlock, lost connection) rolls the batch back and
  raises TargetTransient naming target, batch and sequence range (the job
  retries it: streaming.apply.retry); any other is a TargetRefused stop.

Two ways to run a batch, same outcome. The walk over markers, replays,
barriers and aborted transactions is shared: only markers and TRUNCATEs are
turned into Python objects; which data records count is worked out on whole
columns. Each run of data between barriers is then reduced either
(columnar, targets with ``columnar = True``) on the columns themselves
(net_effect_columns: keys compared as JSON text, only the surviving row
images decoded, PostgreSQL decodes and COPYs them in bulk), or (record by
record) through DataChange objects and net_effect. Anything unexpected on
the columnar way (a missing key, an extra column, a row the target refuses)
rolls the batch back and runs it again record by record, which applies it
or names the culprit.
"""

from __future__ import annotations

import heapq
import logging
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from cdc.errors import CdcError
from cdc.kafka_log import RepeatLimit
from cdc.metrics import ApplyMetrics
from cdc.schema.table_map import TableMap
from cdc.stream.envelope import ABORTED, BEGIN, END, HEARTBEAT, SCHEMA
from cdc.stream.resync_range import OP as RANGE_OP
from cdc.stream.resync_range import ResyncRange, ResyncRangeError
from streaming.apply import target_modes
from streaming.apply.catalog import Catalog, TableInfo
from streaming.apply.net_effect import DataChange, TableNet, net_effect, net_effect_columns
from streaming.apply.table_delta import TableDelta
from streaming.errors import BadRecord, StreamCorrupt, TargetRefused, TargetTransient, UnsupportedDdl
from streaming.stream.records import DATA, UNDECODABLE, Batch, StreamRecord
from streaming.stream.structure import (
    applied_epoch,
    first_violation,
    max_epoch,
    plain_markers,
    prefix_offsets,
    stale_duplicate,
)
from streaming.targets import typemap
from streaming.targets.base import ErrorKind, ForeignKey, Target
from streaming.targets.progress_row import Progress

log = logging.getLogger(__name__)
log.addFilter(RepeatLimit())  # a target that keeps refusing the bulk path: one warning per kind every 30 s
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
    heartbeat_ts_ms: int | None = None  # source time of the batch's last new HEARTBEAT (caught up to then)


class _Stop(Exception):
    """Internal: DDL barrier reached; commit what precedes it, then raise ``error``."""

    def __init__(self, error: UnsupportedDdl) -> None:
        self.error = error


class _Fallback(Exception):
    """Internal: the columnar way met something it does not handle; run the batch record by record."""


class _Reorder(Exception):
    """Internal: a constraint error in the engine's own write order; the batch is applied again in stream order."""


@dataclass(slots=True)
class _Src:
    """Where a net row came from (names the record in errors): its last change."""

    sequence: int
    offset: int | None


_IMAGE_COLUMNS = ("tbl", "op", "key", "bkey", "before", "after", "sequence", "offset")


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
        self.topic = "?"  # the changes topic (names it in errors); set by the job
        self.epoch = 0  # the highest writer epoch applied (the structure check's floor; 0: none yet), also in
        # the progress row (Progress.epoch), so a restarted engine starts from it
        self._epoch_batch: Batch | None = None  # the batch being applied (its epochs go into the progress row)
        self.dead_letter_enabled = bool(target.config.dead_letter_table)
        self._wanted: dict[str, bool] = {}  # table_map.wanted() per source table (fnmatch is slow per row)
        self.stream_order_passes = 0  # batches a constraint error sent to the stream-order pass (_in_stream_order)

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
        return self._apply_whole(Batch(table), batch_id, end_offsets)

    def apply_records(self, records: Iterable[StreamRecord], batch_id: int,
                      end_offsets: dict[str, Any] | None = None) -> BatchResult:
        return self._apply_whole(Batch.from_records(list(records)), batch_id, end_offsets)

    def _apply_whole(self, batch: Batch, batch_id: int, end_offsets: dict[str, Any] | None) -> BatchResult:
        """The stream's structure first (streaming.stream.structure): a batch whose new records break it is
        applied only up to the start of the transaction (or record) that breaks it, with its progress row,
        then the StreamCorrupt naming offset, sequence, expected and found is raised: nothing of that
        transaction is written."""
        batch = target_modes.rewrite(self.table_map, batch)  # soft delete, history, metadata columns
        last = self.progress.last_sequence if self.progress else None
        # the epoch floor: the highest writer epoch applied, kept in the progress row across restarts
        self.epoch = max(self.epoch, self.progress.epoch if self.progress else 0)
        stale = stale_duplicate(batch, last, self.topic, self.epoch)
        if stale is not None:  # a newer writer's record under a sequence the target holds from an older one
            self.metrics.error(stale)
            raise stale
        broken = first_violation(batch, last, self.topic, self.epoch)
        if broken is None:
            result = self._apply_batch(batch, batch_id, end_offsets)
            self.epoch = max(self.epoch, max_epoch(batch))
            return result
        cut, error = broken
        if cut > 0:
            self._apply_batch(batch.head(cut), batch_id, prefix_offsets(batch, cut, end_offsets))
            self.epoch = max(self.epoch, max_epoch(batch, cut))
        self.metrics.error(error)
        raise error

    def _apply_batch(self, batch: Batch, batch_id: int, end_offsets: dict[str, Any] | None) -> BatchResult:
        started = time.monotonic()
        self._epoch_batch = batch  # _finish writes the highest epoch of what it applies of it
        excluded: dict[int, BadRecord] = {}
        while True:
            try:
                result = self._attempt(batch, batch_id, end_offsets, excluded)
                break
            except BadRecord as bad:
                self.target.abandon()
                self.metrics.error(bad)
                if not self.dead_letter_enabled or bad.fields.get("offset") is None \
                        or len(excluded) >= MAX_DEAD_LETTERS_PER_BATCH or bad.offset in excluded:
                    raise
                excluded[bad.offset] = bad
            except _Stop as stop:
                self.metrics.error(stop.error)
                raise stop.error from None
            except BaseException as exc:
                self.target.abandon()
                self.metrics.error(exc)
                if isinstance(exc, Exception) and not isinstance(exc, CdcError):
                    if self.target.classify(exc) is ErrorKind.TRANSIENT:
                        raise self._transient(exc, batch, batch_id) from None
                    if self.target.is_driver_error(exc):  # fatal, and not a row's fault (say, the progress row)
                        raise self._refused(exc, batch, batch_id) from None
                raise
        if not result.skipped:
            self.metrics.batch_applied(time.monotonic() - started, result.transactions, result.last_sequence or 0,
                                       self.progress.last_commit_ts_ms if self.progress else None,
                                       result.heartbeat_ts_ms)
        else:
            self.metrics.batch_skipped()
        return result

    def _transient(self, exc: Exception, batch: Batch, batch_id: int) -> TargetTransient:
        """``exc`` (transient, the batch rolled back) as the product error naming target, batch and range."""
        span, what, code = _describe(exc, batch)
        return TargetTransient(f"target {self.target.name!r} failed transiently applying batch {batch_id} "
                               f"(sequences {span}): {what}; the batch was rolled back whole", target=self.target.name,
                               batch=batch_id, sequence=span, cause=type(exc).__name__, code=code)

    def _refused(self, exc: Exception, batch: Batch, batch_id: int) -> TargetRefused:
        """A fatal driver error outside any row (no row-by-row pass blamed one) as the product error."""
        span, what, code = _describe(exc, batch)
        return TargetRefused(f"target {self.target.name!r} refused batch {batch_id} (sequences {span}): {what}; "
                             f"this is not bad data and nothing of the batch was applied (fix the target, then "
                             f"restart the apply)", target=self.target.name, batch=batch_id, sequence=span,
                             cause=type(exc).__name__, code=code)

    # ---- one attempt: columnar, else bulk record by record, then a row-by-row pass to name a culprit --
    def _attempt(self, batch: Batch, batch_id: int, end_offsets: dict[str, Any] | None,
                 excluded: dict[int, BadRecord]) -> BatchResult:
        """A constraint error (Target.is_constraint) on a batch written in the engine's order (deletes, then
        upserts, table by table: the net effect) is not a data error: that order is not the source's, and a
        foreign key or a unique key the target holds may not hold in between (a parent deleted before its
        children, a child inserted before its parent, two rows exchanging a unique value). The batch is rolled
        back and applied again in stream order (_in_stream_order); only a row that fails there is bad."""
        if self.target.columnar and not excluded:
            try:
                return self._apply(batch, batch_id, end_offsets, excluded, careful=False, columnar=True)
            except _Fallback as fb:
                cause = fb.__cause__
                if cause is not None and self.target.is_constraint(cause):
                    return self._in_stream_order(batch, batch_id, end_offsets, excluded, cause)
                log.warning("columnar apply of batch %s stopped (%s); applying it record by record", batch_id,
                            cause or fb)
                self.target.rollback()
                self.catalog.tables.clear()
                self.catalog.load()
            except (CdcError, _Stop):
                raise
            except Exception as exc:  # the commit of deferred constraints (Target.defer_constraints)
                if not self.target.is_constraint(exc):
                    raise
                return self._in_stream_order(batch, batch_id, end_offsets, excluded, exc)
        try:
            return self._apply(batch, batch_id, end_offsets, excluded, careful=False)
        except (CdcError, _Stop):
            raise
        except Exception as exc:
            if self.target.classify(exc) is ErrorKind.TRANSIENT:
                raise  # a lock, a timeout, a lost connection: no row is to blame (the batch is retried whole)
            if self.target.is_constraint(exc):
                return self._in_stream_order(batch, batch_id, end_offsets, excluded, exc)
            log.warning("bulk apply of batch %s failed (%s); retrying row by row to find the record", batch_id, exc)
            self.target.rollback()
            self.catalog.load()
        try:
            return self._apply(batch, batch_id, end_offsets, excluded, careful=True)
        except _Reorder as reorder:  # a row refused by a constraint in the net-effect order: not yet bad
            return self._in_stream_order(batch, batch_id, end_offsets, excluded, reorder.__cause__)

    def _in_stream_order(self, batch: Batch, batch_id: int, end_offsets: dict[str, Any] | None,
                         excluded: dict[int, BadRecord], cause: BaseException | None) -> BatchResult:
        """Roll back, then apply the batch record by record in stream order: each change its own statement, in
        sequence order, in one target transaction with the progress row. The source applied these changes in
        this order under its own constraints, so a target holding the same rows and constraints accepts
        them; a row refused now is a data error (BadRecord: dead-lettered, or the stop naming it)."""
        log.warning("batch %s hit a constraint of target %r in the apply's write order (%s); applying it again in "
                    "stream order", batch_id, self.target.name, str(cause).strip().splitlines()[0] if cause else "?")
        self.stream_order_passes += 1
        self.target.rollback()
        self.catalog.tables.clear()
        self.catalog.load()
        return self._apply(batch, batch_id, end_offsets, excluded, careful=True, in_order=True)

    def _apply(self, batch: Batch, batch_id: int, end_offsets: dict[str, Any] | None,
               excluded: dict[int, BadRecord], careful: bool, columnar: bool = False,
               in_order: bool = False) -> BatchResult:
        """One attempt at the batch in one target transaction. ``careful``: row by row (a failing row is named);
        ``in_order``: each change written on its own in stream order (the constraint retry, _in_stream_order);
        else the net effect is written in the engine's order, deferring what the target can defer."""
        import numpy as np

        prev = self.progress
        result = BatchResult(batch_id)
        position = dict(prev.last_position) if prev else {}
        commit_ts = prev.last_commit_ts_ms if prev else None
        deltas: dict[str, TableDelta] = {}
        truncated: list[str] = []
        # which records are new: above the progress row and above every earlier record of the batch
        floor = np.maximum.accumulate(np.r_[prev.last_sequence if prev else -1, batch.seq])[:-1]
        fresh = batch.seq > floor
        if fresh.any():
            result.last_sequence = int(batch.seq[fresh].max())
            self._check_gaps(batch, fresh, prev)
        keep = batch.is_data & fresh & self._wanted_mask(batch)
        if excluded:
            keep &= ~np.isin(batch.offset, np.fromiter(excluded, dtype=np.int64))
        ops = batch.table.column("op") if batch.n else None
        # TRUNCATEs and resync ranges (cdc.stream.resync_range): barriers applied at their place in the stream
        truncates = np.flatnonzero(keep & (_equals(ops, "t", batch.n) | _equals(ops, RANGE_OP, batch.n)))
        keep[truncates] = False
        live = np.ones(batch.n, dtype=bool)  # False inside aborted transactions
        walk = np.union1d(np.flatnonzero(~batch.is_data), truncates)
        seg = 0  # the current segment starts here: data in [seg, cut) is applied at the next barrier
        pending: list[int] | None = None  # TRUNCATE positions of the open transaction
        begin_pos, begin_seq = 0, -1

        def run(lo: int, hi: int) -> None:
            idx = np.flatnonzero(keep[lo:hi] & live[lo:hi]) + lo
            if len(idx) == 0:
                return
            if columnar:
                try:
                    self._apply_columns(batch, idx, deltas, result)
                except _Stop:
                    raise
                except Exception as exc:  # anything unexpected: the record path decides
                    if self.target.classify(exc) is ErrorKind.TRANSIENT:
                        raise
                    raise _Fallback(str(exc)) from exc
            else:
                records = batch.records()
                self._apply_run([self._change(records[i]) for i in idx], deltas, result, careful, in_order)

        def truncate(rec: StreamRecord) -> None:
            info = self._info(rec.tbl, rec.sequence, rec.offset)
            if rec.op == RANGE_OP:
                n = self._resync_range(info, rec)
                result.rows[info.target_table] = result.rows.get(info.target_table, 0) + n
                return
            self.target.truncate(info.target_table)
            result.rows[info.target_table] = result.rows.get(info.target_table, 0)
            truncated.append(info.target_table)

        self.target.begin()
        self.target.defer_constraints(not careful)
        for bad in excluded.values():
            self.target.dead_letter(self.source, bad.fields.get("sequence"), bad.fields.get("table"),
                                    bad.fields.get("key"), bad.fields.get("value"), str(bad))
            self.metrics.dead_letter(bad.fields.get("table") or "?")
            result.dead_letters += 1
        plain = self._plain_walk(batch, walk, fresh, len(truncates) > 0 or bool(excluded), result)
        if plain is not None:  # nothing but whole transactions (and heartbeats): the walk's outcome, on columns
            position, commit_ts = plain or (position, commit_ts)
            walk = walk[:0]
        for pos, rec in zip(walk.tolist(), batch.records_at(walk)):
            if rec.kind == UNDECODABLE:
                if rec.offset in excluded:
                    continue
                raise BadRecord(f"stream record at offset {rec.offset} does not decode: {rec.error}", table=None,
                                key=None, sequence=None, offset=rec.offset, partition=rec.part, value=rec.meta)
            if not fresh[pos] or rec.offset in excluded:
                continue  # replay (or a duplicate the producer retried)
            if rec.kind == DATA:  # a TRUNCATE of a wanted table: a barrier inside the segment
                if pending is not None:
                    pending.append(pos)
                else:
                    run(seg, pos)
                    truncate(rec)
                    seg = pos + 1
            elif rec.kind == BEGIN:
                if pending is not None:
                    raise StreamCorrupt("BEGIN inside an open transaction", sequence=rec.sequence, txid=rec.txid)
                pending = []
                begin_pos, begin_seq = pos, rec.sequence
            elif rec.kind == END:
                for t_pos, t_rec in zip(pending or [], batch.records_at(pending or [])):
                    run(seg, t_pos)
                    truncate(t_rec)
                    seg = t_pos + 1
                pending = None
                result.transactions += 1
                meta = rec.meta_dict()
                position = {"txid": rec.txid, "position": meta.get("position")}
                commit_ts = rec.ts_ms
            elif rec.kind == ABORTED:
                if pending is not None:
                    live[begin_pos:pos] = False
                pending = None
                result.aborted += 1
            elif rec.kind == SCHEMA:
                # A barrier. The publisher also emits a table's first-sight SCHEMA inside the transaction
                # that first touches it: committed work before it is applied first, the open
                # transaction's rows (all after it) stay pending.
                cut = begin_pos if pending is not None else pos
                run(seg, cut)
                seg = cut
                stop_at = rec.sequence - 1 if pending is None else begin_seq - 1
                if self.target.commit_before_ddl(self._ddl_tables(rec)) and stop_at > (self.progress.last_sequence if self.progress else -1):
                    # the DDL would commit what precedes without a progress row (a replay after a crash
                    # would then insert keyless rows twice): commit it with its progress row first
                    self._finish(batch_id, stop_at, position, commit_ts, None, deltas, truncated)
                    deltas.clear()
                    truncated.clear()
                    self.target.begin()
                if self.views and (deltas or truncated):  # views take the rows before it in the old shape
                    from streaming.views.maintainer import maintain
                    maintain(self.target, deltas, batch_id, views=self.views, last_sequence=stop_at,
                             truncated=truncated, mid_batch=True)
                    deltas.clear()
                    truncated.clear()
                shapes = self._shapes() if self.views else {}
                try:
                    self.catalog.on_schema(rec.meta_dict(), rec.sequence)
                except UnsupportedDdl as err:
                    self.target.forget_foreign_keys()
                    self._finish(batch_id, stop_at, position, commit_ts, None, deltas, truncated)
                    raise _Stop(err) from None
                self.target.forget_foreign_keys()  # the DDL may have made, dropped or renamed a table
                if self.views:  # rebuild the views over the changed tables, or stop the ones it broke
                    self._views_after_schema(rec, shapes, batch_id, position, commit_ts, pending is None)
            elif rec.kind == HEARTBEAT:
                result.heartbeat_ts_ms = rec.ts_ms
        if pending is not None:
            raise StreamCorrupt("micro-batch ends inside a transaction (BEGIN without END/ABORTED)",
                                sequence=result.last_sequence)
        if result.last_sequence is None:
            if prev is not None and _beyond(end_offsets, prev.next_offsets):
                # only duplicates, past the offsets the progress row names: move its offsets on (same sequence),
                # so Spark's checkpoint never resumes beyond the progress row (streaming.apply.checkpoint)
                self._finish(batch_id, prev.last_sequence, position, commit_ts, end_offsets, {}, [])
            else:
                self.target.rollback()
            result.skipped = True
            return result
        run(seg, batch.n)
        self._finish(batch_id, result.last_sequence, position, commit_ts, end_offsets, deltas, truncated)
        return result

    @staticmethod
    def _plain_walk(batch: Batch, walk: Any, fresh: Any, barriers: bool,
                    result: BatchResult) -> tuple[dict[str, Any], int | None] | tuple[()] | None:
        """The walk over ``walk`` (the batch's markers) done on whole columns when they are all new BEGIN and
        END markers taking turns (every transaction closed) with HEARTBEATs between, and no TRUNCATE, resync
        range or dead letter (``barriers``): counts the transactions and the last HEARTBEAT's time into
        ``result`` and returns the last END's (position, commit time), ``()`` when there is no END. None: the
        batch holds anything else, and the record-by-record walk decides (an OLTP batch of 30,000 single-row
        transactions spent most of its time in that walk)."""
        if barriers or not len(walk) or not fresh[walk].all():
            return None
        marks = plain_markers(batch, walk)
        if marks is None:
            return None
        is_begin, is_end = marks
        ends = walk[is_end]
        if len(ends) != int(is_begin.sum()):  # a transaction still open: the walk names it
            return None
        beats = walk[~(is_begin | is_end)]
        if len(beats):
            result.heartbeat_ts_ms = batch.table.column("ts_ms")[int(beats[-1])].as_py()
        if not len(ends):
            return ()
        result.transactions = len(ends)
        last = batch.records_at(ends[-1:])[0]
        return {"txid": last.txid, "position": last.meta_dict().get("position")}, last.ts_ms

    def _resync_range(self, info: TableInfo, rec: StreamRecord) -> int:
        """Apply a resync range record (cdc.stream.resync_range) at its place: delete the target rows in its key range
        that it does not keep. Everything before it in the batch is written already (it is a barrier)."""
        rng = ResyncRange.from_text(rec.meta, info.source_table)
        if tuple(rng.key) != tuple(info.key):
            raise ResyncRangeError(f"resync range of {info.source_table} at sequence {rec.sequence} names key "
                                   f"{list(rng.key)}, the table's primary key is {list(info.key)}",
                                   table=info.source_table, why="key", sequence=rec.sequence, offset=rec.offset)
        if self.views:
            raise ResyncRangeError(f"resync range of {info.source_table} at sequence {rec.sequence}: this apply "
                                   "maintains views, which a range delete would leave stale; resync the table with "
                                   "the apply stopped (`cdc compare --repair`)", table=info.source_table,
                                   why="views", sequence=rec.sequence, offset=rec.offset)
        n = self.target.delete_range(info.target_table, rng)
        self.metrics.rows_applied(info.target_table, "delete", n)
        if n:
            log.info("resync of %s: deleted %d target row(s) in key range %s..%s that the source does not hold",
                     info.source_table, n, rng.after, rng.through)
        return n

    def _check_gaps(self, batch: Batch, fresh: Any, prev: Progress | None) -> None:
        """Raise StreamCorrupt unless the new records continue ``prev`` one sequence at a time.

        A hole with an UNDECODABLE record inside it is left to the walk (BadRecord, or the dead-letter
        table): that record is what carries the missing sequence."""
        import numpy as np

        from cdc.stream.sequence import gap_error

        idx = np.flatnonzero(fresh)
        seqs = batch.seq[idx]
        parts = batch.table.column("part").to_numpy()
        expected_first = prev.last_sequence + 1 if prev is not None else 1
        if seqs[0] != expected_first and not (batch.seq[:idx[0]] == Batch.NO_SEQUENCE).any():
            if prev is None:
                raise StreamCorrupt(
                    f"the first record for the empty target {self.target.name!r} has sequence {int(seqs[0])} at "
                    f"offset {int(batch.offset[idx[0]])} of {self.topic}[{int(parts[idx[0]])}]: sequences "
                    f"1..{int(seqs[0]) - 1} (the beginning of the stream) are not there (deleted by retention, or "
                    f"a checkpoint or starting offset in the middle of the stream); an empty target is only "
                    f"built from the beginning of the stream", topic=self.topic, target=self.target.name,
                    sequence=int(seqs[0]), offset=int(batch.offset[idx[0]]))
            before = (prev.next_offsets or {}).get("next", {}).get(str(int(parts[idx[0]])))
            raise gap_error(self.topic, int(parts[idx[0]]), expected_first, int(seqs[0]) - 1,
                            None if before is None else int(before) - 1,
                            what=f"; the progress row of target {self.target.name!r} stays at sequence "
                                 f"{prev.last_sequence}")
        for j in np.flatnonzero(np.diff(seqs) != 1):
            lo, hi = int(idx[j]), int(idx[j + 1])
            if (batch.seq[lo + 1:hi] == Batch.NO_SEQUENCE).any():
                continue
            raise gap_error(self.topic, int(parts[lo]), int(seqs[j]) + 1, int(seqs[j + 1]) - 1,
                            int(batch.offset[lo]),
                            what=f"; the progress row of target {self.target.name!r} stays at sequence "
                                 f"{prev.last_sequence if prev else None}")

    def _wanted_mask(self, batch: Batch) -> Any:
        """Per record: a data record of a table this job applies (table_map.wanted, cached per table)."""
        import numpy as np

        names, codes = batch.table_index()
        for t in names:
            if t not in self._wanted:
                self._wanted[t] = self.table_map.wanted(t)
        lookup = np.array([self._wanted[t] for t in names] + [False], dtype=bool)
        return lookup[codes]

    def _ddl_tables(self, rec: StreamRecord) -> set[str] | None:
        """The target tables a SCHEMA record names (None: it names none, so it may concern any). A first-sight
        definition (no statement: a publisher describing a table before its first rows) names none to commit
        for: it only adds columns or widens types, which the rows before it take as they are; committing there
        would put a consistent point in the middle of a snapshot."""
        meta = rec.meta_dict()
        if meta.get("ddl") is None and not meta.get("whole_shape"):
            return set()
        names = {meta.get("table")}
        for a in meta.get("tables") or []:
            names.update((a.get("table"), a.get("from"), a.get("to")))
        names.discard(None)
        out = {self.table_map.target_name(t) for t in names}
        out.update(i.target_table for t, i in self.catalog.tables.items() if t in names)
        return out or None

    def _shapes(self) -> dict[str, tuple]:
        """Each applied table's (target table, definition, target columns): what a SCHEMA record may change."""
        return {t: (i.target_table, i.schema, list(i.columns)) for t, i in self.catalog.tables.items()}

    def _views_after_schema(self, rec: StreamRecord, shapes: dict[str, tuple], batch_id: int,
                            position: dict[str, Any], commit_ts: int | None, between: bool) -> None:
        """streaming.views.maintainer.after_schema for the target tables a SCHEMA record changed (a first-sight
        record that changes nothing rebuilds no view); a view it stops: the DDL is committed with its progress
        row (``between`` transactions; else the batch rolls back), then the ViewError is raised."""
        from streaming.views.maintainer import after_schema

        meta, now = rec.meta_dict(), self._shapes()
        tables = {shape[0] for t, shape in shapes.items() if now.get(t) != shape}
        tables |= {shape[0] for t, shape in now.items() if shapes.get(t) != shape}
        for a in meta.get("tables") or []:  # a table renamed over another keeps its shape, not its rows
            tables.update(self.table_map.target_name(t) for t in (a.get("table"), a.get("from"), a.get("to")) if t)
        if not tables:
            return
        error = after_schema(self.target, self.views, tables, batch_id, rec.sequence, meta.get("ddl"))
        if error is None:
            return
        if between:
            self._finish(batch_id, rec.sequence, position, commit_ts, None, {}, [])
            raise _Stop(error)
        raise error

    def _finish(self, batch_id: int, last_seq: int, position: dict[str, Any], commit_ts: int | None,
                end_offsets: dict[str, Any] | None, deltas: dict[str, TableDelta], truncated: list[str]) -> None:
        if self.views and (deltas or truncated):
            from streaming.views.maintainer import maintain  # H7's module, imported only when views exist
            maintain(self.target, deltas, batch_id, views=self.views, last_sequence=last_seq, truncated=truncated)
        if end_offsets is not None:
            position = {**position, "kafka": end_offsets}
        epoch = max(self.epoch, applied_epoch(self._epoch_batch, last_seq)) if self._epoch_batch else self.epoch
        if epoch:
            position = {**position, "epoch": epoch}
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

    def _apply_columns(self, batch: Batch, idx: Any, deltas: dict[str, TableDelta], result: BatchResult) -> None:
        """The columnar twin of _apply_run: the records at ``idx`` (one run, stream order) -> target."""
        import numpy as np
        import pyarrow as pa

        whole = batch.columns(_IMAGE_COLUMNS)
        if len(idx) == batch.n:
            sub = whole
        else:
            mask = np.zeros(batch.n, dtype=bool)
            mask[idx] = True
            sub = whole.filter(pa.array(mask))
        cols = {c: sub.column(c).combine_chunks() for c in _IMAGE_COLUMNS}
        tables, all_codes = batch.table_index()
        codes = all_codes[idx]
        seqs, offs = cols["sequence"].to_numpy(), cols["offset"].to_numpy()
        nets: list[tuple[TableInfo, Any, Any]] = []  # (info, ColumnNet or TableNet, row positions)
        _, first = np.unique(codes, return_index=True)
        for code in codes[np.sort(first)]:  # tables in the order the run first touches them
            table = tables[code]
            at = np.flatnonzero(codes == code)
            info = self._info(table, int(seqs[at[0]]), int(offs[at[0]]))
            if not info.key:  # keyless: count copies record by record
                recs = batch.records_at(idx[at])
                nets.append((info, net_effect([self._change(r) for r in recs], {table: ()})[table], at))
                continue
            first_key = orjson.loads(cols["key"][int(at[0])].as_py())
            if list(first_key) != list(info.key):
                raise ValueError(f"record keys of {table} name {list(first_key)}, its primary key is {list(info.key)}")
            every = len(at) == len(codes)
            t = {c: cols[c] if every else cols[c].take(at) for c in ("op", "key", "bkey", "before", "after")}
            net = net_effect_columns(t["op"].to_numpy(zero_copy_only=False), t["key"], t["bkey"], t["before"],
                                     t["after"])
            nets.append((info, net, (at, t, seqs, offs)))
        order, mixed = self._write_order([info.target_table for info, _, _ in nets])
        nets.sort(key=lambda n: order.index(n[0].target_table))
        mixed = {info.target_table for info, net, _ in nets if info.target_table in mixed and not isinstance(net, TableNet)}
        for info, net, where in reversed(nets):  # deletes first: children before parents
            if info.target_table not in mixed:
                self._write_columns(info, net, where, deletes=True)
        for info, net, where in nets:  # then upserts: parents before children
            if info.target_table in mixed:
                self._write_mixed(info, self._column_changes(info, net, where))
            else:
                self._write_columns(info, net, where, deletes=False)
        for info, net, where in nets:
            n_del, n_up = len(net.deletes), len(net.upserts)
            result.rows[info.target_table] = result.rows.get(info.target_table, 0) + n_del + n_up
            self.metrics.rows_applied(info.target_table, "delete", n_del)
            self.metrics.rows_applied(info.target_table, "upsert", n_up)
            if self.views:
                d = deltas.setdefault(info.target_table, TableDelta())
                if isinstance(net, TableNet):
                    d.deleted.extend(net.deletes)
                    d.deleted.extend(net.replaced)
                    d.inserted.extend(net.upserts)
                else:
                    _, t, _, _ = where
                    d.deleted.extend(_loads(t["before"], net.deletes))
                    d.deleted.extend(_loads(t["before"], net.replaced))
                    d.inserted.extend(_loads(t["after"], net.upserts))

    def _write_columns(self, info: TableInfo, net: Any, where: Any, deletes: bool) -> None:
        if isinstance(net, TableNet):  # keyless table: the record path's writer
            self._write(info, net, deletes=deletes, careful=False)
            return
        at, t, seqs, offs = where
        rows = net.deletes if deletes else net.upserts
        if not len(rows):
            return
        texts = (t["before"] if deletes else t["after"]).take(rows)
        if self.target.json_rows and len(rows) >= self.target.bulk_min_rows \
                and all(fn is typemap.b64_bytes for fn in info.converters.values()) \
                and _names_every_column(texts, info.columns):
            binary = set(info.converters)
            if deletes:
                self.target.delete_json(info.target_table, info.key, texts, binary)
            else:
                self.target.upsert_json(info.target_table, info.columns, info.key, texts, net.inserts, binary)
            return
        last = at[net.delete_last if deletes else net.upsert_last]
        srcs = [_Src(int(seqs[i]), int(offs[i])) for i in last]
        images = _loads(texts, range(len(texts)))
        conv = [self._convert(info, r, s) for r, s in zip(images, srcs)]
        self._op(info.target_table, info.columns, info.key, conv, deletes, info.key)

    def _write_order(self, tables: list[str]) -> tuple[list[str], set[str]]:
        """The target ``tables`` (in the order the run first touched them) ordered parents before children by the
        target's foreign keys (Target.foreign_keys; ties keep the first-touch order), and the tables whose rows
        are written row by row in one order instead (_write_mixed): those on a cycle of foreign keys (a
        self-reference: a category tree) that the target does not defer to the commit. Deletes go in the reverse
        order."""
        edges = [(fk.child, fk.parent) for fk in self.target.foreign_keys()
                 if not fk.deferred and fk.child in tables and fk.parent in tables]
        if not edges:
            return tables, set()
        parents: dict[str, set[str]] = {t: set() for t in tables}
        for c, p in edges:
            parents[c].add(p)
        mixed = {t for t in tables if t in _reaches(parents, t, t)}  # on a cycle (itself included)
        order: list[str] = []
        left = list(tables)
        while left:  # Kahn, first-touch order among the ready; a cycle's tables go when only cycles are left
            # ready: every parent not written yet is the table itself or on a cycle with it
            ready = [t for t in left if all(t in _reaches(parents, p, t) for p in parents[t] - set(order) - {t})]
            pick = ready[0] if ready else left[0]
            order.append(pick)
            left.remove(pick)
        return order, mixed

    def _column_changes(self, info: TableInfo, net: Any, where: Any) -> list[tuple[int, bool, dict[str, Any]]]:
        """(sequence, delete?, converted row) of each net change of a columnar table (ColumnNet)."""
        at, t, seqs, offs = where
        out: list[tuple[int, bool, dict[str, Any]]] = []
        for deletes, rows, last, texts in ((True, net.deletes, net.delete_last, t["before"]),
                                           (False, net.upserts, net.upsert_last, t["after"])):
            if not len(rows):
                continue
            images = _loads(texts.take(rows), range(len(rows)))
            for image, i in zip(images, at[last]):
                src = _Src(int(seqs[i]), int(offs[i]))
                out.append((src.sequence, deletes, self._convert(info, image, src)))
        return out

    def _write_mixed(self, info: TableInfo, changes: list[tuple[int, bool, dict[str, Any]]]) -> None:
        """Write a table's net changes (a table on a cycle of foreign keys) in one order, runs of deletes or
        upserts one statement each: the order of their last change in the stream, except that along the table's
        own foreign keys (a category tree, parent_id -> id) an upserted row goes after the upserted row its final
        values reference and a deleted row before the deleted row it referenced (_self_reference_order). A node
        inserted, its child inserted, then the node updated applies on the first try; only a cycle among the
        batch's rows (two rows referencing each other at the end) is left in stream order, for the stream-order
        pass to apply if the target refuses it."""
        changes.sort(key=lambda c: c[0])
        own = [fk for fk in self.target.foreign_keys()
               if not fk.deferred and fk.child == fk.parent == info.target_table]
        order, waits = _self_reference_order(changes, own) if own else (range(len(changes)), None)
        run: list[int] = []
        for i in [*order, None]:
            # a statement ends at a change of the other kind, or one that waits for a change of this statement
            # (MySQL checks each row of a statement at once, a multi-row DELETE in the key's order)
            if run and (i is None or changes[i][1] != changes[run[0]][1] or (waits and waits[i] & set(run))):
                self._op(info.target_table, info.columns, info.key, [changes[r][2] for r in run],
                         changes[run[0]][1], info.key)
                run = []
            if i is not None:
                run.append(i)

    def _info(self, table: str, sequence: int, offset: int | None) -> TableInfo:
        info = self.catalog.get(table)
        if info is None:
            raise BadRecord(f"no schema known for table {table}: no SCHEMA record before its first change",
                            table=table, key=None, sequence=sequence, offset=offset, value=None)
        return info

    def _apply_run(self, run: list[DataChange], deltas: dict[str, TableDelta], result: BatchResult,
                   careful: bool, in_order: bool = False) -> None:
        """Write ``run`` (one run of data between barriers, stream order): its net effect, deletes of all tables
        then upserts, or (``in_order``) each change on its own in stream order. Counts and view deltas are
        the net effect's either way."""
        if not run:
            return
        infos: dict[str, TableInfo] = {}
        for ch in run:
            if ch.table not in infos:
                infos[ch.table] = self._info(ch.table, ch.sequence, ch.offset)
        keys = {t: i.key for t, i in infos.items()}
        nets = net_effect(run, keys)
        if in_order:
            for ch in run:
                one = net_effect([ch], keys)[ch.table]
                self._write(infos[ch.table], one, deletes=True, careful=True, in_order=True)
                self._write(infos[ch.table], one, deletes=False, careful=True, in_order=True)
        else:
            order, mixed = self._write_order([infos[t].target_table for t in nets])
            tables = sorted(nets, key=lambda t: order.index(infos[t].target_table))
            if careful or any(not infos[t].key for t in tables if infos[t].target_table in mixed):
                mixed = set()  # row by row (every row named), or keyless rows: the net effect's order
            for table in reversed(tables):  # deletes first: children before parents
                if infos[table].target_table not in mixed:
                    self._write(infos[table], nets[table], deletes=True, careful=careful)
            for table in tables:  # then upserts: parents before children
                info, net = infos[table], nets[table]
                if info.target_table in mixed:
                    self._write_mixed(info, [(s.sequence, True, self._convert(info, r, s))
                                             for r, s in zip(net.deletes, net.delete_src)]
                                      + [(s.sequence, False, self._convert(info, r, s))
                                         for r, s in zip(net.upserts, net.upsert_src)])
                else:
                    self._write(info, net, deletes=False, careful=careful)
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

    def _write(self, info: TableInfo, net: TableNet, deletes: bool, careful: bool, in_order: bool = False) -> None:
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
            except Exception as exc:
                k = {c: raw.get(c) for c in key} if key else None
                kind = self.target.classify(exc)
                if kind is ErrorKind.TRANSIENT:
                    raise
                if not in_order and self.target.is_constraint(exc):  # maybe the write order's fault, not the row's
                    raise _Reorder() from exc
                if kind is ErrorKind.FATAL:  # not the row's values: a stop, never a dead letter
                    raise TargetRefused(f"target {self.target.name!r} refused a statement on {t} (for a row of "
                                        f"{info.source_table}): {str(exc).strip().splitlines()[0]}; this is not "
                                        f"bad data (fix the target, then restart the apply)",
                                        target=self.target.name, table=info.source_table, key=k,
                                        sequence=src.sequence, offset=src.offset, cause=type(exc).__name__) from None
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
        if len(row) != len(info.columns) or info.converters:
            extra = row.keys() - set(info.columns) - info.ignored  # ignored: columns the target does not hold
            if extra:
                raise BadRecord(f"row of {info.source_table} has columns {sorted(extra)} not in its known schema",
                                table=info.source_table, key=None, sequence=src.sequence, offset=src.offset,
                                value=row)
            # no extra key, so a key is missing only when the row is shorter (not per row on full images)
            missing = [c for c in info.columns if c not in row] if len(row) < len(info.columns) else None
            if missing:  # a partial row image (binlog_row_image MINIMAL/NOBLOB): never written as NULLs
                raise BadRecord(f"row image of {info.source_table} lacks columns {missing} of its schema (a partial "
                                f"row image; the source must log full images)", table=info.source_table, key=None,
                                sequence=src.sequence, offset=src.offset, value=row)
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


def _self_reference_order(changes: list[tuple[int, bool, dict[str, Any]]],
                           fks: list[ForeignKey]) -> tuple[list[int], list[set[int]]]:
    """The positions of ``changes`` (sequence, delete?, row; in stream order) in the order to write them on a
    table whose foreign keys ``fks`` reference the table itself: an upsert after the upsert of the row its
    values reference (parents first, by the final values), a delete before the delete of the row its before
    image referenced (children first); otherwise stream order. A cycle among the rows (each waits for another)
    is written in stream order from its first row on: the target refuses it or not, the stream-order pass
    (ApplyEngine._in_stream_order) has the last word. Also each change's waits: the changes it goes after."""
    waits: list[set[int]] = [set() for _ in changes]  # waits[i]: the changes i goes after
    for fk in fks:
        for deletes in (True, False):
            at: dict[tuple, int] = {}  # the referenced columns' values -> the change holding them
            for i, (_, d, row) in enumerate(changes):
                if d == deletes:
                    at[_values(row, fk.parent_columns)] = i
            for i, (_, d, row) in enumerate(changes):
                if d != deletes:
                    continue
                ref = _values(row, fk.child_columns)
                j = at.get(ref) if ref is not None else None
                if j is None or j == i:
                    continue
                if deletes:
                    waits[j].add(i)  # the referenced row goes after its child
                else:
                    waits[i].add(j)  # the child goes after the row it references
    followers: list[list[int]] = [[] for _ in changes]
    for i, w in enumerate(waits):
        for j in w:
            followers[j].append(i)
    left = [len(w) for w in waits]
    ready: dict[bool, list[int]] = {True: [], False: []}  # delete? -> the changes whose waits are written
    for i, (_, d, _) in enumerate(changes):
        if not left[i]:
            ready[d].append(i)
    upserts = [i for i, (_, d, _) in enumerate(changes) if not d]
    done = [False] * len(changes)
    order: list[int] = []
    up = 0  # upserts[up]: the first upsert in stream order not written yet
    while len(order) < len(changes):
        while up < len(upserts) and done[upserts[up]]:
            up += 1
        first_up = upserts[up] if up < len(upserts) else len(changes)
        # a delete waits for the upserts before it in the stream too (a child moved away from its parent first)
        heads = ready[False][:1] + [i for i in ready[True][:1] if i < first_up]
        if heads:
            i = min(heads)
            heapq.heappop(ready[changes[i][1]])
        else:  # only cycles left: the first of them in stream order
            i = first_up if first_up < len(changes) else done.index(False)
        if done[i]:
            continue
        done[i] = True
        order.append(i)
        for f in followers[i]:
            left[f] -= 1
            if not left[f] and not done[f]:
                heapq.heappush(ready[changes[f][1]], f)
    return order, waits


def _values(row: dict[str, Any], columns: tuple[str, ...]) -> tuple | None:
    """``row``'s values of ``columns`` as a key to match a foreign key with, None when one is NULL (references
    nothing) or not hashable (left in stream order)."""
    values = tuple(row.get(c) for c in columns)
    if any(v is None for v in values):
        return None
    try:
        hash(values)
    except TypeError:
        return None
    return values


def _reaches(parents: dict[str, set[str]], start: str, goal: str) -> set[str]:
    """The tables reachable from ``start`` along child -> parent edges (``goal`` among them: a cycle back)."""
    seen: set[str] = set()
    todo = list(parents.get(start, ()))
    while todo:
        t = todo.pop()
        if t not in seen:
            seen.add(t)
            todo.extend(parents.get(t, ()))
    return seen


def _describe(exc: Exception, batch: Batch) -> tuple[str, str, Any]:
    """(the batch's sequence range, "<class> <code>: <first line>", the SQLSTATE or error number) of a driver
    error."""
    import numpy as np

    seqs = batch.seq[batch.seq != Batch.NO_SEQUENCE] if batch.n else np.zeros(0, dtype=np.int64)
    span = f"{int(seqs.min())}..{int(seqs.max())}" if len(seqs) else "none"
    code = getattr(exc, "sqlstate", None) or (exc.args[0] if exc.args and isinstance(exc.args[0], int) else None)
    first = (str(exc).strip().splitlines() or [""])[0]
    return span, f"{type(exc).__name__}{f' {code}' if code else ''}: {first}", code


def _names_every_column(texts: Any, columns: list[str]) -> bool:
    """Every JSON row image in ``texts`` (an Arrow string array) has a key for every column.

    The bulk JSON path lets the target read the images in SQL, where a missing key would become
    NULL; when this is False the rows go through ``_convert``, which raises the BadRecord naming
    the row. Keys of a flat image appear as ``"name":`` (a quote inside a string value is
    escaped, so a value cannot fake one)."""
    import pyarrow.compute as pc

    for c in columns:
        name = orjson.dumps(c).decode()  # the key as JSON writes it
        # compact JSON (what the stream's writers and the executors' decoder write) first: a plain substring
        # search is several times cheaper than the pattern, which also takes blanks before the colon
        if pc.all(pc.match_substring(texts, name + ":")).as_py():
            continue
        if not pc.all(pc.match_substring_regex(texts, re.escape(name) + r"\s*:")).as_py():
            return False
    return True


def _beyond(end: dict[str, Any] | None, kept: dict[str, Any] | None) -> bool:
    """``end`` (a batch's end offsets) lies past ``kept`` (the progress row's) on some partition."""
    if not end:
        return False
    if not kept or kept.get("topic") != end.get("topic"):
        return True
    have = kept.get("next") or {}
    return any(int(o) > int(have.get(p, -1)) for p, o in (end.get("next") or {}).items())


def _equals(column: Any, value: str, n: int) -> Any:
    """numpy mask: ``column`` (pyarrow, may hold nulls) equals ``value``."""
    import numpy as np
    import pyarrow.compute as pc

    if column is None or not n:
        return np.zeros(n, dtype=bool)
    return pc.fill_null(pc.equal(column, value), False).to_numpy(zero_copy_only=False)


def _loads(texts: Any, at: Any) -> list[dict[str, Any]]:
    """Decode the JSON row images ``texts[at]``."""
    picked = texts.take(at) if not isinstance(at, range) else texts
    return [orjson.loads(v) for v in picked.to_pylist()]
