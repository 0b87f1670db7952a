"""The SCHEMA record of a DDL says what changed (``schema.changes``) and carries column defaults, in JSON and
in Avro (the free-form schema object)."""

from __future__ import annotations

import pytest

from cdc.stream.events import Begin, Change, Column, Commit, SchemaChange, TableId, TableSchema
from tests.unit.cdc.publish.fakes import decoded, publisher

A = TableId("shop", "orders")
V1 = TableSchema(A, (Column("id", "int", False), Column("name", "varchar(9)")), ("id",))
V2 = TableSchema(A, (Column("id", "int", False), Column("label", "varchar(20)"),
                     Column("tier", "varchar(5)", True, "'std'")), ("id",))


@pytest.mark.parametrize("encoding", ["json", "avro"])
def test_a_rename_is_said_to_be_a_rename_and_defaults_travel(encoding):
    pub, fake, _ = publisher(encoding=encoding)
    for ev in (Begin("u:1", 1), Change(A, "c", None, {"id": 1, "name": "a"}, {"row": 0}, V1),
               Commit("u:1", 1, {"g": 1}, {"gtid": "u:1"}),
               SchemaChange(A, "ALTER TABLE orders CHANGE name label VARCHAR(20), ADD tier VARCHAR(5) DEFAULT 'std'",
                            V2, 2, {"g": 2})):
        pub.publish(ev)
    schema = decoded(fake, encoding)[-1][2]["schema"]
    assert schema["changes"] == [{"kind": "rename", "column": "label", "old": "name"},
                                 {"kind": "type", "column": "label", "old": "varchar(9)", "new": "varchar(20)",
                                  "how": "widen"},
                                 {"kind": "add", "column": "tier", "new": "varchar(5)", "after": "label"}]
    assert schema["columns"][2] == {"name": "tier", "type": "varchar(5)", "nullable": True, "default": "'std'"}
    assert TableSchema.from_json(schema) == V2 and TableSchema.from_json(schema).columns[2].default == "'std'"
