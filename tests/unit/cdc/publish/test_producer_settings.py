"""The producer's settings (#13 item 2) and the publisher's oversized-row rule (item 10), without a broker."""

from __future__ import annotations

import time

import pytest

from cdc.errors import ConfigError, PublishError
from cdc.publish.producer import OrderedProducer, RecordTooLarge, producer_config
from cdc.stream.events import Begin, Change, Commit
from tests.integration.scripted_source import SCHEMAS, T1
from tests.unit.cdc.publish.fakes import decoded, publisher


def test_idempotent_gapless_and_never_expiring_by_default():
    conf = producer_config("127.0.0.1:9")
    assert conf["enable.idempotence"] is True and conf["enable.gapless.guarantee"] is True
    assert conf["acks"] == "all" and conf["max.in.flight.requests.per.connection"] == 1
    assert conf["message.timeout.ms"] == 0  # librdkafka never expires a queued record: no hole behind it


def test_non_idempotent_mode_is_explicit_and_keeps_one_request_in_flight():
    conf = producer_config("127.0.0.1:9", {"max.in.flight.requests.per.connection": 5}, idempotence=False)
    assert conf["enable.idempotence"] is False and "enable.gapless.guarantee" not in conf
    assert conf["max.in.flight.requests.per.connection"] == 1


@pytest.mark.parametrize("key", ["message.timeout.ms", "delivery.timeout.ms", "enable.idempotence",
                                 "enable.gapless.guarantee"])
def test_settings_the_guarantees_rest_on_cannot_be_overridden(key):
    with pytest.raises(ConfigError) as e:
        producer_config("127.0.0.1:9", {key: 1000})
    assert e.value.key == f"kafka.producer.{key}"


def test_delivery_timeout_without_any_acknowledgement_is_a_publish_error_naming_the_broker():
    p = OrderedProducer("127.0.0.1:9", {"log_level": 0}, delivery_timeout_s=0.3)  # nothing listens there
    try:
        p.produce("t", b"v")
        p.check()  # within the timeout: fine
        time.sleep(0.4)
        assert p.unacked_for() > 0.3
        with pytest.raises(PublishError) as e:
            p.check()
        assert "broker 127.0.0.1:9 unreachable: 1 records not acknowledged" in str(e.value)
        with pytest.raises(PublishError):
            p.acked()  # nothing may count as acknowledged after a failure
    finally:
        p.close(0.1)


def test_an_idle_producer_does_not_time_out_on_its_next_record():
    p = OrderedProducer("127.0.0.1:9", {"log_level": 0}, delivery_timeout_s=0.3)
    try:
        time.sleep(0.4)  # idle for longer than the timeout: nothing pending, no failure
        p.produce("t", b"v")
        p.check()
    finally:
        p.close(0.1)


def _big_tx(pub, big: int) -> None:
    pub.publish(Begin("tx-1", 1))
    pub.publish(Change(T1, "c", None, {"id": 1, "v": "small", "n": 1}, {"pos": 1}, SCHEMAS[T1]))
    pub.publish(Change(T1, "c", None, {"id": 2, "v": "x" * big, "n": 2}, {"pos": 2}, SCHEMAS[T1]))
    pub.publish(Change(T1, "c", None, {"id": 3, "v": "small", "n": 3}, {"pos": 3}, SCHEMAS[T1]))
    pub.publish(Commit("tx-1", 1, {"pos": 3}, {"pos": 3}))


@pytest.mark.parametrize("encoding", ["json", "avro"])
def test_an_oversized_row_names_table_key_and_size_never_the_values(encoding):
    pub, _, _ = publisher(encoding)
    pub._record_limit = 5000
    with pytest.raises(RecordTooLarge) as e:
        _big_tx(pub, 20_000)
    err = e.value
    assert err.table == "d.t1" and err.key == '{"id":2}' and err.size > 20_000 and err.limit == 5000
    assert err.position == {"pos": 2} and err.txid == "tx-1"
    assert "xxxx" not in str(err)


def test_an_oversized_row_goes_to_the_dead_letter_topic_and_the_transaction_stays_consistent():
    pub, fake, _ = publisher("json", dead_letter_topic="dlq")
    pub._record_limit = 5000
    _big_tx(pub, 20_000)
    stream = decoded(fake, topic=pub.topic)
    data = [v for _, _, v in stream if "op" in v]
    end = stream[-1][2]
    assert [r["after"]["id"] for r in data] == [1, 3]
    assert [r["sequence"] for _, _, r in stream] == list(range(1, len(stream) + 1))  # no hole left by it
    assert end["status"] == "END" and end["event_count"] == 2
    assert end["data_collections"] == [{"data_collection": "d.t1", "event_count": 2}]
    assert [r["transaction"]["total_order"] for r in data] == [1, 2]
    [(_, key, dlq)] = decoded(fake, topic="dlq")
    assert key == {"source": "s", "table": "d.t1"}
    assert dlq["error"] == "RecordTooLarge" and dlq["fields"]["key"] == '{"id":2}' and dlq["raw"] is None
    assert "xxxx" not in str(dlq)
