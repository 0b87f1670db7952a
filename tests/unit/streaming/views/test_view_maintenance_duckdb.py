"""Property: after random batches (inserts, deletes, updates, primary-key changes over
four joined tables; groups appearing and vanishing; MIN/MAX extremes deleted) every
maintained view equals the view recomputed from scratch, on DuckDB."""

from __future__ import annotations

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings

from streaming.apply.table_delta import TableDelta
from streaming.views import maintainer
from streaming.views.connect import DbTarget
from streaming.views.definition import parse_views
from streaming.views.errors import ViewInconsistent
from tests.unit.streaming.views.harness import VIEWS, Harness, batches, initial, oracle

DEFS = parse_views(VIEWS)


def _check(h: Harness) -> None:
    for view in DEFS:
        expected = oracle(view, h.state)
        assert h.view_rows(view) == expected, f"maintained {view.name} differs from the Python oracle"
        assert h.recomputed_rows(view) == expected, f"recomputed {view.name} differs from the Python oracle"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(init=initial, runs=batches)
def test_maintained_views_equal_recomputation(init, runs):
    h = Harness(DbTarget(duckdb.connect(), "duckdb"))
    h.setup(init)
    _check(h)
    for ops in runs:
        h.run_batch(ops)
        _check(h)


def test_freshness_recorded_per_view():
    h = Harness(DbTarget(duckdb.connect(), "duckdb"))
    h.setup({"r": {1: {"k": 1, "g": 1, "v": 1}}})
    h.run_batch([("upsert", "r", 2, {"k": 1, "g": 2, "v": 2})])
    rows = h.target.conn.execute("SELECT view_name, last_batch_id, last_sequence, mode FROM cdc_views").fetchall()
    assert sorted(rows) == sorted((v.name, 1, 10, "incremental") for v in DEFS)


def test_changed_definition_is_rebuilt_and_rebuild_resets_counts():
    h = Harness(DbTarget(duckdb.connect(), "duckdb"), views=VIEWS[:2])
    h.setup({"r": {1: {"k": 1, "g": 1, "v": 1}}, "s": {1: {"k": 1, "m": 0, "x": 5}}})
    conn = h.target.conn
    conn.execute("UPDATE v_agg2 SET __count = 99, n = 99")  # damage the view
    h.target.begin()
    assert maintainer.rebuild(h.target, VIEWS[:2], names=["v_agg2"]) == ["v_agg2"]
    h.target.commit()
    assert conn.execute("SELECT n, __count FROM v_agg2").fetchall() == [(1, 1)]
    changed = [VIEWS[0], {**VIEWS[1], "sql": VIEWS[1]["sql"].replace("COUNT(s.x) AS cx", "COUNT(r.v) AS cv")}]
    h.target.begin()
    assert maintainer.maintain(h.target, {}, 7, views=changed) == {"v_spj": "incremental", "v_agg2": "build"}
    h.target.commit()
    assert "cv" in [d[0] for d in conn.execute("SELECT * FROM v_agg2").description]


def test_negative_count_is_reported_not_applied():
    h = Harness(DbTarget(duckdb.connect(), "duckdb"), views=VIEWS[4:5])
    h.setup({"r": {1: {"k": 1, "g": 1, "v": 1}}})
    h.target.begin()
    ghost = TableDelta(deleted=[{"id": 5, "k": 1, "g": 1, "v": 1}, {"id": 6, "k": 1, "g": 1, "v": 1}])
    with pytest.raises(ViewInconsistent, match="v_global"):
        maintainer.maintain(h.target, {"r": ghost}, 1, views=VIEWS[4:5])
    h.target.rollback()


def test_truncated_table_recomputes_the_views_reading_it():
    h = Harness(DbTarget(duckdb.connect(), "duckdb"), views=VIEWS[4:])
    h.setup({"r": {1: {"k": 1, "g": 1, "v": 1}, 2: {"k": 1, "g": 2, "v": 3}}})
    h.target.begin()
    h.target.conn.execute("DELETE FROM r")  # what a TRUNCATE does; its rows are not in any delta
    h.target.conn.execute("INSERT INTO r VALUES (9, 0, 0, 7)")
    modes = maintainer.maintain(h.target, {"r": TableDelta(inserted=[{"id": 9, "k": 0, "g": 0, "v": 7}])}, 3,
                                views=VIEWS[4:], truncated=["r"])
    h.target.commit()
    assert set(modes.values()) == {"recompute"}
    h.state["r"] = {9: {"id": 9, "k": 0, "g": 0, "v": 7}}
    for view in parse_views(VIEWS[4:]):
        assert h.view_rows(view) == oracle(view, h.state)


def test_support_indexes_cover_both_sides_of_each_join_and_are_not_made_on_duckdb():
    from streaming.views.build import _index_name, support_columns, support_indexes
    from streaming.views.dialect import dialect_for

    view = parse_views(VIEWS[3:4])[0]  # r.k = s.k, s.m = t.m, t.h = u.h
    assert support_columns(view) == [("r", "k", ("g",)), ("s", "k", ("m", "x")), ("s", "m", ("k", "x")),
                                      ("t", "m", ("h", "y")), ("t", "h", ("m", "y")), ("u", "h", ("z",))]
    h = Harness(DbTarget(duckdb.connect(), "duckdb"), views=VIEWS[3:4])
    h.setup({})
    assert support_indexes(h.target.cursor(), view, dialect_for("duckdb")) == []  # hash joins: no use
    assert h.target.conn.execute("SELECT COUNT(*) FROM duckdb_indexes() WHERE index_name LIKE '%cdcv%'").fetchone() \
        == (0,)
    long = _index_name("a_rather_long_fact_table_name_of_orders", "customer_identifier_column")
    assert len(long) <= 60 and long.startswith("a_rather_long_fact_table_name_of_orders__cdcv_")


def test_delta_values_of_mixed_types_still_load_on_duckdb():
    """A str where the column is INTEGER (JSON-ready values): the Arrow column goes as text
    and DuckDB casts it into the delta table."""
    h = Harness(DbTarget(duckdb.connect(), "duckdb"), views=VIEWS[4:5])
    h.setup({"r": {1: {"k": 1, "g": 1, "v": 1}}})
    h.target.begin()
    h.target.conn.execute("INSERT INTO r VALUES (2, 1, 1, 4)")
    maintainer.maintain(h.target, {"r": TableDelta(inserted=[{"id": 2, "k": 1, "g": 1, "v": "4"}])}, 1,
                        views=VIEWS[4:5])
    h.target.commit()
    h.state["r"][2] = {"id": 2, "k": 1, "g": 1, "v": 4}
    view = parse_views(VIEWS[4:5])[0]
    assert h.view_rows(view) == oracle(view, h.state)
