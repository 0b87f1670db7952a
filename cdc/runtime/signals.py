"""Two-stage shutdown signals for the daemon (model: dlt ``common/runtime/signals.py``).

First SIGTERM or SIGINT: call ``on_first`` (the daemon asks every source to
stop at its next transaction boundary and drains). Second one: exit at once
with status 128 + signal number, without draining: whatever was written is
either whole transactions or a cut-off one that the next start closes with
an ABORTED marker, so even the hard exit loses nothing.

Install from the main thread only (Python delivers signals there).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from typing import Callable

log = logging.getLogger(__name__)

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class TwoStageSignals:
    def __init__(self, on_first: Callable[[], None]) -> None:
        self._on_first = on_first
        self.received = threading.Event()
        self._previous: dict[int, object] = {}

    def install(self) -> "TwoStageSignals":
        for sig in SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self._previous.clear()

    def _handle(self, signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        if self.received.is_set():
            sys.stderr.write(f"cdc: second {name}: exiting immediately without draining\n")
            sys.stderr.flush()
            os._exit(128 + signum)
        self.received.set()
        log.warning("%s received: draining to a transaction boundary (send again to exit at once)", name)
        self._on_first()
