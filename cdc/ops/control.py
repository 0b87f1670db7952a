"""A source's operator state, and the operations record that audits every action in the change stream.

An operations record is a HEARTBEAT record (cdc.stream.envelope) whose ``resume`` is the stream's
checkpoint unchanged plus an ``operation`` entry ``{"action", "actor", "at_ms", "detail"}``. Every
reader of the stream already takes a HEARTBEAT between transactions and applies nothing of it, so
every consumer passes over it unless it asks (reads ``resume.operation``); the checkpoint it carries
is the one before it, so resuming from it is resuming from that checkpoint. ``cdc source skip`` has
always recorded its skip the same way (``resume.skipped``).

The pause survives a restart because it is the stream's last record while the source is paused:
nothing else is written meanwhile. A daemon starting on a stream whose tail is a ``pause`` record
stays paused (:func:`paused_by`) until a ``resume`` is written.
"""

from __future__ import annotations

import threading
import time
from typing import Any

ACTIONS = ("pause", "resume", "restart", "skip", "resync", "schema")


def operation(action: str, actor: str, **detail: Any) -> dict[str, Any]:
    """The ``operation`` entry of an operations record."""
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}; known: {', '.join(ACTIONS)}")
    return {"action": action, "actor": actor, "at_ms": int(time.time() * 1000), "detail": detail}


def operation_of(resume: dict[str, Any] | None) -> dict[str, Any] | None:
    """The ``operation`` entry of a record's resume state (None: not an operations record)."""
    return resume.get("operation") if isinstance(resume, dict) else None


def paused_by(resume: dict[str, Any] | None) -> dict[str, Any] | None:
    """The pause operation when the stream's tail (its last checkpoint) is a pause record, else None."""
    op = operation_of(resume)
    return op if op is not None and op.get("action") == "pause" else None


def checkpoint_of(resume: dict[str, Any] | None) -> dict[str, Any] | None:
    """``resume`` without the operation entry: what a reader starts from."""
    if not isinstance(resume, dict) or "operation" not in resume:
        return resume
    return {k: v for k, v in resume.items() if k != "operation"}


class SourceControl:
    """What the operator asked of one source. Written by the API thread, read by the source's thread.

    ``paused``: the source is to stop at its next transaction boundary and stay stopped; ``pending``:
    operations records not written yet (the source thread writes them between transactions, or at
    once when it does not run). ``wake`` is set whenever either changes."""

    def __init__(self) -> None:
        self.paused = False
        self.paused_since: dict[str, Any] | None = None  # the pause operation in force
        self.pending: list[dict[str, Any]] = []
        self.wake = threading.Event()
        self.lock = threading.Lock()

    def add(self, op: dict[str, Any]) -> None:
        with self.lock:
            self.pending.append(op)
        self.wake.set()

    def take(self) -> list[dict[str, Any]]:
        with self.lock:
            ops, self.pending = self.pending, []
        return ops
