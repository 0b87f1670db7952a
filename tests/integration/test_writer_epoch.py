"""The writer epoch on the real broker: every record of the stream carries its writer's epoch (header
``cdc.epoch``), the lease's claim offset + 1, higher for every later writer; a writer without a lease keeps the
tail's; a newer writer closes an older one's open transaction with an ABORTED of its own epoch."""

from __future__ import annotations

import pytest

from cdc.config.models import KafkaConfig
from cdc.metrics import SourceMetrics
from cdc.publish.lease import WriterLease
from cdc.publish.publisher import Publisher
from cdc.stream.envelope import changes_topic
from cdc.stream.events import Begin, Change, Commit
from tests.integration.scripted_source import SCHEMAS, T1
from tests.integration.stream_check import read_stream

pytestmark = pytest.mark.kafka


def _publisher(broker, prefix: str, lease: WriterLease | None) -> Publisher:
    cfg = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=prefix)
    return Publisher("src", "mysql", cfg, SourceMetrics("src"), heartbeat_min_interval_s=0, lease=lease)


def _tx(pub: Publisher, k: int, commit: bool = True) -> None:
    pub.publish(Begin(f"tx-{k}", 1000 + k))
    pub.publish(Change(T1, "c", None, {"id": k, "v": "a", "n": k}, {}, SCHEMAS[T1]))
    if commit:
        pub.publish(Commit(f"tx-{k}", 1000 + k, {"step": k}, {"step": k}))


def test_each_writer_stamps_a_higher_epoch_on_every_record(broker, topic_prefix):
    topic = changes_topic(topic_prefix, "src")
    epochs = []
    for k in range(2):  # two writers in turn, each with the lease
        lease = WriterLease(broker.bootstrap, topic_prefix, "src", grace_s=0.1)
        pub = _publisher(broker, topic_prefix, lease)
        pub.recover()
        pub.recovered()
        assert pub.epoch == lease.epoch > 0
        epochs.append(pub.epoch)
        _tx(pub, 2 * k)
        _tx(pub, 2 * k + 1, commit=k == 1)  # the first writer stops inside a transaction
        pub.flush()
        lease.due = float("inf")  # a writer that vanished: no release record
        pub.close()
    assert epochs[1] > epochs[0]
    pub = _publisher(broker, topic_prefix, None)  # no lease (kafka.writer_fencing: false): the tail's epoch
    pub.recover()
    assert pub.epoch == epochs[1]
    _tx(pub, 9)
    pub.flush()
    pub.close()

    stream = read_stream(broker.bootstrap, topic)  # the structure rules with epochs hold
    assert stream.aborted == ["tx-1"]  # the second writer closed the first one's open transaction
    assert [t for t, _, _ in stream.transactions] == ["tx-0", "tx-2", "tx-3", "tx-9"]
    assert all(e > 0 for e in stream.epochs) and stream.epochs == sorted(stream.epochs)
    assert set(stream.epochs) == set(epochs)
