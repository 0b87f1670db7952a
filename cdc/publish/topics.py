"""Topic administration: create a topic unless it exists, its identity, its retention, delete it.

The changes topic is created with infinite retention (``retention.ms=-1``,
``retention.bytes=-1``): its tail is the publisher's checkpoint and its
history is what targets are built from, so nothing may expire unread.
:func:`retention_warnings` names a finite setting found at start.
"""

from __future__ import annotations

import time

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from cdc.errors import PublishError

KEEP_FOREVER = {"retention.ms": "-1", "retention.bytes": "-1"}


def ensure_topic(bootstrap: str, topic: str, *, partitions: int = 1, compacted: bool = False,
                 config: dict[str, str] | None = None, timeout_s: float = 15) -> None:
    """Create ``topic`` (with ``config``) unless it exists. Raises PublishError when the broker says no."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        meta = admin.list_topics(timeout=timeout_s)  # all topics: asking for one may auto-create it
    except KafkaException as exc:
        raise PublishError(f"broker {bootstrap} unreachable: {exc}", bootstrap=bootstrap) from None
    tmeta = meta.topics.get(topic)
    if tmeta is not None and tmeta.error is None and tmeta.partitions:
        return
    config = {**({"cleanup.policy": "compact"} if compacted else {}), **(config or {})}
    fut = admin.create_topics([NewTopic(topic, partitions, 1, config=config)],
                              operation_timeout=timeout_s, request_timeout=timeout_s)[topic]
    try:
        fut.result(timeout_s)
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        if isinstance(err, KafkaError) and err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return
        raise PublishError(f"could not create topic {topic}: {exc}", topic=topic) from None


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})


def topic_id(bootstrap: str, topic: str, timeout_s: float = 15) -> str | None:
    """The broker's id of ``topic`` (Kafka topic ids, KIP-516): a recreated topic gets a new one.
    None when the topic does not exist or the broker has no topic ids."""
    try:
        admin = _admin(bootstrap)  # held until the answer came: a collected client cancels its requests
        tid = admin.describe_topics(TopicCollection([topic]), request_timeout=timeout_s)[topic].result(
            timeout_s).topic_id
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        if isinstance(err, KafkaError) and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return None
        raise PublishError(f"cannot describe topic {topic} on {bootstrap}: {exc}", topic=topic) from None
    text = str(tid) if tid is not None else ""
    return text if text and text != "AAAAAAAAAAAAAAAAAAAAAA" else None  # the all-zero id: none given


def retention_warnings(bootstrap: str, topic: str, timeout_s: float = 15) -> list[str]:
    """One sentence per finite retention setting of ``topic`` (empty: it keeps everything)."""
    try:
        admin = _admin(bootstrap)
        res = admin.describe_configs([ConfigResource("topic", topic)], request_timeout=timeout_s)
        entries = next(iter(res.values())).result(timeout_s)
    except KafkaException as exc:
        return [f"cannot read the retention of {topic} ({exc}); make sure retention.ms=-1 and retention.bytes=-1"]
    out = []
    for name in ("retention.ms", "retention.bytes"):
        entry = entries.get(name)
        value = None if entry is None else entry.value
        if value is not None and value.strip() not in ("-1", ""):
            out.append(f"topic {topic} has {name}={value}: the broker may delete records before every target "
                       f"applied them (and the publisher's checkpoint is the stream's tail); set {name}=-1")
    return out


def recreate_topic(bootstrap: str, topic: str, *, config: dict[str, str], timeout_s: float = 30) -> None:
    """Delete ``topic`` and create it again, empty, with one partition and ``config``."""
    admin = _admin(bootstrap)
    try:
        admin.delete_topics([topic], operation_timeout=timeout_s, request_timeout=timeout_s)[topic].result(timeout_s)
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        if not (isinstance(err, KafkaError) and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
            raise PublishError(f"could not delete topic {topic}: {exc}", topic=topic) from None
    deadline = time.monotonic() + timeout_s
    while topic in admin.list_topics(timeout=timeout_s).topics:  # deletion is asynchronous on some brokers
        if time.monotonic() > deadline:
            raise PublishError(f"topic {topic} still listed {timeout_s}s after its deletion", topic=topic)
        time.sleep(0.2)
    while True:
        try:
            ensure_topic(bootstrap, topic, partitions=1, config=config, timeout_s=timeout_s)
            return
        except PublishError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)  # "marked for deletion" on Kafka until the deletion completes
