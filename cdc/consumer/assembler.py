"""From records in offset order to whole transactions: the stream contract, enforced.

:class:`TransactionAssembler` is the consumer's state machine, with no Kafka in it
(unit-tested on its own). Fed one decoded record at a time (``feed``), it returns
a finished item (Transaction or SchemaChange) or None, and keeps these rules of
the change stream (cdc.stream.envelope, DESIGN.md "The change stream"):

- identity is ``sequence``, with the one rule every reader of the stream applies
  (cdc.stream.sequence.SequenceWatch): a record at or below the highest sequence already
  taken is a duplicate (a producer retry appended a run twice) and is dropped,
  wherever it appears; a jump is never passed: StreamCorrupt naming the missing
  range and the offset after which it is missing. The assembler stays before the
  gap and raises the same error on every later feed;
- the stream's structure (cdc.stream.stream_structure, the checker every reader of the
  stream shares): BEGIN opens a transaction, END closes it (same id, ``event_count``
  and ``data_collections`` equal to its rows) and releases it; ABORTED discards
  it (a transaction cut by a publisher crash); a data record outside a
  transaction or of another transaction, a second BEGIN, a HEARTBEAT inside a
  transaction, an END or ABORTED of another id: StreamCorrupt naming offset,
  sequence, what was expected and what was found, before the transaction it
  breaks is handed out (items completed before it are handed out first);
- SCHEMA inside a transaction belongs to it (a table definition written before
  its first row; a DDL there is refused); outside, it is an item of its own;
- HEARTBEAT is not an item: it only updates ``last_heartbeat_ms``;
- a resync range (``op: "x"``, cdc.stream.resync_range) is handed out as a RowChange (``resync_range`` parses
  it) only with ``resync_ranges=True``, when the caller deletes the rows it names; otherwise it is a
  ResyncRangeError naming table, offset and sequence (a consumer that ignored it would keep rows the
  source no longer holds).

``synced=False`` (reading from an arbitrary offset, e.g. the end of the stream)
drops records until the first point where a transaction or an item starts (a
BEGIN, a HEARTBEAT, a SCHEMA record with a resume state): a transaction whose
BEGIN was not read is never handed out half.
"""

from __future__ import annotations

from typing import Any

from cdc.consumer.transactions import RowChange, SchemaChange, Transaction
from cdc.errors import StreamCorrupt
from cdc.stream.envelope import ABORTED, BEGIN, END, HEARTBEAT, SCHEMA
from cdc.stream.resync_range import OP as RANGE_OP
from cdc.stream.resync_range import ResyncRangeError
from cdc.stream.sequence import SequenceWatch
from cdc.stream.stream_structure import StreamStructure

Item = Transaction | SchemaChange


class TransactionAssembler:
    """State: ``last_sequence`` (highest sequence taken, None before the first record) and the open
    transaction. Counters: ``duplicates``, ``aborted``, ``heartbeats``, ``unsynced`` (dropped before
    the first boundary)."""

    def __init__(self, topic: str, last_sequence: int | None = None, *, synced: bool = True,
                 resync_ranges: bool = False, epoch: int = 0) -> None:
        """``epoch``: the highest writer epoch handed out before ``last_sequence`` (a resumed consumer's
        Position.epoch): the epoch rules hold from there."""
        self.topic = topic
        self.resync_ranges = resync_ranges
        self._watch = SequenceWatch(topic, 0, last=last_sequence)
        self.synced = synced
        self.last_heartbeat_ms: int | None = None
        self.duplicates = self.aborted = self.heartbeats = self.unsynced = 0
        self._begin: dict[str, Any] | None = None
        self._begin_offset = -1
        self._items: list[RowChange | SchemaChange] = []
        self._rows = 0
        self._broken: StreamCorrupt | None = None
        self._structure = StreamStructure(topic, 0, epoch)

    @property
    def last_sequence(self) -> int | None:
        return self._watch.last

    @property
    def in_transaction(self) -> bool:
        return self._begin is not None

    @property
    def epoch(self) -> int:
        """The highest writer epoch taken so far (or the one it started from)."""
        return self._structure.epoch

    def is_duplicate(self, sequence: Any) -> bool:
        """True for a record the assembler would drop as already taken (cheap pre-check, no decoding of keys)."""
        return type(sequence) is int and self.last_sequence is not None and sequence <= self.last_sequence

    def check_duplicate(self, offset: int, sequence: int, epoch: int | None) -> None:
        """A record dropped as a duplicate (at or below ``last_sequence``) must not be of a HIGHER writer epoch
        than every record taken: a newer writer never re-uses an older one's sequence, so what was taken under
        it was an older writer's record written late. StreamCorrupt then (never a silent drop)."""
        if self._broken is not None:
            raise self._broken
        held = self._structure.epoch
        if epoch and held and epoch > held:
            from cdc.stream.stream_structure import WAY_BACK

            raise self._fail(StreamCorrupt(
                f"{self.topic}: a record of writer epoch {epoch} at offset {offset}, sequence {sequence}, is not a "
                f"duplicate of what was taken under that sequence (writer epoch {held} or lower): a newer writer "
                f"never re-uses an older one's sequence, so the record taken there was an older writer's, written "
                f"after the newer one took the stream. {WAY_BACK}", topic=self.topic, offset=offset,
                sequence=sequence, epoch=epoch, previous_epoch=held))

    def feed(self, offset: int, key: dict[str, Any] | None, value: dict[str, Any],
             epoch: int | None = None) -> Item | None:
        """Take the record at ``offset``; return the item it completes, if any. Raises StreamCorrupt.
        ``epoch``: its writer epoch (cdc.stream.envelope.record_epoch of its headers; None: not checked)."""
        if self._broken is not None:
            raise self._broken
        seq = value.get("sequence") if type(value) is dict else None
        if type(seq) is not int:
            raise self._fail(StreamCorrupt(f"{self.topic}: the record at offset {offset} has no integer sequence",
                                           topic=self.topic, offset=offset, value=_short(value)))
        try:
            if not self._watch.admit(seq, offset):
                self.check_duplicate(offset, seq, epoch)
                self.duplicates += 1
                return None
        except StreamCorrupt as gap:
            raise self._fail(gap) from None
        status = value.get("status")
        if not self.synced:
            if status == BEGIN or status == HEARTBEAT or (status == SCHEMA and value.get("resume") is not None):
                self.synced = True
            else:
                self.unsynced += 1
                return None
        try:
            self._structure.record(offset, seq, key, value, epoch)
        except StreamCorrupt as exc:
            raise self._fail(exc) from None
        if status is None:
            self._row(offset, key, value, seq)
            return None
        if status == BEGIN:
            self._begin, self._begin_offset, self._items, self._rows = value, offset, [], 0
            return None
        if status == END:
            return self._end(offset, value)
        if status == ABORTED:
            self._begin, self._items = None, []
            self.aborted += 1
            return None
        if status == SCHEMA:
            item = SchemaChange(value.get("table"), value.get("ddl"), value.get("schema"), seq, offset, value,
                                self._begin is not None, epoch=self._structure.epoch)
            if self._begin is not None:
                self._items.append(item)
                return None
            return item
        self.heartbeats += 1  # HEARTBEAT (the structure check refused any other status)
        self.last_heartbeat_ms = value.get("ts_ms")
        return None

    def _row(self, offset: int, key: dict[str, Any] | None, value: dict[str, Any], seq: int) -> None:
        table = key.get("table") if key else None
        if table is None:
            src = value.get("source") or {}
            table = f"{src.get('db')}.{src.get('table')}"
        if value.get("op") == RANGE_OP and not self.resync_ranges:
            raise ResyncRangeError(
                f"a resync range of {table} at offset {offset} (sequence {seq}) of {self.topic}: this consumer does "
                "not apply range deletes (StreamConsumer(resync_ranges=True) hands them out as RowChange.resync_range "
                "for the caller to delete)", table=table, why="consumer", offset=offset, sequence=seq)
        self._items.append(RowChange(table, value.get("op"), key.get("key") if key else None,
                                     value.get("before"), value.get("after"), seq, offset, value))
        self._rows += 1

    def _end(self, offset: int, value: dict[str, Any]) -> Transaction:
        begin = self._begin
        tx = Transaction(begin.get("id"), begin, value, tuple(self._items), self._begin_offset, offset,
                         self._structure.epoch)
        self._begin, self._items = None, []
        return tx

    def _fail(self, exc: StreamCorrupt) -> StreamCorrupt:
        self._broken = exc
        return exc


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."
