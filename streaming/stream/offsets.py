"""Offsets of the `cdc-stream` source: where a micro-batch starts and ends.

An offset names, per Kafka partition of the changes topic, the NEXT offset to
read (half-open: a batch [start, end) holds the records start <= o < end).
Every offset the source hands to Spark is a transaction boundary: the record
just before it is an END, an ABORTED, or a SCHEMA/HEARTBEAT outside any
transaction, so a batch always holds whole source transactions.

JSON form (what Spark checkpoints; string keys, sorted)::

    {"next": {"0": 1234}, "topic": "cdc.shop.changes"}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdc.errors import ConfigError


@dataclass(frozen=True, slots=True, order=True)
class StreamOffset:
    topic: str
    next: tuple[tuple[int, int], ...]  # (partition, next offset to read), sorted by partition

    @classmethod
    def of(cls, topic: str, next_by_partition: dict[int, int]) -> StreamOffset:
        return cls(topic, tuple(sorted((int(p), int(o)) for p, o in next_by_partition.items())))

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> StreamOffset:
        try:
            return cls.of(obj["topic"], {int(p): int(o) for p, o in obj["next"].items()})
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ConfigError(f"not a cdc-stream offset: {obj!r} (expected {{'next': {{'0': n}}, 'topic': t}})",
                              key="startingOffsets") from None

    def to_json(self) -> dict[str, Any]:
        return {"next": {str(p): o for p, o in self.next}, "topic": self.topic}

    def get(self, partition: int) -> int | None:
        return dict(self.next).get(partition)

    def with_partition(self, partition: int, offset: int) -> StreamOffset:
        d = dict(self.next)
        d[partition] = offset
        return StreamOffset.of(self.topic, d)

    def records_since(self, start: StreamOffset) -> int:
        s = dict(start.next)
        return sum(o - s.get(p, o) for p, o in self.next)
