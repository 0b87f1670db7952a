"""Maintained views across a schema change of a base table, through the apply engine into DuckDB: an ADD COLUMN
keeps the view equal to its recomputation (rebuilt in the DDL's transaction); a DROP of a column the view reads
stops naming view, table, statement and sequence, with the DDL committed; after the definition is edited and the
view rebuilt (what `cdc views rebuild` runs) the apply goes on."""

from __future__ import annotations

import pytest

from cdc.config.models import ApplyConfig, TargetConfig
from cdc.schema.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.targets.duckdb.target import DuckDbTarget
from streaming.testing import StreamBuilder
from streaming.views import maintainer
from streaming.views.errors import ViewError

BASE = [("id", "int", False), ("grp", "varchar(10)"), ("qty", "int")]
VIEW = {"name": "by_grp", "sql": "SELECT t.grp, COUNT(*) AS n, SUM(t.qty) AS total FROM t GROUP BY t.grp"}
EDITED = {"name": "by_grp", "sql": "SELECT t.grp, COUNT(*) AS n FROM t GROUP BY t.grp"}
RECOMPUTE = {"by_grp": "SELECT grp, COUNT(*), SUM(qty) FROM t GROUP BY grp ORDER BY grp"}


def _engine(views: list[dict], target: DuckDbTarget | None = None) -> ApplyEngine:
    t = target or DuckDbTarget(TargetConfig(name="duck", kind="duckdb", path=":memory:"))
    cfg = ApplyConfig(source="src", target="duck", views=views)
    return ApplyEngine("src", t, TableMap.from_config(cfg), views=cfg.views).start()


def _q(e: ApplyEngine, sql: str) -> list[tuple]:
    return [tuple(r) for r in e.target.execute(sql).fetchall()]


def _base() -> StreamBuilder:
    b = StreamBuilder().schema("shop.t", BASE, ["id"])
    b.tx(*[("c", "shop.t", None, {"id": i, "grp": "ab"[i % 2], "qty": i}) for i in range(1, 7)])
    return b


def test_add_column_rebuilds_the_view_in_the_barrier_transaction():
    b = _base()
    b.tx(("u", "shop.t", {"id": 1, "grp": "b", "qty": 1}, {"id": 1, "grp": "a", "qty": 100}))  # before the DDL
    b.schema("shop.t", BASE + [("tier", "varchar(10)", True, "'std'")], ["id"],
             ddl="ALTER TABLE t ADD COLUMN tier VARCHAR(10) DEFAULT 'std'")
    b.tx(("c", "shop.t", None, {"id": 7, "grp": "b", "qty": 7, "tier": "gold"}),
         ("d", "shop.t", {"id": 2, "grp": "a", "qty": 2, "tier": "std"}, None))
    e = _engine([VIEW])
    e.apply_records(b.as_records(), 0)
    view = _q(e, "SELECT grp, n, total FROM by_grp ORDER BY grp")
    assert view == _q(e, RECOMPUTE["by_grp"]) == [("a", 3, 110), ("b", 3, 15)]
    assert _q(e, "SELECT mode, last_sequence FROM cdc_views") == [("incremental", b.seq - 1)]
    # a later batch maintains the rebuilt view incrementally
    b2 = StreamBuilder(start_sequence=b.seq)
    b2.schemas = b.schemas
    b2.tx(("c", "shop.t", None, {"id": 8, "grp": "a", "qty": 8, "tier": "x"}))
    e.apply_records(b2.as_records(100), 1)
    assert _q(e, "SELECT grp, n, total FROM by_grp ORDER BY grp") == _q(e, RECOMPUTE["by_grp"])


def test_drop_of_a_read_column_stops_naming_the_view_then_edit_and_rebuild_goes_on():
    b = _base()
    b.tx(("c", "shop.t", None, {"id": 9, "grp": "a", "qty": 9}))
    ddl = "ALTER TABLE t DROP COLUMN qty"
    b.schema("shop.t", BASE[:2], ["id"], ddl=ddl)
    at = b.seq - 1
    b.tx(("c", "shop.t", None, {"id": 10, "grp": "b"}))
    e = _engine([VIEW])
    with pytest.raises(ViewError) as info:
        e.apply_records(b.as_records(), 0)
    msg = str(info.value)
    assert info.value.fields["view"] == "by_grp" and info.value.fields["table"] == "t"
    assert info.value.fields["column"] == "qty" and info.value.sequence == at
    assert ddl in msg and f"sequence {at}" in msg and "cdc views rebuild --config <file> --view by_grp" in msg
    # the DDL and the rows before it are committed; the view is marked stopped with its rows before the DDL
    assert e.target.read_progress("src").last_sequence == at
    assert [c[0] for c in _q(e, "DESCRIBE t")] == ["id", "grp"] and len(_q(e, "SELECT * FROM t")) == 7
    assert _q(e, "SELECT mode, fingerprint FROM cdc_views") == [("stopped", None)]
    assert _q(e, "SELECT grp, n, total FROM by_grp ORDER BY grp") == [("a", 4, 21), ("b", 3, 9)]
    # a restart with the old definition stops again, naming the column
    with pytest.raises(ViewError, match="reads column 'qty' of table 't'"):
        _engine([VIEW], e.target)
    e.target.rollback()
    # the way back: edit the definition, rebuild (`cdc views rebuild`), restart: the apply goes on
    e.target.begin()
    assert maintainer.rebuild(e.target, [EDITED]) == ["by_grp"]
    e.target.commit()
    e2 = _engine([EDITED], e.target)
    e2.apply_records(b.as_records(), 1)  # the same batch again: the part before the DDL is a replay
    assert e2.target.read_progress("src").last_sequence == b.seq - 1
    assert _q(e2, "SELECT grp, n FROM by_grp ORDER BY grp") == _q(e2, "SELECT grp, COUNT(*) FROM t GROUP BY grp "
                                                                      "ORDER BY grp") == [("a", 4), ("b", 4)]


def test_a_schema_record_that_changes_no_shape_rebuilds_no_view():
    b = _base()
    e = _engine([VIEW])
    e.apply_records(b.as_records(), 0)
    assert _q(e, "SELECT mode FROM cdc_views") == [("build",)]
    b2 = StreamBuilder(start_sequence=b.seq)
    b2.schema("shop.t", BASE, ["id"])  # a first-sight record (a restarted publisher): the same definition
    b2.schema("shop.t", BASE, ["id"], ddl="CREATE INDEX i ON t (grp)")
    e.apply_records(b2.as_records(100), 1)
    assert _q(e, "SELECT mode FROM cdc_views") == [("build",)]
    b3 = StreamBuilder(start_sequence=b2.seq)
    b3.schema("shop.t", [*BASE[:2], ("qty", "bigint")], ["id"], ddl="ALTER TABLE t MODIFY qty BIGINT")
    e.apply_records(b3.as_records(200), 2)
    assert _q(e, "SELECT mode, last_sequence FROM cdc_views") == [("rebuild", b3.seq - 1)]
    assert _q(e, "SELECT grp, n, total FROM by_grp ORDER BY grp") == _q(e, RECOMPUTE["by_grp"])


def test_rename_of_a_base_table_stops_naming_the_table():
    from cdc.stream import envelope

    b = _base()
    ddl = "RENAME TABLE t TO t_old"
    b.items.append(({"table": "shop.t_old"}, envelope.schema_record(
        b._next(), "shop.t_old", ddl, None, b.ts, {"r": 1},
        tables=[{"op": "rename", "table": "shop.t_old", "from": "shop.t", "schema": None}])))
    at = b.seq - 1
    e = _engine([VIEW])
    e.apply_records(b.as_records()[:-1], 0)  # the view is built over t
    with pytest.raises(ViewError) as info:
        e.apply_records(b.as_records(), 1)
    assert info.value.fields["table"] == "t" and info.value.fields["column"] is None
    assert info.value.sequence == at and ddl in str(info.value) and "reads table 't'" in str(info.value)
    assert e.target.read_progress("src").last_sequence == at and e.target.table_columns("t_old") is not None
    assert _q(e, "SELECT mode FROM cdc_views") == [("stopped",)]
