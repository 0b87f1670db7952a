"""`cdc compare --repair` publishes WITH the writer lease (issue #36 section 3, #35 "one way to open a publisher"),
on the real broker: a daemon still holding the stream is fenced (its next proof is WriterFenced) and the repair's
records carry a writer epoch above the daemon's, so no consumer can take them for a fenced writer's."""

from __future__ import annotations

import time

import duckdb
import pytest

from cdc.compare.endpoints import Endpoint
from cdc.compare.merge import MISSING, Diff
from cdc.compare.repair import repair
from cdc.compare.report import TableReport
from cdc.config.models import KafkaConfig
from cdc.metrics import SourceMetrics
from cdc.publish.lease import WriterFenced, WriterLease
from cdc.publish.publisher import Publisher
from cdc.stream.envelope import changes_topic
from tests.integration.stream_check import read_stream

pytestmark = pytest.mark.kafka


class _Config:
    def __init__(self, kafka: KafkaConfig) -> None:
        self.kafka = kafka


def test_repair_takes_the_writer_lease_and_fences_a_running_daemon(broker, topic_prefix, tmp_path):
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=topic_prefix)
    daemon_lease = WriterLease(kafka.connection(), topic_prefix, "src")
    daemon = Publisher("src", "mysql", kafka, SourceMetrics("src"), lease=daemon_lease)
    daemon.recover()  # the "daemon" holds the stream's lease
    for name, rows in (("src", [(1, "a")]), ("tgt", [])):
        with duckdb.connect(str(tmp_path / f"{name}.duckdb")) as c:
            c.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR)")
            for r in rows:
                c.execute("INSERT INTO t VALUES (?, ?)", list(r))
    src = Endpoint("src", "duckdb", {"path": str(tmp_path / "src.duckdb")}, "main")
    tgt = Endpoint("tgt", "duckdb", {"path": str(tmp_path / "tgt.duckdb")}, "main")
    report = TableReport("main.t", "main.t", ("id",), diffs=[Diff(MISSING, (1,))])
    try:
        assert repair(_Config(kafka), "src", src, tgt, report) == 1
        time.sleep(daemon_lease.check_every_s)
        with pytest.raises(WriterFenced):
            daemon_lease.check(daemon.topic)
    finally:
        daemon.close()
        daemon_lease.close()
    stream = read_stream(broker.bootstrap, changes_topic(topic_prefix, "src"))
    assert stream.epochs and min(stream.epochs) > daemon_lease.epoch  # every repair record: the newer epoch
