"""Record serialization: the dicts of cdc.stream.envelope <-> bytes on the wire.

``get_serde(encoding)`` gives a pair of :class:`Serde` objects, one for keys
and one for values (``get_serdes``), or the value serde alone
(``get_serde``). Every serde has ``encode(dict) -> bytes`` and
``decode(bytes) -> dict``, and ``decode(encode(v)) == v`` for every record
cdc.stream.envelope builds.

JSON (default): orjson, compact, UTF-8. Nothing else to know.

Avro: schemaless Avro binary (written by cdc.avro.encoder, read by fastavro)
against the writer schemas shipped in
``cdc/avro/`` (``change_key.avsc``, ``change_value.avsc``; per-table topics
use ``table_key.avsc`` for keys and the same value schema), framed either
Confluent-style (byte 0, 4-byte big-endian schema id, payload) or plain
(payload only). The schema id is derived from the schema text (CRC32 of its
canonical JSON), so it is stable without a registry; the publisher also
writes both schemas to the compacted topic ``<prefix>._schemas`` keyed by
id. How values are modelled in Avro (documented choice):

- row images (``before``/``after``), key values and ``source`` are
  ``map<union{null, boolean, long, double, string}>``: rows are
  heterogeneous, every value the event model allows fits (DECIMAL/NUMBER,
  dates and binary are strings there already). Integers beyond signed 64
  bits (BIGINT UNSIGNED and BIT(64) from 2^63) travel as their decimal
  text (the string branch: Avro has no unsigned long), so they decode as
  str; the apply targets take either form;
- free-form nested JSON (``resume``, ``position``, ``schema``) is carried as
  a JSON text string (``*`` fields stay opaque to Avro consumers);
- one value schema covers every record kind, with the fields a kind does
  not use left null; decoding drops them again, so the dict is the same.
"""

from __future__ import annotations

import io
import json
import struct
import zlib
from functools import cache
from importlib import resources
from typing import Any

import orjson

from cdc.avro.encoder import ENCODERS
from cdc.errors import CdcError

JSON_FIELDS = ("position", "resume", "schema")  # nested free-form JSON: text in Avro

# Which keys a record of each kind has (decoding Avro drops the rest).
_KIND_FIELDS = {
    None: ("sequence", "before", "after", "op", "ts_ms", "source", "transaction"),
    "BEGIN": ("sequence", "status", "id", "event_count", "data_collections", "ts_ms"),
    "END": ("sequence", "status", "id", "event_count", "data_collections", "ts_ms", "position", "resume"),
    "ABORTED": ("sequence", "status", "id", "ts_ms"),
    "SCHEMA": ("sequence", "status", "table", "ddl", "schema", "ts_ms", "resume"),
    "HEARTBEAT": ("sequence", "status", "ts_ms", "resume"),
}


class Serde:
    """Turns one kind of record (key or value) into bytes and back."""

    encoding = "?"

    def encode(self, value: dict[str, Any]) -> bytes:
        raise NotImplementedError

    def decode(self, data: bytes) -> dict[str, Any]:
        raise NotImplementedError


class JsonSerde(Serde):
    encoding = "json"
    # Bound methods: the publisher calls these once per record.
    encode = staticmethod(orjson.dumps)  # type: ignore[assignment]
    decode = staticmethod(orjson.loads)  # type: ignore[assignment]


def load_schema_text(name: str) -> str:
    """The text of a shipped schema, ``change_key`` or ``change_value``."""
    return resources.files("cdc.avro").joinpath(f"{name}.avsc").read_text()


def schema_id(text: str) -> int:
    """A stable 31-bit id of a schema: CRC32 of its canonical (sorted, compact) JSON."""
    canonical = json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    return zlib.crc32(canonical.encode()) & 0x7FFFFFFF


class AvroSerde(Serde):
    """fastavro schemaless encoding of one shipped schema, with optional Confluent framing."""

    encoding = "avro"

    def __init__(self, schema_name: str, framing: str = "confluent") -> None:
        import fastavro  # imported here: JSON users never pay for it

        if framing not in ("confluent", "plain", "schema_registry"):
            raise CdcError(f"unknown Avro framing {framing!r}", key="kafka.avro_framing")
        if framing == "schema_registry":  # that registry serves the Debezium-shaped topics (cdc.debezium);
            framing = "confluent"  # the ordered stream keeps its shipped schemas, which its own readers know
        self.name = schema_name
        self.text = load_schema_text(schema_name)
        self.schema_id = schema_id(self.text)
        self.parsed = fastavro.parse_schema(json.loads(self.text))
        self.framing = framing
        self._header = b"\x00" + struct.pack(">I", self.schema_id) if framing == "confluent" else b""
        self._encode = ENCODERS[schema_name]  # hand-written: fastavro's union resolution is slow
        self._read = fastavro.schemaless_reader
        self._is_value = schema_name == "change_value"

    def encode(self, value: dict[str, Any]) -> bytes:
        if self._is_value:
            value = {k: (orjson.dumps(v).decode() if k in JSON_FIELDS and v is not None else v)
                     for k, v in value.items()}
        try:
            return self._header + self._encode(value)
        except CdcError as exc:
            exc.fields["schema"] = self.name
            raise CdcError(f"{exc.message} {self.name}", **exc.fields) from None
        except (ValueError, TypeError, OverflowError, KeyError) as exc:
            raise CdcError(f"record does not fit the Avro schema {self.name}: {exc!r}",
                           schema=self.name, value=_short(value)) from None

    def decode(self, data: bytes) -> dict[str, Any]:
        buf = io.BytesIO(data)
        if self.framing == "confluent":
            head = buf.read(5)
            if len(head) != 5 or head[0] != 0:
                raise CdcError("not a Confluent-framed Avro record (magic byte 0 missing)", schema=self.name)
        obj = self._read(buf, self.parsed)
        if not self._is_value:
            if self.name == "change_key" and obj.get("key") is None:
                del obj["key"]  # a SCHEMA record's key is {"table": ...}
            return obj
        fields = _KIND_FIELDS.get(obj.get("status"), _KIND_FIELDS[None])
        return {k: (orjson.loads(obj[k]) if k in JSON_FIELDS and obj[k] is not None else obj[k]) for k in fields}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 300 else text[:300] + "..."


@cache
def get_serdes(encoding: str, framing: str = "confluent") -> tuple[Serde, Serde]:
    """(key serde, value serde) for ``encoding`` (``json`` or ``avro``)."""
    if encoding == "json":
        s = JsonSerde()
        return s, s
    if encoding == "avro":
        return AvroSerde("change_key", framing), AvroSerde("change_value", framing)
    raise CdcError(f"unknown encoding {encoding!r}", key="kafka.encoding")


def get_table_key_serde(encoding: str, framing: str = "confluent") -> Serde:
    """The key serde of per-table topics (the key is the primary-key dict itself)."""
    if encoding == "avro":
        return AvroSerde("table_key", framing)
    return get_serdes(encoding, framing)[0]


def get_serde(encoding: str, framing: str = "confluent") -> Serde:
    """The value serde for ``encoding``."""
    return get_serdes(encoding, framing)[1]
