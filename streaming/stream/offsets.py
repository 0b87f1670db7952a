"""Offsets of the `cdc-stream` source: where a micro-batch starts and ends.

An offset names, per Kafka partition of the changes topic, the NEXT offset to
read (half-open: a batch [start, end) holds the records start <= o < end).
Every offset the source hands to Spark is a transaction boundary: the record
just before it is an END, an ABORTED, or a SCHEMA/HEARTBEAT outside any
transaction, so a batch always holds whole source transactions.

JSON form (what Spark checkpoints; string keys, sorted)::

    {"next": {"0": 1234}, "stream": "AaIKQnsJe6KDX23HOCwCog", "topic": "cdc.shop.changes"}

``stream`` is the broker's id of the topic (absent when unknown, and in
offsets written before it was recorded): a topic deleted and created again
under the same name has another id, so an offset of its earlier life is
recognised (streaming.apply.checkpoint, the source's latestOffset).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdc.errors import ConfigError


@dataclass(frozen=True, slots=True, order=True)
class StreamOffset:
    topic: str
    next: tuple[tuple[int, int], ...]  # (partition, next offset to read), sorted by partition
    stream: str | None = None  # the topic's id on the broker

    @classmethod
    def of(cls, topic: str, next_by_partition: dict[int, int], stream: str | None = None) -> StreamOffset:
        return cls(topic, tuple(sorted((int(p), int(o)) for p, o in next_by_partition.items())), stream or None)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> StreamOffset:
        try:
            return cls.of(obj["topic"], {int(p): int(o) for p, o in obj["next"].items()}, obj.get("stream"))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ConfigError(f"not a cdc-stream offset: {obj!r} (expected {{'next': {{'0': n}}, 'topic': t}})",
                              key="startingOffsets") from None

    def to_json(self) -> dict[str, Any]:
        if self.stream is None:
            return {"next": {str(p): o for p, o in self.next}, "topic": self.topic}
        return {"next": {str(p): o for p, o in self.next}, "stream": self.stream, "topic": self.topic}

    def get(self, partition: int) -> int | None:
        return dict(self.next).get(partition)

    def with_partition(self, partition: int, offset: int) -> StreamOffset:
        d = dict(self.next)
        d[partition] = offset
        return StreamOffset.of(self.topic, d, self.stream)

    def records_since(self, start: StreamOffset) -> int:
        s = dict(start.next)
        return sum(o - s.get(p, o) for p, o in self.next)
