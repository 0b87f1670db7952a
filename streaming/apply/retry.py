"""Retrying a micro-batch after a transient target error (``apply[].retry``).

The engine rolls a batch back whole when the target fails transiently (a lock
or statement timeout, a deadlock, a serialization failure, a lost or silent
connection: Target.classify says which) and raises TargetTransient. Here the
batch is applied again, the same records under the same batch id, after a
backoff that doubles from ``initial_backoff_s`` up to ``max_backoff_s``, at
most ``attempts`` times in all. Before each new attempt the engine re-reads
the target's state: a lost connection is replaced, the progress row (the
authority: a COMMIT cut off on the wire may or may not have happened) and the
schema memory are read again, so the retry skips what the target already
holds and applies the rest exactly once.

Each retry is logged once (target, batch, sequence range, cause, attempt)
and counted in ``cdc_apply_retries_total{cause}``. When the attempts run
out, TargetUnavailable names target, batch, sequence range and the last
cause; nothing of the batch was applied, and a restart resumes from the
progress row.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from cdc.config.models import ApplyRetry
from cdc.errors import CdcError
from streaming.apply.engine import ApplyEngine, BatchResult
from streaming.errors import TargetError, TargetTransient, TargetUnavailable
from streaming.targets.base import ErrorKind

log = logging.getLogger(__name__)


def backoff_s(policy: ApplyRetry, attempt: int) -> float:
    """The pause after failed attempt ``attempt`` (1-based)."""
    return min(policy.max_backoff_s, policy.initial_backoff_s * 2 ** (attempt - 1))


def apply_with_retry(engine: ApplyEngine, apply: Callable[[], BatchResult], batch_id: int, span: str,
                     policy: ApplyRetry, stop: threading.Event | None = None,
                     on_retry: Callable[[TargetTransient, int], None] | None = None) -> BatchResult:
    """``apply()`` (one attempt of batch ``batch_id``, sequences ``span``), retried on TargetTransient.

    ``on_retry(error, attempt)`` is told before each pause (the job shows it on /readyz). A ``stop`` set
    during a pause ends the retries at once with the last error (SIGTERM: nothing of the batch is applied).
    Raises TargetUnavailable when the attempts ran out; any other error goes through unchanged."""
    started = time.monotonic()
    attempt, first = 1, None
    while True:
        try:
            return apply()
        except TargetTransient as exc:
            last = exc
        first = first or _detail(last)
        if attempt >= policy.attempts or (stop is not None and stop.is_set()):
            raise _gave_up(engine, last, first, batch_id, span, attempt, time.monotonic() - started)
        pause = backoff_s(policy, attempt)
        engine.metrics.batch_retried(str(last.fields.get("cause") or "?"))
        log.warning("target %r: batch %s (sequences %s) failed transiently (%s); rolled back whole, "
                    "attempt %d of %d in %.1fs", engine.target.name, batch_id, span, _detail(last), attempt + 1,
                    policy.attempts, pause)
        if on_retry is not None:
            on_retry(last, attempt)
        while True:  # pause, then reconnect and re-read the target's state (itself an attempt when it fails)
            if stop is not None:
                if stop.wait(pause):  # SIGTERM: no further attempt, nothing of the batch applied
                    raise _gave_up(engine, last, first, batch_id, span, attempt, time.monotonic() - started)
            else:
                time.sleep(pause)
            attempt += 1
            try:
                resume(engine)
                break
            except Exception as exc:
                if not _transient(engine, exc):
                    raise
                if attempt >= policy.attempts or (stop is not None and stop.is_set()):
                    raise _gave_up(engine, exc, first, batch_id, span, attempt, time.monotonic() - started) from None
                pause = backoff_s(policy, attempt)
                engine.metrics.batch_retried(type(exc).__name__)
                log.warning("target %r: batch %s (sequences %s): reconnecting failed (%s), attempt %d of %d "
                            "in %.1fs", engine.target.name, batch_id, span, _detail(exc),
                            attempt + 1, policy.attempts, pause)


def resume(engine: ApplyEngine) -> None:
    """Make the engine's view of the target true again after a rolled-back batch: a connection (a new one
    if the old was lost), the progress row and the schema memory as the target holds them."""
    engine.target.abandon()
    engine.target.open()
    engine.progress = engine.target.read_progress(engine.source)
    engine.catalog.tables.clear()
    engine.catalog.load()


def _transient(engine: ApplyEngine, exc: BaseException) -> bool:
    if isinstance(exc, CdcError):
        return isinstance(exc, TargetError)  # cannot connect (TargetTransient is one too)
    return engine.target.classify(exc) is ErrorKind.TRANSIENT


def _detail(exc: BaseException) -> str:
    """The first line of what went wrong, without what the log line names already (target, batch)."""
    if isinstance(exc, TargetTransient):  # "target ... applying batch N (sequences a..b): <driver's words>; ..."
        text = exc.message.split("): ", 1)[-1].removesuffix("; the batch was rolled back whole")
    else:
        text = exc.message if isinstance(exc, CdcError) else f"{type(exc).__name__}: {exc}"
    return (text.strip().splitlines() or [""])[0][:300]


def _gave_up(engine: ApplyEngine, last: BaseException, first: str | None, batch_id: int, span: str, attempts: int,
             elapsed: float) -> TargetUnavailable:
    engine.target.abandon()
    cause = last.fields.get("cause") if isinstance(last, TargetTransient) else type(last).__name__
    detail = _detail(last)
    if first and first != detail:
        detail = f"{first}, then {detail}"
    return TargetUnavailable(
        f"target {engine.target.name!r} could not apply batch {batch_id} (sequences {span}) in {attempts} "
        f"attempt(s) over {elapsed:.0f}s: {detail}. Nothing of the batch was applied: once the target "
        f"is reachable, restart `cdc apply` (it resumes from the target's progress row, exactly once), or raise "
        f"apply[].retry.attempts / targets[].timeouts", target=engine.target.name, batch=batch_id, sequence=span,
        attempts=attempts, cause=cause)


def sequence_span(table: Any) -> str:
    """``first..last`` sequence of a micro-batch's records (an Arrow table with a ``sequence`` column)."""
    import pyarrow.compute as pc

    if table is None or not table.num_rows or "sequence" not in table.column_names:
        return "none"
    mm = pc.min_max(table.column("sequence")).as_py()
    return "none" if mm["min"] is None else f"{mm['min']}..{mm['max']}"
