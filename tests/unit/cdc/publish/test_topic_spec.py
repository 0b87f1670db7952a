"""kafka.topics: how each topic is created (cdc check verifies existing topics against the same topic_spec)."""

from __future__ import annotations

import pytest

from cdc.config.loader import parse_config
from cdc.errors import ConfigError
from cdc.publish.topics import KEEP_FOREVER, TopicSpec, topic_spec


def _kafka(**topics):
    return parse_config({"kafka": {"bootstrap_servers": "b:1", "topics": topics}}).kafka


def test_defaults_keep_the_changes_topic_forever_and_compact_per_table_topics():
    k = _kafka()
    assert topic_spec(k, "changes") == TopicSpec(1, None, KEEP_FOREVER)
    assert topic_spec(k, "per_table") == TopicSpec(1, None, {"cleanup.policy": "compact"})
    assert topic_spec(k, "schemas") == TopicSpec(1, None, {"cleanup.policy": "compact"})
    assert topic_spec(k, "dead_letter") == TopicSpec(1, None, {})
    # Debezium's transaction and schema-change topics: one key per transaction / database, so never compacted
    assert topic_spec(k, "transaction") == topic_spec(k, "schema_change") == TopicSpec(1, None, {})


def test_replication_min_insync_partitions_and_overrides_come_from_the_config():
    k = _kafka(replication_factor=3, min_insync_replicas=2, changes={"segment.bytes": 1 << 20},
               per_table={"partitions": 6, "cleanup.policy": "compact,delete", "retention.ms": 86400000},
               dead_letter={"partitions": 2})
    assert topic_spec(k, "changes") == TopicSpec(1, 3, {**KEEP_FOREVER, "segment.bytes": "1048576",
                                                         "min.insync.replicas": "2"})
    assert topic_spec(k, "per_table") == TopicSpec(6, 3, {"cleanup.policy": "compact,delete",
                                                          "retention.ms": "86400000", "min.insync.replicas": "2"})
    assert topic_spec(k, "dead_letter").partitions == 2


def test_the_changes_topic_has_exactly_one_partition():
    assert topic_spec(_kafka(changes={"partitions": 1}), "changes").partitions == 1
    with pytest.raises(ConfigError) as e:
        _kafka(changes={"partitions": 3})
    assert "kafka.topics.changes" in str(e.value) and "exactly 1 partition" in str(e.value)
    with pytest.raises(ConfigError, match=r"kafka\.topics\.replication_factor"):
        _kafka(replication_factor=0)
