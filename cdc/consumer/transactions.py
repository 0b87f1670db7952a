"""What a consumer of the change stream is handed: whole transactions and schema changes.

- :class:`Transaction`: one source transaction, BEGIN..END, with its row changes
  (:class:`RowChange`) in stream order, and any table definitions the publisher
  wrote inside it (:class:`SchemaChange`, ``tx.schemas``);
- :class:`SchemaChange` between transactions: a DDL or a table definition, its own
  item in the stream's order (a consumer applying a table must take it before the
  transactions after it).

Both carry ``position`` (cdc.consumer.position.Position), the point AFTER them:
what :meth:`ChangeStreamConsumer.commit` commits and what a consumer stores with
its side effects. Both have ``changes`` (empty for a schema change), so a loop that
only applies rows can treat every item alike. Values are decoded records as
cdc.stream.envelope describes them; ``value`` keeps the whole record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc.consumer.position import Position


@dataclass(frozen=True, slots=True)
class RowChange:
    """One data record: ``op`` is c (insert), u (update), d (delete), r (snapshot read), t (truncate), x (a
    resync range: delete the rows ``resync_range`` names; only handed out with ``resync_ranges=True``)."""

    table: str  # "db.table"
    op: str
    key: dict[str, Any] | None  # the primary-key values (the record key's "key")
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    sequence: int
    offset: int
    value: dict[str, Any]  # the whole record: source{...} (native position), transaction{...}, ts_ms

    @property
    def source(self) -> dict[str, Any]:
        return self.value.get("source") or {}

    @property
    def row(self) -> dict[str, Any] | None:
        """The row as it is after the change (``before`` for a delete)."""
        return self.after if self.after is not None else self.before

    @property
    def resync_range(self) -> Any:
        """The cdc.stream.resync_range.ResyncRange of an ``op: "x"`` record (None for other ops): delete the rows of
        ``table`` whose key lies in it and is not in its ``keep``."""
        if self.op != "x":
            return None
        from cdc.stream.resync_range import ResyncRange
        return ResyncRange.from_text(self.source.get("resync"), self.table)

    def record_key(self) -> dict[str, Any]:
        """The Kafka record key as the publisher wrote it."""
        return {"table": self.table, "key": self.key}


@dataclass(frozen=True, slots=True)
class SchemaChange:
    """A SCHEMA record: ``schema`` is the table definition {table, columns, primary_key}, or None for a
    DDL that leaves no table (DROP); ``ddl`` the statement when the source gave one."""

    table: str | None
    ddl: str | None
    schema: dict[str, Any] | None
    sequence: int
    offset: int
    value: dict[str, Any]
    in_transaction: bool = False  # a table definition inside a Transaction (tx.items): not an item to commit
    changes: tuple = ()  # no rows: lets `for item in consumer: item.changes` treat every item alike
    epoch: int = 0  # the highest writer epoch read up to this record (its position carries it)

    @property
    def position(self) -> Position:
        return Position(self.sequence, self.offset + 1, self.epoch)

    def record_key(self) -> dict[str, Any] | None:
        return {"table": self.table} if self.table is not None else None


@dataclass(frozen=True, slots=True)
class Transaction:
    """One committed source transaction, whole. ``sequence`` is its END's, ``begin_sequence`` its BEGIN's."""

    id: str  # MySQL GTID, Oracle XID
    begin: dict[str, Any]  # the BEGIN record
    end: dict[str, Any]  # the END record: event_count, data_collections, ts_ms, position, resume
    items: tuple[RowChange | SchemaChange, ...]  # row changes and in-transaction table definitions, in order
    begin_offset: int
    end_offset: int
    epoch: int = 0  # the highest writer epoch read up to its END (its position carries it)
    changes: tuple[RowChange, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "changes", tuple(i for i in self.items if type(i) is RowChange))

    @property
    def sequence(self) -> int:
        return self.end["sequence"]

    @property
    def begin_sequence(self) -> int:
        return self.begin["sequence"]

    @property
    def position(self) -> Position:
        return Position(self.sequence, self.end_offset + 1, self.epoch)

    @property
    def schemas(self) -> tuple[SchemaChange, ...]:
        return tuple(i for i in self.items if type(i) is SchemaChange)

    @property
    def ts_ms(self) -> int | None:
        """Source commit time (ms since the epoch)."""
        return self.end.get("ts_ms")

    @property
    def commit_position(self) -> dict[str, Any] | None:
        """The native commit position (MySQL gtid/file/pos, Oracle commit_scn)."""
        return self.end.get("position")

    @property
    def tables(self) -> dict[str, int]:
        """Row count per table, as the END record states it."""
        return {d["data_collection"]: d["event_count"] for d in self.end.get("data_collections") or ()}

    def __len__(self) -> int:
        return len(self.changes)
