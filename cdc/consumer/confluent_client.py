"""The confluent-kafka (librdkafka) client of the consumer: cdc.consumer.kafka_clients.KafkaClient."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from cdc.consumer.errors import BrokerUnreachable, CommitFailed, ReadFailed
from cdc.consumer.kafka_clients import Raw

RATE_LIMIT_S = 30.0


class _OncePerFacility(logging.Filter):
    """librdkafka repeats a line per retry (a broker down: one FAIL line per reconnect attempt, hundreds a
    minute). Let one line per facility and level through every RATE_LIMIT_S seconds."""

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[tuple[int, str], float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        fac = str(record.args[0]) if isinstance(record.args, tuple) and record.args else str(record.msg)
        key, now = (record.levelno, fac), time.monotonic()
        if now - self._last.get(key, -RATE_LIMIT_S) < RATE_LIMIT_S:
            return False
        self._last[key] = now
        return True


LOG = logging.getLogger("cdc.consumer.librdkafka")
LOG.addFilter(_OncePerFacility())


class ConfluentClient:
    def __init__(self, bootstrap_servers: str, topic: str, group_id: str | None,
                 config: dict[str, Any] | None = None) -> None:
        from confluent_kafka import Consumer

        self.topic = topic
        self.group_id = group_id
        self.bootstrap = bootstrap_servers
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
            "logger": LOG,
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
            raise BrokerUnreachable(f"no metadata for {self.topic} from {self.bootstrap}: {exc}", topic=self.topic,
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
