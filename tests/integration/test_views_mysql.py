"""Maintained views on a real MariaDB (the generic SQL path: per-term statements because a
temporary table cannot be read twice in one MySQL statement, delete + insert merge)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, example, given, settings

from streaming.apply.table_delta import TableDelta
from streaming.views import maintainer
from streaming.views.connect import DbTarget
from streaming.views.definition import parse_views
from streaming.views.errors import ViewError
from tests.unit.streaming.views.harness import VIEWS, Harness, batches, initial, oracle

pytestmark = pytest.mark.mysql
DEFS = parse_views(VIEWS)


@pytest.fixture(scope="module")
def my_target(mariadb_primary):
    target = DbTarget(mariadb_primary.connect(autocommit=False), "mysql")
    yield target
    target.cursor().execute("DROP DATABASE IF EXISTS views_prop")
    target.close()


def _at_mariadb_precision(rows: Counter) -> Counter:
    """MariaDB divides with div_precision_increment (4) decimal places: AVG(1, 0, 0) is 0.3333 in the
    database itself, in the maintained view as in a from-scratch SELECT. Compare at that precision."""
    out: Counter = Counter()
    for row, n in rows.items():
        out[tuple(round(v, 4) if isinstance(v, float) else v for v in row)] += n
    return out


def _fresh_db(target: DbTarget) -> None:
    cur = target.cursor()
    cur.execute("DROP DATABASE IF EXISTS views_prop")
    cur.execute("CREATE DATABASE views_prop")
    cur.execute("USE views_prop")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(init=initial, runs=batches)
@example(  # an AVG of 1/3: found by CI when the comparison was at 6 decimal places
    init={"r": {0: {"k": None, "g": None, "v": None}, 1: {"k": None, "g": None, "v": None},
                2: {"k": 1, "g": 1, "v": 1}},
          "s": {0: {"k": None, "m": None, "x": None}, 1: {"k": None, "m": None, "x": None},
                2: {"k": None, "m": None, "x": None}, 3: {"k": 0, "m": None, "x": None},
                4: {"k": 1, "m": None, "x": None}},
          "t": {}, "u": {}},
    runs=[[("upsert", "s", 0, {"k": 0, "m": None, "x": None}), ("upsert", "r", 0, {"k": 0, "g": 1, "v": 0})]],
)
def test_maintained_views_equal_recomputation_on_mariadb(my_target, init, runs):
    _fresh_db(my_target)
    h = Harness(my_target, param="%s")
    h.setup(init)
    for ops in runs:
        h.run_batch(ops)
        for view in DEFS:
            expected = _at_mariadb_precision(oracle(view, h.state))
            assert _at_mariadb_precision(h.view_rows(view)) == expected, view.name
            assert _at_mariadb_precision(h.recomputed_rows(view)) == expected, view.name
    my_target.commit()


def test_unbuilt_view_is_refused_inside_a_batch(my_target):
    _fresh_db(my_target)
    h = Harness(my_target, views=VIEWS[:1], param="%s")
    h.setup({"r": {1: {"k": 1, "g": 1, "v": 1}}})
    changed = [{**VIEWS[0], "sql": VIEWS[0]["sql"] + " AND r.v < 100"}]
    with pytest.raises(ViewError, match="build it before the batch"):
        maintainer.maintain(my_target, {"r": TableDelta(inserted=[{"id": 2, "k": 1, "g": 1, "v": 2}])}, 1,
                            views=changed)
    my_target.rollback()


def test_building_a_view_indexes_the_join_keys_it_probes(my_target):
    _fresh_db(my_target)
    h = Harness(my_target, views=VIEWS[2:3], param="%s")  # r.k = s.k, s.m = t.m
    h.setup({})
    cur = my_target.cursor()
    cur.execute("SELECT table_name, index_name, column_name FROM information_schema.statistics "
                "WHERE table_schema = 'views_prop' AND index_name LIKE '%%cdcv%%' ORDER BY 1, 2")
    assert [tuple(r) for r in cur.fetchall()] == [("r", "r__cdcv_k", "k"), ("s", "s__cdcv_k", "k"),
                                                  ("s", "s__cdcv_m", "m"), ("t", "t__cdcv_m", "m")]
    my_target.commit()
