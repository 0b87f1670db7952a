"""The schema-change record of a table-level DDL (cdc/debezium/schema_change.py: table_changes): one
tableChanges item per captured table the statement touched, and it still fits its Connect schema."""

from __future__ import annotations

from cdc.debezium.avro import avro_datum, avro_schema
from cdc.debezium.schema_change import schema_change
from cdc.stream.events import Column, TableId, TableSchema

T = TableSchema(TableId("shop", "t"), (Column("id", "int", False), Column("c", "varchar(5)", True)), ("id",))


def test_every_table_of_a_table_level_ddl_is_a_table_change():
    import fastavro

    actions = [{"op": "drop", "table": "shop.a"}, {"op": "rename_out", "table": "shop.b", "to": "shop.x"},
               {"op": "rename", "table": "shop.n2", "from": "shop.n1", "schema": T.to_json() | {"table": "shop.n2"}},
               {"op": "replace", "table": "shop.t", "from": "shop._t_new", "schema": T.to_json()},
               {"op": "create", "table": "shop.t9", "schema": T.to_json() | {"table": "shop.t9"}}]
    rec = schema_change("cdc.s1", "mysql", "s1", TableId("shop", "t"), "RENAME TABLE ...", T, 5, tables=actions)
    got = [(c["type"], c["id"], c["table"] and c["table"]["primaryKeyColumnNames"]) for c in rec.value["tableChanges"]]
    assert got == [("DROP", '"shop"."a"', None), ("DROP", '"shop"."b"', None), ("ALTER", '"shop"."n2"', ["id"]),
                   ("ALTER", '"shop"."t"', ["id"]), ("CREATE", '"shop"."t9"', ["id"])]
    parsed = fastavro.parse_schema(avro_schema(rec.value_schema))
    assert fastavro.validate(avro_datum(rec.value_schema, rec.value), parsed, raise_errors=True)
    plain = schema_change("cdc.s1", "mysql", "s1", TableId("shop", "t"), "ALTER TABLE t ADD c INT", T, 5)
    assert [c["type"] for c in plain.value["tableChanges"]] == ["ALTER"]
