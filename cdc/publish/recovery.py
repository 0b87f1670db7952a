"""Reading a single-partition topic to its true end, and the change stream's tail state.

Why this is not "seek to high watermark - 1": some Kafka-compatible brokers
(tansu) report the base offset of the last record BATCH as the high
watermark, so the last record may lie well past it. What we rely on instead:
the reported watermark never exceeds the true end, so we read forward from a
bit before it until the consumer is idle for ``idle_s`` AND its position is
at or past the watermark. Every read is bounded by ``deadline_s``.

:func:`read_tail` returns what the publisher needs to restart (see
:class:`TailState`). It reads FORWARD from ~2,000 records before the
watermark to the end, applying the consumer's sequence rule
(cdc.stream.sequence) to every record: it gives the max sequence, skips
duplicate runs wherever they sit (the producer may append a retried batch
twice: see cdc.publish.producer) and refuses a gap (StreamCorrupt: records
the broker acknowledged and then lost). A checkpoint is an END, SCHEMA or
HEARTBEAT record whose ``resume`` is not null (a table-definition SCHEMA
record written inside a transaction has none). A transaction cut off by a
crash may leave a million data records after its BEGIN: while the range
read holds no checkpoint, the read starts again twice as far back (only
markers and SCHEMA records are decoded; a data record's sequence is peeked
from its bytes), holding nothing but the summary. A tail the broker
reports but does not deliver, or a topic emptied by retention, is refused
(:func:`unreadable_tail`), never taken for a new stream.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from cdc.config.kafka_settings import KafkaConnection, create_client
from cdc.errors import CdcError, PublishError, StreamCorrupt
from cdc.stream.envelope import ABORTED, BEGIN, CHECKPOINT_STATUSES, END, record_epoch
from cdc.stream.sequence import SequenceWatch, gap_error, sequence_peeker
from cdc.stream.serde import Serde

TAIL_WINDOW = 2000


def make_consumer(where: str | KafkaConnection, extra: dict[str, Any] | None = None) -> Consumer:
    """A consumer that only assign()s and never commits, with the connection's settings (cdc.config.kafka_settings)."""
    conf = {
        "group.id": f"cdc-tail-{uuid.uuid4().hex[:12]}",  # never committed: we only assign()
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 100,
        "enable.partition.eof": False,
        "isolation.level": "read_uncommitted",
    }
    return create_client("consumer", {**KafkaConnection.of(where).settings("consumer", conf), **(extra or {})})


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
    """Summary of the records read from one offset on: the last checkpoint and the BEGIN/ABORTED after it.

    Only records ABOVE the highest sequence seen before them count (cdc.stream.sequence): a duplicate
    run appended by a producer retry is skipped wherever it sits in the window. A window read
    without knowing what precedes it (``strict=False``) notes jumps in ``gaps`` instead of raising:
    records at its start may be duplicates of records before it, which makes a jump that is no
    gap; read_tail settles that against the range before the window."""

    first: int | None = None
    last: int | None = None
    checkpoint: dict[str, Any] | None = None
    trail: dict[str, Any] | None = None  # last BEGIN, ABORTED or END (without a resume) after the checkpoint
    max_sequence: int | None = None
    max_offset: int | None = None  # offset of the record with max_sequence
    first_sequence: int | None = None  # of the first record read
    gaps: list[StreamCorrupt] = field(default_factory=list)  # jumps not yet known to be gaps
    duplicates: int = 0
    epoch: int = 0  # the highest writer epoch (header cdc.epoch) of the records taken


@dataclass(frozen=True)
class TailState:
    """What the stream's tail says. ``open_begin``: a BEGIN never closed by END/ABORTED."""

    end_offset: int  # true end: offset of the next record to be written
    last_sequence: int | None  # None: empty stream
    checkpoint: dict[str, Any] | None  # value of the last END/SCHEMA/HEARTBEAT record with a resume
    open_begin: dict[str, Any] | None
    epoch: int = 0  # the highest writer epoch in the tail read (0: none, or records from before epochs)

    @property
    def resume(self) -> dict[str, Any] | None:
        return None if self.checkpoint is None else self.checkpoint.get("resume")


_NO_RESUME = ("; the publisher does not resume behind a gap, so the source stays stopped until an operator "
              "decides (restore the records, or start a new stream with `cdc stream reset`)")


def _summarise(messages: Iterator[Any], key_serde: Serde, value_serde: Serde, topic: str = "?", *,
               after: int | None = None, strict: bool = True) -> _Window:
    """One forward pass over ``messages``. ``after``: the highest sequence before them, when known.
    ``strict``: a jump in sequence raises StreamCorrupt (else it is noted in ``gaps``)."""
    try:
        return _summarise_unchecked(messages, key_serde, value_serde, topic, after, strict)
    except (CdcError, KeyError, TypeError, ValueError) as exc:  # orjson/fastavro errors are ValueErrors
        if isinstance(exc, StreamCorrupt):
            raise
        raise StreamCorrupt(f"cannot read the change stream {topic} with encoding {value_serde.encoding!r} "
                            f"(was it written with another kafka.encoding?): {exc}",
                            topic=topic, encoding=value_serde.encoding) from None


def _summarise_unchecked(messages: Iterator[Any], key_serde: Serde, value_serde: Serde, topic: str,
                         after: int | None, strict: bool) -> _Window:
    """Every record's sequence is peeked (cdc.stream.sequence: duplicates skipped); markers and SCHEMA
    records are decoded, data records are not."""
    w = _Window()
    watch = SequenceWatch(topic, 0, last=after)
    peek = sequence_peeker(value_serde.encoding, getattr(value_serde, "framing", "confluent"), value_serde.decode)
    json_keys = key_serde.encoding == "json"
    for m in messages:
        offset = m.offset()
        if w.first is None:
            w.first = offset
        w.last = offset
        vbytes = m.value()
        seq = peek(vbytes)
        if seq is None:
            raise StreamCorrupt(f"the record at offset {offset} of {topic} has no integer sequence",
                                topic=topic, offset=offset)
        if w.first_sequence is None:
            w.first_sequence = seq
        try:
            new = watch.admit(seq, offset)
        except StreamCorrupt as gap:
            if strict:
                raise StreamCorrupt(gap.message + _NO_RESUME, **gap.fields) from None
            w.gaps.append(gap)
            watch.last, watch.last_offset, new = seq, offset, True
        if not new:
            w.duplicates += 1
            continue  # a duplicate (a retried batch appended again): every consumer drops it too
        epoch = record_epoch(m.headers())
        w.epoch = max(w.epoch, epoch)
        key = m.key()
        if key is not None and (b'"key":' in key if json_keys else "key" in key_serde.decode(key)):
            continue  # a data record: nothing to learn here
        value = value_serde.decode(vbytes)
        status = value.get("status")
        if status in CHECKPOINT_STATUSES and value.get("resume") is not None:
            w.checkpoint, w.trail = value, None
        elif status in (BEGIN, ABORTED, END):  # an END without a resume (`cdc compare --repair` into a stream
            w.trail = value                     # that has no checkpoint yet) closes its BEGIN all the same
    w.max_sequence, w.max_offset = watch.last, watch.last_offset
    return w


def _join(before: _Window, after: _Window) -> _Window:
    """``before`` followed by ``after`` (summarised knowing ``before``'s max, or starting above it)."""
    cp = after.checkpoint is not None
    return _Window(first=before.first, last=after.last, checkpoint=after.checkpoint if cp else before.checkpoint,
                   trail=after.trail if cp or after.trail is not None else before.trail,
                   max_sequence=after.max_sequence,
                   max_offset=after.max_offset if after.max_offset is not None else before.max_offset,
                   first_sequence=before.first_sequence, gaps=before.gaps,
                   duplicates=before.duplicates + after.duplicates, epoch=max(before.epoch, after.epoch))


def read_tail(where: str | KafkaConnection, topic: str, key_serde: Serde, value_serde: Serde, *,
              consumer_config: dict[str, Any] | None = None, deadline_s: float = 300.0,
              source: str | None = None) -> TailState:
    """Find the true end, the last sequence, the last checkpoint and any open transaction.

    Reads forward from ``TAIL_WINDOW`` records before the reported end. While what was read
    holds no checkpoint (a transaction cut off by a crash may be millions of records long) or a
    jump in sequence that may be duplicates at its start, it reads the range before it (twice as
    long each time) and joins the two; what was read is read again, judged against the max
    sequence before it, only when it starts with records at or below that max. So every record
    is held to the sequence rule (duplicates skipped, a gap raises StreamCorrupt) against all
    that precedes it in what was read, and a duplicated END anywhere cannot hide the BEGIN of an
    open transaction. A tail the broker reports but does not deliver, or a topic emptied by
    retention, raises (:func:`unreadable_tail`): it is never taken for an empty stream.
    """
    consumer = make_consumer(where, consumer_config)
    try:
        low, high = watermarks(consumer, topic)
        size = TAIL_WINDOW
        start = max(low, high - size)
        w = _summarise(read_range(consumer, topic, start, None, reported_high=high, deadline_s=deadline_s),
                       key_serde, value_serde, topic, strict=start <= low)
        while w.last is not None and start > low and (w.checkpoint is None or w.gaps):
            size *= 2
            lo = max(low, start - size)
            before = _summarise(read_range(consumer, topic, lo, start, reported_high=start, deadline_s=deadline_s),
                                key_serde, value_serde, topic, strict=lo <= low)
            if before.last is not None:
                top = before.max_sequence
                if w.first_sequence <= top:  # w starts with duplicates of records before it: read it again
                    w = _summarise(read_range(consumer, topic, start, w.last + 1, reported_high=high,
                                              deadline_s=deadline_s), key_serde, value_serde, topic, after=top)
                elif w.first_sequence > top + 1:
                    raise StreamCorrupt(gap_error(topic, 0, top + 1, w.first_sequence - 1, before.max_offset)
                                        .message + _NO_RESUME, topic=topic, partition=0, missing_from=top + 1,
                                        missing_to=w.first_sequence - 1, offset=before.max_offset)
                elif w.gaps:  # w's first record is no duplicate: its jumps are gaps
                    raise StreamCorrupt(w.gaps[0].message + _NO_RESUME, **w.gaps[0].fields)
                w = _join(before, w)
            start = lo
        if w.last is None:
            if high > low or low > 0:
                raise unreadable_tail(topic, low, high, start, source)
            return TailState(end_offset=low, last_sequence=None, checkpoint=None, open_begin=None)
        if w.gaps:  # nothing precedes the window: the jump is a gap
            raise StreamCorrupt(w.gaps[0].message + _NO_RESUME, **w.gaps[0].fields)
        open_begin = w.trail if w.trail is not None and w.trail.get("status") == BEGIN else None
        return TailState(end_offset=w.last + 1, last_sequence=w.max_sequence, checkpoint=w.checkpoint,
                         open_begin=open_begin, epoch=w.epoch)
    finally:
        consumer.close()


def unreadable_tail(topic: str, low: int, high: int, start: int, source: str | None) -> CdcError:
    """The refusal to take a reported-but-unreadable (or emptied) stream for a new one.

    Records reported but not delivered: PublishError (transient: the daemon retries with backoff,
    /readyz false, and resumes correctly once the broker delivers them). A topic emptied below a
    low watermark above 0: StreamCorrupt (terminal: those records will not come back)."""
    way_out = (f"Starting here would begin a NEW stream (sequence 1, the source's current position) and lose "
               f"every change since the last published one, and consumers would drop the new records as replays. "
               f"Check the broker (storage, retention.ms of {topic}); to start a new stream on purpose run "
               f"`cdc stream reset --config FILE --source {source or 'NAME'} --yes`")
    fields = {"topic": topic, "low_watermark": low, "high_watermark": high, "source": source}
    if high > low:
        return PublishError(f"the broker reports records at offsets {low}..{high - 1} of {topic} but none could be "
                            f"read from offset {start}; the publisher does not start until they can be read. "
                            f"{way_out}", **fields)
    return StreamCorrupt(f"{topic} has no readable record but its low watermark is {low}: records 0..{low - 1} were "
                         f"deleted (retention or delete-records). {way_out}", **fields)


def read_records(where: str | KafkaConnection, topic: str, key_serde: Serde, value_serde: Serde, *, start: int | None = None,
                 deadline_s: float = 120.0) -> Iterator[tuple[int, Any, Any]]:
    """Every record of partition 0 from ``start`` (default: the low watermark) to the true end,
    decoded: ``(offset, key or None, value or None)``. For tools and tests."""
    consumer = make_consumer(where)
    try:
        low, high = watermarks(consumer, topic)
        for m in read_range(consumer, topic, low if start is None else start, None, reported_high=high,
                            deadline_s=deadline_s):
            k, v = m.key(), m.value()
            yield (m.offset(), None if k is None else key_serde.decode(k),
                   None if v is None else value_serde.decode(v))
    finally:
        consumer.close()
