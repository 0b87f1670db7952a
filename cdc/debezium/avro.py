"""Kafka Connect schemas and payloads (JsonConverter form) -> Avro, as Confluent's AvroConverter does.

Debezium itself only builds Connect schemas; the Avro a consumer sees is what
Confluent's ``AvroData.fromConnectSchema`` makes of them, so this module
follows that code rule for rule (with ``connect.meta.data`` on, its default):

- ``int8``/``int16`` -> ``int`` with ``connect.type``; ``int32`` -> ``int``,
  ``int64`` -> ``long``, ``float32`` -> ``float``, ``float64`` -> ``double``;
  ``boolean``, ``string``, ``bytes`` as themselves; arrays and string-keyed
  maps as Avro arrays and maps;
- a named schema keeps its name in ``connect.name`` (records also take it as
  their Avro full name), with ``connect.version``, ``connect.doc``,
  ``connect.parameters`` and ``connect.default`` when the Connect schema has
  them; so ``io.debezium.time.Date`` is ``{"type": "int", "connect.name": ...}``;
- ``org.apache.kafka.connect.data.Decimal`` is ``bytes`` with
  ``logicalType: decimal``, ``scale`` and ``precision`` (its
  ``connect.decimal.precision`` parameter, else 64);
- Connect's own Date/Time/Timestamp get ``date``/``time-millis``/``timestamp-millis``;
- an optional schema is the union ``["null", T]`` with default null, or
  ``[T, "null"]`` with its own default when it has one: that is what makes a
  column added later BACKWARD compatible (a reader of the new schema fills it
  with the default when reading data written before).

Names are made Avro-legal the way Debezium's SchemaNameAdjuster does it (a
character outside ``[A-Za-z0-9_]`` becomes ``_``, a leading digit gets a
``_`` in front), e.g. a topic prefix ``my-cdc`` names records ``my_cdc...``.

:func:`avro_datum` turns the matching JsonConverter payload into what an Avro
writer takes: ``bytes`` from their base64 text, ``decimal.Decimal`` for a
Decimal (from base64 unscaled bytes, or from a JSON number), the
rest unchanged. It raises :class:`cdc.errors.CdcError` naming the field path
and the value when the payload does not fit.
"""

from __future__ import annotations

import base64
import binascii
import decimal
import re
from collections.abc import Callable
from typing import Any

from cdc.errors import CdcError

DECIMAL = "org.apache.kafka.connect.data.Decimal"
_LOGICAL = {"org.apache.kafka.connect.data.Date": "date", "org.apache.kafka.connect.data.Time": "time-millis",
            "org.apache.kafka.connect.data.Timestamp": "timestamp-millis"}
_PRIMITIVE = {"int8": "int", "int16": "int", "int32": "int", "int64": "long", "float32": "float",
              "float64": "double", "boolean": "boolean", "string": "string", "bytes": "bytes"}
_ILLEGAL = re.compile(r"[^A-Za-z0-9_]")
DEFAULT_NAMESPACE, DEFAULT_NAME = "io.confluent.connect.avro", "ConnectDefault"


def avro_name(name: str) -> str:
    """A dotted Connect schema name made Avro-legal, component by component (SchemaNameAdjuster)."""
    parts = []
    for part in name.split("."):
        part = _ILLEGAL.sub("_", part)
        parts.append("_" + part if not part or part[0].isdigit() else part)
    return ".".join(parts)


def avro_schema(connect: dict[str, Any]) -> Any:
    """The Avro schema (JSON-ready) of a Connect schema in JsonConverter form (``{"type": "struct", ...}``)."""
    return _convert(connect, set())


def _convert(cs: dict[str, Any], seen: set[str]) -> Any:
    ctype = cs.get("type")
    name = cs.get("name")
    params = cs.get("parameters") or {}
    if ctype == "struct":
        full = avro_name(name) if name else f"{DEFAULT_NAMESPACE}.{DEFAULT_NAME}"
        if full in seen:  # Avro allows one definition per name: later uses refer to it by name
            base: Any = full
        else:
            seen.add(full)
            namespace, _, short = full.rpartition(".")
            base = {"type": "record", "name": short, **({"namespace": namespace} if namespace else {}),
                    "fields": [_field(f, seen) for f in cs.get("fields", [])]}
    elif ctype == "array":
        base = {"type": "array", "items": _convert(cs["items"], seen)}
    elif ctype == "map":
        if (cs.get("keys") or {}).get("type") != "string" or cs["keys"].get("optional"):
            raise CdcError("a Connect map with non-string keys has no Avro form here", schema=name or "map")
        base = {"type": "map", "values": _convert(cs["values"], seen)}
    elif ctype in _PRIMITIVE:
        base = {"type": _PRIMITIVE[ctype]}
    else:
        raise CdcError(f"unknown Connect schema type {ctype!r}", schema=name or "?")
    if isinstance(base, dict):
        _annotate(base, cs, ctype, name, params)
    if not cs.get("optional"):
        return base
    return [base, "null"] if cs.get("default") is not None and ctype != "struct" else ["null", base]


def _annotate(base: dict[str, Any], cs: dict[str, Any], ctype: str, name: str | None,
              params: dict[str, str]) -> None:
    """The ``connect.*`` properties and logical types AvroData puts on a non-union schema."""
    if cs.get("doc") is not None:
        base["connect.doc"] = cs["doc"]
    if cs.get("version") is not None:
        base["connect.version"] = cs["version"]
    if params:
        base["connect.parameters"] = dict(params)
    if cs.get("default") is not None:
        base["connect.default"] = cs["default"]
    if name is not None:
        base["connect.name"] = avro_name(name) if ctype == "struct" else name
    if ctype in ("int8", "int16"):
        base["connect.type"] = ctype
    if name == DECIMAL:
        scale = int(params.get("scale", 0))
        precision = int(params.get("connect.decimal.precision", 64))
        base.update({"logicalType": "decimal", "precision": precision, "scale": scale})
    elif name in _LOGICAL:
        base["logicalType"] = _LOGICAL[name]


def _field(f: dict[str, Any], seen: set[str]) -> dict[str, Any]:
    out = {"name": f["field"], "type": _convert(f, seen)}
    if f.get("default") is not None:
        out["default"] = f["default"]
    elif f.get("optional"):
        out["default"] = None
    return out


def avro_datum(connect: dict[str, Any], payload: Any, path: str = "") -> Any:
    """The JsonConverter ``payload`` of ``connect`` as an Avro writer takes it (see the module doc)."""
    return datum_converter(connect, path)(payload)


Convert = Callable[[Any], Any]


def datum_converter(cs: dict[str, Any], path: str = "") -> Convert:
    """:func:`avro_datum` for one schema, worked out once (the publisher keeps it with the schema's
    serializer): per struct, the fields that need a conversion (bytes, Decimal, nested structs, arrays,
    maps) and the required ones whose null is an error naming the field; everything else is copied."""
    return _nullable(cs, path, _value_converter(cs, path))


def _nullable(cs: dict[str, Any], path: str, inner: Convert | None) -> Convert:
    """``inner`` behind the null rule of ``cs``: null takes the default, else is an error when required."""
    default = cs.get("default")
    required = not cs.get("optional") and default is None
    where = path or "<root>"

    def convert(value: Any) -> Any:
        if value is None:
            if required:
                raise CdcError(f"field {where} is null but its schema is not optional",
                               field=where, schema=cs.get("name") or cs.get("type"))
            value = default
            if value is None:
                return None
        return value if inner is None else inner(value)
    return convert


def _value_converter(cs: dict[str, Any], path: str) -> Convert | None:
    """The conversion of a non-null value of ``cs``; None: the value as it is."""
    ctype = cs.get("type")
    if ctype == "struct":
        return _struct_converter(cs, path)
    if ctype == "array":
        item = datum_converter(cs["items"], f"{path}[]")
        return lambda v: [item(x) for x in v]
    if ctype == "map":
        values = datum_converter(cs["values"], f"{path}{{}}")
        return lambda v: {k: values(x) for k, x in v.items()}
    if ctype == "bytes" and cs.get("name") == DECIMAL:
        scale = int((cs.get("parameters") or {}).get("scale", 0))
        return lambda v: _decimal(scale, v, path)
    if ctype == "bytes":
        return lambda v: _bytes(v, path)
    return None


def _struct_converter(cs: dict[str, Any], path: str) -> Convert:
    plain, converted = [], []  # plain: (name, required, default); converted: (name, converter)
    for f in cs.get("fields", []):
        name = f["field"]
        sub = f"{path}.{name}" if path else name
        inner = _value_converter(f, sub)
        if inner is None:
            plain.append((name, not f.get("optional") and f.get("default") is None, f.get("default"), sub))
        else:
            converted.append((name, _nullable(f, sub, inner)))
    where = path or "<root>"

    def convert(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise CdcError(f"field {where} should be an object, got {value!r:.200}", field=where,
                           value=repr(value)[:200])
        get, out = value.get, {}
        for name, required, default, sub in plain:
            v = get(name)
            if v is None:
                if required:
                    raise CdcError(f"field {sub} is null but its schema is not optional", field=sub)
                v = default
            out[name] = v
        for name, conv in converted:
            out[name] = conv(get(name))
        return out
    return convert


def _bytes(value: Any, path: str) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise CdcError(f"field {path} holds bytes but {value!r:.200} is not base64 text",
                       field=path, value=repr(value)[:200]) from None


def _decimal(scale: int, value: Any, path: str) -> decimal.Decimal:
    """A Decimal payload: base64 unscaled two's-complement bytes (JsonConverter's default), or a number."""
    if isinstance(value, str):  # JsonConverter's decimal.format=BASE64; NUMERIC gives a JSON number
        unscaled = int.from_bytes(_bytes(value, path), "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-scale)
    try:
        number = decimal.Decimal(str(value))
    except decimal.InvalidOperation:
        raise CdcError(f"field {path} holds a decimal but {value!r:.200} is not a number",
                       field=path, value=repr(value)[:200]) from None
    exact = number.quantize(decimal.Decimal(1).scaleb(-scale))
    if exact != number:
        raise CdcError(f"field {path}: {value} has more than the {scale} fraction digits its schema allows",
                       field=path, value=str(value), scale=scale)
    return exact
