"""The outbox router (cdc/publish/outbox.py) on the real broker: routing, the bad-row errors, and exactly once
through a crash that left outbox records of a transaction whose END never landed."""

from __future__ import annotations

import orjson
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from cdc.config.models import KafkaConfig
from cdc.metrics import SourceMetrics
from cdc.publish.outbox import OutboxError, attach
from cdc.publish.publisher import Publisher
from cdc.stream.envelope import changes_topic
from cdc.stream.events import Begin, Change, Column, Commit, TableId, TableSchema
from cdc.transforms.config import OutboxConfig
from tests.integration.stream_check import read_stream

pytestmark = pytest.mark.kafka

OUTBOX = TableId("shop", "outbox")
OTHER = TableId("shop", "orders")
SCHEMA = TableSchema(OUTBOX, tuple(Column(n, "varchar(64)", True) for n in
                                   ("id", "aggregatetype", "aggregateid", "type", "payload")), ("id",))
OTHER_SCHEMA = TableSchema(OTHER, (Column("id", "int", False), Column("v", "int", True)), ("id",))


def _config(prefix: str, **kw) -> OutboxConfig:
    return OutboxConfig(table="shop.outbox", topic="{prefix}.outbox.{aggregatetype}", headers={"id": "event-id"}, **kw)


def _publisher(broker, prefix: str, config: OutboxConfig, **kafka) -> Publisher:
    pub = Publisher("src", "mysql", KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=prefix, **kafka),
                    SourceMetrics("src"), heartbeat_min_interval_s=0)
    attach(pub, config)
    return pub


def _event(k: int, j: int, agg: str | None = "order") -> Change:
    row = {"id": f"e-{k}-{j}", "aggregatetype": agg, "aggregateid": f"{agg}-{k % 3}", "type": "Created",
           "payload": orjson.dumps({"k": k, "j": j}).decode()}
    return Change(OUTBOX, "c", None, row, {"gtid": f"0-1-{k}", "row": j}, SCHEMA)


def _tx(pub: Publisher, k: int, changes: list[Change], *, commit: bool = True) -> None:
    pub.publish(Begin(f"0-1-{k}", 1000 + k))
    for ch in changes:
        pub.publish(ch)
    if commit:
        pub.publish(Commit(f"0-1-{k}", 1000 + k, {"gtid": f"0-1-{k}"}, {"gtid": f"0-1-{k}"}))


def _topic(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes | None, dict[str, bytes]]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"outbox-{topic}", "enable.auto.commit": False,
                  "log_level": 3})
    try:
        try:
            low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
        except KafkaException as exc:  # the publisher has not created the topic yet: nothing in it so far
            if exc.args[0].code() in (KafkaError._UNKNOWN_PARTITION, KafkaError.UNKNOWN_TOPIC_OR_PART):
                return []
            raise
        c.assign([TopicPartition(topic, 0, low)])
        out, idle = [], 0
        while idle < 8:  # tansu's watermark may sit below the last record: read until quiet
            msgs = c.consume(1000, 0.25)
            idle = 0 if msgs else idle + 1
            out += [(m.key(), m.value(), dict(m.headers() or ())) for m in msgs if not m.error()]
        assert len(out) >= high - low
        return out
    finally:
        c.close()


def test_inserts_route_by_aggregate_type_and_the_rest_is_ignored(broker, topic_prefix):
    pub = _publisher(broker, topic_prefix, _config(topic_prefix))
    pub.recover()
    _tx(pub, 1, [_event(1, 0), Change(OTHER, "c", None, {"id": 1, "v": 1}, {}, OTHER_SCHEMA),
                 _event(1, 1, "customer")])
    _tx(pub, 2, [Change(OUTBOX, "u", _event(1, 0).after, {**_event(1, 0).after, "type": "X"}, {}, SCHEMA),
                 Change(OUTBOX, "d", _event(1, 1).after, None, {}, SCHEMA), _event(2, 0)])
    pub.flush()
    pub.close()
    orders = _topic(broker.bootstrap, f"{topic_prefix}.outbox.order")
    assert [(k, orjson.loads(v)) for k, v, _ in orders] == [(b"order-1", {"k": 1, "j": 0}),
                                                            (b"order-2", {"k": 2, "j": 0})]
    h = orders[0][2]
    assert (h["id"], h["type"], h["event-id"], h["cdc.event"], h["cdc.source"]) == (
        b"e-1-0", b"Created", b"e-1-0", b"0-1-1#0", b"src")
    assert int(orders[0][2]["cdc.sequence"]) < int(orders[1][2]["cdc.sequence"])
    assert [v for _, v, _ in _topic(broker.bootstrap, f"{topic_prefix}.outbox.customer")] == [
        orjson.dumps({"k": 1, "j": 1})]
    stream = read_stream(broker.bootstrap, changes_topic(topic_prefix, "src"))  # the outbox rows stay in the stream
    seqs = {r["after"]["id"]: r["sequence"] for _, records, _ in stream.transactions for r in records
            if r["source"]["table"] == "outbox" and r["op"] == "c"}
    assert int(h["cdc.sequence"]) == seqs["e-1-0"]


def test_a_crash_before_END_routes_each_event_once(broker, topic_prefix):
    cfg = _config(topic_prefix)
    pub = _publisher(broker, topic_prefix, cfg)
    pub.recover()
    _tx(pub, 1, [_event(1, 0)])
    _tx(pub, 2, [_event(2, 0), _event(2, 1, "customer"), _event(2, 2)], commit=False)  # the crash: no END
    pub.flush()
    pub.close()
    assert len(_topic(broker.bootstrap, f"{topic_prefix}.outbox.order")) == 3  # tx 2's events did land

    pub = _publisher(broker, topic_prefix, cfg)  # the restart: the reader reads tx 2 again, then tx 3
    assert pub.recover() == {"gtid": "0-1-1"}
    assert pub._outbox.recover is not None and len(pub._outbox._written) == 3
    _tx(pub, 2, [_event(2, 0), _event(2, 1, "customer"), _event(2, 2)])
    _tx(pub, 3, [_event(3, 0)])
    pub.flush()
    pub.close()
    assert pub._outbox.skipped == 3
    got = [orjson.loads(v) for _, v, _ in _topic(broker.bootstrap, f"{topic_prefix}.outbox.order")]
    assert got == [{"k": 1, "j": 0}, {"k": 2, "j": 0}, {"k": 2, "j": 2}, {"k": 3, "j": 0}]
    assert len(_topic(broker.bootstrap, f"{topic_prefix}.outbox.customer")) == 1


def test_not_kept_in_stream_and_a_null_aggregate_type_stops_naming_table_position_column(broker, topic_prefix):
    pub = _publisher(broker, topic_prefix, _config(topic_prefix, keep_in_stream=False))
    pub.recover()
    _tx(pub, 1, [_event(1, 0), Change(OTHER, "c", None, {"id": 1, "v": 1}, {}, OTHER_SCHEMA)])
    pub.publish(Begin("0-1-2", 1002))
    with pytest.raises(OutboxError) as err:
        pub.publish(_event(2, 0, agg=None))
    pub.close()
    assert err.value.fields["table"] == "shop.outbox" and err.value.fields["column"] == "aggregatetype"
    assert "gtid 0-1-2" in err.value.message and "Created" not in err.value.message
    stream = read_stream(broker.bootstrap, changes_topic(topic_prefix, "src"))
    assert [r["source"]["table"] for _, records, _ in stream.transactions for r in records] == ["orders"]
    assert len(_topic(broker.bootstrap, f"{topic_prefix}.outbox.order")) == 1


def test_a_bad_row_goes_to_the_dead_letter_topic_when_one_is_set(broker, topic_prefix):
    dlq = f"{topic_prefix}.dlq"
    pub = _publisher(broker, topic_prefix, _config(topic_prefix), dead_letter_topic=dlq)
    pub.recover()
    bad = _event(1, 0)
    del bad.after["aggregateid"]
    _tx(pub, 1, [bad, _event(1, 1)])
    pub.flush()
    pub.close()
    letters = [orjson.loads(v) for _, v, _ in _topic(broker.bootstrap, dlq)]
    assert [(d["error"], d["fields"]["column"]) for d in letters] == [("OutboxError", "aggregateid")]
    assert [orjson.loads(v)["j"] for _, v, _ in _topic(broker.bootstrap, f"{topic_prefix}.outbox.order")] == [1]


def test_config_refuses_a_glob_table_and_a_topic_without_the_aggregate_type():
    with pytest.raises(ValueError, match="one table"):
        OutboxConfig(table="shop.*")
    with pytest.raises(ValueError, match="aggregatetype"):
        OutboxConfig(table="shop.outbox", topic="outbox.events")
    with pytest.raises(ValueError, match="placeholder"):
        OutboxConfig(table="shop.outbox", topic="outbox.{nope}")
