"""Two-stage shutdown signals for the daemon (model: dlt ``common/runtime/signals.py``).

First SIGTERM or SIGINT: call ``on_first`` (the daemon asks every source to
stop at its next transaction boundary and drains). Second one: exit at once
with status 128 + signal number, without draining: whatever was written is
either whole transactions or a cut-off one that the next start closes with
an ABORTED marker, so even the hard exit loses nothing.

Why a wakeup pipe and a watcher thread instead of acting in the Python
handler: CPython runs Python-level handlers in the main thread only, and
two signals that arrive before it gets there (a busy reader thread holding
the GIL, a loaded machine) collapse into ONE handler call, so "second
signal exits at once" would silently turn into "keep draining". The C-level
handler writes one byte per delivered signal to the wakeup fd; the watcher
counts bytes, so each delivery counts.

Install from the main thread only (``signal.set_wakeup_fd`` requires it).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class TwoStageSignals:
    def __init__(self, on_first: Callable[[], None]) -> None:
        self._on_first = on_first
        self.received = threading.Event()
        self._previous: dict[int, object] = {}
        self._previous_fd = -1
        self._pipe: tuple[int, int] | None = None
        self._count = 0
        self._lock = threading.Lock()

    def install(self) -> TwoStageSignals:
        r, w = os.pipe()
        os.set_blocking(w, False)
        self._pipe = (r, w)
        for sig in SIGNALS:
            self._previous[sig] = signal.signal(sig, self._python_handler)
        self._previous_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        threading.Thread(target=self._watch, args=(r,), name="signals", daemon=True).start()
        return self

    def restore(self) -> None:
        if self._pipe is None:
            return
        signal.set_wakeup_fd(self._previous_fd)
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self._previous.clear()
        os.close(self._pipe[1])  # the watcher sees EOF and ends
        self._pipe = None

    def _python_handler(self, signum: int, frame: object) -> None:
        """Required so the default action (terminate) does not run; the watcher does the work."""

    def _watch(self, fd: int) -> None:
        while True:
            try:
                data = os.read(fd, 64)
            except OSError:
                return
            if not data:
                os.close(fd)
                return
            for signum in data:
                if signum in SIGNALS:
                    self.deliver(signum)

    def deliver(self, signum: int) -> None:
        """Count one delivered signal: the first drains, the second exits at once."""
        with self._lock:
            self._count += 1
            first = self._count == 1
        name = signal.Signals(signum).name
        if not first:
            sys.stderr.write(f"cdc: second signal ({name}): exiting immediately without draining\n")
            sys.stderr.flush()
            os._exit(128 + signum)
        self.received.set()
        log.info("%s received: draining to a transaction boundary (send again to exit at once)", name)
        self._on_first()
