"""The outbox router: a transaction that routed an event writes its END only after everything produced before
it was acknowledged (the outbox topics are other partitions: a crash must not leave an END without its events)."""

from __future__ import annotations

import orjson

from cdc.publish.outbox import attach
from cdc.stream.events import Begin, Change, Column, Commit, TableId, TableSchema
from cdc.transforms.config import OutboxConfig
from tests.unit.cdc.publish.fakes import RecordingProducer, publisher


class FlushRecorder(RecordingProducer):
    def __init__(self) -> None:
        super().__init__()
        self.flushed_at: list[int] = []  # records produced when each flush began

    def flush(self, timeout_s: float = 30) -> None:
        self.flushed_at.append(self.produced)
        super().flush(timeout_s)


def _setup():
    pub, _, _ = publisher()
    pub._producer = pub._acks.producer = fake = FlushRecorder()
    router = attach(pub, OutboxConfig(table="shop.outbox", topic="p.outbox.{aggregatetype}"))
    router._topics.add("p.outbox.order")  # no broker here: the topic counts as made
    return pub, fake


def _tx(pub, k: int, table: str) -> None:
    t = TableId("shop", table)
    schema = TableSchema(t, tuple(Column(n, "varchar(64)", True) for n in
                                  ("id", "aggregatetype", "aggregateid", "type", "payload")), ("id",))
    row = {"id": f"e-{k}", "aggregatetype": "order", "aggregateid": "a", "type": "Created",
           "payload": orjson.dumps({"k": k}).decode()}
    pub.publish(Begin(f"0-1-{k}", 1000 + k))
    pub.publish(Change(t, "c", None, row, {"gtid": f"0-1-{k}", "row": 0}, schema))
    pub.publish(Commit(f"0-1-{k}", 1000 + k, {"gtid": f"0-1-{k}"}, {"gtid": f"0-1-{k}"}))


def test_a_transaction_with_an_event_waits_for_its_acknowledgement_before_its_END():
    pub, fake = _setup()
    _tx(pub, 1, "outbox")
    assert fake.records[-2][0] == "p.outbox.order"  # the event, then the END
    assert fake.flushed_at == [len(fake.records) - 1]  # everything before the END acknowledged before it


def test_a_transaction_without_events_pays_no_round_trip():
    pub, fake = _setup()
    _tx(pub, 1, "orders")
    _tx(pub, 2, "outbox")
    _tx(pub, 3, "orders")
    assert len(fake.flushed_at) == 1  # only before transaction 2's END, right after its event
    assert fake.records[fake.flushed_at[0] - 1][0] == "p.outbox.order"
