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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdc.errors import CdcError


@dataclass(frozen=True, order=True)
class Position:
    sequence: int  # the last sequence done (the END's, or a standalone SCHEMA record's)
    offset: int  # the offset of the next record to read: that END's offset + 1

    def __post_init__(self) -> None:
        if not isinstance(self.sequence, int) or not isinstance(self.offset, int) or self.offset < 1 \
                or self.sequence < 0:
            raise CdcError(f"not a stream position: sequence={self.sequence!r} offset={self.offset!r} "
                           f"(sequence >= 0 and offset >= 1 integers)", sequence=self.sequence, offset=self.offset)

    def __str__(self) -> str:
        return f"{self.sequence}@{self.offset}"

    @classmethod
    def parse(cls, text: str) -> Position:
        """The inverse of ``str()``: ``"1234@5678"`` (sequence 1234, next offset 5678)."""
        seq, sep, off = str(text).strip().partition("@")
        try:
            if not sep:
                raise ValueError
            return cls(int(seq), int(off))
        except ValueError:
            raise CdcError(f"not a stream position: {text!r} (expected SEQUENCE@OFFSET, e.g. 1234@5678)",
                           value=text) from None

    def to_json(self) -> dict[str, int]:
        return {"sequence": self.sequence, "offset": self.offset}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Position:
        try:
            return cls(value["sequence"], value["offset"])
        except (KeyError, TypeError):
            raise CdcError(f"not a stream position: {value!r} (expected {{sequence, offset}})", value=value) from None
