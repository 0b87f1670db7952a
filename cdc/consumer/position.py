"""Where a consumer of the change stream stands: a (sequence, offset) pair.

A :class:`Position` is the position AFTER an item (a transaction or a schema
change): every record whose ``sequence`` is at or below ``position.sequence``
is done, and the next record to read is at Kafka ``offset``. It is the value a
consumer stores with its side effects (in the same database transaction) and
hands back to :meth:`cdc.consumer.ChangeStreamConsumer.start_after` after a
restart: reading resumes at ``offset``, and any record at or below
``sequence`` met later (a duplicate run) is dropped.

``sequence`` is the identity of a record; ``offset`` only locates it. Positions
order by sequence.

``epoch`` is the highest writer epoch handed out up to the position (header
``cdc.epoch``, cdc.stream.stream_structure): a consumer resumed from it holds
the stream to the epoch rules from there, so a fenced writer's records that
landed after a newer writer's stay refused after any restart. Printed as
``SEQUENCE@OFFSET:EPOCH`` (``SEQUENCE@OFFSET`` when 0, and positions stored
before epochs parse with epoch 0: the record before ``offset`` then gives it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdc.errors import CdcError


@dataclass(frozen=True, order=True)
class Position:
    sequence: int  # the last sequence done (the END's, or a standalone SCHEMA record's)
    offset: int  # the offset of the next record to read: that END's offset + 1
    epoch: int = 0  # the highest writer epoch up to here (0: none known)

    def __post_init__(self) -> None:
        if not isinstance(self.sequence, int) or not isinstance(self.offset, int) or self.offset < 1 \
                or self.sequence < 0 or not isinstance(self.epoch, int) or self.epoch < 0:
            raise CdcError(f"not a stream position: sequence={self.sequence!r} offset={self.offset!r} "
                           f"epoch={self.epoch!r} (sequence >= 0, offset >= 1, epoch >= 0 integers)",
                           sequence=self.sequence, offset=self.offset, epoch=self.epoch)

    def __str__(self) -> str:
        return f"{self.sequence}@{self.offset}" + (f":{self.epoch}" if self.epoch else "")

    @classmethod
    def parse(cls, text: str) -> Position:
        """The inverse of ``str()``: ``"1234@5678:3"`` (sequence 1234, next offset 5678, writer epoch 3;
        ``"1234@5678"``: epoch 0)."""
        seq, sep, rest = str(text).strip().partition("@")
        off, _, epoch = rest.partition(":")
        try:
            if not sep:
                raise ValueError
            return cls(int(seq), int(off), int(epoch) if epoch else 0)
        except ValueError:
            raise CdcError(f"not a stream position: {text!r} (expected SEQUENCE@OFFSET[:EPOCH], e.g. 1234@5678:3)",
                           value=text) from None

    def to_json(self) -> dict[str, int]:
        return {"sequence": self.sequence, "offset": self.offset, "epoch": self.epoch}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Position:
        try:
            return cls(value["sequence"], value["offset"], value.get("epoch", 0))
        except (KeyError, TypeError):
            raise CdcError(f"not a stream position: {value!r} (expected {{sequence, offset}})", value=value) from None
