"""The two Kafka clients the consumer runs on, behind one small interface.

- ``confluent`` (default, fastest): confluent-kafka (librdkafka);
- ``kafka-python``: pure Python, for runtimes where a native wheel cannot be
  installed.

Both read partition 0 of one topic by ``assign`` (no group membership, no
rebalance: the change stream has one partition and one reader per group), and
commit offsets to the group ``group_id`` when there is one. They hand out raw
``(offset, key bytes, value bytes)`` triples; decoding and every rule of the
stream live above them (cdc.consumer.stream_consumer), so both behave the same.

Broker notes (tansu, the embedded broker; measured with both clients): the
reported high watermark is the base offset of the last record batch, not the
end (callers read to the true end, never trust it); a fetch at or past the end
returns nothing (no out-of-range error), so a position beyond the end is caught
by reading the record before it; committed offsets are stored but their metadata
string is not returned (nothing here uses metadata). Automatic offset resets are
off in both clients: an offset that fell out of range is an error, never a silent
jump to the beginning or the end.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Protocol

from cdc.consumer.errors import BrokerUnreachable, CommitFailed, ReadFailed

CLIENTS = ("confluent", "kafka-python")
Raw = tuple[int, bytes | None, bytes | None]


class KafkaClient(Protocol):
    topic: str

    def seek(self, offset: int) -> None:
        """Read partition 0 from ``offset`` on."""

    def poll(self, max_records: int, timeout_s: float) -> list[Raw]:
        """Up to ``max_records`` records in offset order; empty after ``timeout_s`` without any."""

    def exists(self) -> bool:
        """Whether the topic exists (a metadata request)."""

    def watermarks(self) -> tuple[int, int]:
        """(low, reported high); the high may lie below the true end (tansu)."""

    def committed(self) -> int | None:
        """The group's committed offset, None if nothing was committed (or no group)."""

    def commit(self, offset: int) -> None:
        """Store ``offset`` (the next record to read) for the group, synchronously."""

    def close(self) -> None: ...


def open_client(client: str, bootstrap_servers: str, topic: str, group_id: str | None,
                config: dict[str, Any] | None = None) -> KafkaClient:
    """A connected client of kind ``client`` (see CLIENTS). ``config``: extra settings in that client's own
    vocabulary (librdkafka keys for confluent, KafkaConsumer keyword arguments for kafka-python)."""
    if client == "confluent":
        return ConfluentClient(bootstrap_servers, topic, group_id, config)
    if client == "kafka-python":
        return KafkaPythonClient(bootstrap_servers, topic, group_id, config)
    from cdc.consumer.errors import ConsumerError

    raise ConsumerError(f"unknown Kafka client {client!r} (one of {', '.join(CLIENTS)})", client=client)


class ConfluentClient:
    def __init__(self, bootstrap_servers: str, topic: str, group_id: str | None,
                 config: dict[str, Any] | None = None) -> None:
        from confluent_kafka import Consumer

        self.topic = topic
        self.group_id = group_id
        conf = {
            "bootstrap.servers": bootstrap_servers,
            # librdkafka needs a group id even to assign(); without a group nothing is ever committed to it
            "group.id": group_id or f"cdc-consumer-{uuid.uuid4().hex[:12]}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "error",
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 100,
            "isolation.level": "read_uncommitted",
            "logger": logging.getLogger("cdc.consumer.librdkafka"),
            **(config or {}),
        }
        self._c = Consumer(conf)
        self._offset = 0

    def _tp(self, offset: int = -1001):
        from confluent_kafka import TopicPartition

        return TopicPartition(self.topic, 0, offset)

    def seek(self, offset: int) -> None:
        self._c.assign([self._tp(offset)])
        self._offset = offset

    def poll(self, max_records: int, timeout_s: float) -> list[Raw]:
        out = []
        for m in self._c.consume(max_records, timeout_s):
            err = m.error()
            if err is not None:
                raise ReadFailed(f"reading {self.topic} at offset {self._offset}: {err}", topic=self.topic,
                                 offset=self._offset, client="confluent")
            self._offset = m.offset() + 1
            out.append((m.offset(), m.key(), m.value()))
        return out

    def exists(self) -> bool:
        from confluent_kafka import KafkaException

        try:
            meta = self._c.list_topics(self.topic, timeout=10)
        except KafkaException as exc:
            raise BrokerUnreachable(f"no metadata for {self.topic}: {exc}", topic=self.topic,
                                    client="confluent") from None
        t = meta.topics.get(self.topic)
        return t is not None and t.error is None and 0 in t.partitions

    def watermarks(self) -> tuple[int, int]:
        from confluent_kafka import KafkaException

        try:
            return self._c.get_watermark_offsets(self._tp(), timeout=10, cached=False)
        except KafkaException as exc:
            raise BrokerUnreachable(f"cannot read the offsets of {self.topic}: {exc}", topic=self.topic,
                                    client="confluent") from None

    def committed(self) -> int | None:
        from confluent_kafka import KafkaException

        if self.group_id is None:
            return None
        try:
            [tp] = self._c.committed([self._tp()], timeout=10)
        except KafkaException as exc:
            raise BrokerUnreachable(f"cannot read the committed offset of group {self.group_id!r} on "
                                    f"{self.topic}: {exc}", topic=self.topic, group=self.group_id) from None
        return tp.offset if tp.offset >= 0 else None

    def commit(self, offset: int) -> None:
        from confluent_kafka import KafkaException

        try:
            [tp] = self._c.commit(offsets=[self._tp(offset)], asynchronous=False)
        except KafkaException as exc:
            raise CommitFailed(f"commit of offset {offset} for group {self.group_id!r} on {self.topic} failed: "
                               f"{exc}", topic=self.topic, group=self.group_id, offset=offset) from None
        if tp.error is not None:
            raise CommitFailed(f"commit of offset {offset} for group {self.group_id!r} on {self.topic} failed: "
                               f"{tp.error}", topic=self.topic, group=self.group_id, offset=offset)

    def close(self) -> None:
        self._c.close()


class KafkaPythonClient:
    def __init__(self, bootstrap_servers: str, topic: str, group_id: str | None,
                 config: dict[str, Any] | None = None) -> None:
        from kafka import KafkaConsumer, TopicPartition
        from kafka.errors import KafkaError

        self.topic = topic
        self.group_id = group_id
        self._tp = TopicPartition(topic, 0)
        conf = {
            "bootstrap_servers": bootstrap_servers,
            "group_id": group_id,  # None: no coordinator, nothing committed
            "enable_auto_commit": False,
            "auto_offset_reset": "none",
            "fetch_max_wait_ms": 100,
            "isolation_level": "read_uncommitted",
            **(config or {}),
        }
        try:
            self._c = KafkaConsumer(**conf)
        except KafkaError as exc:
            raise BrokerUnreachable(f"cannot connect to {bootstrap_servers}: {exc!r}", topic=topic,
                                    client="kafka-python") from None
        self._offset = 0

    def seek(self, offset: int) -> None:
        self._c.assign([self._tp])
        self._c.seek(self._tp, offset)
        self._offset = offset

    def poll(self, max_records: int, timeout_s: float) -> list[Raw]:
        from kafka.errors import KafkaError

        try:
            batches = self._c.poll(timeout_ms=int(timeout_s * 1000), max_records=max_records)
        except KafkaError as exc:
            hint = ""
            if type(exc).__name__ == "UnsupportedCodecError":  # the producer's compression.type needs a codec package
                hint = " (install the codec: pip install 'kafka-python[lz4]', [zstd] or [snappy])"
            raise ReadFailed(f"reading {self.topic} at offset {self._offset}: {exc!r}{hint}", topic=self.topic,
                             offset=self._offset, client="kafka-python") from None
        out = [(m.offset, m.key, m.value) for m in batches.get(self._tp, ())]
        if out:
            self._offset = out[-1][0] + 1
        return out

    def exists(self) -> bool:
        from kafka.errors import KafkaError

        try:
            self._c.topics()  # refreshes the metadata: partitions_for_topic alone may answer from a stale cache
            return 0 in (self._c.partitions_for_topic(self.topic) or ())
        except KafkaError as exc:
            raise BrokerUnreachable(f"no metadata for {self.topic}: {exc!r}", topic=self.topic,
                                    client="kafka-python") from None

    def watermarks(self) -> tuple[int, int]:
        from kafka.errors import KafkaError

        try:
            low = self._c.beginning_offsets([self._tp])[self._tp]
            high = self._c.end_offsets([self._tp])[self._tp]
        except KafkaError as exc:
            raise BrokerUnreachable(f"cannot read the offsets of {self.topic}: {exc!r}", topic=self.topic,
                                    client="kafka-python") from None
        return low, high

    def committed(self) -> int | None:
        from kafka.errors import KafkaError

        if self.group_id is None:
            return None
        try:
            offset = self._c.committed(self._tp)
        except KafkaError as exc:
            raise BrokerUnreachable(f"cannot read the committed offset of group {self.group_id!r} on "
                                    f"{self.topic}: {exc!r}", topic=self.topic, group=self.group_id) from None
        return offset if offset is not None and offset >= 0 else None

    def commit(self, offset: int) -> None:
        from kafka.errors import KafkaError
        from kafka.structs import OffsetAndMetadata

        try:
            self._c.commit({self._tp: OffsetAndMetadata(offset, "", -1)})
        except KafkaError as exc:
            raise CommitFailed(f"commit of offset {offset} for group {self.group_id!r} on {self.topic} failed: "
                               f"{exc!r}", topic=self.topic, group=self.group_id, offset=offset) from None

    def close(self) -> None:
        self._c.close(autocommit=False)
