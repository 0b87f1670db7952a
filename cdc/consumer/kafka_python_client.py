"""The kafka-python (pure Python) client of the consumer: cdc.consumer.client.KafkaClient."""

from __future__ import annotations

from typing import Any

from cdc.config.kafka_settings import KafkaConnection
from cdc.consumer.client import Raw
from cdc.consumer.errors import BrokerUnreachable, CommitFailed, ReadFailed


class KafkaPythonClient:
    def __init__(self, where: str | KafkaConnection, topic: str, group_id: str | None,
                 config: dict[str, Any] | None = None) -> None:
        from kafka import KafkaConsumer, TopicPartition
        from kafka.errors import KafkaError

        self.topic = topic
        self.group_id = group_id
        self._tp = TopicPartition(topic, 0)
        conn = KafkaConnection.of(where)
        conf = {
            "bootstrap_servers": conn.bootstrap,
            "group_id": group_id,  # None: no coordinator, nothing committed
            "enable_auto_commit": False,
            "auto_offset_reset": "none",
            "fetch_max_wait_ms": 100,
            "isolation_level": "read_uncommitted",
            **conn.kafka_python(),  # kafka.client and kafka.consumer, translated from librdkafka's names
            **(config or {}),
        }
        try:
            self._c = KafkaConsumer(**conf)
        except KafkaError as exc:
            raise BrokerUnreachable(f"cannot connect to {conn.bootstrap}: {exc!r}", topic=topic,
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
        out = [(m.offset, m.key, m.value, m.headers) for m in batches.get(self._tp, ())]
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
