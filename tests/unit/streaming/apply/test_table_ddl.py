"""Table-level DDL in the apply engine against an in-memory DuckDB target (streaming/apply/table_ddl.py):
what a SCHEMA record without ``tables`` does, and a key change first told by a table map's shape."""

from __future__ import annotations

import pytest

from cdc.config.models import ApplyConfig, TargetConfig
from cdc.schema.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.apply.table_ddl import is_table_level
from streaming.errors import UnsupportedDdl
from streaming.targets.duckdb.target import DuckDbTarget
from streaming.testing import StreamBuilder

KV = [("id", "int"), ("v", "varchar(10)")]


def _engine() -> ApplyEngine:
    t = DuckDbTarget(TargetConfig(name="duck", kind="duckdb", path=":memory:"))
    return ApplyEngine("src", t, TableMap.from_config(ApplyConfig(source="src", target="duck",
                                                                  tables=["shop.*"]))).start()


@pytest.mark.parametrize("ddl, table_level", [
    ("RENAME TABLE a TO b", True), ("rename tables a to b", True), ("DROP TABLE a", True),
    ("DROP TEMPORARY TABLE a", False), ("ALTER TABLE a ADD c INT, RENAME TO b", True),
    ("ALTER TABLE a RENAME COLUMN x TO y", False), ("ALTER TABLE a RENAME INDEX i TO j", False),
    ("ALTER TABLE a ADD COLUMN c INT", False), ("CREATE TABLE a (id INT)", False), ("DROP INDEX i ON a", False),
    ("CREATE OR REPLACE TABLE a (id INT)", True),
])
def test_which_statements_are_table_level(ddl, table_level):
    assert is_table_level({"ddl": ddl}) is table_level
    assert is_table_level({"ddl": "ALTER TABLE a ADD c INT", "tables": []})


def test_a_rename_without_its_tables_stops_and_an_unapplied_one_passes():
    """An Avro-encoded stream has no ``tables`` field: a RENAME/DROP TABLE of an applied table is refused, not
    guessed; one of a table this apply does not take passes."""
    b = StreamBuilder().schema("shop.a", KV, ["id"]).tx(("c", "shop.a", None, {"id": 1, "v": "x"}))
    b.ddl("other.z", "RENAME TABLE other.z TO other.y")
    stop_at = b.seq
    b.ddl("shop.a", "RENAME TABLE shop.a TO shop.b")
    e = _engine()
    with pytest.raises(UnsupportedDdl, match="does not say which tables") as info:
        e.apply_records(b.as_records(), 0)
    assert info.value.sequence == stop_at and info.value.table == "shop.a"
    assert e.target.read_progress("src").last_sequence == stop_at - 1
    assert e.target.execute("SELECT * FROM a").fetchall() == [(1, "x")]


def test_a_key_change_told_first_by_a_table_map_rebuilds_the_target_table():
    """A reader that lags reads information_schema after later DDL: the SCHEMA record of ADD PRIMARY KEY may
    show no key, and the first row's table-map shape (a SCHEMA record without statement) tells the key."""
    b = StreamBuilder().schema("shop.k", KV, []).tx(("c", "shop.k", None, {"id": 1, "v": "x"}))
    b.schema("shop.k", KV, ["id"])  # first sight of the new shape, no DDL text
    b.tx(("u", "shop.k", {"id": 1, "v": "x"}, {"id": 1, "v": "y"}), ("c", "shop.k", None, {"id": 2, "v": "z"}))
    e = _engine()
    e.apply_records(b.as_records(), 0)
    assert e.target.execute("SELECT * FROM k ORDER BY id").fetchall() == [(1, "y"), (2, "z")]
    assert e.catalog.tables["shop.k"].key == ("id",)
    with pytest.raises(Exception, match="(?i)constraint|duplicate|primary"):  # the target's key is there
        e.target.execute("INSERT INTO k VALUES (1, 'dup')")


def _table_ddl(b: StreamBuilder, ddl: str, subject: str, *actions: dict) -> StreamBuilder:
    from cdc.stream import envelope

    record = envelope.schema_record(b._next(), subject, ddl, None, b.ts, {"r": 1}, tables=list(actions))
    b.items.append(({"table": subject}, record))
    return b


def test_a_lagging_reader_that_found_the_tables_gone_again():
    """The reader reads a table's definition when it reads the DDL: behind the source, a table created or
    renamed and dropped since has none. The rename keeps the shape it had; the create waits for the first
    row's shape; the later DROP finds what to keep."""
    b = StreamBuilder().schema("shop.a", KV, ["id"]).tx(("c", "shop.a", None, {"id": 1, "v": "x"}))
    _table_ddl(b, "RENAME TABLE a TO b", "shop.b", {"op": "rename", "table": "shop.b", "from": "shop.a", "schema": None})
    b.tx(("c", "shop.b", None, {"id": 2, "v": "y"}))
    _table_ddl(b, "CREATE TABLE n (id INT)", "shop.n", {"op": "create", "table": "shop.n", "schema": None})
    b.schema("shop.n", KV, ["id"]).tx(("c", "shop.n", None, {"id": 3, "v": "z"}))
    _table_ddl(b, "DROP TABLE b, n", "shop.b", {"op": "drop", "table": "shop.b"}, {"op": "drop", "table": "shop.n"})
    e = _engine()
    e.apply_records(b.as_records(), 0)
    assert e.target.execute("SELECT * FROM b ORDER BY id").fetchall() == [(1, "x"), (2, "y")]
    assert e.target.execute("SELECT * FROM n").fetchall() == [(3, "z")]
    assert e.target.table_columns("a") is None and e.catalog.tables == {}


def test_gh_ost_two_step_cut_over_keeps_the_target_table():
    """``ALTER TABLE t RENAME _t_del`` (out of the applied tables: kept, the default), then
    ``ALTER TABLE _t_gho RENAME t``: the replace finds the kept table with its rows, and its shape follows."""
    b = StreamBuilder().schema("shop.t", KV, ["id"]).tx(("c", "shop.t", None, {"id": 1, "v": "x"}))
    _table_ddl(b, "ALTER TABLE t RENAME _t_del", "shop.t", {"op": "rename_out", "table": "shop.t", "to": "shop._t_del"})
    wide = {"table": "shop.t", "columns": [{"name": "id", "type": "int", "nullable": False},
                                           {"name": "v", "type": "varchar(10)", "nullable": True},
                                           {"name": "c", "type": "int", "nullable": True}], "primary_key": ["id"]}
    _table_ddl(b, "ALTER TABLE _t_gho RENAME t", "shop.t",
               {"op": "replace", "table": "shop.t", "from": "shop._t_gho", "schema": wide})
    b.tx(("c", "shop.t", None, {"id": 2, "v": "y", "c": 5}))
    e = _engine()
    e.apply_records(b.as_records(), 0)
    assert e.target.execute("SELECT * FROM t ORDER BY id").fetchall() == [(1, "x", None), (2, "y", 5)]


def test_a_file_target_follows_create_and_stops_at_a_drop(tmp_path):
    from streaming.targets import make_target

    t = make_target(TargetConfig(name="pq", kind="parquet", path=str(tmp_path / "pq")))
    e = ApplyEngine("src", t, TableMap.from_config(ApplyConfig(source="src", target="pq"))).start()
    b = StreamBuilder()
    _table_ddl(b, "CREATE TABLE n (id INT)", "shop.n", {"op": "create", "table": "shop.n", "schema": {
        "table": "shop.n", "columns": [{"name": "id", "type": "int", "nullable": False}], "primary_key": ["id"]}})
    b.tx(("c", "shop.n", None, {"id": 1}))
    stop_at = b.seq
    _table_ddl(b, "DROP TABLE n", "shop.n", {"op": "drop", "table": "shop.n"})
    with pytest.raises(UnsupportedDdl, match="file/lake target follows only CREATE") as info:
        e.apply_records(b.as_records(), 0)
    assert info.value.sequence == stop_at and "shop.n" in e.catalog.tables


def test_create_table_if_not_exists_of_a_table_the_apply_has_is_nothing():
    """MySQL logs CREATE TABLE IF NOT EXISTS even when the table existed (nothing happened): the target
    table keeps its rows. CREATE OR REPLACE of it replaces it (empty)."""
    b = StreamBuilder().schema("shop.a", KV, ["id"]).tx(("c", "shop.a", None, {"id": 1, "v": "x"}))
    schema = {"table": "shop.a", "columns": [{"name": "id", "type": "int", "nullable": False},
                                             {"name": "v", "type": "varchar(10)", "nullable": True}],
              "primary_key": ["id"]}
    _table_ddl(b, "CREATE TABLE IF NOT EXISTS a (id INT)", "shop.a",
               {"op": "create", "table": "shop.a", "schema": schema, "if_not_exists": True})
    e = _engine()
    e.apply_records(b.as_records(), 0)
    assert e.target.execute("SELECT * FROM a").fetchall() == [(1, "x")]
    b2 = StreamBuilder(start_sequence=b.seq)
    _table_ddl(b2, "CREATE OR REPLACE TABLE a (id INT)", "shop.a", {"op": "create", "table": "shop.a", "schema": schema})
    b2.tx(("c", "shop.a", None, {"id": 2, "v": "y"}))
    e.apply_records(b2.as_records(len(b.as_records())), 1)
    assert e.target.execute("SELECT * FROM a").fetchall() == [(2, "y")]
