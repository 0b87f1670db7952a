"""Topic administration: create a topic unless it exists, its identity, its retention, delete it.

How topics are created is configuration (``kafka.topics``, :func:`topic_spec`,
which ``cdc check`` also reads to verify existing topics): the changes topic
has exactly one partition and, unless overridden, infinite retention
(``retention.ms=-1``, ``retention.bytes=-1``): its tail is the publisher's
checkpoint and its history is what targets are built from, so nothing may
expire unread. :func:`retention_warnings` names a finite setting found at
start. Per-table topics are compacted (key = primary key, tombstone after a
delete). Replication factor and ``min.insync.replicas`` default to the
broker's.

Every admin client comes from :func:`admin_client`: the connection's settings
(cdc.config.kafka_settings), librdkafka's lines through Python logging, and the last
client error (a TLS or SASL failure) remembered so that a failed request's
error says WHY the broker was unreachable, not only that it was.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import ConfigResource, NewTopic

from cdc.config.kafka_settings import KafkaConnection, LastError, create_client
from cdc.errors import PublishError

KEEP_FOREVER = {"retention.ms": "-1", "retention.bytes": "-1"}
TopicKind = Literal["changes", "per_table", "dead_letter", "schemas", "transaction", "schema_change"]



@dataclass(frozen=True)
class TopicSpec:
    """How a topic is created: partitions, replication factor (None: the broker's default), topic config."""

    partitions: int = 1
    replication_factor: int | None = None
    config: dict[str, str] = field(default_factory=dict)


def topic_spec(kafka: Any, kind: TopicKind) -> TopicSpec:
    """The settings the service creates a ``kind`` topic with, from ``kafka.topics`` (cdc.config.models.TopicsConfig)
    over the defaults: changes 1 partition + KEEP_FOREVER; per_table and schemas compacted; dead_letter and the
    Debezium transaction and schema_change topics the broker's defaults."""
    t = kafka.topics
    compact = {"cleanup.policy": "compact"}
    base = {"changes": dict(KEEP_FOREVER), "per_table": compact, "schemas": compact}.get(kind, {})
    given = {"changes": t.changes, "per_table": t.per_table, "dead_letter": t.dead_letter,
             "transaction": t.transaction, "schema_change": t.schema_change}.get(kind, {})
    config = {**base, **{k: str(v) for k, v in given.items() if k != "partitions"}}
    if t.min_insync_replicas is not None:
        config.setdefault("min.insync.replicas", str(t.min_insync_replicas))
    return TopicSpec(int(given.get("partitions", 1)), t.replication_factor, config)


class _Admin:
    """An AdminClient and the last client error it reported (see the module docstring)."""

    def __init__(self, where: str | KafkaConnection) -> None:
        self.conn = KafkaConnection.of(where)
        self.errors = LastError()
        self.client = create_client("admin", self.conn.settings("admin", {"error_cb": self.errors}))

    def failure(self, exc: Exception) -> str:
        """``exc`` and the cause librdkafka reported meanwhile (served by poll, as its log lines are)."""
        self.client.poll(0)
        return f"{exc}{self.errors.explain()}"

    def done(self) -> None:
        self.client.poll(0)  # hand librdkafka's queued log lines to Python logging


def admin_client(where: str | KafkaConnection) -> _Admin:
    return _Admin(where)


def ensure_topic(where: str | KafkaConnection, topic: str, spec: TopicSpec | None = None, *,
                 timeout_s: float = 15) -> None:
    """Create ``topic`` as ``spec`` says unless it exists. Raises PublishError when the broker says no or
    cannot be reached (naming the broker and librdkafka's reason: a TLS or SASL failure)."""
    spec = spec or TopicSpec()
    admin = admin_client(where)
    bootstrap = admin.conn.bootstrap
    try:
        try:
            meta = admin.client.list_topics(timeout=timeout_s)  # all topics: asking for one may auto-create it
        except KafkaException as exc:
            raise PublishError(f"broker {bootstrap} unreachable: {admin.failure(exc)}", bootstrap=bootstrap) from None
        tmeta = meta.topics.get(topic)
        if tmeta is not None and tmeta.error is None and tmeta.partitions:
            return
        new = NewTopic(topic, spec.partitions, spec.replication_factor or -1, config=dict(spec.config))
        fut = admin.client.create_topics([new], operation_timeout=timeout_s, request_timeout=timeout_s)[topic]
        try:
            fut.result(timeout_s)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if isinstance(err, KafkaError) and err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                return
            raise PublishError(f"could not create topic {topic} on {bootstrap}: {admin.failure(exc)}",
                               topic=topic) from None
    finally:
        admin.done()


def topic_id(where: str | KafkaConnection, topic: str, timeout_s: float = 15) -> str | None:
    """The broker's id of ``topic`` (Kafka topic ids, KIP-516): a recreated topic gets a new one.
    None when the topic does not exist or the broker has no topic ids."""
    admin = admin_client(where)  # held until the answer came: a collected client cancels its requests
    try:
        tid = admin.client.describe_topics(TopicCollection([topic]), request_timeout=timeout_s)[topic].result(
            timeout_s).topic_id
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        if isinstance(err, KafkaError) and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return None
        raise PublishError(f"cannot describe topic {topic} on {admin.conn.bootstrap}: {admin.failure(exc)}",
                           topic=topic) from None
    finally:
        admin.done()
    text = str(tid) if tid is not None else ""
    return text if text and text != "AAAAAAAAAAAAAAAAAAAAAA" else None  # the all-zero id: none given


def retention_warnings(where: str | KafkaConnection, topic: str, timeout_s: float = 15) -> list[str]:
    """One sentence per finite retention setting of ``topic`` (empty: it keeps everything)."""
    admin = admin_client(where)
    try:
        res = admin.client.describe_configs([ConfigResource("topic", topic)], request_timeout=timeout_s)
        entries = next(iter(res.values())).result(timeout_s)
    except KafkaException as exc:
        return [(f"cannot read the retention of {topic} ({admin.failure(exc)}); make sure retention.ms=-1 and "
                 f"retention.bytes=-1")]
    finally:
        admin.done()
    out = []
    for name in ("retention.ms", "retention.bytes"):
        entry = entries.get(name)
        value = None if entry is None else entry.value
        if value is not None and value.strip() not in ("-1", ""):
            out.append(f"topic {topic} has {name}={value}: the broker may delete records before every target "
                       f"applied them (and the publisher's checkpoint is the stream's tail); set {name}=-1")
    return out


def recreate_topic(where: str | KafkaConnection, topic: str, spec: TopicSpec, *, timeout_s: float = 30) -> None:
    """Delete ``topic`` and create it again, empty, as ``spec`` says."""
    admin = admin_client(where)
    try:
        try:
            admin.client.delete_topics([topic], operation_timeout=timeout_s,
                                       request_timeout=timeout_s)[topic].result(timeout_s)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if not (isinstance(err, KafkaError) and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
                raise PublishError(f"could not delete topic {topic}: {admin.failure(exc)}", topic=topic) from None
        deadline = time.monotonic() + timeout_s
        while topic in admin.client.list_topics(timeout=timeout_s).topics:  # deletion is asynchronous on some brokers
            if time.monotonic() > deadline:
                raise PublishError(f"topic {topic} still listed {timeout_s}s after its deletion", topic=topic)
            time.sleep(0.2)
    finally:
        admin.done()
    while True:
        try:
            ensure_topic(admin.conn, topic, spec, timeout_s=timeout_s)
            return
        except PublishError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)  # "marked for deletion" on Kafka until the deletion completes
