"""An unreadable tail is not a new stream: the broker reports records but delivers none (real tansu behind
a proxy that swallows Fetch responses) -> the publisher refuses to start, naming topic, watermarks and the way
out, and writes nothing."""

from __future__ import annotations

import time

import pytest

from cdc.config.models import KafkaConfig
from cdc.errors import PublishError, StreamCorrupt
from cdc.metrics import SourceMetrics
from cdc.publish.publisher import Publisher
from cdc.publish.recovery import read_records, unreadable_tail
from cdc.stream.envelope import changes_topic
from cdc.stream.serde import get_serdes
from streaming.testing import StreamBuilder, produce
from tests.integration.kafka_proxy import ProxiedBroker

pytestmark = pytest.mark.kafka


@pytest.fixture
def proxied_broker(tmp_path):
    b = ProxiedBroker(log_dir=tmp_path / "broker")
    try:
        yield b.start()
    finally:
        b.stop()


def test_a_reported_but_undelivered_tail_is_refused(proxied_broker, topic_prefix):
    bs = proxied_broker.bootstrap
    topic = changes_topic(topic_prefix, "src")
    proxied_broker.create_topic(topic)
    b = StreamBuilder().schema("shop.t", [("id", "int")], ["id"])
    for i in range(30):
        b.tx(("c", "shop.t", None, {"id": i}))
    records = b.encoded()
    for k in range(0, len(records), 25):  # several record batches: the reported high watermark is above 0
        produce(bs, topic, records[k:k + 25])
    pub = Publisher("src", "mysql", KafkaConfig(bootstrap_servers=bs, topic_prefix=topic_prefix),
                    SourceMetrics("src"))
    proxied_broker.proxy.block_fetch.set()
    started = time.monotonic()
    try:
        with pytest.raises(PublishError) as err:  # transient: the daemon retries, never starts a new stream
            pub.recover()
    finally:
        pub.close()
        proxied_broker.proxy.block_fetch.clear()
    text = str(err.value)
    assert f"the broker reports records at offsets 0..{err.value.high_watermark - 1} of {topic}" in text
    assert err.value.high_watermark > 0 and proxied_broker.proxy.dropped > 0
    assert "cdc stream reset --config FILE --source src --yes" in text
    assert time.monotonic() - started < 60
    ks, vs = get_serdes("json")
    assert [v["sequence"] for _, _, v in read_records(bs, topic, ks, vs)] == list(range(1, b.seq))  # nothing written


def test_a_topic_emptied_by_retention_is_refused_by_the_same_rule():
    # tansu has no delete-records and no retention to empty a topic with; the rule is the same function
    err = unreadable_tail("p.src.changes", 1200, 1200, 1200, "src")
    assert isinstance(err, StreamCorrupt)  # terminal: those records do not come back
    assert "low watermark is 1200: records 0..1199 were deleted (retention or delete-records)" in str(err)
    assert "retention.ms of p.src.changes" in str(err) and "--source src --yes" in str(err)
