"""The position of a shadow-table source: the number of the last merge cycle published.

A cycle is published as ONE transaction whose END carries ``resume = {"cycle": n}``. On restart
the reader reconciles its shadow store with that cycle (readers/shadow/store.py): cycles the store
recorded after ``n`` were never published and are undone, so the next cycle is ``n + 1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from readers.shadow.errors import ShadowError


@dataclass(frozen=True, order=True)
class Cycle:
    """Merge cycle ``number`` (0: nothing published yet). Orders like the cycles."""

    number: int = 0

    @classmethod
    def from_resume(cls, resume: dict[str, Any] | None) -> Cycle:
        """The position in a stream record's ``resume`` dict (None: a new stream, cycle 0)."""
        if resume is None:
            return cls(0)
        try:
            number = int(resume.get("cycle", 0))
        except (TypeError, ValueError):
            raise ShadowError(f"shadow resume state {resume!r}: 'cycle' is not an integer") from None
        if number < 0:
            raise ShadowError(f"shadow resume state {resume!r}: 'cycle' is negative")
        return cls(number)

    def next(self) -> Cycle:
        return Cycle(self.number + 1)

    def to_resume(self) -> dict[str, int]:
        return {"cycle": self.number}

    def __str__(self) -> str:
        return f"cycle {self.number}"
