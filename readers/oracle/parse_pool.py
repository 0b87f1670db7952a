"""SQL_REDO parsing in worker processes, so parsing overlaps dispatching and publishing.

Parsing costs more than everything else the reader does per row, and in
Python one process runs Python code on one core at a time. ``ParsePool``
starts ``workers`` child processes (``python -m readers.oracle.parse_pool``:
a fresh interpreter, so neither the threads of the reader process nor the
caller's ``__main__`` matter); a job is a list of SQL_REDO texts, sent to
the workers in turn (pickled over the child's stdin by a writer thread),
and ``result()`` hands results back strictly in submission order (read from
its stdout by a reader thread). Each result is three parallel lists, ``(ops,
befores, afters)``, one entry per statement (no tuple per row: cheaper to
unpickle, and fewer objects for the collector); a statement that cannot be
parsed has op ``ERROR`` and ``(class name, message, offset)`` as its before:
the dispatcher raises it with SCN, XID and table, at that row, in order.

The caller bounds the jobs in flight (memory). A worker that dies is
reported as a LogMinerError, never a wait without end.
"""

from __future__ import annotations

import pickle
import queue
import subprocess
import sys
import threading
from typing import Any

from readers.oracle.errors import DictionaryMismatch, LogMinerError, RedoParseError

ERROR = "!"
_EOF = object()


def _serve() -> None:
    """The worker: jobs (pickled lists of SQL_REDO) on stdin -> result lists on stdout."""
    import signal

    from readers.oracle.parser import parse_redo

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the reader's to handle; it ends us via stdin
    src, dst = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write to the result stream
    while True:
        try:
            sqls = pickle.load(src)
        except EOFError:
            return
        if sqls is None:
            return
        ops: list[str] = []
        befores: list[Any] = []
        afters: list[Any] = []
        op_, before_, after_ = ops.append, befores.append, afters.append
        for sql in sqls:
            try:
                op, _schema, _table, before, after = parse_redo(sql)
            except (RedoParseError, DictionaryMismatch) as exc:
                op, before, after = ERROR, (type(exc).__name__, exc.message, exc.fields.get("offset")), None
            op_(op)
            before_(before)
            after_(after)
        pickle.dump((ops, befores, afters), dst, protocol=pickle.HIGHEST_PROTOCOL)
        dst.flush()


def parse_error(result: tuple, **fields: Any) -> RedoParseError | DictionaryMismatch:
    """The parse error a worker reported, with the row's context in ``fields``."""
    _, kind, message, offset = result
    cls = DictionaryMismatch if kind == "DictionaryMismatch" else RedoParseError
    return cls(message, offset=offset, **fields)


class _Worker:
    def __init__(self, index: int) -> None:
        self.name = f"redo-parse-{index}"
        self.proc = subprocess.Popen([sys.executable, "-m", "readers.oracle.parse_pool"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        self.jobs: queue.Queue[Any] = queue.Queue()
        self.results: queue.Queue[Any] = queue.Queue()
        self._threads = [threading.Thread(target=self._write, name=f"{self.name}-in", daemon=True),
                         threading.Thread(target=self._read, name=f"{self.name}-out", daemon=True)]
        for t in self._threads:
            t.start()

    def _write(self) -> None:
        out = self.proc.stdin
        try:
            while True:
                job = self.jobs.get()
                pickle.dump(job, out, protocol=pickle.HIGHEST_PROTOCOL)
                out.flush()
                if job is None:
                    return
        except (OSError, ValueError):  # the worker is gone: the reader thread reports it
            return

    def _read(self) -> None:
        src = self.proc.stdout
        try:
            while True:
                self.results.put(pickle.load(src))
        except (EOFError, OSError, ValueError, pickle.UnpicklingError):
            self.results.put(_EOF)

    def close(self) -> None:
        self.jobs.put(None)
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=2)
        for t in self._threads:
            t.join(timeout=2)
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass


class ParsePool:
    def __init__(self, workers: int = 1) -> None:
        self._workers = [_Worker(i) for i in range(max(1, workers))]
        self._next_in = self._next_out = 0
        self.in_flight = 0

    def submit(self, sqls: list[str]) -> None:
        """Queue one job; the list must not change afterwards (it is pickled by another thread)."""
        self._workers[self._next_in % len(self._workers)].jobs.put(sqls)
        self._next_in += 1
        self.in_flight += 1

    def ready(self) -> bool:
        """True when the oldest job's result has arrived (result() will not wait)."""
        return self.in_flight > 0 and not self._workers[self._next_out % len(self._workers)].results.empty()

    def result(self) -> tuple[list[str], list[Any], list[Any]]:
        """The oldest job's results, ``(ops, befores, afters)`` (waits for them)."""
        worker = self._workers[self._next_out % len(self._workers)]
        out = worker.results.get()
        if out is _EOF:
            worker.results.put(_EOF)
            raise LogMinerError(f"SQL_REDO parse worker {worker.name} died (exit code {worker.proc.poll()})",
                                worker=worker.name)
        self._next_out += 1
        self.in_flight -= 1
        return out

    def close(self) -> None:
        for w in self._workers:
            w.close()
        self._workers = []


if __name__ == "__main__":
    _serve()
