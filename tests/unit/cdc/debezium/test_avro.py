"""Connect schemas -> Avro as Confluent's AvroConverter does; records through confluent-kafka's own
AvroSerializer / AvroDeserializer with the client's in-memory registry (``mock://``: no Schema Registry
server runs here); BACKWARD compatibility of an added column checked with Apache Avro's
ReaderWriterCompatibilityChecker, the Python port of the Java SchemaCompatibility class the registry's
BACKWARD check calls (the mock client does not check compatibility itself)."""

from __future__ import annotations

import base64
import decimal
import json
import uuid

import avro.schema
import fastavro
import pytest
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc.debezium.avro import avro_datum, avro_name, avro_schema
from cdc.debezium.schema_registry import RegistryAvro, registry_client
from cdc.errors import CdcError

DECIMAL = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
           "parameters": {"scale": "2", "connect.decimal.precision": "10"}}


def _row(prefix: str, extra: list[dict] | None = None, optional: bool = True) -> dict:
    """The Connect ``Value`` struct of a table (id INT PK, small TINYINT, price DECIMAL(10,2), born DATE,
    blob VARBINARY, name VARCHAR NOT NULL) as Debezium's MySQL connector builds it."""
    return {"type": "struct", "name": f"{prefix}.shop.orders.Value", "optional": optional, "fields": [
        {"field": "id", "type": "int32", "optional": False},
        {"field": "small", "type": "int16", "optional": True},
        {"field": "price", **DECIMAL, "optional": True},
        {"field": "born", "type": "int32", "name": "io.debezium.time.Date", "version": 1, "optional": True},
        {"field": "blob", "type": "bytes", "optional": True},
        {"field": "name", "type": "string", "optional": False},
        *(extra or [])]}


def _envelope(prefix: str, extra: list[dict] | None = None) -> dict:
    return {"type": "struct", "name": f"{prefix}.shop.orders.Envelope", "version": 2, "optional": False,
            "fields": [{**_row(prefix, extra), "field": "before"}, {**_row(prefix, extra), "field": "after"},
                       {"type": "struct", "name": "io.debezium.connector.mysql.Source", "optional": False,
                        "field": "source", "fields": [
                            {"field": "connector", "type": "string", "optional": False},
                            {"field": "snapshot", "type": "string", "optional": True, "default": "false",
                             "name": "io.debezium.data.Enum", "version": 1,
                             "parameters": {"allowed": "true,last,false,incremental"}},
                            {"field": "pos", "type": "int64", "optional": False}]},
                       {"field": "op", "type": "string", "optional": False},
                       {"field": "ts_ms", "type": "int64", "optional": True}]}


def _key(prefix: str) -> dict:
    return {"type": "struct", "name": f"{prefix}.shop.orders.Key", "optional": False,
            "fields": [{"field": "id", "type": "int32", "optional": False}]}


def _unscaled(text: str) -> str:
    n = int(decimal.Decimal(text).scaleb(2))
    return base64.b64encode(n.to_bytes((n.bit_length() + 8) // 8, "big", signed=True)).decode()


def test_connect_types_become_what_the_avro_converter_makes():
    schema = avro_schema(_envelope("my-cdc.s1"))
    assert schema["name"] == "Envelope" and schema["namespace"] == "my_cdc.s1.shop.orders"
    assert schema["connect.name"] == "my_cdc.s1.shop.orders.Envelope" and schema["connect.version"] == 2
    fields = {f["name"]: f for f in schema["fields"]}
    assert fields["before"]["type"][0] == "null" and fields["before"]["default"] is None
    value = fields["before"]["type"][1]
    assert value["name"] == "Value" and value["connect.name"] == "my_cdc.s1.shop.orders.Value"
    assert fields["after"]["type"] == ["null", "my_cdc.s1.shop.orders.Value"]  # defined once, then named
    cols = {f["name"]: f["type"] for f in value["fields"]}
    assert cols["id"] == {"type": "int"}
    assert cols["small"] == ["null", {"type": "int", "connect.type": "int16"}]
    assert cols["price"] == ["null", {"type": "bytes", "connect.version": 1, "connect.parameters": {
        "scale": "2", "connect.decimal.precision": "10"}, "connect.name": "org.apache.kafka.connect.data.Decimal",
        "logicalType": "decimal", "precision": 10, "scale": 2}]
    assert cols["born"] == ["null", {"type": "int", "connect.version": 1, "connect.name": "io.debezium.time.Date"}]
    assert cols["name"] == {"type": "string"}
    snapshot = {f["name"]: f for f in fields["source"]["type"]["fields"]}["snapshot"]
    assert snapshot["default"] == "false" and snapshot["type"][1] == "null"  # a default: [T, null]
    assert snapshot["type"][0]["connect.parameters"] == {"allowed": "true,last,false,incremental"}
    fastavro.parse_schema(schema)  # a valid Avro schema
    assert avro_name("9x.a-b.c") == "_9x.a_b.c"


def test_decimal_precision_defaults_to_64_without_the_connect_parameter():
    cs = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "0"}}
    assert avro_schema(cs)["precision"] == 64


def test_records_round_trip_through_confluents_avro_deserializer_with_the_registry():
    prefix, url = "cdc.s1", f"mock://{uuid.uuid4().hex}"
    topic = f"{prefix}.shop.orders"
    ser = RegistryAvro({"url": url})
    after = {"id": 7, "small": -3, "price": _unscaled("-1234.50"), "born": 19000,
             "blob": base64.b64encode(b"\x00\xff").decode(), "name": "Zoë"}
    payload = {"before": None, "after": after, "source": {"connector": "mysql", "snapshot": None, "pos": 81},
               "op": "c", "ts_ms": 1763712000013}
    kbytes = ser.encode(topic, "key", _key(prefix), {"id": 7})
    vbytes = ser.encode(topic, "value", _envelope(prefix), payload)
    assert vbytes[0] == 0 and kbytes[0] == 0  # Confluent framing: magic byte, then the registry's id

    client = registry_client({"url": url})  # the same in-memory registry (one scope per URL)
    assert sorted(client.get_subjects()) == [f"{topic}-key", f"{topic}-value"]
    registered = client.get_latest_version(f"{topic}-value")
    assert int.from_bytes(vbytes[1:5], "big") == registered.schema_id
    assert json.loads(registered.schema.schema_str)["connect.name"] == f"{prefix}.shop.orders.Envelope"

    value = AvroDeserializer(client)(vbytes, SerializationContext(topic, MessageField.VALUE))
    key = AvroDeserializer(client)(kbytes, SerializationContext(topic, MessageField.KEY))
    assert key == {"id": 7}
    assert value["after"] == {"id": 7, "small": -3, "price": decimal.Decimal("-1234.50"), "born": 19000,
                              "blob": b"\x00\xff", "name": "Zoë"}
    assert value["before"] is None and value["op"] == "c" and value["ts_ms"] == 1763712000013
    assert value["source"] == {"connector": "mysql", "snapshot": "false", "pos": 81}  # null -> its default


def test_an_added_column_is_a_new_backward_compatible_version_of_the_subject():
    prefix, url = "cdc.s1", f"mock://{uuid.uuid4().hex}"
    topic = f"{prefix}.shop.orders"
    ser = RegistryAvro({"url": url})
    old, new = _envelope(prefix), _envelope(prefix, [{"field": "note", "type": "string", "optional": True}])
    row = {"id": 1, "small": None, "price": None, "born": None, "blob": None, "name": "a"}
    v1 = ser.encode(topic, "value", old, {"before": None, "after": row, "op": "c",
                                          "source": {"connector": "mysql", "pos": 1}})
    v2 = ser.encode(topic, "value", new, {"before": None, "after": {**row, "note": "n"}, "op": "c",
                                          "source": {"connector": "mysql", "pos": 2}})
    client = registry_client({"url": url})
    assert sorted(client.get_versions(f"{topic}-value")) == [1, 2]  # the mock lists them unordered
    s1, s2 = (client.get_version(f"{topic}-value", v).schema.schema_str for v in (1, 2))

    def compatible(reader: str, writer: str) -> bool:
        result = ReaderWriterCompatibilityChecker().get_compatibility(avro.schema.parse(reader),
                                                                       avro.schema.parse(writer))
        return result.compatibility is SchemaCompatibilityType.compatible

    assert compatible(s2, s1), "BACKWARD: the new schema must read data written with the old one"
    # the control: a NOT NULL column without a default is what BACKWARD refuses
    required = json.dumps(avro_schema(_envelope(prefix, [{"field": "note", "type": "string", "optional": False}])))
    assert not compatible(required, s1)

    # old data read with the new schema: the added column takes its default (null)
    reader = AvroDeserializer(client, schema_str=s2)
    old_read = reader(v1, SerializationContext(topic, MessageField.VALUE))
    assert old_read["after"]["note"] is None and old_read["after"]["name"] == "a"
    assert AvroDeserializer(client)(v2, SerializationContext(topic, MessageField.VALUE))["after"]["note"] == "n"


def test_a_payload_that_does_not_fit_names_the_field_and_value():
    cs = _row("cdc.s1", optional=False)
    with pytest.raises(CdcError, match=r"field after\.blob holds bytes but 'not base64!' is not base64"):
        avro_datum(cs, {"id": 1, "name": "x", "blob": "not base64!"}, "after")
    with pytest.raises(CdcError, match=r"field after\.name is null but its schema is not optional"):
        avro_datum(cs, {"id": 1, "name": None}, "after")
    with pytest.raises(CdcError, match=r"after\.price: 1\.234 has more than the 2 fraction digits"):
        avro_datum(cs, {"id": 1, "name": "x", "price": 1.234}, "after")
    assert avro_datum(cs, {"id": 1, "name": "x", "price": 12.5}, "after")["price"] == decimal.Decimal("12.50")
    ser = RegistryAvro({"url": f"mock://{uuid.uuid4().hex}"})
    with pytest.raises(CdcError, match=r"field value\.name is null .* \(a value record of cdc.s1.shop.orders\)"):
        ser.encode("cdc.s1.shop.orders", "value", cs, {"id": 1, "name": None})
