"""Table-level DDL in the apply engine against an in-memory DuckDB target (streaming/apply/table_ddl.py):
what a SCHEMA record without ``tables`` does, and a key change first told by a table map's shape."""

from __future__ import annotations

import pytest

from cdc.config import ApplyConfig, TargetConfig
from cdc.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.apply.table_ddl import is_table_level
from streaming.errors import UnsupportedDdl
from streaming.targets.duckdb import DuckDbTarget
from streaming.testing import StreamBuilder

KV = [("id", "int"), ("v", "varchar(10)")]


def _engine() -> ApplyEngine:
    t = DuckDbTarget(TargetConfig(name="duck", kind="duckdb", path=":memory:"))
    return ApplyEngine("src", t, TableMap.from_config(ApplyConfig(source="src", target="duck",
                                                                  tables=["shop.*"]))).start()


@pytest.mark.parametrize("ddl, table_level", [
    ("RENAME TABLE a TO b", True), ("rename tables a to b", True), ("DROP TABLE a", True),
    ("DROP TEMPORARY TABLE a", True), ("ALTER TABLE a ADD c INT, RENAME TO b", True),
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
    from cdc import envelope

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
