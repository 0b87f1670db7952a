"""``OracleSource``: the Oracle LogMiner reader (cdc.contract.Source).

Pipeline: Standby (dictionary, logs, head SCN) -> ParallelMiner (N LogMiner
sessions on consecutive SCN ranges, staged, consumed in order) ->
Dispatcher (per-XID buffers with spill, commit-SCN order) -> events.

Resume: ``start(resume)`` takes the ``resume`` dict of the last END /
SCHEMA / HEARTBEAT record ({low_watermark_scn, commit_scn,
xids_at_commit_scn}); mining restarts at ``low_watermark_scn`` and every
transaction already published (commit SCN below ``commit_scn``, or equal
with its XID in the set) is dropped, so the first transaction yielded is
the first one not yet in the stream: exactly once across restarts.
Without a resume state mining starts at ``start_scn`` (or the standby's
current SCN; the simulator's first SCN).

Start refuses a source whose primary does not log whole row images
(readers/oracle/check.py: minimal and ALL COLUMNS supplemental logging).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from cdc.contract import STOP_CHECK_S, Observation, SourceContext
from cdc.schema import table_glob
from cdc.spill.store import SpillPolicy, TransactionStore
from cdc.stream.events import Change, Commit, Event, Heartbeat, Idle, SchemaChange, TableSchema
from readers.oracle.check import refuse_unlogged
from readers.oracle.columnar.stage import ColumnarFeed
from readers.oracle.config import OracleSourceConfig
from readers.oracle.convert import Converter, stream_schema
from readers.oracle.dispatcher import Dispatcher
from readers.oracle.errors import ArchiveLogMissing, MissingLog, RedoGap
from readers.oracle.miner import ParallelMiner
from readers.oracle.parse_pool import ParsePool
from readers.oracle.position import ResumeState
from readers.oracle.session import LogMinerSession, Standby, stand_in
from readers.oracle.shaping import Shaping
from readers.oracle.snapshot import OracleSnapshot

log = logging.getLogger(__name__)


def default_parse_workers() -> int:
    """One parse process when the host has a second core. Measured on the shared 2-core host
    (``cdc bench oracle --rows 1000000``): 34.7-35.2k rows/s with the worker against 29.2k without
    (load average 1.0-1.3), 30-39k against 25.4k under load 2-4. The reader thread's CPU per row
    drops from ~31 us to ~17-20 us: parsing is the largest per-row cost, the pickling both ways
    costs less than it saves."""
    return 1 if (os.cpu_count() or 1) >= 2 else 0


class OracleSource:
    def __init__(self, config: OracleSourceConfig, context: SourceContext) -> None:
        self.config, self.context = config, context
        self.name = config.name
        self.metrics = context.metrics
        self._stop = threading.Event()
        self._patterns = [t.upper() for t in config.tables]  # cdc.schema.table_glob, on Oracle's upper-case names
        self.standby: Standby | None = None
        self.miner: ParallelMiner | None = None
        self.store: TransactionStore | None = None
        self.dispatcher: Dispatcher | None = None
        self.pool: ParsePool | None = None
        self.columnar: ColumnarFeed | None = None  # pipeline: columnar
        self._dictfile: str | None = None
        self._pending_tx = 0
        self._last_report = 0.0
        self._bytes_seen: tuple[int, int] | None = None  # buffer bytes not yet reported
        self._bytes_reported = 0.0
        self._snapshot: OracleSnapshot | None = None  # snapshot hook: the initial snapshot, until read
        # -- transforms hook (cdc/transforms, readers/oracle/shaping.py): the key files are read here, so a bad one
        #    stops the start; every event leaves through it, and the native pass declines the shaped tables
        self.shaping = Shaping(config)

    def captured(self, owner: str, table: str) -> bool:
        """The row filter (the dispatcher remembers the answer per table): LogMiner rows are filtered here,
        not in SQL, so a pattern never meets LIKE's ``_``/``%`` rules."""
        return table_glob.matches(f"{owner}.{table}", self._patterns)

    def start(self, resume: dict[str, Any] | None) -> None:
        c = self.config
        state = ResumeState.from_json(resume) if resume else None
        # -- snapshot hook (readers/oracle/snapshot.py): a new stream, or one cut off mid-snapshot, starts
        #    with the tables' rows AS OF one SCN; mining then starts at the snapshot's streaming resume state
        #    (a resync requested by `cdc source skip --resync` is such a cut-off snapshot, whatever the setting)
        if (c.snapshot != "never" and resume is None) or (resume is not None and "snapshot" in resume):
            self._snapshot = OracleSnapshot.open(c, (resume or {}).get("snapshot"))  # c.temporal: its schemas
            state = ResumeState.from_json(self._snapshot.streaming_resume())
        self.standby = Standby(c)
        refuse_unlogged(self.standby.query, c.name, c.tables)  # whole row images, or no start
        if state is not None and self._logs_gone(state.low_watermark_scn):  # snapshot: when_needed
            if self._snapshot is not None:  # a snapshot cut off with its logs gone too: a new one replaces it
                self._snapshot.close()
            self._snapshot = OracleSnapshot.open(c, None, replace=True)
            state = ResumeState.from_json(self._snapshot.streaming_resume())
        if c.dictionary == "flat_file":
            self._dictfile = self.standby.build_dictionary()
        if state is not None:
            from_scn = state.low_watermark_scn
        elif c.start_scn is not None:
            from_scn = c.start_scn
        elif (served := stand_in(c.dsn)) is not None:  # a dev/test tool (the simulator): its workload's start
            from_scn = served[0].first_scn(served[1])
        else:
            from_scn = self.standby.head_scn()
        spill_dir = f"{self.context.spill_dir.rstrip('/')}/{c.name}"
        self.store = TransactionStore(spill_dir, SpillPolicy(c.spill_threshold_rows, c.spill_chunk_rows),
                                      on_bytes=self._buffer_bytes, max_memory_bytes=self.context.max_buffer_bytes)
        workers = c.parse_workers if c.parse_workers is not None else default_parse_workers()
        self.pool = ParsePool(workers) if workers else None
        self.dispatcher = Dispatcher(self.store, self.captured, resume=state, schema_of=self._schema,
                                     unsupported=c.unsupported, convert=self._converter(), on_commit=self._committed,
                                     on_ddl=self._after_ddl, pool=self.pool,
                                     dead_letter=getattr(self.context, "dead_letter", None),
                                     on_refused=self.metrics.error,
                                     shaped=self.shaping.shaped if self.shaping else None)
        self.dispatcher.mined_through = from_scn - 1
        if c.pipeline == "columnar":
            budget = self.store.outside_budget  # max_buffer_bytes' share for rows held outside the store
            self.columnar = ColumnarFeed(self.dispatcher, max_pending_rows=c.spill_threshold_rows,
                                         max_pending_bytes=budget if budget is not None else 64 << 20)
        self.miner = ParallelMiner(self.standby, lambda: LogMinerSession(c, lambda: self._dictfile),
                                   sessions=c.sessions, range_size=c.scn_range_size, overlap=c.scn_overlap,
                                   staged=c.staged_ranges, poll_interval_s=c.poll_interval_s)
        self.miner.start(from_scn)
        self.metrics.connected(True)

    def _logs_gone(self, scn: int) -> bool:
        """True when the archived logs from ``scn`` on were deleted and ``snapshot: when_needed`` re-snapshots
        instead (counted); without it ArchiveLogMissing stops the start. Other log problems are left to the
        miner, which names them where they are (a resume SCN at the head has no log yet)."""
        assert self.standby is not None
        try:
            self.standby.logs_for(scn, max(scn, self.standby.head_scn()))
            return False
        except ArchiveLogMissing as exc:
            if self.config.snapshot != "when_needed":
                raise
            log.warning("source %s: %s; snapshot: when_needed: re-snapshotting the captured tables", self.name, exc)
            self.metrics.resnapshot()
            return True
        except (RedoGap, MissingLog):
            return False

    def _after_ddl(self, scn: int) -> None:
        """A captured table changed shape: rebuild the flat-file dictionary for the next LogMiner starts.

        Ranges already mined with the old dictionary may hold rows LogMiner could
        not name ("UNKNOWN"."OBJ# n"); those stop the reader with DictionaryMismatch
        and a restart resumes before them with the new dictionary.
        """
        if self.config.dictionary == "flat_file" and self.standby is not None:
            stem, dot, ext = self.config.dictionary_file.rpartition(".")
            name = f"{stem}.{scn}.{ext}" if dot else f"{ext}.{scn}"  # dictionary.ora -> dictionary.<scn>.ora
            self._dictfile = self.standby.build_dictionary(name)  # sessions switch to it at their next start

    def _schema(self, owner: str, table: str, scn: int | None = None) -> TableSchema | None:
        """The table's definition in force at ``scn`` (the dictionary AS OF that SCN: rows mined after a restart
        are read with the definition they were written with, not today's), None when it had no columns then."""
        assert self.standby is not None
        schema = self.standby.table_schema(owner, table, scn)
        return stream_schema(schema, self.config.temporal) if schema.columns else None

    def _committed(self, open_count: int) -> None:
        """After each transaction: the metrics move at most every 0.5 s (label lookups are not free)."""
        self._pending_tx += 1
        now = time.monotonic()
        if now - self._last_report >= 0.5:
            self._report(open_count)
            self._last_report = now

    def _buffer_bytes(self, in_memory: int, spilled: int) -> None:
        """Buffer gauges, at most every 0.25 s (the store reports at every commit); the rest on idle/close."""
        self._bytes_seen = (in_memory, spilled)
        now = time.monotonic()
        if now - self._bytes_reported >= 0.25:
            self._flush_bytes(now)

    def _flush_bytes(self, now: float = 0.0) -> None:
        if self._bytes_seen is not None:
            self.metrics.buffer_bytes(*self._bytes_seen)
            self._bytes_seen, self._bytes_reported = None, now or time.monotonic()

    def _report(self, open_count: int) -> None:
        if self.dispatcher is not None:
            for (owner, table, op), n in self.dispatcher.take_counts().items():
                self.metrics.event_read(f"{owner}.{table}", op, n)
        if self._pending_tx:
            self.metrics.transaction_read(self._pending_tx)
        self.metrics.open_transactions(open_count)
        self._pending_tx = 0

    def _converter(self) -> Converter | None:
        """Applied to every Change, streamed or snapshot (readers/oracle/convert.py)."""
        if not self.config.conversions and self.config.temporal == "redo_text":
            return None
        return Converter(self.config.conversions, self.config.temporal,
                         shaped=self.shaping.shaped if self.shaping else None)

    def events(self) -> Iterator[Event]:
        """Committed transactions in commit-SCN order; a Heartbeat when idle for heartbeat_interval_s. Every
        event leaves shaped by the source's transforms (readers/oracle/shaping.py)."""
        return self.shaping.events(self._events())

    def _events(self) -> Iterator[Event]:
        """:meth:`events` before the transforms.

        With parse workers, released transactions wait in the dispatcher's parse
        pipeline; it is drained whenever the next mined rows are not there yet,
        and always before a Heartbeat (whose resume state covers them).
        """
        assert self.miner is not None and self.dispatcher is not None
        d, miner, stop = self.dispatcher, self.miner, self._stop
        feed = self.columnar.feed if self.columnar is not None else d.feed
        if self._snapshot is not None:  # snapshot hook: op 'r' chunks before the first streamed transaction
            convert = d.convert
            for event in self._snapshot.events():
                if convert is not None and type(event) is Change:
                    convert(event)  # the same conversions as a streamed row
                yield event
            self._snapshot.close()
            self._snapshot = None
        interval = self.config.heartbeat_interval_s or None  # None: heartbeats off
        last_beat = time.monotonic()
        try:
            for rr in miner.results(idle_timeout_s=min(interval or STOP_CHECK_S, STOP_CHECK_S)):
                if rr is not None:
                    for rows in rr.batches():
                        for event in feed(rows):
                            yield event
                            if type(event) is Commit or type(event) is SchemaChange:
                                last_beat = time.monotonic()
                                if stop.is_set():
                                    return
                    d.mined_through = max(d.mined_through, rr.hi)
                if d.pending and (rr is None or not miner.has_ready()):
                    for event in d.drain():
                        yield event
                        if type(event) is Commit or type(event) is SchemaChange:
                            last_beat = time.monotonic()
                            if stop.is_set():
                                return
                if stop.is_set():
                    return
                if rr is None:  # idle: report what the throttles held back
                    self._flush_bytes()
                    if self._pending_tx:
                        self._report(self._open_count())
                now = time.monotonic()
                if interval is not None and now - last_beat >= interval:
                    for event in d.drain():  # normally empty here: the resume state below covers them
                        yield event
                    last_beat = now
                    yield Heartbeat(int(time.time() * 1000), d.state().to_json())
                elif rr is None:
                    yield Idle()
        except Exception:
            if d.pending and not d.failed:  # transactions committed before the failing row go out first
                yield from d.drain()
            raise

    def caught_up(self) -> bool:
        """True when everything the standby holds has been mined and no transaction is open."""
        d = self.dispatcher
        if d is None or self.standby is None or d.open or d.pending:
            return False
        if self.columnar is not None and self.columnar.holds_open():
            return False
        return d.mined_through >= self.standby.head_scn() - 1

    def observe(self, checkpoint: dict[str, Any] | None) -> Observation:
        """cdc.contract.Observable: the snapshot read now, the transactions held open (the dispatcher's and the
        columnar stage's buffers, read-only). LogMiner does not count the transactions after a position: no
        lag in transactions (the open ones and lag_seconds say how far behind it is)."""
        snap = self._snapshot
        snapshot = None
        if snap is not None:
            progress, tables = dict(snap.progress), [str(t) for t in snap.tables]
            table = progress.get("table")
            snapshot = {"kind": "initial", "table": table, "tables_done": tables.index(table) if table in tables else 0,
                        "tables_total": len(tables), "after": progress.get("after"),
                        "resync": bool(progress.get("replace") or progress.get("streaming")), "scn": snap.scn}
        feed = self.columnar or self.dispatcher
        return Observation(snapshot=snapshot, open_transactions=feed.open_transactions() if feed is not None else [],
                           lag_transactions=None, lag_transactions_why="LogMiner does not count the transactions "
                           "after a position; see open_transactions and lag_seconds")

    def _open_count(self) -> int:
        if self.columnar is not None:
            return self.columnar.open_count
        return len(self.dispatcher.open) if self.dispatcher else 0

    def request_stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        if self._snapshot is not None:  # snapshot hook: stopped mid-snapshot
            self._snapshot.close()
        self._flush_bytes()
        if self._pending_tx:
            self._report(self._open_count())
        if self.miner is not None:
            self.miner.stop()
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        if self.columnar is not None and self.columnar.spill is not None:
            self.columnar.spill.close()  # its files and their bytes in the buffer metrics
        if self.store is not None:
            self.store.close()
        if self.standby is not None:
            self.standby.close()
        self.metrics.connected(False)
