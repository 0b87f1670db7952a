"""A row larger than the broker's record size limit (#13 item 10), on the real broker.

The limit is lowered through the producer's ``message.max.bytes`` (tansu reports no topic
``max.message.bytes``; on Kafka the publisher also reads that one at start).
"""

from __future__ import annotations

import re

import pytest
from prometheus_client import CollectorRegistry

from cdc.config.models import KafkaConfig
from cdc.publish.recovery import read_records
from cdc.runtime.daemon import Daemon, SourceSpec
from cdc.stream.envelope import changes_topic
from cdc.stream.events import Change
from cdc.stream.serde import get_serdes
from tests.integration.scripted_source import SCHEMAS, T1, ScriptedSource
from tests.integration.stream_check import read_stream

pytestmark = pytest.mark.kafka

LIMIT = 64 * 1024
BIG = "B" * 200_000  # one column value, far above LIMIT


class _BigRowSource(ScriptedSource):
    """Step 3's second row carries a 200 kB value."""

    def changes_of(self, k):
        for j, ch in enumerate(super().changes_of(k)):
            if k == 3 and j == 1:
                ch = Change(T1, "c", None, {"id": 300001, "v": BIG, "n": 1}, {"step": 3, "row": 1}, SCHEMAS[T1])
            yield ch


def _daemon(broker, prefix: str, **kafka) -> Daemon:
    cfg = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=prefix, **kafka)
    spec = SourceSpec("scripted", "scripted", lambda ctx: _BigRowSource(5, metrics=ctx.metrics))
    return Daemon([spec], cfg, CollectorRegistry(), metrics_port=None,
                  producer_config={"message.max.bytes": LIMIT, "batch.size": LIMIT})


def test_an_oversized_row_stops_the_source_naming_table_key_and_size_without_a_restart_loop(broker, topic_prefix):
    daemon = _daemon(broker, topic_prefix)
    assert daemon.run() == 2
    failure = daemon.failure
    assert "source scripted stopped at position {'step': 2}" in failure
    assert "RecordTooLarge" in failure and "table='d.t1'" in failure and "key='{\"id\":300001}'" in failure
    assert re.search(r"size=2\d{5}, limit=65024,", failure) and "position={'step': 3, 'row': 1}" in failure and "txid='tx-3'" in failure
    assert BIG[:100] not in failure
    metrics = daemon.workers[0].metrics.registry
    assert (metrics.get_sample_value("cdc_source_reconnects_total", {"source": "scripted"}) or 0) == 0
    stream = read_stream(broker.bootstrap, changes_topic(topic_prefix, "scripted"))
    assert [t for t, _, _ in stream.transactions] == ["tx-1", "tx-2"]


def test_an_oversized_row_goes_to_the_dead_letter_topic_with_the_reason(broker, topic_prefix):
    dlq = f"{topic_prefix}.dlq"
    daemon = _daemon(broker, topic_prefix, dead_letter_topic=dlq)
    assert daemon.run() == 0, daemon.failure
    [(_, key, value)] = list(read_records(broker.bootstrap, dlq, *get_serdes("json"), deadline_s=30))
    assert key == {"source": "scripted", "table": "d.t1"}
    assert value["error"] == "RecordTooLarge" and "above the broker's limit" in value["message"]
    assert value["fields"]["key"] == '{"id":300001}' and value["fields"]["size"] > 200_000
    assert value["fields"]["position"] == {"step": 3, "row": 1} and value["txid"] == "tx-3"
    assert BIG[:100] not in str(value)
    stream = read_stream(broker.bootstrap, changes_topic(topic_prefix, "scripted"))  # checks counts and sequences
    tx3 = next(records for t, records, _ in stream.transactions if t == "tx-3")
    script = ScriptedSource(5)
    assert [r["after"]["id"] for r in tx3] == [300000 + j for j in range(script.rows_of(3)) if j != 1]
    assert [t for t, _, _ in stream.transactions] == ["tx-1", "tx-2", "tx-3", "tx-4", "tx-5"]
