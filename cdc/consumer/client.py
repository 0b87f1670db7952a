"""The interface of the consumer's Kafka clients (cdc.consumer.kafka_clients opens one of them): the
records they hand out and the calls they answer. Its own module so that the clients
(cdc.consumer.confluent_client, cdc.consumer.kafka_python_client) and the module that picks one import
it without importing each other.
"""

from __future__ import annotations

from typing import Any, Protocol

Raw = tuple[int, bytes | None, bytes | None, Any]  # offset, key, value, headers (list of (name, bytes) or None)


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
