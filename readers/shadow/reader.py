"""``kind: shadow``: change capture for a database without a usable log (seeds/000).

Every ``interval_s`` seconds one merge cycle runs over all configured
tables inside one consistent read of the source (MySQL: CONSISTENT
SNAPSHOT, PostgreSQL: REPEATABLE READ, DuckDB: a transaction):

1. the database computes ``key, md5(row)`` for every row, ordered by key,
   and the shadow table is read as ``key, md5`` in the same order;
2. cdc.compare.merge walks both once: a key only in the source is an
   insert (``c``; ``r`` while the shadow is still empty: the initial load),
   a key only in the shadow a delete (``d``), a key whose md5 differs an
   update (``u``);
3. the changed rows are fetched (after images) and their previous images
   read from the shadow (before images);
4. journal + shadow + applied cycle are written in one shadow transaction
   (readers/shadow/store.py), then the cycle is yielded as ONE transaction
   Begin, Change*, Commit with ``resume = {"cycle": n}``.

A cycle without changes yields only a Heartbeat. The stream therefore holds
net changes between two cycles: intermediate versions of a row between two
merges are not seen (that is the nature of the method). Tables need a
primary key: without one, which row was updated is ambiguous, so the
source refuses to start and names the table.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from cdc.compare.endpoints import from_dsn
from cdc.compare.fingerprint import quote
from cdc.compare.merge import DIFFERENT, EXTRA, MISSING, merge
from cdc.compare.shapes import TableShape, describe
from cdc.compare.table_diff import Side, split_name
from cdc.schema import table_glob
from cdc.schema.values import select_expr, stream_value, value_kind
from cdc.stream.events import Begin, Change, Column, Commit, Event, Heartbeat, Idle, TableId, TableSchema
from readers.shadow.config import ShadowSourceConfig
from readers.shadow.errors import TableWithoutKey
from readers.shadow.position import Cycle
from readers.shadow.types import of_column
from readers.shadow.store import ShadowStore

log = logging.getLogger(__name__)


class ShadowSource:
    """cdc.contract.Source over periodic MD5 merges (see module docstring)."""

    def __init__(self, config: ShadowSourceConfig, context: Any) -> None:
        self.config, self.context = config, context
        self.name = config.name
        self.metrics = getattr(context, "metrics", None)
        self.ep = from_dsn(config.name, config.dsn, config.tls, **config.login_kwargs())
        self._stop = threading.Event()
        self.cycle = 0
        self.src_conn = self.shadow_conn = None

    # ---------------------------------------------------------------- lifecycle
    def start(self, resume: dict[str, Any] | None) -> None:
        """Connect, create/reconcile the shadow copy with the stream's checkpoint."""
        self.src_conn, self.shadow_conn = self.ep.connect(), self.ep.connect()
        self.shapes: list[TableShape] = []
        for t in captured_tables(self.ep, self.src_conn, self.config.tables):
            shape = describe(self.ep.dialect, self.src_conn, *split_name(t, self.ep.default_schema))
            if not shape.primary_key:
                raise TableWithoutKey(f"shadow source {self.name}: table {t} has no primary key; the shadow method "
                                   "needs one to tell an update from a delete plus an insert", table=t)
            self.shapes.append(shape)
        self.store = ShadowStore(self.ep, self.shadow_conn, self.config.shadow_schema, self.name,
                                 self.config.journal_cycles)
        self.store.ensure(self.shapes)
        self.cycle = Cycle.from_resume(resume).number
        if resume is None:
            self.store.reset(self.shapes)  # a new stream: the first cycle publishes every row
        else:
            self.store.reconcile(self.cycle)
        self.schemas = {str(s): TableSchema(TableId(s.schema, s.table),
                                            tuple(Column(c.name, c.type, c.nullable, None, of_column(c, self.ep.dialect))
                                                  for c in s.columns),
                                            s.primary_key) for s in self.shapes}

    def request_stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        for c in (self.src_conn, self.shadow_conn):
            if c is not None:
                try:
                    c.close()
                except Exception:  # noqa: BLE001, S110 - closing a broken connection: nothing left to do
                    pass

    # ---------------------------------------------------------------- events
    def events(self) -> Iterator[Event]:
        next_cycle = time.monotonic()
        last_hb = 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_cycle:
                next_cycle = now + self.config.interval_s
                yield from self.run_cycle()
                last_hb = time.monotonic()
                continue
            if self.config.heartbeat_interval_s and now - last_hb >= self.config.heartbeat_interval_s:
                last_hb = now
                yield Heartbeat(int(time.time() * 1000), Cycle(self.cycle).to_resume())
            else:
                yield Idle()
            self._stop.wait(min(0.2, max(0.0, next_cycle - time.monotonic())))

    def run_cycle(self) -> Iterator[Event]:
        """One merge over all tables: a transaction of changes, or a Heartbeat when nothing changed."""
        cycle = self.cycle + 1
        entries, changes = self._diff_all()
        ts = int(time.time() * 1000)
        if not changes:
            yield Heartbeat(ts, Cycle(self.cycle).to_resume())
            return
        self.store.record_cycle(cycle, entries)  # before anything is yielded: see store.py
        self.cycle = cycle
        txid = f"shadow:{self.name}:{cycle}"
        yield Begin(txid, ts)
        for ch in changes:
            if self.metrics is not None:
                self.metrics.event_read(str(ch.table), ch.op)
            yield ch
        if self.metrics is not None:
            self.metrics.transaction_read()
        at = Cycle(cycle).to_resume()
        yield Commit(txid, ts, resume=at, position=at)

    def _diff_all(self) -> tuple[list, list[Change]]:
        entries: list = []
        changes: list[Change] = []
        self._begin_snapshot()
        try:
            for shape in self.shapes:
                self._diff_table(shape, entries, changes)
        finally:
            self._end_snapshot()
        return entries, changes

    def _diff_table(self, shape: TableShape, entries: list, changes: list[Change]) -> None:
        d, key = self.ep.dialect, list(shape.primary_key)
        src = Side(self.ep, shape, list(shape.columns), key, frozenset())
        shadow_shape = self.store.shapes[str(shape)]
        shadow = Side(self.ep, shadow_shape, [], key, frozenset())
        keys = ", ".join(quote(d, k) for k in key)
        s_sql = f"SELECT {keys}, {src.md5()} FROM {src.table_sql()} ORDER BY {src.order_by()}"
        t_sql = f"SELECT {keys}, _cdc_md5 FROM {shadow.table_sql()} ORDER BY {shadow.order_by()}"
        initial = not self.ep.query(self.shadow_conn, f"SELECT 1 FROM {shadow.table_sql()} LIMIT 1")
        # both sides stream through server-side cursors on their own connections: memory holds the diffs only
        diffs = list(merge(self.ep.stream(self.src_conn, s_sql, chunk=self.config.chunk_rows),
                           self.ep.stream(self.shadow_conn, t_sql, chunk=self.config.chunk_rows), str(shape)))
        if not diffs:
            return
        kinds = {c.name: value_kind(c.type, c.family, d) for c in shape.columns}
        as_key = lambda k: {c: stream_value(v, kinds[c]) for c, v in zip(key, k)}
        upserts = [dd.key for dd in diffs if dd.kind in (MISSING, DIFFERENT)]
        after = self._fetch(shape, src, upserts)
        old = [as_key(dd.key) for dd in diffs if dd.kind in (EXTRA, DIFFERENT)]
        before = self.store.before_images(str(shape), old) if old else {}
        tid, schema = TableId(shape.schema, shape.table), self.schemas[str(shape)]
        for dd in diffs:
            k = as_key(dd.key)
            kt = tuple(k.values())
            b_md5, b_row = before.get(kt, (None, None))
            a_md5, a_row = after.get(kt, (None, None))
            if dd.kind == MISSING:
                if a_row is None:
                    continue  # cannot happen inside one snapshot; tolerate a vanished row
                op = "r" if initial else "c"
            elif dd.kind == EXTRA:
                op = "d"
                if b_row is None:
                    b_row = k
            else:
                op = "u"
            entries.append((str(shape), k, b_md5, b_row, a_md5, a_row))
            changes.append(Change(tid, op, b_row if op in ("u", "d") else None, a_row if op != "d" else None,
                                  {"cycle": self.cycle + 1}, schema))

    def _fetch(self, shape: TableShape, src: Side, keys: list[tuple]) -> dict[tuple, tuple[str, dict]]:
        """(md5, after image) of the source rows of ``keys``, read in the cycle's snapshot."""
        out: dict[tuple, tuple[str, dict]] = {}
        d = self.ep.dialect
        kinds = [value_kind(c.type, c.family, d) for c in shape.columns]
        cols = ", ".join(select_expr(quote(d, c.name), k) for c, k in zip(shape.columns, kinds))
        one = "(" + " AND ".join(f"{quote(d, k)} = {self.ep.placeholder}" for k in shape.primary_key) + ")"
        for i in range(0, len(keys), 500):
            batch = keys[i:i + 500]
            sql = f"SELECT {src.md5()}, {cols} FROM {src.table_sql()} WHERE " + " OR ".join([one] * len(batch))
            for row in self.ep.query(self.src_conn, sql, tuple(v for k in batch for v in k)):
                img = {c.name: stream_value(v, k) for c, v, k in zip(shape.columns, row[1:], kinds)}
                out[tuple(img[k] for k in shape.primary_key)] = (row[0], img)
        return out

    def _begin_snapshot(self) -> None:
        cur = self.ep.cursor(self.src_conn)
        try:
            cur.execute(self.ep.sql.consistent_read)
        finally:
            if cur is not self.src_conn:
                cur.close()

    def _end_snapshot(self) -> None:
        cur = self.ep.cursor(self.src_conn)
        try:
            cur.execute("COMMIT")
        finally:
            if cur is not self.src_conn:
                cur.close()


def _base_tables(ep: Any, conn: Any) -> list[str]:
    rows = ep.query(conn, "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'")
    return [f"{s}.{t}" for s, t in rows]


def captured_tables(ep: Any, conn: Any, patterns: list[str]) -> list[str]:
    """``tables`` patterns (cdc.schema.table_glob, as every source) -> the tables they name: a literal name as given
    (a missing table fails in describe(), naming it), a glob the existing base tables it matches."""
    literal = [p for p in patterns if table_glob.is_literal(p)]
    globs = [p for p in patterns if not table_glob.is_literal(p)]
    return sorted(set(literal) | set(table_glob.select(_base_tables(ep, conn), globs) if globs else set()))


def checks(config: ShadowSourceConfig, key: str) -> list[Any]:
    """`cdc check` (cdc/checks.py) of a shadow source: the database answers and each pattern matches a table."""
    from cdc.checks import Check, pattern_checks

    ep = ShadowSource(config, None).ep  # the endpoint the source reads (nothing is opened yet)
    name = f"source {config.name}"
    try:
        conn = ep.connect()
    except Exception as exc:  # noqa: BLE001 - any driver's connection error is the finding
        return [Check(f"{name}: database", False, f"cannot connect: {exc}", f"check {key}.dsn and the login")]
    try:
        tables = _base_tables(ep, conn)
    finally:
        conn.close()
    return [Check(f"{name}: database", True, "reachable")] + pattern_checks(name, config.tables, tables, "the database",
                                                                          f"{key}.tables")
