"""From records in offset order to whole transactions: the stream contract, enforced.

:class:`TransactionAssembler` is the consumer's state machine, with no Kafka in it
(unit-tested on its own). Fed one decoded record at a time (``feed``), it returns
a finished item (Transaction or SchemaChange) or None, and keeps these rules of
the change stream (cdc.envelope, DESIGN.md "The change stream"):

- identity is ``sequence``, with the one rule every reader of the stream applies
  (cdc.sequence.SequenceWatch): a record at or below the highest sequence already
  taken is a duplicate (a producer retry appended a run twice) and is dropped,
  wherever it appears; a jump is never passed: StreamCorrupt naming the missing
  range and the offset after which it is missing. The assembler stays before the
  gap and raises the same error on every later feed;
- BEGIN opens a transaction, END closes it (same id, ``event_count`` rows) and
  releases it; ABORTED discards it (a transaction cut by a publisher crash);
- SCHEMA inside a transaction belongs to it (a table definition written before
  its first row); outside, it is an item of its own;
- HEARTBEAT is not an item: it only updates ``last_heartbeat_ms``.

``synced=False`` (reading from an arbitrary offset, e.g. the end of the stream)
drops records until the first point where a transaction or an item starts (a
BEGIN, a HEARTBEAT, a SCHEMA record with a resume state): a transaction whose
BEGIN was not read is never handed out half.
"""

from __future__ import annotations

from typing import Any

from cdc.consumer.transactions import RowChange, SchemaChange, Transaction
from cdc.envelope import ABORTED, BEGIN, END, HEARTBEAT, SCHEMA
from cdc.errors import StreamCorrupt
from cdc.sequence import SequenceWatch

Item = Transaction | SchemaChange


class TransactionAssembler:
    """State: ``last_sequence`` (highest sequence taken, None before the first record) and the open
    transaction. Counters: ``duplicates``, ``aborted``, ``heartbeats``, ``unsynced`` (dropped before
    the first boundary)."""

    def __init__(self, topic: str, last_sequence: int | None = None, *, synced: bool = True) -> None:
        self.topic = topic
        self._watch = SequenceWatch(topic, 0, last=last_sequence)
        self.synced = synced
        self.last_heartbeat_ms: int | None = None
        self.duplicates = self.aborted = self.heartbeats = self.unsynced = 0
        self._begin: dict[str, Any] | None = None
        self._begin_offset = -1
        self._items: list[RowChange | SchemaChange] = []
        self._rows = 0
        self._broken: StreamCorrupt | None = None

    @property
    def last_sequence(self) -> int | None:
        return self._watch.last

    @property
    def in_transaction(self) -> bool:
        return self._begin is not None

    def is_duplicate(self, sequence: Any) -> bool:
        """True for a record the assembler would drop as already taken (cheap pre-check, no decoding of keys)."""
        return type(sequence) is int and self.last_sequence is not None and sequence <= self.last_sequence

    def feed(self, offset: int, key: dict[str, Any] | None, value: dict[str, Any]) -> Item | None:
        """Take the record at ``offset``; return the item it completes, if any. Raises StreamCorrupt."""
        if self._broken is not None:
            raise self._broken
        seq = value.get("sequence") if type(value) is dict else None
        if type(seq) is not int:
            raise self._fail(StreamCorrupt(f"{self.topic}: the record at offset {offset} has no integer sequence",
                                           topic=self.topic, offset=offset, value=_short(value)))
        try:
            if not self._watch.admit(seq, offset):
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
        if status is None:
            self._row(offset, key, value, seq)
            return None
        if status == BEGIN:
            if self._begin is not None:
                raise self._corrupt(f"BEGIN of {value.get('id')!r} inside the open transaction "
                                    f"{self._begin.get('id')!r}", offset, seq)
            self._begin, self._begin_offset, self._items, self._rows = value, offset, [], 0
            return None
        if status == END:
            return self._end(offset, value, seq)
        if status == ABORTED:
            if self._begin is not None:
                self._begin, self._items = None, []
                self.aborted += 1
            return None
        if status == SCHEMA:
            item = SchemaChange(value.get("table"), value.get("ddl"), value.get("schema"), seq, offset, value,
                                self._begin is not None)
            if self._begin is not None:
                self._items.append(item)
                return None
            return item
        if status == HEARTBEAT:
            self.heartbeats += 1
            self.last_heartbeat_ms = value.get("ts_ms")
            return None
        raise self._corrupt(f"unknown record status {status!r}", offset, seq)

    def _row(self, offset: int, key: dict[str, Any] | None, value: dict[str, Any], seq: int) -> None:
        if self._begin is None:
            raise self._corrupt("a data record outside any transaction (no BEGIN before it)", offset, seq)
        table = key.get("table") if key else None
        if table is None:
            src = value.get("source") or {}
            table = f"{src.get('db')}.{src.get('table')}"
        self._items.append(RowChange(table, value.get("op"), key.get("key") if key else None,
                                     value.get("before"), value.get("after"), seq, offset, value))
        self._rows += 1

    def _end(self, offset: int, value: dict[str, Any], seq: int) -> Transaction:
        begin = self._begin
        if begin is None:
            raise self._corrupt(f"END of {value.get('id')!r} without its BEGIN", offset, seq)
        if value.get("id") != begin.get("id"):
            raise self._corrupt(f"END of {value.get('id')!r} closes the transaction {begin.get('id')!r}",
                                offset, seq)
        count = value.get("event_count")
        if count is not None and count != self._rows:
            raise self._corrupt(f"transaction {begin.get('id')!r} has {self._rows} rows, its END says {count}",
                                offset, seq)
        tx = Transaction(begin.get("id"), begin, value, tuple(self._items), self._begin_offset, offset)
        self._begin, self._items = None, []
        return tx

    def _corrupt(self, what: str, offset: int, seq: int) -> StreamCorrupt:
        return self._fail(StreamCorrupt(f"{self.topic}: {what} at offset {offset}, sequence {seq}",
                                        topic=self.topic, offset=offset, sequence=seq))

    def _fail(self, exc: StreamCorrupt) -> StreamCorrupt:
        self._broken = exc
        return exc


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."
