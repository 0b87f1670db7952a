"""cdc.consumer rides out a broker restart (persistent storage), on both Kafka clients: every transaction
once, in order; the group offset committed before the restart is still there after it."""

from __future__ import annotations

import time

import pytest

from cdc.consumer import ChangeStreamConsumer, CommitFailed
from streaming.testing import StreamBuilder, produce

pytestmark = [pytest.mark.kafka, pytest.mark.slow,
              pytest.mark.filterwarnings("ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning")]


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_consumer_rides_out_a_broker_restart(persistent_broker, topic_prefix, client):
    broker = persistent_broker
    sb = StreamBuilder()
    for i in range(200):
        sb.tx(("c", "d.t", None, {"id": i}), ("c", "d.t", None, {"id": 1000 + i}))
    enc = sb.encoded()
    topic = f"{topic_prefix}.src.changes"
    broker.create_topic(topic)
    produce(broker.bootstrap, topic, enc[:400])
    group = f"{topic_prefix}-g"
    got = []
    with ChangeStreamConsumer(broker.bootstrap, topic, client=client, group_id=group) as c:
        while len(got) < 50:
            got.append(c.poll(10))
        c.commit(got[-1])
        broker.restart()
        produce(broker.bootstrap, topic, enc[400:])
        deadline = time.monotonic() + 60
        while len(got) < 200:
            assert time.monotonic() < deadline, f"{client}: {len(got)} transactions after the restart"
            item = c.poll(1)
            if item is not None:
                got.append(item)
                try:
                    c.commit(item)
                except CommitFailed:
                    pass  # the coordinator may still be coming back: the next commit covers this one
        while c.committed != got[-1].position:  # the last commit must land (the broker is back by now)
            assert time.monotonic() < deadline, f"{client}: the last commit never landed"
            try:
                c.commit(got[-1])
            except CommitFailed:
                time.sleep(0.5)
    assert [t.changes[0].after["id"] for t in got] == list(range(200))
    with ChangeStreamConsumer(broker.bootstrap, topic, client=client, group_id=group) as c:
        assert c.poll(3) is None and c.committed == got[-1].position  # nothing left after the last commit
