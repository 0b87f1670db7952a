"""ChangeStreamConsumer: whole source transactions from ``<prefix>.<source>.changes``, in commit order.

::

    consumer = ChangeStreamConsumer(bootstrap, "cdc.shop.changes", group_id="billing")
    for tx in consumer:                      # Transaction, or SchemaChange between transactions
        for ch in tx.changes: ...            # RowChange: table, op, key, before, after, sequence
        consumer.commit(tx)                  # the group's offset moves to just after tx's END

Guarantees (the stream contract of cdc.stream.envelope, on both Kafka clients):

- items come in stream (= source commit) order; a transaction is handed out
  only when its END has been read, with every row between its BEGIN and END;
  an ABORTED transaction is never handed out; HEARTBEATs are not items
  (``last_heartbeat_ms``);
- a record at or below the highest sequence already taken is a duplicate and
  is dropped (``stats["duplicates"]``); a jump in sequence raises StreamCorrupt
  naming the missing range and the offset, on this poll and every later one;
  items completed before the gap are handed out first;
- the stream's structure (cdc.stream.stream_structure) is checked as records are
  read: a record that breaks it (rows of another transaction or out of their
  place, an END whose id or counts do not match its BEGIN, a second BEGIN, a
  HEARTBEAT inside a transaction: what two daemons writing one source leave)
  raises StreamCorrupt naming offset, sequence, what was expected and what
  was found, after every item completed before it; the transaction it breaks
  is never handed out;
- ``commit(item)`` stores the offset AFTER the item for the group, and nothing
  is committed unless the caller commits: a consumer restarted with the same
  ``group_id`` (and ``start="committed"``) resumes with the first item after
  the last one committed;
- exactly-once side effects: store ``item.position`` in the same database
  transaction as the side effects, and after a restart call
  ``start_after(position)`` (Kafka commits alone are at-least-once: a crash
  between your side effect and ``commit()`` hands the item out again).

Where reading starts (``start``): ``"committed"`` (the group's committed offset,
else the beginning), ``"beginning"``, ``"end"`` (only items that complete after
now), or :meth:`start_after` with a Position or a sequence. A started position
is checked against the stream: the record before it must carry its sequence
(a position from another stream, or beyond its end, is StreamCorrupt).

Memory: one transaction is held whole until its END (the largest transaction's rows).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from typing import Any

from cdc.consumer.assembler import Item, TransactionAssembler
from cdc.consumer.errors import BrokerUnreachable, ConsumerError, TopicMissing
from cdc.consumer.kafka_clients import KafkaClient, open_client
from cdc.consumer.position import Position
from cdc.errors import CdcError, StreamCorrupt
from cdc.stream.envelope import END, HEARTBEAT, SCHEMA, changes_topic, record_epoch
from cdc.stream.serde import get_serdes

STARTS = ("committed", "beginning", "end")
END_WINDOW = 1000  # records read before the reported high watermark to find the true end and its state
IDLE_END_S = 0.5  # no record for this long at/after the watermark: the end of the stream
STALL_S = 10.0  # no record at all for this long: the end, whatever the watermark says
LOOKUP_S = 15.0  # default wait for one record at a known offset (the record before a start position)


class ChangeStreamConsumer:
    """See the module docstring. Not thread-safe: one thread polls and commits."""

    def __init__(self, bootstrap_servers: Any, topic: str, *, group_id: str | None = None,
                 client: str = "confluent", encoding: str = "json", avro_framing: str = "confluent",
                 start: str = "committed", client_config: dict[str, Any] | None = None,
                 max_poll_records: int = 500, lookup_timeout_s: float = LOOKUP_S,
                 resync_ranges: bool = False) -> None:
        if start not in STARTS:
            raise ConsumerError(f"unknown start {start!r} (one of {', '.join(STARTS)}, or start_after())",
                                start=start)
        self.topic = topic
        self.group_id = group_id
        self.client_name = client
        self._kser, self._vser = get_serdes(encoding, avro_framing)
        self._encoding = encoding
        self._client: KafkaClient = open_client(client, bootstrap_servers, topic, group_id, client_config)
        self._start: tuple[str, Any, bool] = (start, None, True)
        self._asm: TransactionAssembler | None = None
        self._pending: deque[Item] = deque()
        self._error: CdcError | None = None
        self._batch = max_poll_records
        self._lookup_s = lookup_timeout_s
        self.resync_ranges = resync_ranges  # hand out op "x" rows (the caller applies them); else stop on them
        self._closed = False
        self.committed: Position | None = None  # the last position this consumer committed
        self.delivered: Position | None = None  # the position after the last item handed out
        self.last_data_monotonic = time.monotonic()  # time.monotonic() of the last non-heartbeat record
        self.records = 0  # records read (duplicates included)
        self.start_offset: int | None = None  # where reading started (after start())

    @classmethod
    def from_config(cls, config: Any, source: str, **kwargs: Any) -> ChangeStreamConsumer:
        """A consumer of ``source``'s change stream as configured in ``config`` (a cdc.config.models.Config or the
        path of the YAML file): bootstrap servers and client settings (``kafka.client``, ``kafka.consumer``),
        topic prefix, encoding and Avro framing."""
        if not hasattr(config, "kafka"):
            from cdc.config.loader import load_config

            config = load_config(config)
        config.source(source)  # a ConfigError naming the known sources if it is not one
        k = config.kafka
        kwargs.setdefault("encoding", k.encoding)
        kwargs.setdefault("avro_framing", k.avro_framing)
        return cls(k.connection(), changes_topic(k.topic_prefix, source), **kwargs)

    # ------------------------------------------------------------------ where to start
    def start_after(self, position: Position | str | None = None, *, sequence: int | None = None,
                    at_boundary: bool = True) -> None:
        """Resume after ``position`` (what you stored with your side effects: a Position or its ``str``), or
        after ``sequence`` alone (the stream is then read from its beginning, dropping every record up to
        ``sequence``: O(stream)). With a sequence, ``at_boundary=False`` skips forward to the next item if
        ``sequence`` is inside a transaction (otherwise that is StreamCorrupt). Call before the first poll."""
        if self._asm is not None:
            raise ConsumerError("start_after() after the first poll", topic=self.topic)
        if position is not None:
            self._start = ("position", Position.parse(position) if isinstance(position, str) else position, True)
        elif sequence is not None:
            self._start = ("sequence", int(sequence), at_boundary)
        else:
            raise ConsumerError("start_after() needs a position or a sequence", topic=self.topic)

    def start(self) -> None:
        """Find where reading starts now, contacting the broker (the first poll does it otherwise). Afterwards
        ``start_offset`` is the first offset read and ``last_sequence`` the sequence reading continues after.
        Raises TopicMissing when the topic does not exist (yet), StreamCorrupt for a start position that does
        not belong to the stream."""
        if self._asm is None:
            if not self._client.exists():
                raise TopicMissing(f"topic {self.topic} does not exist (has the daemon published this source "
                                   f"yet?)", topic=self.topic)
            self._asm = self._begin()
            self.last_data_monotonic = time.monotonic()  # idleness counts from here, not from the constructor

    def _seek(self, offset: int) -> None:
        self._client.seek(offset)
        self.start_offset = offset

    def _begin(self) -> TransactionAssembler:
        kind, arg, synced = self._start
        if kind == "committed":
            offset = self._client.committed()
            if offset is None:
                kind = "beginning"
            else:
                seq, epoch = self._sequence_before(offset, f"the offset committed by group {self.group_id!r}",
                                                   boundary=True)
                self.committed = self.delivered = Position(seq, offset, epoch)
                self._seek(offset)
                return TransactionAssembler(self.topic, seq, resync_ranges=self.resync_ranges, epoch=epoch)
        if kind == "beginning":
            low, _ = self._client.watermarks()
            self._seek(low)
            # low > 0: history was deleted
            return TransactionAssembler(self.topic, None, synced=low == 0, resync_ranges=self.resync_ranges)
        if kind == "position":
            seq, epoch = self._sequence_before(arg.offset, f"position {arg}", boundary=False)
            if seq != arg.sequence:
                raise StreamCorrupt(f"{self.topic}: position {arg} does not belong to this stream: the record "
                                    f"at offset {arg.offset - 1} has sequence {seq}, not {arg.sequence} (a "
                                    f"topic recreated or restored?)", topic=self.topic, offset=arg.offset - 1,
                                    sequence=seq, expected=arg.sequence)
            self.committed = self.delivered = arg
            self._seek(arg.offset)
            # the epoch floor: the position's, and the record before it (the END or SCHEMA it follows, whose epoch
            # is the highest up to it: a position stored before epochs, or a group's committed offset, has none)
            return TransactionAssembler(self.topic, arg.sequence, resync_ranges=self.resync_ranges,
                                        epoch=max(arg.epoch, epoch))
        if kind == "sequence":
            low, _ = self._client.watermarks()
            self._seek(low)
            return TransactionAssembler(self.topic, arg, synced=synced, resync_ranges=self.resync_ranges)
        return self._begin_at_end()

    def _begin_at_end(self) -> TransactionAssembler:
        """Read the last records (the reported high watermark may lie below the true end) to learn the
        last sequence and whether a transaction is open; hand out only what completes after them."""
        low, high = self._client.watermarks()
        asm = TransactionAssembler(self.topic, None, synced=False, resync_ranges=self.resync_ranges)
        self._seek(max(low, high - END_WINDOW))
        position, last_seen = max(low, high - END_WINDOW), time.monotonic()
        deadline = last_seen + 120
        while True:
            raws = self._client.poll(self._batch, 0.1)
            now = time.monotonic()
            for offset, key, value, headers in raws:
                self._feed(asm, offset, key, value, headers)  # items completed here are history: dropped
                position = offset + 1
            if raws:
                last_seen = now
            elif (now - last_seen >= IDLE_END_S and position >= high) or now - last_seen >= STALL_S:
                self.start_offset = position
                return asm
            if now > deadline:
                raise BrokerUnreachable(f"{self.topic}: reading to the end from offset {high} did not finish "
                                        f"within 120 s", topic=self.topic, offset=position)

    def _sequence_before(self, offset: int, what: str, *, boundary: bool) -> tuple[int, int]:
        """The sequence and writer epoch of the record at ``offset - 1``; ``boundary``: it must end an item."""
        raw = self._read_one(offset - 1)
        if raw is None:
            raise StreamCorrupt(f"{self.topic}: {what} follows offset {offset - 1}, but no record there could be "
                                f"read within {self._lookup_s:g} s (beyond the end of the stream, or deleted)",
                                topic=self.topic, offset=offset - 1)
        value = self._decode(raw[0], raw[2])
        seq = value.get("sequence")
        if type(seq) is not int:
            raise StreamCorrupt(f"{self.topic}: the record at offset {offset - 1} has no integer sequence",
                                topic=self.topic, offset=offset - 1)
        if boundary and value.get("status") not in (END, SCHEMA):
            raise StreamCorrupt(f"{self.topic}: {what} ({offset}) does not follow the END of a transaction (the "
                                f"record at offset {offset - 1} is {value.get('status') or 'a data record'}, "
                                f"sequence {seq}); resuming there would hand out part of a transaction",
                                topic=self.topic, offset=offset, sequence=seq)
        return seq, max(0, record_epoch(raw[3]) if len(raw) > 3 else 0)

    def _read_one(self, offset: int) -> tuple[int, bytes | None, bytes | None] | None:
        self._client.seek(offset)
        deadline = time.monotonic() + self._lookup_s
        while time.monotonic() < deadline:
            for raw in self._client.poll(1, 0.2):
                if raw[0] == offset:
                    return raw
                if raw[0] > offset:
                    return None  # compacted or deleted away
        return None

    # ------------------------------------------------------------------ reading
    def _decode(self, offset: int, data: bytes | None) -> dict[str, Any]:
        if data is None:
            raise StreamCorrupt(f"{self.topic}: the record at offset {offset} has no value", topic=self.topic,
                                offset=offset)
        try:
            return self._vser.decode(data)
        except (CdcError, ValueError, TypeError, KeyError, EOFError) as exc:  # orjson/fastavro: ValueError
            raise StreamCorrupt(f"{self.topic}: cannot decode the record at offset {offset} with encoding "
                                f"{self._encoding!r} (was it written with another kafka.encoding?): {exc}",
                                topic=self.topic, offset=offset, encoding=self._encoding) from None

    def _feed(self, asm: TransactionAssembler, offset: int, key: bytes | None, data: bytes | None,
              headers: Any = None) -> Item | None:
        self.records += 1
        value = self._decode(offset, data)
        if asm.is_duplicate(value.get("sequence")):
            asm.check_duplicate(offset, value["sequence"], record_epoch(headers))  # never a newer writer's
            asm.duplicates += 1
            return None
        if value.get("status") != HEARTBEAT:
            self.last_data_monotonic = time.monotonic()
        k = None
        if key is not None and "status" not in value:
            try:
                k = self._kser.decode(key)
            except (CdcError, ValueError, TypeError, KeyError, EOFError) as exc:
                raise StreamCorrupt(f"{self.topic}: cannot decode the key at offset {offset}: {exc}",
                                    topic=self.topic, offset=offset, sequence=value.get("sequence")) from None
        return asm.feed(offset, k, value, record_epoch(headers))

    def poll(self, timeout: float = 1.0) -> Item | None:
        """The next item, or None when none completed within ``timeout`` seconds. Raises StreamCorrupt
        (gap, broken transaction, undecodable record) once every item before the fault was handed out."""
        if self._closed:
            raise ConsumerError("poll() on a closed consumer", topic=self.topic)
        self.start()
        deadline = time.monotonic() + timeout
        while not self._pending:
            if self._error is not None:
                raise self._error
            raws = self._client.poll(self._batch, max(0.0, min(0.2, deadline - time.monotonic())))
            try:
                for offset, key, value, headers in raws:
                    item = self._feed(self._asm, offset, key, value, headers)
                    if item is not None:
                        self._pending.append(item)
            except StreamCorrupt as exc:
                self._error = exc
            if not self._pending and self._error is None and time.monotonic() >= deadline:
                return None
        item = self._pending.popleft()
        self.delivered = item.position
        return item

    def __iter__(self) -> Iterator[Item]:
        """Items forever (until close(), or an error)."""
        while not self._closed:
            item = self.poll(1.0)
            if item is not None:
                yield item

    def items(self, idle_s: float) -> Iterator[Item]:
        """Items until no record other than a heartbeat arrived for ``idle_s`` seconds."""
        while not self._closed:
            item = self.poll(min(idle_s, 0.5))
            if item is not None:
                yield item
            elif time.monotonic() - self.last_data_monotonic >= idle_s:
                return

    # ------------------------------------------------------------------ committing
    def commit(self, item: Item) -> None:
        """``item`` and everything before it are done: store the offset after it for the group (synchronous;
        CommitFailed if the broker refused). Committing an item at or before the last commit does nothing."""
        if getattr(item, "in_transaction", False):
            raise ConsumerError(f"commit of a schema record inside a transaction (sequence {item.sequence}): commit "
                                f"the Transaction that holds it", topic=self.topic, sequence=item.sequence)
        pos = item.position
        if self.committed is not None and pos <= self.committed:
            return
        if self.delivered is None or pos > self.delivered:
            raise ConsumerError(f"commit of {pos}, which this consumer has not handed out (last: {self.delivered})",
                                topic=self.topic, position=str(pos))
        if self.group_id is not None:
            self._client.commit(pos.offset)
        self.committed = pos

    # ------------------------------------------------------------------ state
    @property
    def last_sequence(self) -> int | None:
        """The highest sequence read (it may belong to a transaction not complete yet)."""
        return None if self._asm is None else self._asm.last_sequence

    @property
    def last_heartbeat_ms(self) -> int | None:
        """``ts_ms`` of the last HEARTBEAT read (the source was alive then, even with no transaction)."""
        return None if self._asm is None else self._asm.last_heartbeat_ms

    @property
    def stats(self) -> dict[str, int]:
        a = self._asm
        return {"records": self.records, "duplicates": a.duplicates if a else 0, "aborted": a.aborted if a else 0,
                "heartbeats": a.heartbeats if a else 0, "unsynced": a.unsynced if a else 0}

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._client.close()

    def __enter__(self) -> ChangeStreamConsumer:  # noqa: PYI034 - typing.Self needs 3.11
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
