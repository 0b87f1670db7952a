"""Progress reporting for long operations (demo, benchmarks, compare, snapshots).

One small API::

    from cdc.progress_bar import progress

    with progress(total=500_000, description="insert rows") as bar:
        for chunk in chunks:
            ...
            bar.advance(len(chunk))

In a terminal (the stream is a TTY) it draws a ``rich`` progress bar. Otherwise
(CI, pipes, log files) it prints one plain line at most every ``interval_s``
seconds, plus a final line, so logs stay readable (no carriage returns, no
terminal escapes)::

    insert rows: 120000/500000 (24.0%) 61234/s elapsed 2.0s eta 6s

``log=<logger>`` sends those lines through logging instead (INFO), whatever
the stream and ``CDC_PROGRESS`` (the logging level decides): the daemon's
long work (an initial snapshot) reports in its own log format (JSON with
``logging.json``) rather than drawing on a terminal.

``total=None`` means unknown: counts and rates are shown without a
percentage. ``advance`` is cheap (no I/O unless a line is due) and
thread-safe. The bar writes to stderr by default so that commands printing
a JSON result line on stdout (``cdc bench``) keep stdout clean.
Set ``CDC_PROGRESS=plain`` to force plain lines, ``CDC_PROGRESS=off`` to
silence it.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO


class Progress:
    """The handle ``progress()`` yields: ``advance(n)``, ``update(completed)``."""

    def __init__(self, total: int | None, description: str) -> None:
        self.total = total
        self.description = description
        self.completed = 0
        self.started = time.monotonic()
        self._lock = threading.Lock()

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.completed += n
        self._changed()

    def update(self, completed: int) -> None:
        """Set the absolute count (for callers that know the position, not the step)."""
        with self._lock:
            self.completed = completed
        self._changed()

    def set_description(self, description: str) -> None:
        self.description = description
        self._changed()

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.completed / elapsed
        eta = ""
        if self.total:
            pct = 100.0 * self.completed / self.total
            head = f"{self.completed}/{self.total} ({pct:.1f}%)"
            if 0 < self.completed < self.total:
                eta = f" eta {duration((self.total - self.completed) / rate)}"
        else:
            head = f"{self.completed}"
        return f"{self.description}: {head} {rate:.0f}/s elapsed {elapsed:.1f}s{eta}"

    def _changed(self) -> None:  # overridden by the renderers
        pass

    def _finish(self) -> None:
        pass


def duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h07m``: an ETA reads at a glance."""
    s = int(seconds + 0.5)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class _Silent(Progress):
    pass


class _PlainLines(Progress):
    """Non-TTY renderer: a line every ``interval_s`` seconds and one at the end."""

    def __init__(self, total: int | None, description: str, stream: IO[str], interval_s: float,
                 log: logging.Logger | None = None) -> None:
        super().__init__(total, description)
        self._stream, self._log = stream, log
        self._interval = interval_s
        self._next = self.started + interval_s

    def _changed(self) -> None:
        now = time.monotonic()
        if now >= self._next:
            self._next = now + self._interval
            self._emit()

    def _emit(self) -> None:
        if self._log is not None:
            self._log.info("%s", self.line())
        else:
            print(self.line(), file=self._stream, flush=True)

    def _finish(self) -> None:
        self._emit()


class _RichBar(Progress):
    """TTY renderer: a live rich progress bar."""

    def __init__(self, total: int | None, description: str, stream: IO[str]) -> None:
        super().__init__(total, description)
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress

        self._rich = RichProgress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                  MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                                  console=Console(file=stream), transient=False)
        self._task = self._rich.add_task(description, total=total)
        self._rich.start()

    def _changed(self) -> None:
        self._rich.update(self._task, completed=self.completed, description=self.description)

    def _finish(self) -> None:
        self._changed()
        self._rich.stop()


def _mode(stream: IO[str]) -> str:
    forced = os.environ.get("CDC_PROGRESS", "").lower()
    if forced in ("off", "plain", "rich"):
        return forced
    isatty = getattr(stream, "isatty", None)
    return "rich" if isatty is not None and isatty() else "plain"


@contextmanager
def progress(total: int | None, description: str, *, stream: IO[str] | None = None,
             interval_s: float = 5.0, log: logging.Logger | None = None) -> Iterator[Progress]:
    """Report progress of a long operation; see the module docstring.

    The final state is always written (bar completed, or a last plain line),
    also when the body raises.
    """
    out = stream if stream is not None else sys.stderr
    mode = "log" if log is not None else _mode(out)
    bar: Progress
    if mode == "off":
        bar = _Silent(total, description)
    elif mode == "rich":
        bar = _RichBar(total, description, out)
    else:
        bar = _PlainLines(total, description, out, interval_s, log)
    try:
        yield bar
    finally:
        bar._finish()
