"""cdc.consumer on the real broker, the same tests on both Kafka clients (confluent-kafka, kafka-python)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from cdc.consumer import (
    ChangeStreamConsumer,
    ConsumerError,
    Position,
    SchemaChange,
    StreamCorrupt,
    TopicMissing,
    Transaction,
)
from cdc.stream.serde import get_serdes
from streaming.testing import StreamBuilder, produce

# kafka-python 3.0 loads its protocol schemas with importlib.resources.read_text (deprecated in 3.11)
ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.kafka, pytest.mark.filterwarnings("ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning")]


@pytest.fixture(params=["confluent", "kafka-python"])
def client(request) -> str:
    return request.param


def _workload(n_tx: int = 20) -> StreamBuilder:
    sb = StreamBuilder()
    sb.schema("d.t", [("id", "int"), ("v", "varchar")], ["id"])
    for i in range(n_tx):
        sb.tx(("c", "d.t", None, {"id": i, "v": f"v{i}"}), ("u", "d.t", {"id": i, "v": f"v{i}"}, {"id": i, "v": "w"}),
              abort=i % 7 == 3)
        if i % 5 == 0:
            sb.heartbeat()
    return sb


def _topic(broker, topic_prefix: str, encoded) -> str:
    topic = f"{topic_prefix}.src.changes"
    broker.create_topic(topic)
    produce(broker.bootstrap, topic, encoded)
    return topic


def _drain(consumer: ChangeStreamConsumer, idle_s: float = 1.5, limit_s: float = 30) -> list:
    out, deadline = [], time.monotonic() + limit_s
    for item in consumer.items(idle_s):
        out.append(item)
        assert time.monotonic() < deadline, "consumer never went idle"
    return out


def _expected_ids(sb: StreamBuilder) -> list[str]:
    """Committed transaction ids in order (ABORTED ones left out)."""
    ids, open_ = [], None
    for _, v in sb.items:
        if v.get("status") == "BEGIN":
            open_ = v["id"]
        elif v.get("status") == "END":
            ids.append(open_)
    return ids


@pytest.mark.parametrize("encoding", ["json", "avro"])
def test_whole_transactions_in_order_with_duplicate_runs_and_aborted_skipped(broker, topic_prefix, client, encoding):
    sb = _workload()
    kser, vser = get_serdes(encoding)
    enc = [(None if k is None else kser.encode(k), vser.encode(v)) for k, v in sb.items]
    doubled = enc[:30] + enc[12:30] + enc[30:] + enc[-9:]  # a producer retry appended two runs twice
    topic = _topic(broker, topic_prefix, doubled)
    with ChangeStreamConsumer(broker.bootstrap, topic, client=client, encoding=encoding) as c:
        items = _drain(c)
        assert c.stats["duplicates"] == 18 + 9 and c.stats["aborted"] == 3 and c.stats["heartbeats"] == 4
        assert c.last_heartbeat_ms is not None and c.last_sequence == sb.seq - 1
    assert isinstance(items[0], SchemaChange) and items[0].table == "d.t" and items[0].schema["primary_key"] == ["id"]
    txs = [i for i in items[1:] if isinstance(i, Transaction)]
    assert len(txs) == len(items) - 1
    assert [t.id for t in txs] == _expected_ids(sb) and len(txs) == 17
    assert all([(ch.op, ch.table, ch.key) for ch in t.changes] == [("c", "d.t", ch0), ("u", "d.t", ch0)]
               for t in txs for ch0 in [{"id": t.changes[0].after["id"]}])
    seqs = [ch.sequence for t in txs for ch in t.changes]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_a_gap_stops_the_consumer_naming_the_range_and_offset(broker, topic_prefix, client):
    sb = _workload(6)
    enc = sb.encoded()
    lost = enc[:9] + enc[12:]  # sequences 10..12 never reached the topic
    topic = _topic(broker, topic_prefix, lost)
    with ChangeStreamConsumer(broker.bootstrap, topic, client=client) as c:
        got = []
        with pytest.raises(StreamCorrupt) as err:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                item = c.poll(0.5)
                if item is not None:
                    got.append(item)
        assert (err.value.missing_from, err.value.missing_to, err.value.offset) == (10, 12, 8)
        assert f"sequence 10..12 missing in {topic}[0] after offset 8" in str(err.value)
        assert [i.sequence for i in got] == [1, 5]  # what lies before the gap was handed out, nothing after
        with pytest.raises(StreamCorrupt, match="10..12"):
            c.poll(0.5)


def test_the_group_resumes_after_the_last_committed_transaction(broker, topic_prefix, client):
    sb = _workload(10)
    topic = _topic(broker, topic_prefix, sb.encoded())
    group = f"{topic_prefix}-g"
    with ChangeStreamConsumer(broker.bootstrap, topic, client=client, group_id=group) as c:
        first = [c.poll(10) for _ in range(5)]  # schema + 4 transactions; only the third is committed
        c.commit(first[2])
        assert c.committed == first[2].position
    with ChangeStreamConsumer(broker.bootstrap, topic, client=client, group_id=group) as c:
        rest = _drain(c)
        assert c.committed == first[2].position
    assert [i.sequence for i in rest][:2] == [first[3].sequence, first[4].sequence]
    assert [i.sequence for i in first[:3] + rest] == [i.sequence for i in _all_items(broker, topic, client)]
    with ChangeStreamConsumer(broker.bootstrap, topic, client=client, group_id=f"{group}-new") as c:
        assert c.poll(10).sequence == 1  # a group that never committed starts at the beginning
        with pytest.raises(ConsumerError, match="has not handed out"):
            c.commit(rest[-1])  # nothing is committed ahead of what the caller was given


def _all_items(broker, topic: str, client: str) -> list:
    with ChangeStreamConsumer(broker.bootstrap, topic, client=client, start="beginning") as c:
        return _drain(c)


def test_start_after_a_stored_position_or_sequence_and_refuse_a_foreign_one(broker, topic_prefix, client):
    sb = _workload(8)
    enc = sb.encoded()
    topic = _topic(broker, topic_prefix, enc + enc[20:26])  # a duplicate run at the end too
    everything = _all_items(broker, topic, client)
    mid = everything[4]
    with ChangeStreamConsumer(broker.bootstrap, topic, client=client) as c:
        c.start_after(str(mid.position))
        assert [i.sequence for i in _drain(c)] == [i.sequence for i in everything[5:]]
    with ChangeStreamConsumer(broker.bootstrap, topic, client=client) as c:
        c.start_after(sequence=mid.sequence)
        assert [i.sequence for i in _drain(c)] == [i.sequence for i in everything[5:]]
    with ChangeStreamConsumer(broker.bootstrap, topic, client=client) as c:
        c.start_after(Position(mid.sequence + 1, mid.position.offset))  # a position from another stream
        with pytest.raises(StreamCorrupt, match=f"has sequence {mid.sequence}, not {mid.sequence + 1}"):
            c.poll(5)
    with ChangeStreamConsumer(broker.bootstrap, topic, client=client, lookup_timeout_s=2) as c:
        c.start_after(Position(10_000, len(enc) + 500))  # beyond the end (the broker says nothing about it)
        with pytest.raises(StreamCorrupt, match=f"offset {len(enc) + 499}.*beyond the end"):
            c.poll(10)


def test_start_at_the_end_hands_out_only_what_completes_later(broker, topic_prefix, client):
    sb = _workload(6)
    sb.tx(("c", "d.t", None, {"id": 100, "v": "x"}), ("c", "d.t", None, {"id": 101, "v": "y"}))
    enc = sb.encoded()
    topic = _topic(broker, topic_prefix, enc[:-2])  # the last transaction is being written: BEGIN + 1 row
    with ChangeStreamConsumer(broker.bootstrap, topic, client=client, start="end") as c:
        assert c.poll(1) is None
        sb.tx(("d", "d.t", {"id": 100, "v": "x"}, None))
        produce(broker.bootstrap, topic, enc[-2:] + sb.encoded()[len(enc):])
        items = _drain(c)
    assert [len(i.changes) for i in items] == [2, 1]
    assert [ch.op for ch in items[1].changes] == ["d"] and items[0].changes[0].after["id"] == 100


def test_a_missing_topic_is_named(broker, topic_prefix, client):
    c = ChangeStreamConsumer(broker.bootstrap, f"{topic_prefix}.nosuch.changes", client=client)
    with c, pytest.raises(TopicMissing, match=f"topic {topic_prefix}.nosuch.changes does not exist"):
        c.poll(1)


def test_kafka_python_runs_where_confluent_kafka_cannot_be_imported(broker, topic_prefix):
    sb = _workload(4)
    topic = _topic(broker, topic_prefix, sb.encoded())
    script = ("import sys; sys.modules['confluent_kafka'] = None  # as on a runtime without the native wheel\n"
              "from cdc.consumer import ChangeStreamConsumer\n"
              f"c = ChangeStreamConsumer({broker.bootstrap!r}, {topic!r}, client='kafka-python', start='beginning')\n"
              "print(sum(len(i.changes) for i in c.items(1.0)))\n")
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", script], capture_output=True, text=True, timeout=60,
                         cwd=ROOT, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "6"  # 4 transactions of 2 rows, one of them aborted
