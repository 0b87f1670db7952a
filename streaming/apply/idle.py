"""When ``cdc apply --until-idle S`` may stop: the stream is quiet AND everything in it is applied.

Quiet: no micro-batch is running and no source transaction was applied for S seconds (heartbeats keep
Spark busy forever, so they do not count). Quiet alone is not idle: the planner takes the first empty
short poll for the end of the topic, so on a loaded host or behind a slow broker it can plan nothing
for a while although complete transactions sit in the topic, and a quiet period is then only a slow one.

Applied: :func:`first_unapplied` reads the topic from where applying has got to (the progress row's next
offsets, or the end of the last batch Spark completed, whichever is further) to its end, as the broker
reports it in a fetch made now (librdkafka's partition-EOF event, which comes only with a fetch response
at the end; neither a timeout nor tansu's high watermark, the base offset of its last record batch, is
taken for the end). Only a complete unit of work counts (a transaction's END, a SCHEMA or TRUNCATE
record, an ABORTED marker): heartbeats and a transaction still open at the tail do not, so a publisher
that is mid-transaction or stopped does not keep the job from stopping.

Guarantee: when :func:`idle` returns True, every complete transaction the topic held when the read
reached its end had been applied to the target (its progress row says so). Transactions published after
that read are left for the next run.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson

from cdc.config.kafka_settings import KafkaConnection, create_client
from streaming.stream.batches import BoundaryScanner, _PartitionScan, consumer_config

log = logging.getLogger(__name__)

READ_BUDGET_S = 60.0  # one look at the tail; a broker slower than this keeps the job running (and says so)
LOOK_EVERY_S = 2.0  # between two looks while quiet but not idle


class Unknown(Exception):
    """The tail could not be read to its end within the budget."""


def applied_to(stream: Any) -> dict[int, int]:
    """Per partition: the offset up to which records were applied (the progress row's, or the end offset of
    the last micro-batch Spark completed, whichever is further; a batch completes after its target commit)."""
    out: dict[int, int] = {}
    progress = stream.engine.progress
    offsets = progress.next_offsets if progress is not None else None
    if offsets and offsets.get("topic") == stream.engine_topic:
        out.update({int(p): int(o) for p, o in offsets.get("next", {}).items()})
    sources = ((stream.query.lastProgress if stream.query is not None else None) or {}).get("sources") or []
    end = sources[0].get("endOffset") if sources else None
    end = orjson.loads(end) if isinstance(end, str) else end
    if isinstance(end, dict) and isinstance(end.get("next"), dict):
        for p, o in end["next"].items():
            out[int(p)] = max(out.get(int(p), 0), int(o))
    return out


def first_unapplied(kafka: str | KafkaConnection, topic: str, encoding: str, start: dict[int, int],
                    budget_s: float = READ_BUDGET_S) -> tuple[int, int] | None:
    """(partition, offset after it) of the first complete unit of work at or after ``start`` (a partition not in
    ``start``: from its first record), or None when there is none up to the end of the topic.
    Raises :class:`Unknown` when the end was not reached within ``budget_s``."""
    from confluent_kafka import KafkaError, TopicPartition

    scanner = BoundaryScanner(kafka, topic, encoding)  # the planner's classification of records
    try:
        parts = scanner.partitions()
    finally:
        scanner.close()
    c = create_client("consumer", consumer_config(kafka, {"enable.partition.eof": True}))
    try:
        deadline = time.monotonic() + budget_s
        for p in parts:
            low, _high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            at = max(low, start.get(p, low))
            scan = _PartitionScan(at, at, [])
            c.assign([TopicPartition(topic, p, at)])
            at_end = False
            while not at_end:
                if time.monotonic() > deadline:
                    raise Unknown(f"{topic}[{p}] not read to its end from offset {at} within {budget_s:.0f} s")
                for m in c.consume(num_messages=5000, timeout=0.5):
                    if m.error() is not None:
                        if m.error().code() == KafkaError._PARTITION_EOF:
                            at_end = True
                            break
                        raise Unknown(f"reading {topic}[{p}] failed: {m.error()}")
                    if m.offset() < at:
                        continue
                    kind = scanner._boundary(scan, m.offset(), m.key(), m.value())  # the planner's own rule
                    if kind is not None and kind != "HEARTBEAT":
                        return p, m.offset() + 1
        return None
    finally:
        c.close()


class IdleRule:
    """``until_idle_s`` of quiet, then a look at the tail (:func:`first_unapplied`) at most every LOOK_EVERY_S."""

    def __init__(self, until_idle_s: float, kafka: str | KafkaConnection, encoding: str) -> None:
        self.until_idle_s, self.kafka, self.encoding = until_idle_s, kafka, encoding
        self._looked: dict[int, tuple[float, bool]] = {}  # per stream (several targets may apply one topic)

    def quiet(self, s: Any) -> bool:
        if s.in_batch:
            return False  # a micro-batch is being read or applied (a big first batch can take longer than the idle time)
        if s.started_at is None:  # idle counts from the query's first completed trigger (Spark start-up is slow)
            if s.query.lastProgress is None:
                return False
            s.started_at = time.monotonic()
            s.last_activity = max(s.last_activity, s.started_at)
        # heartbeats keep Spark busy forever: quiet is "no source transaction applied", not "no data"
        return time.monotonic() - s.last_activity >= self.until_idle_s

    def idle(self, s: Any) -> bool:
        if not self.quiet(s):
            return False
        now = time.monotonic()
        looked_at, verdict = self._looked.get(id(s), (-LOOK_EVERY_S, False))
        if now - looked_at < LOOK_EVERY_S:
            return verdict
        verdict = self._look(s)
        self._looked[id(s)] = (time.monotonic(), verdict)
        return verdict

    def _look(self, s: Any) -> bool:
        start = applied_to(s)
        try:
            pending = first_unapplied(self.kafka, s.engine_topic, self.encoding, start)
        except Unknown as exc:
            log.warning("not stopping yet: cannot tell whether %s holds unapplied transactions (%s)",
                        s.engine_topic, exc)
            return False
        if pending is not None:
            log.info("quiet for %.1fs but %s holds a complete transaction not yet applied (ending at offset %d of "
                     "partition %d; applied up to %s): waiting for it", self.until_idle_s, s.engine_topic,
                     pending[1] - 1, pending[0], start)
            return False
        # a batch that ran while we looked only moved ``start`` on: there was nothing whole after the old one
        return True
