"""Oracle positions: SCN, transaction id (XID) and the reader's resume state.

All three are immutable values that parse, print and order.

``ResumeState`` is what the reader writes into every END marker. Its
contract (the off-by-one guarantee):

* ``low_watermark_scn`` -- the start SCN of the oldest transaction that was
  still open when this state was taken (or the next SCN not yet mined when
  none was open). Every row of every transaction not yet published lies at
  an SCN >= this value, so mining restarts there (inclusive).
* ``commit_scn`` and ``xids_at_commit_scn`` -- the commit SCN of the last
  published transaction and every XID already published with exactly that
  commit SCN (several redo threads can commit at one SCN). On restart a
  transaction is published iff ``commit_scn > self.commit_scn`` or
  (``==`` and its XID is not in the set): nothing twice, nothing lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from readers.oracle.errors import PositionError


@dataclass(frozen=True, slots=True, order=True)
class Scn:
    """A System Change Number: a non-negative integer, printed in decimal."""

    value: int

    def __post_init__(self) -> None:
        if self.value < 0:
            raise PositionError(f"SCN must not be negative: {self.value}", scn=self.value)

    @classmethod
    def parse(cls, text: str | int) -> Scn:
        try:
            return cls(int(text))
        except (TypeError, ValueError):
            raise PositionError(f"not an SCN: {text!r}", scn=text) from None

    def __str__(self) -> str:
        return str(self.value)

    def __int__(self) -> int:
        return self.value


@dataclass(frozen=True, slots=True, order=True)
class Xid:
    """A transaction id: undo segment number, slot, sequence (V$LOGMNR_CONTENTS.XID is RAW(8)).

    The RAW form prints as 16 hex digits: USN (2 bytes), SLOT (2 bytes),
    SQN (4 bytes), each little-endian as Oracle stores them. A rollback row
    LogMiner could not attribute fully carries sequence ``0xffffffff``; it is
    matched to its transaction by ``(usn, slot)`` alone (see ``undo_slot``).
    """

    usn: int
    slot: int
    sqn: int

    UNKNOWN_SQN = 0xFFFFFFFF

    @classmethod
    def parse(cls, text: str) -> Xid:
        """Accept the RAW hex form (16 digits) or ``usn.slot.sqn`` (decimal)."""
        try:
            if "." in text:
                usn, slot, sqn = (int(p) for p in text.split("."))
                return cls(usn, slot, sqn)
            if len(text) != 16:
                raise ValueError
            raw = bytes.fromhex(text)
            return cls(int.from_bytes(raw[0:2], "little"), int.from_bytes(raw[2:4], "little"),
                       int.from_bytes(raw[4:8], "little"))
        except ValueError:
            raise PositionError(f"not an Oracle XID: {text!r}", xid=text) from None

    @property
    def raw(self) -> str:
        return (self.usn.to_bytes(2, "little") + self.slot.to_bytes(2, "little")
                + self.sqn.to_bytes(4, "little")).hex().upper()

    @property
    def undo_slot(self) -> tuple[int, int]:
        return (self.usn, self.slot)

    @property
    def sqn_unknown(self) -> bool:
        return self.sqn == self.UNKNOWN_SQN

    def __str__(self) -> str:
        return f"{self.usn}.{self.slot}.{self.sqn}"


@dataclass(frozen=True, slots=True)
class ResumeState:
    """The resume state in END / HEARTBEAT markers (see the module docstring)."""

    low_watermark_scn: int
    commit_scn: int
    xids_at_commit_scn: frozenset[str] = field(default_factory=frozenset)

    def already_published(self, commit_scn: int, xid: str) -> bool:
        """True if a transaction committing at ``commit_scn`` was published before this state."""
        return commit_scn < self.commit_scn or (commit_scn == self.commit_scn and xid in self.xids_at_commit_scn)

    def to_json(self) -> dict[str, Any]:
        return {"low_watermark_scn": self.low_watermark_scn, "commit_scn": self.commit_scn,
                "xids_at_commit_scn": sorted(self.xids_at_commit_scn)}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> ResumeState:
        try:
            return cls(int(obj["low_watermark_scn"]), int(obj["commit_scn"]),
                       frozenset(str(x) for x in obj.get("xids_at_commit_scn") or ()))
        except (KeyError, TypeError, ValueError) as exc:
            raise PositionError(f"not an Oracle resume state: {obj!r} ({exc})", resume=obj) from None
