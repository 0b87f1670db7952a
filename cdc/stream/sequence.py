"""The consumer's rule for the stream's ``sequence``: skip duplicates, stop on a gap.

Every record of a change stream carries a ``sequence`` one above the
previous record's (cdc.publish.publisher). Kafka offsets only locate
records; the sequence is their identity. A producer retry may append a run
of records a second time, so a reader keeps the highest sequence it has seen
and:

- drops a record at or below it (a duplicate: the same record again);
- takes a record exactly one above it;
- refuses a record further above (a gap: records the broker acknowledged
  and then lost, or a topic restored from an older copy). Nothing after a
  gap may be applied: the reader raises :class:`cdc.errors.StreamCorrupt`
  naming the missing range, topic, partition and the offset after which
  they are missing.

Every reader of the stream we ship applies this rule in every window it
reads (the Spark boundary scan, the apply engine, the publisher's tail
recovery). :func:`sequence_peeker` reads a record's sequence from its bytes
without decoding the rest (the JSON template and the Avro schema both put it
first), so a reader can apply the rule to millions of data records cheaply.

The records a reader takes by this rule are then held to the stream's
structure (transactions framed by BEGIN/END with matching ids and counts,
rows in their place): cdc.stream.stream_structure, shared by the same readers.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from cdc.errors import StreamCorrupt

JSON_HEAD = re.compile(rb'\{"sequence":(-?\d+)[,}]')


def sequence_peeker(encoding: str, framing: str = "confluent", decode: Callable[[bytes], dict] | None = None
                    ) -> Callable[[bytes | None], int | None]:
    """A function ``value bytes -> sequence`` (None when the record has no integer sequence).

    JSON: the leading ``{"sequence":N`` of the value; values written otherwise (another field
    order, whitespace) fall back to ``decode``. Avro: the first field of the value schema is
    ``sequence`` (a zig-zag varint after the framing header)."""
    if encoding == "avro":
        skip = 5 if framing == "confluent" else 0

        def peek_avro(value: bytes | None) -> int | None:
            if value is None or len(value) <= skip:
                return None
            shift = result = 0
            for b in value[skip:skip + 10]:
                result |= (b & 0x7F) << shift
                if not b & 0x80:
                    return (result >> 1) ^ -(result & 1)
                shift += 7
            return None

        return peek_avro

    def peek_json(value: bytes | None) -> int | None:
        if value is None:
            return None
        m = JSON_HEAD.match(value)
        if m is not None:
            return int(m.group(1))
        if decode is None:
            return None
        try:
            seq = decode(value).get("sequence")
        except Exception:  # noqa: BLE001 - not a record of ours: no sequence
            return None
        return seq if isinstance(seq, int) and not isinstance(seq, bool) else None

    return peek_json


def gap_error(topic: str, partition: int, first_missing: int, last_missing: int, after_offset: int | None,
              *, what: str = "") -> StreamCorrupt:
    """The StreamCorrupt for sequences ``first_missing..last_missing`` missing after ``after_offset``."""
    where = f" after offset {after_offset}" if after_offset is not None else ""
    return StreamCorrupt(
        f"sequence {first_missing}..{last_missing} missing in {topic}[{partition}]{where}: records were lost "
        f"between the publisher and this reader (acknowledged then lost by the broker, a topic restored from an "
        f"older copy, or truncated); nothing after the gap is applied{what}",
        topic=topic, partition=partition, missing_from=first_missing, missing_to=last_missing, offset=after_offset)


class SequenceWatch:
    """The highest sequence seen on one partition, and the offset of the record that carried it.

    ``admit(seq, offset)`` -> True for the next record (or the first one seen when nothing is
    known yet), False for a duplicate; raises StreamCorrupt (:func:`gap_error`) on a gap."""

    __slots__ = ("last", "last_offset", "partition", "topic")

    def __init__(self, topic: str, partition: int = 0, last: int | None = None, last_offset: int | None = None):
        self.topic, self.partition = topic, partition
        self.last, self.last_offset = last, last_offset

    def admit(self, seq: int, offset: int) -> bool:
        last = self.last
        if last is not None:
            if seq <= last:
                return False
            if seq != last + 1:
                raise gap_error(self.topic, self.partition, last + 1, seq - 1, self.last_offset)
        self.last, self.last_offset = seq, offset
        return True
