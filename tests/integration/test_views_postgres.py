"""Maintained views on a real PostgreSQL: the DuckDB property (maintained == recomputed
from scratch after random multi-table batches), fewer examples; plus atomicity: a batch
whose view maintenance fails leaves base tables, views and freshness as they were."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from streaming.delta import TableDelta
from streaming.views import maintainer
from streaming.views.connect import DbTarget
from streaming.views.definition import parse_views
from tests.unit.views.harness import VIEWS, Harness, batches, initial, oracle

pytestmark = pytest.mark.postgres
DEFS = parse_views(VIEWS)


@pytest.fixture(scope="module")
def pg_target(postgres):
    target = DbTarget(postgres.connect(autocommit=False), "postgres")
    yield target
    target.rollback()
    target.cursor().execute("DROP SCHEMA IF EXISTS views_prop CASCADE")
    target.commit()
    target.close()


def _fresh_schema(target: DbTarget) -> None:
    cur = target.cursor()
    cur.execute("DROP SCHEMA IF EXISTS views_prop CASCADE")
    cur.execute("CREATE SCHEMA views_prop")
    cur.execute("SET search_path TO views_prop")
    target.commit()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(init=initial, runs=batches)
def test_maintained_views_equal_recomputation_on_postgres(pg_target, init, runs):
    _fresh_schema(pg_target)
    h = Harness(pg_target, param="%s")
    h.setup(init)
    for ops in runs:
        h.run_batch(ops)
        for view in DEFS:
            expected = oracle(view, h.state)
            assert h.view_rows(view) == expected, view.name
            assert h.recomputed_rows(view) == expected, view.name
    pg_target.commit()


def test_failed_maintenance_rolls_back_the_whole_batch(pg_target):
    _fresh_schema(pg_target)
    h = Harness(pg_target, views=VIEWS[1:2], param="%s")
    h.setup({"r": {1: {"k": 1, "g": 1, "v": 1}}, "s": {1: {"k": 1, "m": 0, "x": 5}}})
    before = h.view_rows(DEFS[1])
    cur = pg_target.cursor()
    cur.execute("INSERT INTO r (id, k, g, v) VALUES (2, 1, 1, 4)")
    bad = TableDelta(inserted=[{"id": 2, "k": 1, "g": 1}])  # lacks column v the view reads
    with pytest.raises(Exception, match="lacks column 'v'"):
        maintainer.maintain(pg_target, {"r": bad}, 5, views=VIEWS[1:2])
    pg_target.rollback()
    cur = pg_target.cursor()
    cur.execute("SET search_path TO views_prop")
    cur.execute("SELECT COUNT(*) FROM r")
    assert cur.fetchone()[0] == 1
    assert h.view_rows(DEFS[1]) == before
    cur.execute("SELECT last_batch_id FROM cdc_views WHERE view_name = 'v_agg2'")
    assert cur.fetchone()[0] is None  # still the initial build, not batch 5
    pg_target.commit()
