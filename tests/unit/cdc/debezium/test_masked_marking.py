"""A column the source's transforms mask is marked in the Debezium schemas: Connect parameter ``__cdc.masked``
(the mask's name) on its field, key or value, and so ``connect.parameters`` in Avro; clear columns carry none."""

from __future__ import annotations

from cdc.debezium.avro import avro_schema
from cdc.debezium.connect_schema import MASKED_PARAMETER, TableSchemas
from cdc.schema.logical import LogicalType
from cdc.stream.events import Column, TableId, TableSchema

S = TableSchema(TableId("shop", "people"), (
    Column("id", "varchar(64)", False, None, LogicalType("string", length=64), masked="hash"),
    Column("email", "varchar(64)", True, None, LogicalType("string", length=64), masked="hash"),
    Column("note", "varchar(10)", True, None, LogicalType("string", length=10))), ("id",))


def test_masked_fields_carry_the_parameter_in_connect_and_avro():
    ts = TableSchemas(S, "p.src.shop.people", "mysql", "iso", "string")
    fields = {f["field"]: f for f in ts.row["fields"]}
    assert fields["email"]["parameters"] == {MASKED_PARAMETER: "hash"} and list(fields["email"])[-1] == "field"
    assert "parameters" not in fields["note"]
    assert ts.key["fields"][0]["parameters"] == {MASKED_PARAMETER: "hash"}
    record = next(t for t in avro_schema(ts.row) if isinstance(t, dict))  # ["null", record]: the optional row
    email = next(f for f in record["fields"] if f["name"] == "email")
    assert any(isinstance(t, dict) and t.get("connect.parameters") == {MASKED_PARAMETER: "hash"} for t in email["type"])


def test_schema_records_carry_masked_and_read_it_back():
    obj = S.to_json()
    assert [c.get("masked") for c in obj["columns"]] == ["hash", "hash", None]
    assert [c.masked for c in TableSchema.from_json(obj).columns] == ["hash", "hash", None]
