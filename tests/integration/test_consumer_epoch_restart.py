"""The consumer library keeps the writer epoch across a restart (issue #36 section 2), on the real broker: the
position it hands out and commits carries the highest epoch read, so a fenced writer's records that landed after
the newer writer's are refused after a restart from the committed offset or a stored position, and a newer
writer's record is never dropped as a duplicate of an older writer's."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from cdc.consumer import ChangeStreamConsumer, Position, StreamCorrupt, Transaction
from cdc.stream.envelope import EPOCH_HEADER
from cdc.stream.serde import get_serdes
from tests.unit.cdc.stream.structure_streams import write

pytestmark = [pytest.mark.kafka]


def _produce(bootstrap: str, topic: str, records, epochs) -> None:
    kser, vser = get_serdes("json")
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False,
                  "max.in.flight.requests.per.connection": 1})
    for (k, v), e in zip(records, epochs, strict=True):
        p.produce(topic, vser.encode(v), None if k is None else kser.encode(k), 0,
                  headers=[(EPOCH_HEADER, str(e).encode())])
    assert p.flush(30) == 0


def _first_tx(c: ChangeStreamConsumer) -> Transaction:
    for _ in range(20):
        item = c.poll(5)
        if isinstance(item, Transaction):
            return item
    raise AssertionError("no transaction handed out")


def test_a_fenced_writers_late_records_stay_refused_after_a_restart(broker, topic_prefix):
    topic = f"{topic_prefix}.src.changes"
    broker.create_topic(topic)
    b1 = write([("tx", [("c", "db.a", 1, 1)])], 1, "B")
    stale = write([("tx", [("c", "db.a", 2, 666)])], 5, "A", {"db.a"})
    b2 = write([("tx", [("c", "db.a", 2, 2)])], 5, "B", {"db.a"})
    _produce(broker.bootstrap, topic, b1 + stale + b2, [9] * len(b1) + [4] * len(stale) + [9] * len(b2))
    group = f"{topic_prefix}-g"
    with ChangeStreamConsumer(broker.bootstrap, topic, group_id=group) as c:
        tx = _first_tx(c)
        c.commit(tx)
        assert tx.position.epoch == 9 and str(tx.position) == f"4@{len(b1)}:9"
        with pytest.raises(StreamCorrupt, match="with epoch 4"):
            c.poll(5)
    stored = tx.position
    starts = [lambda c: None,  # the group's committed offset
              lambda c: c.start_after(stored), lambda c: c.start_after(str(stored)),
              lambda c: c.start_after(f"{stored.sequence}@{stored.offset}")]  # a position stored before epochs
    for start in starts:
        with ChangeStreamConsumer(broker.bootstrap, topic, group_id=group) as c:
            start(c)
            with pytest.raises(StreamCorrupt) as info:
                for _ in range(20):
                    assert not isinstance(c.poll(2), Transaction), "the fenced writer's transaction was handed out"
            err = info.value
            assert err.fields["sequence"] == 5 and err.fields["epoch"] == 4 and err.fields["previous_epoch"] == 9
            assert "way back" in str(err)


def test_a_newer_writers_record_is_not_dropped_as_a_duplicate_after_a_restart(broker, topic_prefix):
    topic = f"{topic_prefix}.src.changes"
    broker.create_topic(topic)
    a1 = write([("tx", [("c", "db.a", 1, 666)])], 1, "A")
    b1 = write([("tx", [("c", "db.a", 1, 1)])], 1, "B")
    _produce(broker.bootstrap, topic, a1 + b1, [4] * len(a1) + [9] * len(b1))
    group = f"{topic_prefix}-g"
    with ChangeStreamConsumer(broker.bootstrap, topic, group_id=group) as c:
        c.commit(_first_tx(c))
    with ChangeStreamConsumer(broker.bootstrap, topic, group_id=group) as c:
        with pytest.raises(StreamCorrupt, match="is not a duplicate") as info:
            for _ in range(20):
                c.poll(2)
        assert info.value.fields["epoch"] == 9 and info.value.fields["previous_epoch"] == 4


def test_positions_print_and_parse_with_their_epoch():
    assert Position.parse("12@34:5") == Position(12, 34, 5) and str(Position(12, 34)) == "12@34"
    assert Position.parse("12@34").epoch == 0 and Position.from_json({"sequence": 1, "offset": 2}).epoch == 0
