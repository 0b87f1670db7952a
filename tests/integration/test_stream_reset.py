"""`cdc stream reset` on the real broker: it says what it will do, needs --yes, and the next start of the
publisher begins a new stream (sequence 1) in a topic with a new id and infinite retention."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cdc.config.models import KafkaConfig
from cdc.metrics import SourceMetrics
from cdc.publish.publisher import Publisher
from cdc.publish.recovery import read_records
from cdc.publish.topics import retention_warnings, topic_id
from cdc.stream.envelope import changes_topic
from cdc.stream.events import Begin, Change, Column, Commit, TableId, TableSchema
from cdc.stream.serde import get_serdes

pytestmark = pytest.mark.kafka
ROOT = Path(__file__).resolve().parents[2]
T = TableId("shop", "t")
SCHEMA = TableSchema(T, (Column("id", "int"),), ("id",))


def _publish(broker, prefix: str, n: int) -> Publisher:
    pub = Publisher("src", "mysql", KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=prefix),
                    SourceMetrics("src"), heartbeat_min_interval_s=0)
    pub.recover()
    for k in range(1, n + 1):
        pub.publish(Begin(f"tx-{k}", 1000 + k))
        pub.publish(Change(T, "c", None, {"id": k}, {}, SCHEMA))
        pub.publish(Commit(f"tx-{k}", 1000 + k, {"step": k}, {"step": k}))
    pub.flush()
    return pub


def _cdc(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cdc.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, check=False)


def test_reset_says_what_it_does_needs_yes_and_starts_a_new_stream(broker, topic_prefix, tmp_path):
    _publish(broker, topic_prefix, 5).close()
    topic = changes_topic(topic_prefix, "src")
    ks, vs = get_serdes("json")
    before = list(read_records(broker.bootstrap, topic, ks, vs))
    old_id = topic_id(broker.bootstrap, topic)
    cfg = tmp_path / "cdc.yaml"
    cfg.write_text(yaml.safe_dump({
        "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": topic_prefix},
        "sources": [{"name": "src", "kind": "mysql", "hosts": ["127.0.0.1:3306"], "user": "cdc", "password": "cdc",
                     "tables": ["shop.t"]}]}))

    dry = _cdc("stream", "reset", "--config", str(cfg), "--source", "src")
    assert dry.returncode == 1, dry.stderr
    assert f"DELETES {topic}" in dry.stdout and "last sequence 16" in dry.stdout and "--yes" in dry.stdout
    assert "Nothing was changed" in dry.stdout
    assert topic_id(broker.bootstrap, topic) == old_id
    assert len(list(read_records(broker.bootstrap, topic, ks, vs))) == len(before)

    done = _cdc("stream", "reset", "--config", str(cfg), "--source", "src", "--yes")
    assert done.returncode == 0, done.stderr
    new_id = topic_id(broker.bootstrap, topic)
    assert new_id not in (None, old_id) and new_id in done.stdout
    assert list(read_records(broker.bootstrap, topic, ks, vs)) == []
    assert retention_warnings(broker.bootstrap, topic) == []

    pub = _publish(broker, topic_prefix, 1)  # the next start: a new stream from sequence 1
    pub.close()
    assert next(v["sequence"] for _, _, v in read_records(broker.bootstrap, topic, ks, vs)) == 1


def test_reset_of_an_unknown_source_names_the_known_ones(broker, topic_prefix, tmp_path):
    cfg = tmp_path / "cdc.yaml"
    cfg.write_text(yaml.safe_dump({
        "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": topic_prefix},
        "sources": [{"name": "src", "kind": "mysql", "hosts": ["127.0.0.1:3306"], "user": "cdc", "password": "cdc",
                     "tables": ["shop.t"]}]}))
    out = _cdc("stream", "reset", "--config", str(cfg), "--source", "nope", "--yes")
    assert out.returncode == 2 and "src" in out.stderr


def test_a_finite_retention_of_the_changes_topic_is_named_at_start(broker, topic_prefix, caplog):
    from cdc.publish.topics import TopicSpec, ensure_topic

    topic = changes_topic(topic_prefix, "src")
    ensure_topic(broker.bootstrap, topic, TopicSpec(config={"retention.ms": "604800000"}))
    with caplog.at_level("WARNING", logger="cdc.publish.publisher"):
        _publish(broker, topic_prefix, 1).close()
    warned = [r.getMessage() for r in caplog.records if "retention.ms" in r.getMessage()]
    assert warned and f"topic {topic} has retention.ms=604800000" in warned[0] and "set retention.ms=-1" in warned[0]
    fresh = changes_topic(topic_prefix + "-b", "src")  # a topic the publisher creates: infinite retention
    _publish(broker, topic_prefix + "-b", 1).close()
    assert retention_warnings(broker.bootstrap, fresh) == []
