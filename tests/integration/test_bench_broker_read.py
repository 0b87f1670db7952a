"""`cdc bench apply`'s broker read (the ceiling of any apply that reads through the broker): both halves read
whole, in two processes, and a range the topic does not hold fails by name instead of waiting forever."""

import pytest

from cdc.bench import apply
from streaming.testing import StreamBuilder, produce


def test_broker_read_reads_every_record(broker):
    b = StreamBuilder(source="src").schema("s.t", [("id", "bigint")], ["id"])
    for i in range(2000):
        b.tx(("c", "s.t", None, {"id": i}))
    topic = "bench-broker-read"
    broker.create_topic(topic)
    enc = b.encoded()
    produce(broker.bootstrap, topic, enc)
    assert apply._broker_read(broker.bootstrap, topic, len(enc)) > 0
    lo, hi = apply._read_half(broker.bootstrap, topic, len(enc) // 2, len(enc))
    assert lo <= hi


def test_broker_read_past_the_end_fails_by_name(broker, monkeypatch):
    topic = "bench-broker-read-short"
    broker.create_topic(topic)
    produce(broker.bootstrap, topic, [(None, b'{"sequence":1}')])
    monkeypatch.setattr(apply, "BROKER_READ_STALL_S", 2.0)
    with pytest.raises(RuntimeError, match=r"no record of bench-broker-read-short\[0\] at offset 1 for 2 s"):
        apply._read_half(broker.bootstrap, topic, 0, 2)
