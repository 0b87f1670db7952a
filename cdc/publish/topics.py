"""Topic administration for the publisher: create a topic unless it exists."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from cdc.errors import PublishError


def ensure_topic(bootstrap: str, topic: str, *, partitions: int = 1, compacted: bool = False,
                 timeout_s: float = 15) -> None:
    """Create ``topic`` unless it exists. Raises PublishError when the broker says no."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        meta = admin.list_topics(timeout=timeout_s)  # all topics: asking for one may auto-create it
    except KafkaException as exc:
        raise PublishError(f"broker {bootstrap} unreachable: {exc}", bootstrap=bootstrap) from None
    tmeta = meta.topics.get(topic)
    if tmeta is not None and tmeta.error is None and tmeta.partitions:
        return
    config = {"cleanup.policy": "compact"} if compacted else {}
    fut = admin.create_topics([NewTopic(topic, partitions, 1, config=config)],
                              operation_timeout=timeout_s, request_timeout=timeout_s)[topic]
    try:
        fut.result(timeout_s)
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        if isinstance(err, KafkaError) and err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return
        raise PublishError(f"could not create topic {topic}: {exc}", topic=topic) from None
