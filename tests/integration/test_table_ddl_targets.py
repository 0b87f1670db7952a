"""Table-level DDL on each SQL target through the engine (no Spark): real PostgreSQL and MariaDB, embedded
DuckDB. SCHEMA records as the MySQL reader writes them for CREATE / DROP / RENAME TABLE (``tables``) and for
a primary key change (streaming/apply/table_ddl.py). Part of the target conformance suite: every registered SQL
kind that declares table_ddl "all" runs it (tests/fixtures/targets.py)."""

from __future__ import annotations

import pytest

from cdc.config.models import ApplyConfig, TargetConfig
from cdc.schema.table_map import TableMap
from cdc.stream import envelope
from cdc.stream.events import Column, TableId, TableSchema
from streaming.apply.engine import ApplyEngine
from streaming.errors import UnsupportedDdl
from streaming.targets import make_target
from streaming.testing import StreamBuilder
from tests.fixtures.targets import conformance_kinds, fresh_target_config

pytestmark = [pytest.mark.postgres, pytest.mark.mysql]
KV = [("id", "int"), ("v", "varchar(10)")]


@pytest.fixture(params=conformance_kinds(lambda cls: cls.table_ddl == "all"))
def target_cfg(request, tmp_path):
    return fresh_target_config(request, tmp_path, request.param)


def _engine(cfg: TargetConfig, **apply) -> ApplyEngine:
    a = ApplyConfig(source="src", target=cfg.name, tables=["shop.t*", "shop.k*"], **apply)
    return ApplyEngine("src", make_target(cfg), TableMap.from_config(a)).start()


def _ts(table: str, cols=KV, pk=("id",)) -> TableSchema:
    return TableSchema(TableId.parse(table), tuple(Column(n, t) for n, t in cols), tuple(pk))


def _table_ddl(b: StreamBuilder, ddl: str, subject: str, *actions: dict) -> StreamBuilder:
    """A SCHEMA record of a table-level DDL, as the MySQL reader writes it."""
    schema = next((TableSchema.from_json(a["schema"]) for a in actions if a.get("schema")), None)
    record = envelope.schema_record(b._next(), subject, ddl, schema, b.ts, {"r": 1}, tables=list(actions))
    b.items.append(({"table": subject}, record))
    if schema is not None:
        b.schemas[str(schema.table)] = schema
    return b


def _rows(e: ApplyEngine, table: str) -> list[tuple]:
    t = e.target
    cur = t.execute(f"SELECT * FROM {t.qualified(table)} ORDER BY 1")
    out = sorted(tuple(str(v) if v is not None else None for v in r) for r in cur.fetchall())
    t.commit()
    return out


def _exists(e: ApplyEngine, table: str) -> bool:
    cols = e.target.table_columns(table)
    e.target.commit()
    return cols is not None


def test_create_rename_swap_drop_and_the_cut_over(target_cfg):
    b = StreamBuilder().schema("shop.ta", KV, ["id"]).schema("shop.tb", KV, ["id"]).schema("shop.tc", KV, ["id"])
    b.tx(("c", "shop.ta", None, {"id": 1, "v": "a"}), ("c", "shop.tb", None, {"id": 2, "v": "b"}),
         ("c", "shop.tc", None, {"id": 3, "v": "c"}))
    # a swap of two applied tables through a name the apply does not take
    _table_ddl(b, "RENAME TABLE ta TO x, tb TO ta, x TO tb", "shop.ta",
               {"op": "rename", "table": "shop.tb", "from": "shop.ta", "schema": _ts("shop.tb").to_json()},
               {"op": "rename", "table": "shop.ta", "from": "shop.tb", "schema": _ts("shop.ta").to_json()})
    b.tx(("c", "shop.ta", None, {"id": 20, "v": "a2"}), ("c", "shop.tb", None, {"id": 10, "v": "b2"}))
    # CREATE TABLE of a new applied table, then rows
    _table_ddl(b, "CREATE TABLE tn (id INT PRIMARY KEY, v VARCHAR(10))", "shop.tn",
               {"op": "create", "table": "shop.tn", "schema": _ts("shop.tn").to_json()})
    b.tx(("c", "shop.tn", None, {"id": 5, "v": "n"}))
    # the online schema change cut-over: tc keeps its rows, takes the shadow's new column
    wide = _ts("shop.tc", KV + [("c", "varchar(5)")])
    _table_ddl(b, "RENAME TABLE tc TO _tc_old, _tc_new TO tc", "shop.tc",
               {"op": "replace", "table": "shop.tc", "from": "shop._tc_new", "schema": wide.to_json()})
    b.tx(("c", "shop.tc", None, {"id": 4, "v": "d", "c": "z"}))
    # rename out of the applied tables (kept), DROP (kept)
    _table_ddl(b, "RENAME TABLE tn TO gone", "shop.tn", {"op": "rename_out", "table": "shop.tn", "to": "shop.gone"})
    _table_ddl(b, "DROP TABLE tb", "shop.tb", {"op": "drop", "table": "shop.tb"})
    e = _engine(target_cfg)
    e.apply_records(b.as_records(), 0)
    assert _rows(e, "ta") == [("2", "b"), ("20", "a2")]
    assert _rows(e, "tb") == [("1", "a"), ("10", "b2")]  # kept after its DROP (apply[].drop_table: keep)
    assert _rows(e, "tn") == [("5", "n")]
    assert _rows(e, "tc") == [("3", "c", None), ("4", "d", "z")]
    assert sorted(e.catalog.tables) == ["shop.ta", "shop.tc"]
    assert not _exists(e, "x") and not any(_exists(e, f"cdc_rename_{i}") for i in range(3))
    # a restarted engine knows the same tables (cdc_schema)
    again = ApplyEngine("src", e.target, e.table_map).start()
    assert sorted(again.catalog.tables) == ["shop.ta", "shop.tc"]
    assert [c.name for c in again.catalog.tables["shop.tc"].schema.columns] == ["id", "v", "c"]
    # CREATE of a table whose target table was kept with rows: a stop naming it; the rows stay
    b2 = StreamBuilder(start_sequence=b.seq)
    _table_ddl(b2, "CREATE TABLE tb (id INT)", "shop.tb",
               {"op": "create", "table": "shop.tb", "schema": _ts("shop.tb").to_json()})
    with pytest.raises(UnsupportedDdl, match="already exists with rows") as info:
        again.apply_records(b2.as_records(len(b.as_records())), 1)
    assert info.value.table == "shop.tb" and info.value.sequence == b.seq
    assert _rows(again, "tb") == [("1", "a"), ("10", "b2")]


def test_drop_table_drops_with_drop_and_rename_in_stops_or_creates(target_cfg):
    b = StreamBuilder().schema("shop.ta", KV, ["id"]).tx(("c", "shop.ta", None, {"id": 1, "v": "a"}))
    _table_ddl(b, "DROP TABLE ta", "shop.ta", {"op": "drop", "table": "shop.ta"})
    stop_at = b.seq
    _table_ddl(b, "RENAME TABLE archive TO tz", "shop.tz",
               {"op": "rename_in", "table": "shop.tz", "from": "shop.archive", "schema": _ts("shop.tz").to_json()})
    b.tx(("c", "shop.tz", None, {"id": 7, "v": "z"}))
    e = _engine(target_cfg, drop_table="drop")
    with pytest.raises(UnsupportedDdl, match="never in the stream") as info:
        e.apply_records(b.as_records(), 0)
    assert info.value.table == "shop.tz" and info.value.sequence == stop_at
    assert not _exists(e, "ta") and not _exists(e, "tz")  # dropped; the stop came before tz
    assert e.target.read_progress("src").last_sequence == stop_at - 1
    # the documented way back: rename_in: create, restart: the table is created and the rows after it land
    e2 = ApplyEngine("src", e.target, TableMap.from_config(ApplyConfig(
        source="src", target=target_cfg.name, tables=["shop.t*"], rename_in="create"))).start()
    e2.apply_records(b.as_records(), 1)
    assert _rows(e2, "tz") == [("7", "z")]


def test_primary_key_added_changed_and_dropped(target_cfg):
    cols = [("a", "int"), ("b", "int"), ("v", "varchar(10)")]
    b = StreamBuilder().schema("shop.k1", cols, [])
    b.tx(("c", "shop.k1", None, {"a": 1, "b": 1, "v": "x"}), ("c", "shop.k1", None, {"a": 1, "b": 2, "v": "y"}))
    b.schema("shop.k1", cols, ["a", "b"], ddl="ALTER TABLE k1 ADD PRIMARY KEY (a, b)")
    # net effect per the new key: an update of (1, 2) and an insert of (2, 1) in one batch
    b.tx(("u", "shop.k1", {"a": 1, "b": 2, "v": "y"}, {"a": 1, "b": 2, "v": "y2"}),
         ("c", "shop.k1", None, {"a": 2, "b": 1, "v": "z"}))
    b.tx(("d", "shop.k1", {"a": 2, "b": 1, "v": "z"}, None), ("d", "shop.k1", {"a": 1, "b": 1, "v": "x"}, None))
    b.schema("shop.k1", cols, ["b"], ddl="ALTER TABLE k1 DROP PRIMARY KEY, ADD PRIMARY KEY (b)")
    b.tx(("c", "shop.k1", None, {"a": 9, "b": 1, "v": "w"}), ("u", "shop.k1", {"a": 9, "b": 1, "v": "w"},
                                                              {"a": 8, "b": 1, "v": "w"}))
    b.schema("shop.k1", cols, [], ddl="ALTER TABLE k1 DROP PRIMARY KEY")
    # keyless again: two equal rows are two rows, a delete removes one copy
    b.tx(("c", "shop.k1", None, {"a": 5, "b": 5, "v": "d"}), ("c", "shop.k1", None, {"a": 5, "b": 5, "v": "d"}),
         ("d", "shop.k1", {"a": 8, "b": 1, "v": "w"}, None))
    e = _engine(target_cfg)
    e.apply_records(b.as_records(), 0)
    assert _rows(e, "k1") == [("1", "2", "y2"), ("5", "5", "d"), ("5", "5", "d")]
    assert e.catalog.tables["shop.k1"].key == ()
    # each key change rebuilt the target table; no copy is left behind
    assert not any(_exists(e, f"cdc_rekey_{i}") for i in range(b.seq))
