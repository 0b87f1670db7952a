"""What one micro-batch did to one target table, for maintained views.

The apply engine reduces each batch to its net effect per primary key and
hands it to ``streaming.views.maintainer.maintain(target, deltas, batch_id)``
inside the open target transaction, after the base tables were written:

    deltas = {target_table_name: TableDelta(deleted=[...], inserted=[...])}

Contract:
- ``deleted`` holds the full before-image (column -> value) of every row the
  batch removed or replaced, as it was before the batch.
- ``inserted`` holds the full after-image of every row the batch added or
  replaced, as it is after the batch.
- An update of a row appears once in each list (old image deleted, new image
  inserted); a row inserted and deleted within the batch appears in neither.
- For tables without a primary key the lists are multisets (a row may appear
  several times: counting semantics).
- Values are the stream's JSON-ready values (int, float, str, bool, None;
  DECIMAL as str, dates as ISO text), keyed by target column name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class TableDelta:
    deleted: list[Row] = field(default_factory=list)
    inserted: list[Row] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.deleted or self.inserted)

    def __len__(self) -> int:
        return len(self.deleted) + len(self.inserted)
