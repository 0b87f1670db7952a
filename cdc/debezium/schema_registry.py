"""Avro records through a Confluent Schema Registry, with confluent-kafka's own serializer.

``RegistryAvro(settings).encode(topic, field, connect_schema, payload)`` gives
the bytes a Confluent ``AvroDeserializer`` (Java or Python) decodes: magic
byte 0, the 4-byte id the registry assigned, Avro binary. The Avro schema is
the Connect schema converted as Confluent's AvroConverter does
(cdc.debezium.avro); it is registered under TopicNameStrategy subjects
``<topic>-key`` / ``<topic>-value`` on first use (``auto.register.schemas``).
A table whose columns change gets a new Connect schema, hence a new Avro
schema and a new version of the same subject; an added column is optional
with default null, which a registry in BACKWARD mode (its default) accepts.

Errors: a schema the registry refuses (HTTP 409: incompatible, 422: invalid)
is :class:`SchemaRefused` (Terminal: the source stops at that change, naming
the subject and the reason); a registry that cannot be reached is a
:class:`cdc.errors.PublishError` (Transient: the daemon restarts the source
from the stream's tail and tries again).

``mock://<scope>`` URLs use the client's in-memory registry (no server); all
clients of one scope in a process share it, as Confluent's Java
MockSchemaRegistry scopes do, so a test's deserializer sees what the
publisher registered. Nothing is shared across processes.
"""

from __future__ import annotations

import base64
import decimal
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import httpx2
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError

from cdc.debezium.avro import avro_schema, datum_converter
from cdc.debezium.errors import SchemaRefused
from cdc.debezium.record import ConnectRecord
from cdc.errors import CdcError, PublishError

log = logging.getLogger(__name__)

_MOCK_SCOPES: dict[str, SchemaRegistryClient] = {}
_MOCK_LOCK = threading.Lock()
FIELDS = {"key": MessageField.KEY, "value": MessageField.VALUE}


def registry_client(settings: dict[str, Any]) -> SchemaRegistryClient:
    """A SchemaRegistryClient for ``settings`` (its own keys: ``url``, ``basic.auth.user.info``, ...)."""
    url = settings.get("url") or ""
    try:
        if not url.startswith("mock://"):
            return SchemaRegistryClient(dict(settings))
        with _MOCK_LOCK:
            if url not in _MOCK_SCOPES:
                log.warning("kafka.schema_registry.url %s is the client's in-memory registry: the schema ids in "
                            "the records exist in this process only, no other consumer can decode them", url)
                _MOCK_SCOPES[url] = SchemaRegistryClient.new_client(dict(settings))
            return _MOCK_SCOPES[url]
    except (ValueError, TypeError) as exc:
        raise CdcError(f"kafka.schema_registry: {exc}", key="kafka.schema_registry", url=url) from None


class RegistryAvro:
    """Per-(topic, key|value, schema) AvroSerializers over one registry client; one thread."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.client = registry_client(settings)
        self.url = settings.get("url")
        # (topic, field, id(connect schema)) -> (that schema object, its serializer, its datum converter);
        # the object is kept so its id cannot be reused while cached
        self._serializers: dict[tuple[str, str, int], tuple[dict, AvroSerializer, Any]] = {}

    def record_bytes(self, rec: ConnectRecord) -> tuple[bytes | None, bytes | None]:
        """(key, value) bytes of ``rec``: None stays None (a null key, a tombstone)."""
        key = None if rec.key is None else self.encode(rec.topic, "key", rec.key_schema, rec.key)
        value = None if rec.value is None else self.encode(rec.topic, "value", rec.value_schema, rec.value)
        return key, value

    def encode(self, topic: str, field: str, connect_schema: dict[str, Any], payload: Any) -> bytes:
        """The registry-framed Avro bytes of ``payload``; registers the schema on first use."""
        slot = (topic, field, id(connect_schema))
        entry = self._serializers.get(slot)
        if entry is None or entry[0] is not connect_schema:
            if len(self._serializers) > 10_000:  # a builder that makes a new schema object per record
                self._serializers.clear()
            text = json.dumps(avro_schema(connect_schema))
            entry = (connect_schema, AvroSerializer(self.client, text, conf={"auto.register.schemas": True}),
                     datum_converter(connect_schema, field))
            self._serializers[slot] = entry
        try:
            datum = entry[2](payload)
        except CdcError as exc:  # a payload that does not fit its schema: say which topic's record
            raise CdcError(f"{exc.message} (a {field} record of {topic})", **{**exc.fields, "topic": topic}) from None
        try:
            return entry[1](datum, SerializationContext(topic, FIELDS[field]))
        except SchemaRegistryError as exc:
            subject = f"{topic}-{field}"
            if exc.http_status_code in (409, 422):
                raise SchemaRefused(f"the Schema Registry refused the {field} schema of {topic} "
                                    f"(subject {subject}): {exc.error_message}", subject=subject, topic=topic,
                                    status=exc.http_status_code, registry=self.url) from None
            raise PublishError(f"Schema Registry {self.url} failed for subject {subject}: {exc}",
                               subject=subject, topic=topic, registry=self.url) from None
        except SerializationError as exc:
            raise CdcError(f"a {field} record of {topic} does not fit its Avro schema: {exc}", topic=topic,
                           value=repr(payload)[:300]) from None
        except (httpx2.TransportError, OSError) as exc:  # the client's HTTP layer: connection refused, timeout
            raise PublishError(f"Schema Registry {self.url} unreachable: {exc}", topic=topic,
                               registry=self.url) from None


def registry_decoders(settings: dict[str, Any], topic: str) -> tuple[Callable[[bytes], Any], Callable[[bytes], Any]]:
    """(key, value) decoders of a topic RegistryAvro wrote, through confluent-kafka's AvroDeserializer (``cdc
    tail``); the values come back JSON-ready: a Decimal as its text, bytes as base64."""
    des = AvroDeserializer(registry_client(settings))
    kctx, vctx = SerializationContext(topic, MessageField.KEY), SerializationContext(topic, MessageField.VALUE)
    return (lambda data: _json_ready(des(data, kctx))), (lambda data: _json_ready(des(data, vctx)))


def _json_ready(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_ready(v) for v in value]
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value
