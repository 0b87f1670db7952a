"""Table-level DDL on the lake targets (real Delta and Iceberg tables on local storage, the apply engine):
RENAME TABLE renames the lake table with its rows, ADD / DROP PRIMARY KEY changes the merge key, DROP TABLE
drops or keeps the lake table per ``apply[].drop_table``, an online schema change cut-over keeps the table and
takes the shadow's shape; rows after each statement land where the source put them."""

from __future__ import annotations

import pytest

from cdc.config.models import ApplyConfig
from cdc.schema.table_map import TableMap
from cdc.stream import envelope
from streaming.apply.engine import ApplyEngine
from streaming.targets import make_target
from streaming.testing import StreamBuilder
from tests.unit.streaming.targets.test_lake import config, read

KV = [("id", "int"), ("v", "varchar(10)")]


def _shape(table: str, pk: list[str]) -> dict:
    return {"table": table, "columns": [{"name": "id", "type": "int", "nullable": False},
                                        {"name": "v", "type": "varchar(10)", "nullable": True}], "primary_key": pk}


def _table_ddl(b: StreamBuilder, ddl: str, subject: str, *actions: dict) -> None:
    b.items.append(({"table": subject}, envelope.schema_record(b._next(), subject, ddl, None, b.ts, {"r": 1},
                                                               tables=list(actions))))


def _rows(target, table: str) -> list[tuple]:
    return sorted(read(target, table).select(["id", "v"]).iter_rows())


@pytest.mark.parametrize("kind", ["delta", "iceberg"])
@pytest.mark.parametrize("drop_table", ["keep", "drop"])
def test_rename_key_change_and_drop_table_are_followed_on_the_lake(kind, drop_table, tmp_path):
    target = make_target(config(kind, tmp_path))
    engine = ApplyEngine("src", target, TableMap.from_config(ApplyConfig(source="src", target=target.name,
                                                                         drop_table=drop_table))).start()
    b = StreamBuilder().schema("shop.a", KV, ["id"]).schema("shop.k", KV, []).schema("shop.gone", KV, ["id"])
    b.tx(("c", "shop.a", None, {"id": 1, "v": "a1"}), ("c", "shop.a", None, {"id": 2, "v": "a2"}),
         ("c", "shop.k", None, {"id": 1, "v": "k1"}), ("c", "shop.gone", None, {"id": 1, "v": "g1"}))
    _table_ddl(b, "RENAME TABLE a TO b", "shop.b",
               {"op": "rename", "table": "shop.b", "from": "shop.a", "schema": _shape("shop.b", ["id"])})
    b.tx(("u", "shop.b", {"id": 2, "v": "a2"}, {"id": 2, "v": "b2"}), ("c", "shop.b", None, {"id": 3, "v": "b3"}))
    b.schema("shop.k", KV, ["id"], ddl="ALTER TABLE k ADD PRIMARY KEY (id)")
    b.tx(("u", "shop.k", {"id": 1, "v": "k1"}, {"id": 1, "v": "k1b"}), ("c", "shop.k", None, {"id": 2, "v": "k2"}))
    _table_ddl(b, "DROP TABLE gone", "shop.gone", {"op": "drop", "table": "shop.gone"})
    b.tx(("c", "shop.b", None, {"id": 4, "v": "b4"}))
    engine.apply_records(b.as_records(), 0)

    assert target.table_columns("a") is None
    assert _rows(target, "b") == [(1, "a1"), (2, "b2"), (3, "b3"), (4, "b4")]
    assert _rows(target, "k") == [(1, "k1b"), (2, "k2")]  # merged by the new key: no second row 1
    assert engine.catalog.tables["shop.k"].key == ("id",)
    if drop_table == "drop":
        assert target.table_columns("gone") is None
    else:
        assert _rows(target, "gone") == [(1, "g1")]
    assert "shop.gone" not in engine.catalog.tables and "shop.a" not in engine.catalog.tables
    point = target.latest_point("src")
    assert "a" not in point["tables"] and "b" in point["tables"]
    if drop_table == "drop":
        assert "gone" not in point["tables"]

    # a restarted apply (schema memory read back) keeps going on the renamed table, and DROP PRIMARY KEY
    engine.close()
    target = make_target(config(kind, tmp_path))
    engine = ApplyEngine("src", target, TableMap.from_config(ApplyConfig(source="src", target=target.name,
                                                                         drop_table=drop_table))).start()
    b2 = StreamBuilder(start_sequence=b.seq)
    b2.schemas = dict(b.schemas)
    b2.schema("shop.b", KV, [], ddl="ALTER TABLE b DROP PRIMARY KEY")
    b2.tx(("c", "shop.b", None, {"id": 5, "v": "b5"}), ("d", "shop.b", {"id": 1, "v": "a1"}, None))
    # an online schema change cut-over: the shadow (one more column) replaces b, whose rows b keeps
    wide = {**_shape("shop.b", []), "columns": [*_shape("shop.b", [])["columns"],
                                                {"name": "c", "type": "int", "nullable": True}]}
    _table_ddl(b2, "RENAME TABLE b TO _b_old, _b_new TO b", "shop.b",
               {"op": "replace", "table": "shop.b", "from": "shop._b_new", "schema": wide})
    b2.schemas["shop.b"] = b2.schemas["shop.b"].__class__.from_json(wide)
    b2.tx(("c", "shop.b", None, {"id": 6, "v": "b6", "c": 1}))
    engine.apply_records(b2.as_records(len(b.items)), 1)
    assert _rows(target, "b") == [(2, "b2"), (3, "b3"), (4, "b4"), (5, "b5"), (6, "b6")]
    assert read(target, "b").filter(c=1).select("id").to_series().to_list() == [6]
    assert engine.catalog.tables["shop.b"].key == ()
    engine.close()
