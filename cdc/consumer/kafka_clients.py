"""The two Kafka clients the consumer runs on, behind one small interface.

- ``confluent`` (default, fastest): confluent-kafka (librdkafka), cdc.consumer.confluent_client;
- ``kafka-python``: pure Python, for runtimes where a native wheel cannot be
  installed, cdc.consumer.kafka_python_client (it needs the codec of the
  producer's ``compression.type``: lz4 by default, declared with it).

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

from typing import Any

from cdc.consumer.client import KafkaClient
from cdc.consumer.errors import ConsumerError

CLIENTS = ("confluent", "kafka-python")


def open_client(client: str, where: Any, topic: str, group_id: str | None,
                config: dict[str, Any] | None = None) -> KafkaClient:
    """A connected client of kind ``client`` (see CLIENTS). ``where``: bootstrap servers or a
    cdc.config.kafka_settings.KafkaConnection (``kafka.client`` / ``kafka.consumer``, translated for kafka-python).
    ``config``: extra settings in that client's own vocabulary (librdkafka keys for confluent, KafkaConsumer
    keyword arguments for kafka-python)."""
    if client == "confluent":
        from cdc.consumer.confluent_client import ConfluentClient

        return ConfluentClient(where, topic, group_id, config)
    if client == "kafka-python":
        from cdc.consumer.kafka_python_client import KafkaPythonClient

        return KafkaPythonClient(where, topic, group_id, config)
    raise ConsumerError(f"unknown Kafka client {client!r} (one of {', '.join(CLIENTS)})", client=client)
