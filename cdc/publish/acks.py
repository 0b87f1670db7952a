"""Progress that advances only over what the broker acknowledged.

The publisher marks interesting records as it produces them (END,
HEARTBEAT, SCHEMA, and a progress mark every so often inside a long
transaction). :meth:`AckTracker.check` pops every mark inside the
acknowledged prefix (cdc.publish.producer: ``acked()``) and only then moves
the metrics and ``last_resume`` (the resume state of the last acknowledged
checkpoint, which the daemon reports as the source's position). Looks are
throttled (:meth:`maybe_check`): each one updates several Prometheus
series, which costs more than publishing a small transaction.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from cdc.metrics import SourceMetrics

ACK_CHECK_S = 0.05  # after markers, look at acknowledgements at most this often

END, HEARTBEAT, SCHEMA, PROGRESS = "end", "heartbeat", "schema", "progress"


class AckTracker:
    def __init__(self, producer: Any, metrics: SourceMetrics) -> None:
        self.producer, self.metrics = producer, metrics
        # (produced index, kind, payload, produce time, cumulative value bytes, sequence)
        self.pending: deque[tuple] = deque()
        self.reported = (0, 0)  # (records, bytes) already reported as acknowledged
        self.last_check = 0.0
        self.last_resume: dict[str, Any] | None = None
        self.acked_sequence = 0  # sequence of the last acknowledged mark

    def mark(self, kind: str, payload: Any, nbytes: int, sequence: int) -> None:
        """Remember the record just produced (index = records produced so far)."""
        self.pending.append((self.producer.produced, kind, payload, time.monotonic(), nbytes, sequence))

    def maybe_check(self) -> None:
        now = time.monotonic()
        if now - self.last_check >= ACK_CHECK_S:
            self.check(now)

    def mark_and_maybe_check(self, kind: str, payload: Any, nbytes: int, sequence: int) -> None:
        """:meth:`mark` then :meth:`maybe_check`, on one clock reading (once per END of every transaction)."""
        now = time.monotonic()
        self.pending.append((self.producer.produced, kind, payload, now, nbytes, sequence))
        if now - self.last_check >= ACK_CHECK_S:
            self.check(now)

    def check(self, now: float | None = None) -> None:
        """Advance metrics over the acknowledged prefix; raise the first delivery failure (or the
        producer's delivery timeout: cdc.publish.producer). Nothing at or after a failed record is
        ever counted: ``producer.acked()`` raises once a failure is known."""
        producer = self.producer
        producer.check()
        now = time.monotonic() if now is None else now
        self.last_check = now
        pending = self.pending
        if not pending:
            return
        acked = producer.acked()
        if pending[0][0] > acked:
            return
        m = self.metrics
        ops: dict[tuple[str, str], int] = {}
        last = None
        ends, last_end = 0, None  # ENDs are reported once per look (Prometheus labels() calls are not free)
        while pending and pending[0][0] <= acked:
            last = pending.popleft()
            kind, payload = last[1], last[2]
            if kind == END:
                ev, tx_ops = payload
                for key, n in tx_ops.items():
                    ops[key] = ops.get(key, 0) + n
                ends, last_end = ends + 1, ev
                self.last_resume = ev.resume
            elif kind == HEARTBEAT:
                if ends:
                    m.transaction_published(last_end.ts_ms, count=ends, **native_position(last_end.position))
                    ends = 0
                m.idle(payload.ts_ms)
                if payload.resume is not None:
                    self.last_resume = payload.resume
            elif kind == SCHEMA:
                m.schema_change()
                if payload.resume is not None:
                    self.last_resume = payload.resume
        if ends:
            m.transaction_published(last_end.ts_ms, count=ends, **native_position(last_end.position))
        for (table, op), n in ops.items():
            m.events_published(table, op, n)
        index, _, _, t0, nbytes, seq = last
        self.acked_sequence = seq
        m.records_published(index - self.reported[0], nbytes - self.reported[1], seq)
        m.publish_latency(now - t0)  # of the newest acknowledged mark: an upper bound of its latency
        self.reported = (index, nbytes)


def native_position(position: dict[str, Any]) -> dict[str, Any]:
    """Metric extras from a commit position: Oracle ``commit_scn``, MySQL GTID sequence number."""
    out: dict[str, Any] = {}
    scn = position.get("commit_scn", position.get("scn"))
    if isinstance(scn, int):
        out["scn"] = scn
    gtid = position.get("gtid")
    if isinstance(gtid, str) and gtid.rsplit(":", 1)[-1].isdigit():
        out["gtid_seq"] = int(gtid.rsplit(":", 1)[-1])
    elif isinstance(gtid, str) and gtid.rsplit("-", 1)[-1].isdigit():
        out["gtid_seq"] = int(gtid.rsplit("-", 1)[-1])
    return out
