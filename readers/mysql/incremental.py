"""Incremental snapshot while streaming continues: the watermark method (DBLog, Debezium).

Request: ``cdc snapshot --source S --table db.t`` inserts a row
``(id, 'execute-snapshot', 'db.t')`` into the source's signal table
(``signal_table`` in the source config, e.g. ``ops.cdc_signal``). The
running reader captures that insert from the binlog like any other row and
this hook, wrapped around MySqlSource's event stream, starts the snapshot.
No lock is taken and streaming never pauses for more than one chunk read.

Per chunk (``snapshot_chunk_rows`` rows, by primary key, keyset paging):

1. insert a LOW watermark row into the signal table (autocommit);
2. read the chunk with a plain consistent read, keep it in memory by key;
3. insert a HIGH watermark row.

The binlog then holds LOW ... (changes) ... HIGH. While the reader is
between them, every change to the table removes its key from the chunk: the
stream already carries a newer version of that row. At the HIGH watermark's
commit, the rest of the chunk is published as one transaction of ``op: r``
records. A row in it was read after LOW and not changed before HIGH, so it
is at least as new as anything earlier in the stream, and anything later in
the stream is newer: the target never goes back in time.

Resync (``cdc snapshot --resync``, signal ``execute-resync``): the same chunks, and each chunk
transaction also ends with a resync range record (cdc.stream.resync_range: ``op: "x"``) that makes the
target delete its rows in the chunk's key range that are neither in the chunk nor changed in the
window, so rows deleted at the source or added on the target go too. A chunk shorter than
``snapshot_chunk_rows`` (or empty, for an empty table or an exact multiple) is the last: its range is
open at the top. Keys must be integers (cdc.stream.resync_range says why); another key is refused.

Window keys: an update that changes the primary key removes BOTH its old and its new key from the
chunk (the old row is gone from the source; the chunk must not bring it back).

Resume: MySqlSource.resume_state() includes ``{"incremental": {queue,
table, after, resync, resyncing}}`` where ``after`` is the key of the last chunk PUBLISHED,
``resync`` the queued tables asked for with resync and ``resyncing`` whether the current table is.
After a restart the in-flight chunk is read again under fresh watermarks.
Signal rows are left in the table (they are also in the stream, harmless).
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Iterator
from typing import Any

from cdc.progress_bar import Progress, progress
from cdc.schema.logical import LogicalType
from cdc.stream.events import Begin, Change, Commit, Event, TableId
from cdc.stream.resync_range import OP as RANGE_OP
from cdc.stream.resync_range import ResyncRange, int_key, integer_key
from readers.mysql.connection import open_connection
from readers.mysql.snapshot import TableReader, estimated_rows, q
from readers.mysql.types import logical_type

log = logging.getLogger(__name__)

EXECUTE, OPEN, CLOSE = "execute-snapshot", "snapshot-window-open", "snapshot-window-close"
RESYNC = "execute-resync"
SIGNAL_DDL = "CREATE TABLE IF NOT EXISTS {table} (id VARCHAR(64) PRIMARY KEY, type VARCHAR(32) NOT NULL, " \
             "data VARCHAR(2048) NULL)"


class IncrementalSnapshots:
    """The hook: ``wrap(events)`` passes every event through and adds snapshot chunks."""

    def __init__(self, source: Any, signal_table: str, chunk_rows: int) -> None:
        self.source, self.signal, self.chunk_rows = source, TableId.parse(signal_table), chunk_rows
        self.queue: list[str] = []
        self.table: str | None = None  # table being snapshotted
        self.after: list | None = None  # key of the last chunk published
        self.chunk_id: str | None = None  # chunk read, waiting for its watermarks in the stream
        self.chunk_after: list | None = None
        self.buffer: dict[tuple, dict] = {}
        self.resync: list[str] = []  # queued tables asked for with resync
        self.resyncing = False  # the current table is resynced (chunks carry resync ranges)
        self.window_keys: set[tuple] = set()  # keys the stream changed in the current chunk's window
        self.chunk_last = False  # the chunk read reached the end of the table (resync: range open at the top)
        self.reader: TableReader | None = None
        self.in_window = False
        self.emit_due = False
        self._conn = None
        self._lines = contextlib.ExitStack()  # the progress log lines of the table being snapshotted
        self._bar: Progress | None = None

    # ---------------------------------------------------------------- resume
    def progress(self) -> dict[str, Any]:
        if self.table is None and not self.queue:
            return {}
        return {"incremental": {"queue": list(self.queue), "table": self.table, "after": self.after,
                                "resync": list(self.resync), "resyncing": self.resyncing}}

    def restore(self, resume: dict[str, Any] | None) -> None:
        state = (resume or {}).get("incremental")
        if state:
            self.queue, self.table, self.after = list(state["queue"]), state["table"], state["after"]
            self.resync, self.resyncing = list(state.get("resync") or []), bool(state.get("resyncing"))

    # ---------------------------------------------------------------- the hook
    def wrap(self, events: Iterator[Event]) -> Iterator[Event]:
        if self.table is not None and self.chunk_id is None:
            self._next_chunk()  # resumed in the middle of a table
        for ev in events:
            if type(ev) is Change:
                if ev.table == self.signal:
                    self._signal(ev)
                elif self.in_window and str(ev.table) == self.table and self.reader is not None:
                    row = ev.after if ev.after is not None else ev.before
                    if row is None:  # op "t" (TRUNCATE): every row of the chunk read before it is gone
                        self.buffer.clear()
                    else:  # both images: a key-changing update removes the old key from the source too
                        for image in (ev.before, ev.after):
                            if image is not None:
                                k = tuple(image[c] for c in self.reader.key)
                                self.buffer.pop(k, None)
                                self.window_keys.add(k)
            yield ev
            if type(ev) is Commit:
                if self.emit_due:
                    yield from self._emit()
                if self.table is None and self.queue:
                    self._start(self.queue.pop(0))

    def _signal(self, ev: Change) -> None:
        row = ev.after
        if ev.op != "c" or row is None:
            return
        kind, data = row.get("type"), row.get("data") or ""
        if kind in (EXECUTE, RESYNC):
            for t in (x.strip() for x in data.split(",")):
                self._request(t, kind == RESYNC)
        elif kind == OPEN and data == self.chunk_id:
            self.in_window = True
        elif kind == CLOSE and data == self.chunk_id:
            self.in_window = False
            self.emit_due = True

    def _request(self, t: str, resync: bool) -> None:
        """Queue ``t``; a resync asked for a table already queued upgrades it, one asked for the table being
        snapshotted without resync queues it again (its earlier chunks carried no ranges)."""
        if not t:
            return
        running = t == self.table and (self.resyncing or not resync)
        if not running and t not in self.queue:
            self.queue.append(t)
        if resync and not running and t not in self.resync:
            self.resync.append(t)
        log.info("source %s: %s of %s requested", self.source.name, "resync" if resync else "incremental snapshot", t)

    # ---------------------------------------------------------------- chunks
    def _start(self, table: str) -> None:
        self.table, self.after = table, None
        self.resyncing = table in self.resync
        if self.resyncing:
            self.resync.remove(table)
        self._next_chunk()

    def _next_chunk(self) -> None:
        """Write LOW, read the chunk, write HIGH; or finish the table when no rows remain."""
        while self.table is not None:
            conn = self._connection()
            self.reader = TableReader(conn, TableId.parse(self.table))
            if self._bar is None:  # log lines: rows read of the server's estimate, percent, ETA
                self._bar = self._lines.enter_context(progress(
                    estimated_rows(conn, [TableId.parse(self.table)]),
                    f"source {self.source.name}: incremental snapshot of {self.table} rows read", interval_s=10.0,
                    log=log))
            if not self.reader.key:
                log.error("source %s: %s has no primary key: incremental snapshot refused", self.source.name,
                          self.table)
                self._finish_table()
                continue
            if self.resyncing and not integer_key(_key_types(self.reader)):
                log.error("source %s: %s has a primary key that is not all integer columns: resync refused "
                          "(stop the daemon and run `cdc compare --repair` for it)", self.source.name, self.table)
                self._finish_table()
                continue
            chunk_id = uuid.uuid4().hex
            self._mark(conn, f"{chunk_id}:l", OPEN, chunk_id)
            rows = self.reader.chunk(self.after, self.chunk_rows)
            self._mark(conn, f"{chunk_id}:h", CLOSE, chunk_id)
            if not rows and not self.resyncing:
                self._finish_table()
                continue
            self.chunk_id = chunk_id
            self.chunk_last = len(rows) < self.chunk_rows
            self.chunk_after = self.reader.key_of(rows[-1]) if rows else self.after
            self.buffer = {tuple(self.reader.key_of(r)): r for r in rows}
            self.window_keys = set()
            self._bar.advance(len(rows))
            return

    def _finish_table(self) -> None:
        self._lines.close()  # the table's last progress line
        self._bar = None
        log.info("source %s: %s of %s done", self.source.name, "resync" if self.resyncing else "incremental snapshot",
                 self.table)
        self.table, self.after, self.chunk_id, self.reader = None, None, None, None
        self.resyncing = False
        if self.queue:
            self.table = self.queue.pop(0)
            self.resyncing = self.table in self.resync
            if self.resyncing:
                self.resync.remove(self.table)

    def _emit(self) -> Iterator[Event]:
        self.emit_due = False
        table, reader, rows = TableId.parse(self.table), self.reader, list(self.buffer.values())
        rng = self._range() if self.resyncing else None
        self.after, self.chunk_id, self.buffer, self.window_keys = self.chunk_after, None, {}, set()
        if rows or rng is not None:
            ts = int(time.time() * 1000)
            txid = f"incremental-snapshot:{table}:{self.after}" if rng is None else \
                f"resync:{table}:{None if rng.after is None else list(rng.after)}:" \
                f"{None if rng.through is None else list(rng.through)}"
            if rng is not None and rng.through is None:  # the last chunk: the table is done once it is out
                self._finish_table()
            transforms = getattr(self.source, "transforms", None)  # the transforms hook: rows leave shaped
            mapper = transforms.mapper(reader.schema) if transforms else None
            schema = reader.schema if mapper is None else mapper.schema
            if mapper is not None:
                rows = mapper.rows(rows)  # filtered, then shaped
            yield Begin(txid, ts)
            for i, row in enumerate(rows):
                yield Change(table, "r", None, row, {"incremental_snapshot": True, "row": i}, schema)
            if rng is not None:
                yield Change(table, RANGE_OP, None, None, {"resync": rng.to_text(), "row": len(rows)}, schema)
            self.source.metrics.event_read(str(table), "r", len(rows))
            yield Commit(txid, ts, self.source.resume_state(), {"snapshot": str(table)})
        self._next_chunk()

    def _range(self) -> ResyncRange:
        """The resync range of the chunk about to be published (cdc.stream.resync_range): from the last published
        key (exclusive) to the chunk's last key, open at the top for the table's last chunk; keeps the
        chunk's keys and every key the stream changed in the window."""
        keep = {int_key(list(k)) for k in self.buffer} | {int_key(list(k)) for k in self.window_keys}
        return ResyncRange(tuple(self.reader.key), None if self.after is None else int_key(self.after),
                           None if self.chunk_last else int_key(self.chunk_after), frozenset(keep))

    def _mark(self, conn: Any, id_: str, kind: str, data: str) -> None:
        with conn.cursor() as cur:
            cur.execute(f"INSERT INTO {q(self.signal.db)}.{q(self.signal.table)} (id, type, data) "
                        "VALUES (%s, %s, %s)", (id_, kind, data))

    def _connection(self):
        if self._conn is None or not self._conn.open:
            cfg = self.source.config
            self._conn = open_connection(self.source.host, cfg.user, cfg.password.get_secret_value(),
                                         cfg.connect_timeout_s, tls=cfg.tls)
            with self._conn.cursor() as cur:
                cur.execute("SET SESSION time_zone = '+00:00'")
        return self._conn

    def close(self) -> None:
        self._lines.close()
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001, S110 - closing a dead connection: nothing to do
                pass
            self._conn = None


def _key_types(reader: TableReader) -> list[LogicalType]:
    types = {c.name: c.logical or logical_type(c.type) for c in reader.schema.columns}
    return [types[k] for k in reader.key]
