"""Reading a single-partition topic to its true end, and the change stream's tail state.

Why this is not "seek to high watermark - 1": some Kafka-compatible brokers
(tansu) report the base offset of the last record BATCH as the high
watermark, so the last record may lie well past it. What we rely on instead:
the reported watermark never exceeds the true end, so we read forward from a
bit before it until the consumer is idle for ``idle_s`` AND its position is
at or past the watermark. Every read is bounded by ``deadline_s``.

:func:`read_tail` returns what the publisher needs to restart (see
:class:`TailState`). The tail window (from ~2,000 records before the
watermark to the end) is decoded whole: it gives the max sequence, skips
duplicate runs (the producer may append a retried batch twice: see
cdc.publish.producer) and refuses a gap in sequences (StreamCorrupt:
records the broker acknowledged and then lost). A checkpoint is an END,
SCHEMA or HEARTBEAT record whose ``resume`` is not null (a table-definition
SCHEMA record written inside a transaction has none). A transaction cut off
by a crash may leave a million data records after its BEGIN; the backward
search walks windows of doubling size, decoding only markers (null key) and
SCHEMA records (key without ``key``), holding nothing but the summary of
each window.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from cdc.envelope import ABORTED, BEGIN, CHECKPOINT_STATUSES
from cdc.errors import CdcError, PublishError, StreamCorrupt
from cdc.serde import Serde

TAIL_WINDOW = 2000


def make_consumer(bootstrap: str, extra: dict[str, Any] | None = None) -> Consumer:
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": f"cdc-tail-{uuid.uuid4().hex[:12]}",  # never committed: we only assign()
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 100,
        "enable.partition.eof": False,
        "isolation.level": "read_uncommitted",
        **(extra or {}),
    }
    return Consumer(conf)


def watermarks(consumer: Consumer, topic: str, timeout_s: float = 10) -> tuple[int, int]:
    """(low, reported high) of partition 0; the high may be below the true end."""
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=timeout_s, cached=False)
    except KafkaException as exc:
        raise PublishError(f"cannot read offsets of {topic}: {exc}", topic=topic) from None


def read_range(consumer: Consumer, topic: str, start: int, stop: int | None, *, reported_high: int,
               idle_s: float = 0.75, stall_s: float = 10.0, deadline_s: float = 120.0,
               batch: int = 5000) -> Iterator[Any]:
    """Yield messages of partition 0 from offset ``start`` up to ``stop`` (exclusive) or the true end.

    Ends when ``stop`` is reached, or when no message arrived for ``idle_s``
    and the position is at or past ``reported_high``, or for ``stall_s``
    whatever the position (records below the watermark that never arrive,
    e.g. removed by retention). Raises PublishError when ``deadline_s``
    passes first (a broker that keeps sending but never ends).
    """
    if stop is not None and stop <= start:
        return
    consumer.assign([TopicPartition(topic, 0, start)])
    deadline = time.monotonic() + deadline_s
    last_seen = time.monotonic()
    position = start
    try:
        while True:
            msgs = consumer.consume(batch, 0.1)
            now = time.monotonic()
            for m in msgs:
                if m.error():
                    raise PublishError(f"reading {topic}: {m.error()}", topic=topic, offset=position)
                position = m.offset() + 1
                if stop is not None and m.offset() >= stop:
                    return
                yield m
            if stop is not None and position >= stop:
                return
            if msgs:
                last_seen = now
            elif (now - last_seen >= idle_s and position >= reported_high) or now - last_seen >= stall_s:
                return  # quiet at/after the watermark; or quiet for long (promised records never came)
            if now > deadline:
                raise PublishError(f"reading {topic} from offset {start} did not reach the end within {deadline_s}s",
                                   topic=topic, offset=position)
    finally:
        try:
            consumer.unassign()
        except RuntimeError:  # the consumer was closed before this generator was collected
            pass


@dataclass
class _Window:
    """Summary of one offset range: its last checkpoint and the BEGIN/ABORTED marker after it."""

    first: int | None = None
    last: int | None = None
    checkpoint: dict[str, Any] | None = None
    trail: dict[str, Any] | None = None  # last BEGIN or ABORTED after the checkpoint
    max_sequence: int | None = None  # full windows only
    gap: tuple[int, int, int] | None = None  # (first missing, last missing, offset after): full windows only


@dataclass(frozen=True)
class TailState:
    """What the stream's tail says. ``open_begin``: a BEGIN never closed by END/ABORTED."""

    end_offset: int  # true end: offset of the next record to be written
    last_sequence: int | None  # None: empty stream
    checkpoint: dict[str, Any] | None  # value of the last END/SCHEMA/HEARTBEAT record with a resume
    open_begin: dict[str, Any] | None

    @property
    def resume(self) -> dict[str, Any] | None:
        return None if self.checkpoint is None else self.checkpoint.get("resume")


def _summarise(messages: Iterator[Any], key_serde: Serde, value_serde: Serde, *, full: bool = False) -> _Window:
    try:
        return _summarise_unchecked(messages, key_serde, value_serde, full=full)
    except (CdcError, KeyError, TypeError, ValueError) as exc:  # orjson/fastavro errors are ValueErrors
        if isinstance(exc, StreamCorrupt):
            raise
        raise StreamCorrupt(f"cannot read the change stream with encoding {value_serde.encoding!r} "
                            f"(was it written with another kafka.encoding?): {exc}",
                            encoding=value_serde.encoding) from None


def _summarise_unchecked(messages: Iterator[Any], key_serde: Serde, value_serde: Serde, *,
                         full: bool = False) -> _Window:
    """One pass over a window. ``full`` (the tail window): decode every record, keep the max
    sequence, skip duplicate runs (a retried batch appended again) and note the first gap."""
    w = _Window()
    for m in messages:
        if w.first is None:
            w.first = m.offset()
        w.last = m.offset()
        key = m.key()
        if full:
            value = value_serde.decode(m.value())
            seq = value.get("sequence")
            if not isinstance(seq, int):
                raise StreamCorrupt("a record of the change stream has no integer sequence", offset=m.offset())
            if w.max_sequence is not None:
                if seq <= w.max_sequence:
                    continue  # duplicate of a record already seen: a consumer drops it too
                if seq != w.max_sequence + 1 and w.gap is None:
                    w.gap = (w.max_sequence + 1, seq - 1, m.offset())
            w.max_sequence = seq
            if key is not None and "key" in key_serde.decode(key):
                continue
        else:
            if key is not None and "key" in key_serde.decode(key):
                continue  # a data record: nothing to learn here
            value = value_serde.decode(m.value())
        status = value.get("status")
        if status in CHECKPOINT_STATUSES and value.get("resume") is not None:
            w.checkpoint, w.trail = value, None
        elif status in (BEGIN, ABORTED):
            w.trail = value
    return w


def read_tail(bootstrap: str, topic: str, key_serde: Serde, value_serde: Serde, *,
              consumer_config: dict[str, Any] | None = None, deadline_s: float = 300.0) -> TailState:
    """Find the true end, the last sequence, the last checkpoint and any open transaction."""
    consumer = make_consumer(bootstrap, consumer_config)
    try:
        low, high = watermarks(consumer, topic)
        start = max(low, high - TAIL_WINDOW)
        tail = _summarise(read_range(consumer, topic, start, None, reported_high=high, deadline_s=deadline_s),
                          key_serde, value_serde, full=True)
        while tail.last is None and start > low:  # the watermark overstated the end: look earlier
            start = max(low, start - TAIL_WINDOW * 8)
            tail = _summarise(read_range(consumer, topic, start, None, reported_high=start,
                                         deadline_s=deadline_s), key_serde, value_serde, full=True)
        if tail.last is None:
            return TailState(end_offset=low, last_sequence=None, checkpoint=None, open_begin=None)
        if tail.gap is not None:
            first, last, offset = tail.gap
            raise StreamCorrupt(f"{topic} lost records: sequences {first}..{last} are missing before offset "
                                f"{offset} (the broker acknowledged records it no longer has); resuming would "
                                f"skip them silently, so the source stays stopped until an operator decides",
                                topic=topic, missing_from=first, missing_to=last, offset=offset)
        last_sequence = tail.max_sequence
        checkpoint, trail = tail.checkpoint, tail.trail
        stop, size = start, TAIL_WINDOW
        while checkpoint is None and stop > low:  # walk back to the checkpoint before an open transaction
            size *= 2
            lo = max(low, stop - size)
            w = _summarise(read_range(consumer, topic, lo, stop, reported_high=stop, deadline_s=deadline_s),
                           key_serde, value_serde)
            checkpoint = w.checkpoint
            trail = trail if trail is not None else w.trail
            stop = lo
        open_begin = trail if trail is not None and trail.get("status") == BEGIN else None
        return TailState(end_offset=tail.last + 1, last_sequence=last_sequence,
                         checkpoint=checkpoint, open_begin=open_begin)
    finally:
        consumer.close()


def read_records(bootstrap: str, topic: str, key_serde: Serde, value_serde: Serde, *, start: int | None = None,
                 deadline_s: float = 120.0) -> Iterator[tuple[int, Any, Any]]:
    """Every record of partition 0 from ``start`` (default: the low watermark) to the true end,
    decoded: ``(offset, key or None, value or None)``. For tools and tests."""
    consumer = make_consumer(bootstrap)
    try:
        low, high = watermarks(consumer, topic)
        for m in read_range(consumer, topic, low if start is None else start, None, reported_high=high,
                            deadline_s=deadline_s):
            k, v = m.key(), m.value()
            yield (m.offset(), None if k is None else key_serde.decode(k),
                   None if v is None else value_serde.decode(v))
    finally:
        consumer.close()
