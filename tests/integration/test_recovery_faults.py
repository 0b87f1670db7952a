"""The publisher's tail recovery on a stream with producer-retry duplicates and lost records (real broker).

Each stream is written raw to the broker (the bytes the publisher writes), with a fault injected the way
it happens: a run of records produced a second time (a retry after a lost acknowledgement), or records
removed (acknowledged, then lost). A transaction cut off by a crash is longer than the tail window, so
the recovery must read further back; the fault sits in that earlier part.
"""

from __future__ import annotations

import orjson
import pytest

from cdc.config.models import KafkaConfig
from cdc.errors import StreamCorrupt
from cdc.metrics import SourceMetrics
from cdc.publish.publisher import Publisher
from cdc.publish.recovery import TAIL_WINDOW, read_records
from cdc.stream.envelope import changes_topic
from cdc.stream.serde import get_serdes
from streaming.testing import StreamBuilder, produce

pytestmark = pytest.mark.kafka
CUT_ROWS = TAIL_WINDOW + 1500  # the cut-off transaction is longer than the tail window


def _publisher(broker, prefix: str) -> Publisher:
    cfg = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=prefix)
    return Publisher("src", "mysql", cfg, SourceMetrics("src"), heartbeat_min_interval_s=0)


def _cut_stream(n_tx: int = 5) -> tuple[list[tuple[bytes | None, bytes]], int]:
    """n_tx committed transactions, then one cut off by a crash (BEGIN, CUT_ROWS rows, no END).
    Returns the encoded records and the index of the cut transaction's BEGIN."""
    b = StreamBuilder().schema("shop.t", [("id", "int")], ["id"])
    for i in range(n_tx):
        b.tx(("c", "shop.t", None, {"id": i}), ("c", "shop.t", None, {"id": 1000 + i}))
    begin_at = len(b.items)
    b.tx(*[("c", "shop.t", None, {"id": 10_000 + j}) for j in range(CUT_ROWS)], unterminated=True)
    return b.encoded(), begin_at


def _recover(broker, prefix: str, records: list) -> tuple[Publisher, dict | None]:
    produce(broker.bootstrap, changes_topic(prefix, "src"), records)
    pub = _publisher(broker, prefix)
    return pub, pub.recover()


def _tail(broker, prefix: str, n: int = 3) -> list[dict]:
    ks, vs = get_serdes("json")
    return [v for _, _, v in read_records(broker.bootstrap, changes_topic(prefix, "src"), ks, vs)][-n:]


def test_a_duplicated_end_in_an_earlier_window_does_not_hide_the_open_transaction(broker, topic_prefix):
    records, begin_at = _cut_stream()
    last_end = records[begin_at - 1]
    assert orjson.loads(last_end[1])["status"] == "END"
    # the END before the cut transaction appended again 300 rows into it: far from the tail window
    records = records[:begin_at + 300] + [last_end] + records[begin_at + 300:]
    pub, resume = _recover(broker, topic_prefix, records)
    try:
        assert resume == orjson.loads(last_end[1])["resume"] == {"gtid": "0-1-5"}
        max_seq = orjson.loads(records[-1][1])["sequence"]
        aborted = _tail(broker, topic_prefix, 1)[0]
        assert aborted["status"] == "ABORTED" and aborted["id"] == "0-1-6" and aborted["sequence"] == max_seq + 1
        assert pub.next_sequence == max_seq + 2
    finally:
        pub.close()


def test_a_begin_to_end_run_appended_twice_gives_the_right_resume_state(broker, topic_prefix):
    records, begin_at = _cut_stream()
    # transaction 0-1-4 (BEGIN, 2 rows, END: the 4 records before the last END's transaction) retried whole,
    # and the tail's last 50 rows appended twice as well
    tx4 = records[begin_at - 8:begin_at - 4]
    assert [orjson.loads(v).get("status") for _, v in tx4] == ["BEGIN", None, None, "END"]
    records = records[:begin_at - 4] + tx4 + records[begin_at - 4:] + records[-50:]
    pub, resume = _recover(broker, topic_prefix, records)
    try:
        assert resume == {"gtid": "0-1-5"}
        max_seq = max(orjson.loads(v)["sequence"] for _, v in records)
        aborted = _tail(broker, topic_prefix, 1)[0]
        assert aborted["status"] == "ABORTED" and aborted["id"] == "0-1-6" and aborted["sequence"] == max_seq + 1
    finally:
        pub.close()


def test_records_lost_in_an_earlier_window_stop_the_recovery_naming_the_range(broker, topic_prefix):
    records, begin_at = _cut_stream()
    lost = records[begin_at + 200:begin_at + 205]
    first, last = (orjson.loads(lost[0][1])["sequence"], orjson.loads(lost[-1][1])["sequence"])
    records = records[:begin_at + 200] + records[begin_at + 205:]
    topic = changes_topic(topic_prefix, "src")
    with pytest.raises(StreamCorrupt) as err:
        _recover(broker, topic_prefix, records)
    assert f"sequence {first}..{last} missing in {topic}[0] after offset {begin_at + 199}" in str(err.value)
    assert "cdc stream reset" in str(err.value)
    # nothing was written behind the gap (no ABORTED, no new record)
    assert _tail(broker, topic_prefix, 1)[0]["sequence"] == orjson.loads(records[-1][1])["sequence"]


def test_dense_duplicate_runs_across_window_starts_are_no_gap(broker, topic_prefix):
    records, begin_at = _cut_stream()
    out = records[:begin_at + 1]
    body = records[begin_at + 1:]
    for k in range(0, len(body), 20):  # every 20 records the last 10 again: window starts land inside runs
        out += body[k:k + 20] + body[k + 10:k + 20]
    pub, resume = _recover(broker, topic_prefix, out)
    try:
        assert resume == {"gtid": "0-1-5"}
        max_seq = orjson.loads(records[-1][1])["sequence"]
        aborted = _tail(broker, topic_prefix, 1)[0]
        assert aborted["status"] == "ABORTED" and aborted["id"] == "0-1-6" and aborted["sequence"] == max_seq + 1
    finally:
        pub.close()


def test_a_duplicate_at_the_very_start_of_the_tail_window_is_no_gap(broker, topic_prefix):
    records, begin_at = _cut_stream()
    last_end = records[begin_at - 1]
    total = len(records) + 2
    # the END before the cut transaction appended again at the offsets where the tail window starts (the
    # reported high watermark minus TAIL_WINDOW: tansu reports the last batch's base offset, Kafka the end)
    at = {total - 1 - TAIL_WINDOW, total - TAIL_WINDOW}
    it = iter(records)
    out = [last_end if pos in at else next(it) for pos in range(total)]
    topic = changes_topic(topic_prefix, "src")
    produce(broker.bootstrap, topic, out[:-1])
    produce(broker.bootstrap, topic, out[-1:])  # the last record in a batch of its own
    pub = _publisher(broker, topic_prefix)
    try:
        assert pub.recover() == {"gtid": "0-1-5"}
        aborted = _tail(broker, topic_prefix, 1)[0]
        assert aborted["status"] == "ABORTED" and aborted["id"] == "0-1-6"
        assert aborted["sequence"] == orjson.loads(records[-1][1])["sequence"] + 1
    finally:
        pub.close()
