"""The writer lease fails closed (issue #36 section 3): a read of the lease topic that fails or times out is a
retryable PublishError before anything is claimed, never taken as "no other writer" (which would skip the grace
wait and let a fenced process take the stream back)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from cdc.errors import PublishError
from cdc.publish import lease as lease_mod
from cdc.publish.lease import WriterLease


class _Consumer:
    def __init__(self, mode: str) -> None:
        self.mode, self.closed = mode, False

    def get_watermark_offsets(self, tp, timeout=None, cached=False):
        if self.mode == "fails":
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "watermarks timed out"))
        return 0, 10

    def assign(self, parts):
        pass

    def consume(self, n, timeout):
        if self.mode == "corrupt":
            return [_Msg(b"not json")]
        return []  # "silent": the claims are there (high 10) but none arrives

    def position(self, parts):
        from confluent_kafka import TopicPartition
        return [TopicPartition(parts[0].topic, 0, 2)]

    def close(self):
        self.closed = True


class _Msg:
    def __init__(self, value: bytes) -> None:
        self._v = value

    def error(self):
        return None

    def value(self):
        return self._v

    def offset(self):
        return 9


@pytest.mark.parametrize("mode", ["fails", "silent", "corrupt"])
def test_an_unreadable_lease_topic_is_a_retryable_error_never_a_grant(monkeypatch, mode):
    made: list[str] = []

    def create_client(kind, conf):
        made.append(kind)
        if kind == "consumer":
            return _Consumer(mode)
        raise AssertionError("a producer (the claim) was made although the lease topic could not be read")

    monkeypatch.setattr(lease_mod, "create_client", create_client)
    monkeypatch.setattr(lease_mod, "ensure_topic", lambda *a, **k: None)
    monkeypatch.setattr(lease_mod, "READ_TIMEOUT_S", 0.3)
    lease = WriterLease("localhost:1", "cdc", "src")
    with pytest.raises(PublishError, match=r"cannot read the writer lease topic cdc\.src\.writer") as info:
        lease.acquire("cdc.src.changes")
    assert info.value.fields["topic"] == "cdc.src.writer"
    assert made == ["consumer"] and lease.epoch == 0
