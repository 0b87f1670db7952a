"""Initial snapshot of a MySQL/MariaDB source: the tables' rows as ``op: r`` before streaming.

With ``snapshot: initial`` and no stream yet, MySqlSource.start() calls
:class:`InitialSnapshot` (the hook is marked in readers/mysql/reader.py):

1. one connection opens ``START TRANSACTION WITH CONSISTENT SNAPSHOT``.
   MariaDB reports the binlog position of exactly that snapshot
   (``SHOW STATUS LIKE 'binlog_snapshot_%'``), turned into a GTID state by
   ``BINLOG_GTID_POS(file, pos)``: no lock at all. MySQL has no such status
   and no lock is taken there either: the read opens between a low watermark
   (``@@gtid_executed``) and a high one (the binlog position, ``SHOW BINARY LOG
   STATUS`` on 8.2+, ``SHOW MASTER STATUS`` before), and the rows the binlog
   changed in between are rolled back to the low watermark, which is the
   snapshot's state (readers/mysql/snapshot_window.py); on 8.0.30+ the
   session shows generated invisible primary keys (``my_row_id``), which the
   binlog rows carry, so the snapshot reads them too;
2. every table is read in that one transaction, chunked by primary key
   (keyset pagination, ``chunk_rows`` rows); each chunk is published as one
   transaction of ``op: r`` records whose END carries
   ``resume = {"gtid_set": <snapshot state>, "snapshot": {table, after}}``;
   a table with no rows is published as its definition alone (a SCHEMA record without statement, a
   checkpoint like a chunk's END), so the apply creates its target table and `cdc compare` finds it;
3. a Heartbeat with ``{"gtid_set": <snapshot state>}`` marks the end, and
   streaming starts at that state, so every change after the snapshot
   follows its rows in the stream.

Re-snapshot (``snapshot: when_needed``, readers/mysql/reader.py start()): when the binlog no longer
reaches the stream's checkpoint, the same snapshot runs with ``replace``: each table's FIRST chunk
transaction begins with an ``op: "t"`` record of that table, then the chunk's ``op: r`` rows (a table
with no rows gets a transaction holding only the ``t``). Why: the target holds the table as of the old
checkpoint, and rows deleted while the log was gone exist in no snapshot row, so upserting the snapshot
would leave them behind; every consumer of the stream already applies ``t`` as "delete every row of the
table" (the apply does it inside the batch's target transaction, before the rows that follow it).
Rows committed after the checkpoint and before the snapshot are in it exactly once (their state at the
snapshot), everything after it is streamed from the snapshot's GTID state, so nothing is lost or applied
twice. While a table's chunks arrive the target table holds only the chunks so far (as during an initial
snapshot); ``replace`` is kept in the resume state, so a restart continues with truncating tables not
reached yet and never truncates a table whose first chunk is already in the stream.

Restart in the middle: the stream's resume still names the snapshot state
and the next chunk. The remaining chunks are read in a NEW consistent read
(later than the first), rolled back to the original state the same way (its
window runs from that state to the new read), so streaming from the original
state applies nothing twice. Only when that window cannot be rolled back (a
TRUNCATE/DDL of a captured table or a change of a keyless one in it: logged)
do changes between the two reads apply again over newer rows, and the target
converges once streaming passes the second read. Tables without a primary
key are read in one chunk (they cannot be paged by key).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

from cdc.compare.shapes import classify
from cdc.progress_bar import progress as progress_lines
from cdc.schema import table_glob
from cdc.schema.sql_dialects import MYSQL
from cdc.schema.values import select_expr, stream_value, stream_value_is_identity, value_kind
from cdc.stream.events import Begin, Change, Commit, Event, Heartbeat, SchemaChange, TableId, TableSchema
from cdc.stream.snapshot_marks import row_mark, with_ends
from readers.mysql.connection import open_connection, server_version
from readers.mysql.schema import schema_from_information_schema
from readers.mysql.snapshot_rows import Pending, Shape, send_query
from readers.mysql.snapshot_window import (
    OPEN_ATTEMPTS,
    Images,
    SnapshotWindowError,
    WindowUnusable,
    open_watermarked,
    rolled_back,
    unseen,
    window_images,
)

log = logging.getLogger(__name__)
EMPTY_TABLE = -1  # the chunk number _chunks gives a table that has no rows at all

CHUNK_ROWS = 5_000


q = MYSQL.quote


def expand_tables(conn: Any, patterns: list[str]) -> list[TableId]:
    """Configured ``db.table`` patterns (cdc.schema.table_glob) -> the existing base tables they match, sorted."""
    with conn.cursor() as cur:
        cur.execute("SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'")
        rows = cur.fetchall()
    return sorted(TableId(db, table) for db, table in rows if table_glob.matches(f"{db}.{table}", patterns))


def estimated_rows(conn: Any, tables: list[TableId]) -> int | None:
    """The server's row estimate (information_schema TABLE_ROWS) summed over ``tables``; None when it
    has none. An estimate: exact counts would scan every table before the first row is read."""
    if not tables:
        return None
    with conn.cursor() as cur:
        cur.execute("SELECT table_schema, table_name, table_rows FROM information_schema.tables "
                    "WHERE table_type = 'BASE TABLE'")
        rows = {TableId(db, t): n for db, t, n in cur.fetchall()}
    total = sum(int(rows.get(t) or 0) for t in tables)
    return total or None


def advance_within_estimate(bar: Any, n: int) -> None:
    """Count ``n`` rows on a progress ``bar`` whose total is ``estimated_rows``: once the rows read pass
    the estimate (stale TABLE_ROWS: MySQL's can be 1 % of the truth), the total is dropped and the line
    shows the count alone, so it never reads above 100 %."""
    if bar.total is not None and bar.completed + n > bar.total:
        bar.total = None
        bar.description = bar.description.replace(" (total estimated)", " (estimate exceeded)")
    bar.advance(n)


def open_snapshot(conn: Any, flavor: str) -> tuple[str, dict[str, Any]]:
    """Start a consistent-snapshot transaction on ``conn``, with no lock; return a GTID state and a binlog
    position ``{"file", "pos"}`` (snapshot rows carry it, as Debezium's do; {} when the server has none).
    MariaDB: the read's own state and position. MySQL: the low watermark (the read sees all of it) and the
    high watermark (the read sees nothing after it): readers/mysql/snapshot_window.py rolls the read back
    to the low one."""
    with conn.cursor() as cur:
        cur.execute("SET SESSION time_zone = '+00:00'")
        cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        if flavor == "mariadb":
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            cur.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
            status = {k.lower(): v for k, v in cur.fetchall()}
            at = {"file": status["binlog_snapshot_file"], "pos": int(status["binlog_snapshot_position"])}
            cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", (at["file"], at["pos"]))
            return cur.fetchone()[0] or "", at
        cur.execute("SELECT VERSION()")
        if server_version(str(cur.fetchone()[0])) >= (8, 0, 30):
            # a generated invisible primary key (my_row_id) is in every binlog row: the snapshot must read it too
            cur.execute("SET SESSION show_gipk_in_create_table_and_information_schema = ON")
        return open_watermarked(cur)  # no lock: the window is rolled back (readers/mysql/snapshot_window.py)


class TableReader:
    """Reads one table in primary-key chunks as JSON-ready row images."""

    def __init__(self, conn: Any, table: TableId) -> None:
        self.conn, self.table = conn, table
        schema = schema_from_information_schema(conn, table.db, table.table)
        if schema is None:
            raise ValueError(f"table {table} does not exist")
        self.schema: TableSchema = schema
        self.kinds = [value_kind(c.type, classify(c.type, None, "mysql")[0], "mysql") for c in schema.columns]
        self.key = list(schema.primary_key)
        self.names = [c.name for c in schema.columns]
        # a value goes out as the driver gave it when it is an int/str/float/bool/None and stream_value is
        # the identity there for its column's kind (most columns): only the others are converted, in C's loop
        self.shape = Shape(self.names, [(partial(stream_value, kind=k), not stream_value_is_identity(k))
                                        for k in self.kinds])

    def key_of(self, row: dict[str, Any]) -> list[Any]:
        return [row[k] for k in self.key]

    def chunk(self, after: list[Any] | None, limit: int) -> list[dict[str, Any]]:
        """Rows with key > ``after`` (None: from the start), at most ``limit`` (all, without a key)."""
        return self.send(after, limit).rows(self.shape)

    def send(self, after: list[Any] | None, limit: int) -> Pending:
        """The query of ``chunk(after, limit)`` sent; ``.rows(self.shape)`` reads its rows later (before the
        connection's next query), so the server reads them while the caller publishes the chunk before."""
        cols = ", ".join(select_expr(q(c.name), k) for c, k in zip(self.schema.columns, self.kinds))
        sql = f"SELECT {cols} FROM {q(self.table.db)}.{q(self.table.table)}"
        params: tuple = ()
        if self.key:
            if after is not None:
                keys = ", ".join(q(k) for k in self.key)
                sql += f" WHERE ({keys}) > ({', '.join(['%s'] * len(self.key))})"
                params = tuple(after)
            sql += " ORDER BY " + ", ".join(q(k) for k in self.key) + f" LIMIT {int(limit)}"
        return send_query(self.conn, sql, params or None)  # rows decoded in C (snapshot_rows.py)


class InitialSnapshot:
    """Yields the snapshot chunks of a MySqlSource (see the module docstring)."""

    def __init__(self, source: Any, progress: dict[str, Any] | None, chunk_rows: int = CHUNK_ROWS,
                 replace: bool = False) -> None:
        self.source, self.chunk_rows = source, chunk_rows
        cfg = source.config
        self.conn = open_connection(source.host, cfg.user, cfg.password.get_secret_value(), cfg.connect_timeout_s,
                                    tls=cfg.tls)
        self.tables = expand_tables(self.conn, cfg.tables)
        for attempt in range(1, OPEN_ATTEMPTS + 1):
            gtid, at = open_snapshot(self.conn, source.flavor)
            if progress is None:
                start = {"gtid_set": gtid, "table": None, "after": None, "binlog": at,
                         **({"replace": True} if replace else {})}
            self.progress = dict(progress if progress is not None else start)
            try:
                self.images: Images = self._window(gtid, at)
                break
            except WindowUnusable as exc:
                failed = exc
                if progress is not None:  # a restart: the window runs from the snapshot's start, reopening is no help
                    log.warning("source %s: %s: the resumed snapshot's rows may show older values until streaming "
                                "passes %s", source.name, exc, at)
                    self.images = {}
                    break
                log.warning("source %s: snapshot attempt %d/%d: %s; opening it again", source.name, attempt,
                            OPEN_ATTEMPTS, exc)
                self.close()
                self.conn = open_connection(source.host, cfg.user, cfg.password.get_secret_value(),
                                            cfg.connect_timeout_s, tls=cfg.tls)
        else:
            raise SnapshotWindowError(
                f"source {source.name}: the initial snapshot could not open in {OPEN_ATTEMPTS} attempts: {failed}. "
                "Run it when that table is not truncated or altered, or give it a primary key",
                table=failed.fields.get("table"))
        self.binlog = self.progress.get("binlog") or {}  # where the FIRST read began (kept across restarts)
        log.info("source %s: snapshot of %d tables at %s", source.name, len(self.tables), self.progress["gtid_set"])

    def _window(self, gtid: str, at: dict[str, Any]) -> Images:
        """The rows to roll the read back to the stream's state with (readers/mysql/snapshot_window.py); none when
        the read is at that state (MariaDB's first read)."""
        since = self.progress["gtid_set"]
        if self.source.flavor == "mariadb" and since == gtid:
            return {}
        keys = {}
        for t in self.tables:
            schema = schema_from_information_schema(self.conn, t.db, t.table)
            keys[t] = list(schema.primary_key) if schema is not None else []
        images = window_images(self.source, since, at, keys)
        if images:
            log.info("source %s: snapshot read rolled back to %s for %d rows changed while it opened",
                     self.source.name, since, sum(len(v) for v in images.values()))
        return images

    @property
    def gtid_set(self) -> str:
        return self.progress["gtid_set"]

    def events(self) -> Iterator[Event]:
        """Chunks as transactions, then the Heartbeat that ends the snapshot; closes the connection. The
        snapshot's first and last rows carry ``snapshot: first`` / ``last`` (cdc.stream.snapshot_marks)."""
        start = self.progress.get("table")
        left = [t for t in self.tables if start is None or t >= TableId.parse(start)]
        began, rows = time.monotonic(), 0
        try:
            stopped = self.source._stop.is_set
            estimate = estimated_rows(self.conn, left)
            what = f"source {self.source.name}: snapshot rows" + (" (total estimated)" if estimate else "")
            with progress_lines(estimate, what, interval_s=10.0, log=log) as bar:  # log lines with % and ETA
                for chunk, first, last in with_ends(self._chunks(), lambda c: bool(c[2]),
                                                    fresh=start is None, complete=lambda: not stopped()):
                    yield from self._chunk(*chunk, first=first, last=last)
                    advance_within_estimate(bar, len(chunk[2]))
                    rows += len(chunk[2])
            if stopped():
                return  # the resume state of the last chunk continues here
            log.info("source %s: snapshot done: %d rows of %d tables in %.1fs; the binlog follows from %s",
                     self.source.name, rows, len(left), time.monotonic() - began, self.gtid_set)
            ts = int(time.time() * 1000)
            yield Heartbeat(ts, {"gtid_set": self.gtid_set})
        finally:
            self.close()

    def _chunks(self) -> Iterator[tuple[TableId, TableSchema, list[dict], int, bool, dict[str, Any]]]:
        """(table, schema, rows, chunk number, replace, the resume progress after this chunk), in order;
        the progress is taken at reading time (events() reads one chunk ahead)."""
        start = self.progress.get("table")
        for table in self.tables:
            if start is not None and table < TableId.parse(start):
                continue  # finished before the restart
            after = self.progress.get("after") if str(table) == start else None
            reader = TableReader(self.conn, table)
            images, used = self.images.get(table, {}), set()
            resumed_after = after
            n = 0
            replace = after is None and bool(self.progress.get("replace"))  # the table's first chunk
            pending = reader.send(after, self.chunk_rows)
            try:
                while True:
                    read = pending.rows(reader.shape)
                    last = not reader.key or len(read) < self.chunk_rows
                    if not last:  # read ahead: the server reads the next chunk while this one is published
                        pending = reader.send(reader.key_of(read[-1]), self.chunk_rows)
                    rows = rolled_back(read, reader.key, images, used)
                    if images:  # rows the window deleted: at the stream's state they exist, the read no longer sees
                        # them; each goes out with the chunk whose key range holds it (the last chunk: all the rest)
                        rows += unseen(reader.key, images, used, after,
                                       None if last or not read else reader.key_of(read[-1]))
                    if not rows and not replace:
                        if not last and read:  # every row of this chunk was rolled back out of it: read on
                            after = reader.key_of(read[-1])
                            continue
                        if n == 0 and resumed_after is None:  # an empty table: its definition still goes out
                            self.progress.update(table=str(table), after=None)
                            yield table, reader.schema, rows, EMPTY_TABLE, False, dict(self.progress)
                        break
                    after = reader.key_of(read[-1]) if reader.key and read else after
                    self.progress.update(table=str(table), after=after)
                    yield table, reader.schema, rows, n, replace, dict(self.progress)
                    n, replace = n + 1, False
                    if last or self.source._stop.is_set():
                        break
            finally:
                pending.drop()  # a chunk read ahead that is not needed (a stop): off the socket before a next query
            if self.source._stop.is_set():
                return

    def close(self) -> None:
        """End the consistent read (idempotent): an open snapshot holds metadata locks."""
        if self.conn.open:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001, S110 - the connection is already broken: nothing to end
                pass

    def _chunk(self, table: TableId, schema: TableSchema, rows: list[dict], n: int, replace: bool,
               progress: dict[str, Any], *, first: bool = False, last: bool = False) -> Iterator[Event]:
        """One chunk as a transaction; ``replace``: it starts with an ``op: "t"`` (see the module docstring);
        ``first``/``last``: it holds the snapshot's first/last row."""
        ts = int(time.time() * 1000)
        transforms = getattr(self.source, "transforms", None)  # the transforms hook: rows leave shaped
        mapper = transforms.mapper(schema) if transforms else None
        if mapper is not None:
            schema, rows = mapper.schema, mapper.rows(rows)  # filtered, then shaped
        if n == EMPTY_TABLE:  # no rows: the table's definition alone, so every consumer (the apply's target
            # table, `cdc compare`) knows the table exists; a checkpoint like a chunk's END (a restart reads
            # the table again: it is still empty, or its rows come from that newer read)
            yield SchemaChange(table, None, schema, ts, {"gtid_set": self.gtid_set, "snapshot": progress})
            return
        txid = f"snapshot:{table}:{n}"
        yield Begin(txid, ts)
        if replace:
            yield Change(table, "t", None, None, {"snapshot_gtid": self.gtid_set, "row": 0, **self.binlog}, schema)
        base = {"snapshot_gtid": self.gtid_set, "row": 0, **self.binlog}  # each row's: a copy, its own "row"
        marked, count = first or last, len(rows)
        for i, row in enumerate(rows):
            src = base.copy()
            src["row"] = i
            if marked:
                mark = row_mark(i, count, first, last)
                if mark is not None:
                    src["snapshot"] = mark
            yield Change(table, "r", None, row, src, schema)
        self.source.metrics.event_read(str(table), "r", len(rows))
        yield Commit(txid, ts, {"gtid_set": self.gtid_set, "snapshot": progress},
                     {"snapshot": str(table), "chunk": n})
