"""The schema-change record against the example message of Debezium's MySQL documentation
(golden/mysql_schema_change_doc.json cites the page): the same table and DDL give the same payload, except
for what a SCHEMA record does not hold (listed in cdc/debezium/schema_change.py and here)."""

from __future__ import annotations

import json
from pathlib import Path

from cdc.debezium.avro import avro_datum, avro_schema
from cdc.debezium.schema_change import schema_change, schema_change_topic
from cdc.stream.events import Column, TableId, TableSchema

GOLDEN = Path(__file__).parent / "golden"
CUSTOMERS = TableSchema(TableId("inventory", "customers"),
                        (Column("id", "int", False), Column("first_name", "varchar(255)", False),
                         Column("middle_name", "varchar(255)", True), Column("last_name", "varchar(255)", False),
                         Column("email", "varchar(255)", False)), ("id",))
DDL = "ALTER TABLE customers ADD middle_name varchar(255) AFTER first_name"
# what a SCHEMA record does not hold: charsets, auto-increment/generated flags, the binlog position
UNKNOWN_COLUMN = {"charsetName": None, "autoIncremented": False, "generated": False}


def test_an_alter_matches_the_documented_message_but_for_what_the_stream_does_not_hold():
    doc = json.loads((GOLDEN / "mysql_schema_change_doc.json").read_text())["payload"]
    rec = schema_change("cdc.s1", "mysql", "mysql", CUSTOMERS.table, DDL, CUSTOMERS, 1651535750218, now_ms=1651535750300)
    assert rec.key == {"databaseName": "inventory"}
    ours = rec.value
    assert {k: ours[k] for k in ("databaseName", "schemaName", "ddl")} == \
        {k: doc[k] for k in ("databaseName", "schemaName", "ddl")}
    assert ours["ts_ms"] == 1651535750300 and ours["source"]["ts_ms"] == doc["source"]["ts_ms"]
    assert {k: ours["source"][k] for k in ("connector", "name", "snapshot", "db", "table", "gtid")} == \
        {k: doc["source"][k] for k in ("connector", "name", "snapshot", "db", "table", "gtid")}
    assert (ours["source"]["file"], ours["source"]["pos"], ours["source"]["server_id"]) == ("", 0, 0)
    [change], [expected] = ours["tableChanges"], doc["tableChanges"]
    assert (change["type"], change["id"]) == (expected["type"], expected["id"])
    assert change["table"]["primaryKeyColumnNames"] == expected["table"]["primaryKeyColumnNames"]
    assert change["table"]["defaultCharsetName"] is None
    for got, want in zip(change["table"]["columns"], expected["table"]["columns"], strict=True):
        extra = {k: got.pop(k) for k in ("comment", "defaultValueExpression", "enumValues")}
        assert extra == {"comment": None, "defaultValueExpression": None, "enumValues": None}
        assert got == {**want, **UNKNOWN_COLUMN}, want["name"]


def test_create_drop_types_decimals_enums_and_oracle_names():
    table = TableId("shop", "t")
    schema = TableSchema(table, (Column("p", "decimal(10,2)", True), Column("e", "enum('a','b''c')", True),
                                 Column("u", "bigint unsigned", False)), ())
    created = schema_change("cdc.s1", "mysql", "s1", table, None, schema, 1).value["tableChanges"][0]
    assert created["type"] == "CREATE" and created["table"]["primaryKeyColumnNames"] == []
    p, e, u = created["table"]["columns"]
    assert (p["jdbcType"], p["typeName"], p["length"], p["scale"]) == (3, "DECIMAL", 10, 2)
    assert (e["jdbcType"], e["enumValues"]) == (1, ["a", "b'c"])
    assert (u["jdbcType"], u["typeName"], u["optional"]) == (-5, "BIGINT UNSIGNED", False)
    reshaped = schema_change("cdc.s1", "mysql", "s1", table, None, schema, 1, known=True).value["tableChanges"][0]
    assert reshaped["type"] == "ALTER"  # no DDL text, but a definition was published before
    dropped = schema_change("cdc.s1", "mysql", "s1", table, "DROP TABLE t", None, 2).value["tableChanges"][0]
    assert dropped == {"type": "DROP", "id": '"shop"."t"', "table": None}

    ora = TableSchema(TableId("APP", "T"), (Column("TS", "timestamp(6) with time zone", True),
                                            Column("N", "number(10,0)", False)), ("N",))
    rec = schema_change("cdc.ora", "oracle", "ora", ora.table, "ALTER TABLE APP.T ADD (X NUMBER)", ora, 3)
    assert rec.value["schemaName"] == "APP" and rec.key == {"databaseName": "ora"}
    ts, n = rec.value["tableChanges"][0]["table"]["columns"]
    assert (ts["jdbcType"], ts["typeName"]) == (-101, "TIMESTAMP WITH TIME ZONE")
    assert (n["jdbcType"], n["length"], n["scale"]) == (2, 10, 0)
    assert rec.value["source"]["schema"] == "APP" and rec.value["source"]["table"] == "T"
    assert schema_change_topic("cdc", "ora") == "cdc.ora"


def test_the_record_fits_its_connect_schema_in_avro():
    import fastavro

    rec = schema_change("cdc.s1", "mysql", "s1", CUSTOMERS.table, DDL, CUSTOMERS, 5)
    for schema, payload in ((rec.key_schema, rec.key), (rec.value_schema, rec.value)):
        parsed = fastavro.parse_schema(avro_schema(schema))
        datum = avro_datum(schema, payload)
        assert fastavro.validate(datum, parsed, raise_errors=True)


def test_a_column_default_of_the_schema_record_is_its_default_value_expression():
    table = TableId("shop", "t")
    schema = TableSchema(table, (Column("id", "int", False), Column("kind", "varchar(8)", False, "'std'"),
                                 Column("at", "datetime", True, "current_timestamp()")), ("id",))
    cols = schema_change("cdc.s1", "mysql", "s1", table, "ALTER TABLE t ADD at datetime DEFAULT now()",
                         schema, 1).value["tableChanges"][0]["table"]["columns"]
    assert [c["defaultValueExpression"] for c in cols] == [None, "'std'", "current_timestamp()"]
    created = schema_change("cdc.s1", "mysql", "s1", None, "CREATE TABLE t ...", None, 1, tables=[
        {"op": "create", "table": "shop.t", "schema": schema.to_json()}]).value["tableChanges"][0]
    assert created["table"]["columns"][1]["defaultValueExpression"] == "'std'"


def test_a_statement_the_reader_generated_keeps_its_marker_and_is_an_alter():
    """The records a MySQL reader writes itself (the DROP part of a DROP+ADD of one name, a definition corrected
    from a table map) reach the schema-change topic with their ``/* cdc: ... */`` comment: a consumer can tell
    them from a statement the source ran."""
    for ddl in (("/* cdc: the DROP part of the statement that follows */ ALTER TABLE `inventory`.`customers` "
                 "DROP COLUMN `email`"),
                ("/* cdc: inventory.customers as its table map at bin.000001:4 shows it */ ALTER TABLE "
                 "`inventory`.`customers` MODIFY COLUMN `email` varchar(255) NOT NULL")):
        value = schema_change("cdc.s1", "mysql", "mysql", CUSTOMERS.table, ddl, CUSTOMERS, 1, known=True).value
        assert value["ddl"] == ddl and value["ddl"].startswith("/* cdc: ")
        assert value["tableChanges"][0]["type"] == "ALTER"
