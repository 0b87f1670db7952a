"""Parallel mining: N LogMiner sessions on consecutive SCN ranges, results kept in order.

The seed paper's "SCN queue": ranges ``[lo, hi]`` are handed out in order,
each to whichever session is free, and recorded in an ordered queue at the
moment they are handed out. The dispatcher consumes the queue strictly in
order, so rows reach it in SCN order however the sessions race. Each
session stages its rows in its range's own buffer as it fetches them, so a
session never waits for the dispatcher; at most ``staged_ranges`` ranges
are in flight (mined but not yet consumed), which bounds memory.

Overlap: a session mines ``[lo - scn_overlap, hi]`` and drops the rows below
``lo``, giving LogMiner context from before the range (rows of a
transaction that began earlier are still attributed correctly); the
dispatcher keeps transaction state across ranges, so a transaction spanning
ranges is assembled whole.

A range ends at the standby's applied head: ranges are never handed out
beyond redo the standby has received. An error while mining a range is
raised by ``results()`` when the dispatcher reaches that range, in order.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from readers.oracle.session import LogMinerSession, Standby


class RangeResult:
    """The rows of one SCN range, staged as the session fetches them (lists of tuples, or Arrow tables with
    ``pipeline: columnar``)."""

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi
        self._batches: collections.deque[list[tuple]] = collections.deque()
        self._done = False
        self._error: BaseException | None = None
        self._cv = threading.Condition()

    def put(self, rows: list[tuple]) -> None:
        with self._cv:
            self._batches.append(rows)
            self._cv.notify()

    def finish(self, error: BaseException | None = None) -> None:
        with self._cv:
            self._done, self._error = True, error
            self._cv.notify()

    def ready(self) -> bool:
        """True when batches() would not wait: rows staged, or the range finished."""
        return bool(self._batches) or self._done

    def batches(self) -> Iterator[list[tuple]]:
        while True:
            with self._cv:
                while not self._batches and not self._done:
                    self._cv.wait(0.5)
                if self._batches:
                    rows = self._batches.popleft()
                elif self._error is not None:
                    raise self._error
                else:
                    return
            yield rows


class ParallelMiner:
    def __init__(self, standby: Standby, open_session: Callable[[], LogMinerSession], *, sessions: int,
                 range_size: int, overlap: int, staged: int, poll_interval_s: float) -> None:
        self.standby, self._open_session = standby, open_session
        self.n, self.range_size, self.overlap = sessions, range_size, overlap
        self.poll_interval_s = poll_interval_s
        self._slots = threading.Semaphore(max(staged, sessions))
        self._lock = threading.Lock()
        self._queue: collections.deque[RangeResult] = collections.deque()
        self._queued = threading.Condition(self._lock)
        self._next_lo = self._first = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.sessions: list[LogMinerSession] = []

    def start(self, from_scn: int) -> None:
        """Mine from ``from_scn`` (inclusive) onwards."""
        self._next_lo = self._first = from_scn
        for i in range(self.n):
            session = self._open_session()
            self.sessions.append(session)
            t = threading.Thread(target=self._work, args=(session,), name=f"logminer-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def _claim(self) -> RangeResult | None:
        """Next range up to the standby's head, queued in order; None when caught up."""
        with self._lock:
            lo = self._next_lo
            head = self.standby.head_scn()
            if lo > head:
                return None
            rr = RangeResult(lo, min(lo + self.range_size - 1, head))
            self._next_lo = rr.hi + 1
            self._queue.append(rr)
            self._queued.notify_all()
            return rr

    def _work(self, session: LogMinerSession) -> None:
        while not self._stop.is_set():
            if not self._slots.acquire(timeout=0.5):
                continue
            try:
                rr = self._claim()
            except BaseException as exc:  # the standby failed: surface it in order through a range  # noqa: BLE001 -- surfaced in order
                rr = RangeResult(self._next_lo, self._next_lo)
                with self._lock:
                    self._queue.append(rr)
                    self._queued.notify_all()
                rr.finish(exc)
                return
            if rr is None:
                self._slots.release()
                self._stop.wait(self.poll_interval_s)
                continue
            try:
                lo = max(self._first, rr.lo - self.overlap)  # never before the first SCN we were asked for
                logs = self.standby.logs_for(lo, rr.hi)
                for rows in session.mine(lo, rr.hi, logs):
                    if lo < rr.lo:
                        rows = (rows.filter(pc.greater_equal(rows.column(0), rr.lo)) if isinstance(rows, pa.Table)
                                else [r for r in rows if r[0] >= rr.lo])
                    if len(rows):
                        rr.put(rows)
                    if self._stop.is_set():
                        break
                rr.finish()
            except BaseException as exc:  # noqa: BLE001 -- surfaced in order
                rr.finish(exc)
                return

    def has_ready(self) -> bool:
        """True when the next range in order has rows staged (or is finished): reading it will not wait."""
        with self._lock:
            return bool(self._queue) and self._queue[0].ready()

    def results(self, idle_timeout_s: float) -> Iterator[RangeResult | None]:
        """Ranges in SCN order; None after ``idle_timeout_s`` without a new range (caller heartbeats)."""
        while not self._stop.is_set():
            with self._lock:
                if not self._queue:
                    self._queued.wait(idle_timeout_s)
                rr = self._queue.popleft() if self._queue else None
            yield rr
            if rr is not None:
                self._slots.release()

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=5)
        for s in self.sessions:
            s.close()
