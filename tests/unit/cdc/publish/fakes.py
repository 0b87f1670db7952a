"""A Publisher without a broker: records what it would produce."""

from __future__ import annotations

from cdc.config.models import KafkaConfig
from cdc.metrics import SourceMetrics
from cdc.publish.publisher import Publisher
from cdc.stream.serde import get_serdes


class RecordingProducer:
    """Stands in for OrderedProducer; ``acked_upto`` simulates the acknowledged prefix."""

    def __init__(self) -> None:
        self.records: list[tuple[str, bytes | None, bytes | None]] = []
        self.headers: list[tuple[tuple[str, bytes], ...] | None] = []  # per record, as produced
        self.acked_upto: int | None = None  # None: everything acknowledged
        self.failure = None

    @property
    def produced(self) -> int:
        return len(self.records)

    def produce(self, topic, value, key=None, headers=None) -> None:
        self.records.append((topic, value, key))
        self.headers.append(headers)

    def produce_all(self, topic, values, keys, headers=None) -> None:
        for value, key in zip(values, keys, strict=True):
            self.produce(topic, value, key, headers)

    def produce_spliced(self, splice, topic, headers, tables, rows, i, known, parts, seq, total, n, now, limit):
        """OrderedProducer.produce_spliced on this recorder (no full queue here)."""
        def produce(t, value, key, partition, callback=None, on_delivery=None, timestamp=0, headers=None):
            assert callback is None and on_delivery is None and timestamp == 0  # the client's defaults
            self.produce(t, value, key, headers)

        j, seq, total, n, nbytes, counted, status, error = splice(tables, rows, i, known, parts, seq, total, n, now,
                                                                  limit, produce, topic, 0, headers)
        if status == 3:
            raise error[0]
        return j, seq, total, n, nbytes, list(counted), status == 1

    def produce_tx(self, splice_tx, topic, headers, tables, rows, known, parts, seq, now, limit, head, tail):
        """OrderedProducer.produce_tx on this recorder (no full queue here)."""
        def produce(t, value, key, partition, callback=None, on_delivery=None, timestamp=0, headers=None):
            assert callback is None and on_delivery is None and timestamp == 0  # the client's defaults
            self.produce(t, value, key, headers)

        j, seq, total, n, nbytes, counted, status, error, marks = splice_tx(
            tables, rows, 0, known, parts, seq, 0, 0, now, limit, produce, topic, 0, headers, head, tail)
        if status == 3:
            raise error[0]
        return j, seq, total, n, nbytes, list(counted), marks, status == 1

    def acked(self) -> int:
        return self.produced if self.acked_upto is None else self.acked_upto

    def check(self) -> None:
        if self.failure is not None:
            raise self.failure

    def flush(self, timeout_s: float = 30) -> None:
        self.check()

    def close(self) -> None:
        pass


def publisher(encoding: str = "json", **kafka) -> tuple[Publisher, RecordingProducer, SourceMetrics]:
    cfg = KafkaConfig(bootstrap_servers="127.0.0.1:9", topic_prefix="p", encoding=encoding, **kafka)
    metrics = SourceMetrics("s")
    pub = Publisher("s", "mysql", cfg, metrics, producer_config={"log_level": 0}, heartbeat_min_interval_s=0)
    pub._producer = pub._acks.producer = fake = RecordingProducer()
    pub._seq = 1  # what recover() sets on an empty stream
    return pub, fake, metrics


def decoded(fake: RecordingProducer, encoding: str = "json", topic: str | None = None) -> list[tuple]:
    ks, vs = get_serdes(encoding)
    return [(t, ks.decode(k) if k is not None else None, vs.decode(v) if v is not None else None)
            for t, v, k in fake.records if topic is None or t == topic]
