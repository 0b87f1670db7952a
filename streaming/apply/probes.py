"""What the apply job's ``/healthz`` and ``/readyz`` say (served by cdc.runtime.health.HealthServer).

One entry per apply stream, keyed ``<source>-><target>``:

- ready: the streaming query is active, has completed its first trigger,
  its last micro-batch did not fail, and the micro-batch in progress (with
  its retries after transient target errors) has not run longer than
  ``apply[].max_batch_s`` (a target that hangs, a network path gone dark, a
  lock held for long: the reason names the batch, its sequence range and
  the last transient error). While Spark starts, while a query
  restarts after a transient Spark failure, and after a batch failed, the
  job is not ready (an orchestrator takes it out of rotation, alerting sees
  it) and the reason says which.
- alive: no query terminated with an error. The job then stops and exits
  non-zero; until it has, ``/healthz`` answers 503 so a liveness probe does
  not count a dying job as healthy.

A reason names the stream, the batch and the error's class plus its
position fields (table, sequence, offset, partition, topic), never row
values: a BadRecord's message quotes the value it could not apply, a
database's error text may quote a key; neither belongs in a probe body that
any monitoring system stores.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from cdc.runtime.health import describe  # the daemon's rule: an error's class and position fields only


def _name(stream: Any) -> str:
    return f"{stream.apply.source}->{stream.apply.target}"


def readiness(streams: Sequence[Any]) -> dict[str, str]:
    """{stream: why it is not ready}; empty when every stream is ready (``streams``: job.ApplyStream)."""
    if not streams:
        return {"apply": "starting: no streaming query yet"}
    reasons: dict[str, str] = {}
    for s in streams:
        if s.failure is not None:
            reasons[_name(s)] = f"batch {s.failed_batch} failed: {describe(s.failure)}"
        elif s.query is None or not s.query.isActive:
            reasons[_name(s)] = "streaming query not active (starting or restarting)"
        elif (slow := _overdue(s)) is not None:  # the first batch too: it is named, not "starting"
            reasons[_name(s)] = slow
        elif s.query.lastProgress is None:
            reasons[_name(s)] = "starting: first trigger not completed"
    return reasons


def _overdue(stream: Any) -> str | None:
    """Why the batch in progress makes the stream not ready (over ``apply[].max_batch_s``), else None."""
    started, bound = stream.batch_started, stream.apply.max_batch_s
    if started is None or not bound:
        return None
    running = time.monotonic() - started
    if running <= bound:
        return None
    why = f"; retrying after {stream.retrying}" if stream.retrying else ""
    return (f"batch {stream.batch_id} (sequences {stream.batch_span}) running for {running:.0f}s, over "
            f"apply max_batch_s {bound:g}s{why}")


def liveness(streams: Sequence[Any]) -> dict[str, str]:
    """{stream: why it is dead}: a query that terminated with an error (the job is about to exit)."""
    reasons: dict[str, str] = {}
    for s in streams:
        if s.failure is not None and s.query is not None and not s.query.isActive:
            reasons[_name(s)] = f"streaming query terminated: batch {s.failed_batch} failed: {describe(s.failure)}"
    return reasons
