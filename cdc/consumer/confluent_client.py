"""The confluent-kafka (librdkafka) client of the consumer: cdc.consumer.client.KafkaClient."""

from __future__ import annotations

import uuid
from typing import Any

from cdc.config.kafka_settings import KafkaConnection, LastError, create_client
from cdc.consumer.client import Raw
from cdc.consumer.errors import BrokerUnreachable, CommitFailed, ReadFailed


class ConfluentClient:
    def __init__(self, where: str | KafkaConnection, topic: str, group_id: str | None,
                 config: dict[str, Any] | None = None) -> None:
        self.topic = topic
        self.group_id = group_id
        conn = KafkaConnection.of(where)
        self.bootstrap = conn.bootstrap
        self.errors = LastError()  # a TLS or SASL failure, named in BrokerUnreachable
        conf = {
            # librdkafka needs a group id even to assign(); without a group nothing is ever committed to it
            "group.id": group_id or f"cdc-consumer-{uuid.uuid4().hex[:12]}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "error",
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 100,
            "isolation.level": "read_uncommitted",
            "error_cb": self.errors,
        }
        self._c = create_client("consumer", {**conn.settings("consumer", conf), **(config or {})})
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
            out.append((m.offset(), m.key(), m.value(), m.headers()))
        return out

    def exists(self) -> bool:
        from confluent_kafka import KafkaException

        try:
            meta = self._c.list_topics(self.topic, timeout=10)
        except KafkaException as exc:
            self._c.poll(0)  # serves error_cb (before any assign(): no record can be taken here)
            raise BrokerUnreachable(f"no metadata for {self.topic} from {self.bootstrap}: {exc}"
                                    f"{self.errors.explain()}", topic=self.topic, client="confluent") from None
        t = meta.topics.get(self.topic)
        return t is not None and t.error is None and 0 in t.partitions

    def watermarks(self) -> tuple[int, int]:
        from confluent_kafka import KafkaException

        try:
            return self._c.get_watermark_offsets(self._tp(), timeout=10, cached=False)
        except KafkaException as exc:
            raise BrokerUnreachable(f"cannot read the offsets of {self.topic} on {self.bootstrap}: {exc}"
                                    f"{self.errors.explain()}", topic=self.topic, client="confluent") from None

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
