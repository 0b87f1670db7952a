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

Resume: MySqlSource.resume_state() includes ``{"incremental": {queue,
table, after}}`` where ``after`` is the key of the last chunk PUBLISHED.
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

from cdc.events import Begin, Change, Commit, Event, TableId
from cdc.progress_bar import Progress, progress
from readers.mysql.connection import open_connection
from readers.mysql.snapshot import TableReader, estimated_rows, q

log = logging.getLogger(__name__)

EXECUTE, OPEN, CLOSE = "execute-snapshot", "snapshot-window-open", "snapshot-window-close"
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
        return {"incremental": {"queue": list(self.queue), "table": self.table, "after": self.after}}

    def restore(self, resume: dict[str, Any] | None) -> None:
        state = (resume or {}).get("incremental")
        if state:
            self.queue, self.table, self.after = list(state["queue"]), state["table"], state["after"]

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
                    else:
                        self.buffer.pop(tuple(row[k] for k in self.reader.key), None)
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
        if kind == EXECUTE:
            for t in (x.strip() for x in data.split(",")):
                if t and t != self.table and t not in self.queue:
                    self.queue.append(t)
                    log.info("source %s: incremental snapshot of %s requested", self.source.name, t)
        elif kind == OPEN and data == self.chunk_id:
            self.in_window = True
        elif kind == CLOSE and data == self.chunk_id:
            self.in_window = False
            self.emit_due = True

    # ---------------------------------------------------------------- chunks
    def _start(self, table: str) -> None:
        self.table, self.after = table, None
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
            chunk_id = uuid.uuid4().hex
            self._mark(conn, f"{chunk_id}:l", OPEN, chunk_id)
            rows = self.reader.chunk(self.after, self.chunk_rows)
            self._mark(conn, f"{chunk_id}:h", CLOSE, chunk_id)
            if not rows:
                self._finish_table()
                continue
            self.chunk_id = chunk_id
            self.chunk_after = self.reader.key_of(rows[-1])
            self.buffer = {tuple(self.reader.key_of(r)): r for r in rows}
            self._bar.advance(len(rows))
            return

    def _finish_table(self) -> None:
        self._lines.close()  # the table's last progress line
        self._bar = None
        log.info("source %s: incremental snapshot of %s done", self.source.name, self.table)
        self.table, self.after, self.chunk_id, self.reader = None, None, None, None
        if self.queue:
            self.table = self.queue.pop(0)

    def _emit(self) -> Iterator[Event]:
        self.emit_due = False
        table, reader, rows = TableId.parse(self.table), self.reader, list(self.buffer.values())
        self.after, self.chunk_id, self.buffer = self.chunk_after, None, {}
        if rows:
            ts = int(time.time() * 1000)
            txid = f"incremental-snapshot:{table}:{self.after}"
            yield Begin(txid, ts)
            for i, row in enumerate(rows):
                yield Change(table, "r", None, row, {"incremental_snapshot": True, "row": i}, reader.schema)
            self.source.metrics.event_read(str(table), "r", len(rows))
            yield Commit(txid, ts, self.source.resume_state(), {"snapshot": str(table)})
        self._next_chunk()

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
