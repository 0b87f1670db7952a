"""Builders of realistic change streams (tests and `cdc bench apply`): the records the daemon writes.

``StreamBuilder`` keeps the sequence and offsets, and yields (key, value)
dict pairs exactly as cdc.stream.envelope builds them, including ABORTED and SCHEMA
records. ``as_records()`` turns them into streaming.stream.records.StreamRecord rows
without Kafka; integration tests produce the same pairs into the broker.
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc.stream import envelope
from cdc.stream.events import Change, Column, TableId, TableSchema
from streaming.stream.records import StreamRecord, to_row


class _Json:
    def decode(self, b: bytes) -> Any:
        return orjson.loads(b)


class StreamBuilder:
    def __init__(self, source: str = "src", start_sequence: int = 1, ts_ms: int = 1_700_000_000_000) -> None:
        self.source = source
        self.seq = start_sequence
        self.ts = ts_ms
        self.items: list[tuple[dict | None, dict]] = []
        self.schemas: dict[str, TableSchema] = {}
        self._tx = 0

    def _next(self) -> int:
        s = self.seq
        self.seq += 1
        return s

    def schema(self, table: str, columns: list[tuple[str, str]], pk: list[str], ddl: str | None = None) -> StreamBuilder:
        # each column: (name, type[, nullable[, default]])
        ts = TableSchema(TableId.parse(table), tuple(Column(*c) for c in columns), tuple(pk))
        self.schemas[table] = ts
        self.items.append(({"table": table}, envelope.schema_record(self._next(), table, ddl, ts, self.ts, {"r": 1})))
        return self

    def ddl(self, table: str | None, ddl: str) -> StreamBuilder:
        self.items.append(({"table": table} if table else None,
                           envelope.schema_record(self._next(), table, ddl, None, self.ts, {"r": 1})))
        return self

    def heartbeat(self) -> StreamBuilder:
        self.items.append((None, envelope.heartbeat_record(self._next(), self.ts, {"r": 1})))
        return self

    def tx(self, *changes: tuple, abort: bool = False, unterminated: bool = False) -> StreamBuilder:
        """changes: (op, table, before, after[, source fields]) tuples; one source transaction."""
        self._tx += 1
        self.ts += 10
        txid = f"0-1-{self._tx}"
        self.items.append((None, envelope.begin_record(self._next(), txid, self.ts)))
        counts: dict[str, int] = {}
        for i, change in enumerate(changes):
            op, table, before, after = change[:4]
            extra = change[4] if len(change) > 4 else {}  # more source fields (a resync range's ``resync``)
            ch = Change(TableId.parse(table), op, before, after, {"gtid": txid, **extra}, self.schemas.get(table))
            counts[table] = counts.get(table, 0) + 1
            k, v = envelope.data_record(ch, sequence=self._next(), source_name=self.source, connector="mysql",
                                        txid=txid, commit_ts_ms=self.ts, total_order=i + 1,
                                        data_collection_order=counts[table], now_ms=self.ts)
            self.items.append((k, v))
        if abort:
            self.items.append((None, envelope.aborted_record(self._next(), txid, self.ts)))
        elif not unterminated:
            self.items.append((None, envelope.end_record(self._next(), txid, self.ts, counts,
                                                         {"gtid": f"0-1-{self._tx}"}, {"gtid": txid})))
        return self

    def encoded(self) -> list[tuple[bytes | None, bytes]]:
        return [(orjson.dumps(k) if k is not None else None, orjson.dumps(v)) for k, v in self.items]

    def as_records(self, first_offset: int = 0) -> list[StreamRecord]:
        j = _Json()
        out = []
        for i, (k, v) in enumerate(self.encoded()):
            row = to_row(0, first_offset + i, k, v, j, j)
            out.append(StreamRecord(*row))
        return out


def produce(where: Any, topic: str, encoded: list[tuple[bytes | None, bytes]], timeout: float = 30) -> None:
    """Write records to ``topic`` partition 0 in order, waiting for every acknowledgement. ``where``: bootstrap
    servers or a cdc.config.kafka_settings.KafkaConnection (TLS, SASL)."""
    from confluent_kafka import Producer

    from cdc.config.kafka_settings import KafkaConnection

    p = Producer(KafkaConnection.of(where).settings("producer", {
        "enable.idempotence": False, "acks": "all", "max.in.flight.requests.per.connection": 1, "linger.ms": 5}))
    errors: list = []
    for k, v in encoded:
        while True:
            try:
                p.produce(topic, value=v, key=k, partition=0,
                          on_delivery=lambda err, msg: errors.append(err) if err else None)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    left = p.flush(timeout)
    assert left == 0 and not errors, f"produce to {topic} failed: {errors[:3]} ({left} unacknowledged)"
