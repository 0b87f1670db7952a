"""Maintained views on a real PostgreSQL: the DuckDB property (maintained == recomputed
from scratch after random multi-table batches), fewer examples; plus atomicity: a batch
whose view maintenance fails leaves base tables, views and freshness as they were."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from streaming.apply.table_delta import TableDelta
from streaming.views import maintainer
from streaming.views.connect import DbTarget
from streaming.views.definition import parse_views
from streaming.views.errors import ViewInconsistent
from tests.unit.streaming.views.harness import VIEWS, Harness, batches, initial, oracle

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


def test_negative_count_raises_and_the_rollback_keeps_the_view(pg_target):
    """The one-statement merge writes before it counts: the raise must come, and the
    rollback the engine then does must leave the view as it was."""
    _fresh_schema(pg_target)
    h = Harness(pg_target, views=VIEWS[4:5], param="%s")
    h.setup({"r": {1: {"k": 1, "g": 1, "v": 1}}})
    view = parse_views(VIEWS[4:5])[0]
    before = h.view_rows(view)
    ghost = TableDelta(deleted=[{"id": 5, "k": 1, "g": 1, "v": 1}, {"id": 6, "k": 1, "g": 1, "v": 1}])
    with pytest.raises(ViewInconsistent, match="v_global"):
        maintainer.maintain(pg_target, {"r": ghost}, 1, views=VIEWS[4:5])
    pg_target.rollback()
    pg_target.cursor().execute("SET search_path TO views_prop")
    assert h.view_rows(view) == before


TYPED = [{"name": "v_typed", "sql": "SELECT c.label, COUNT(*) AS n, SUM(o.amount) AS total, MIN(o.day) AS first_day "
                                    "FROM o JOIN c ON o.cid = c.id GROUP BY c.label"}]


def test_values_binary_copy_cannot_take_go_as_text(pg_target):
    """Delta values arrive JSON-ready: DECIMAL and dates as text (text COPY for such tables),
    and a str in an integer column ends the binary try (rolled back, sent as text)."""
    _fresh_schema(pg_target)
    cur = pg_target.cursor()
    cur.execute("CREATE TABLE c (id INTEGER PRIMARY KEY, label VARCHAR(8))")
    cur.execute("CREATE TABLE o (id INTEGER PRIMARY KEY, cid INTEGER, amount NUMERIC(10, 2), day DATE)")
    cur.execute("INSERT INTO c VALUES (1, 'a'), (2, 'b')")
    cur.execute("INSERT INTO o VALUES (1, 1, 2.50, '2024-01-02'), (2, 2, 1.25, '2024-01-03')")
    pg_target.commit()
    maintainer.prepare(pg_target, TYPED)
    pg_target.commit()
    cur = pg_target.cursor()
    cur.execute("UPDATE o SET amount = 4.75, day = '2023-12-31' WHERE id = 2")
    cur.execute("UPDATE c SET label = 'a' WHERE id = 2")
    deltas = {"o": TableDelta(deleted=[{"id": 2, "cid": 2, "amount": "1.25", "day": "2024-01-03"}],
                              inserted=[{"id": 2, "cid": 2, "amount": "4.75", "day": "2023-12-31"}]),
              "c": TableDelta(deleted=[{"id": "2", "label": "b"}], inserted=[{"id": "2", "label": "a"}])}
    assert maintainer.maintain(pg_target, deltas, 1, views=TYPED) == {"v_typed": "incremental"}
    pg_target.commit()
    cur = pg_target.cursor()
    cur.execute("SELECT label, n, total, CAST(first_day AS TEXT), __count FROM v_typed ORDER BY label")
    assert cur.fetchall() == [("a", 2, 7.25, "2023-12-31", 2)]
    pg_target.commit()


def test_building_a_view_indexes_the_join_keys_it_probes(pg_target):
    _fresh_schema(pg_target)
    h = Harness(pg_target, views=VIEWS[1:2], param="%s")
    h.setup({})
    cur = pg_target.cursor()
    cur.execute("SELECT tablename, indexdef FROM pg_indexes WHERE schemaname = 'views_prop' AND indexname LIKE "
                "'%%cdcv%%' ORDER BY 1")
    assert cur.fetchall() == [  # r.k = s.k: both sides, carrying what the view reads from each table
        ("r", 'CREATE INDEX r__cdcv_k ON views_prop.r USING btree (k) INCLUDE (g, v)'),
        ("s", 'CREATE INDEX s__cdcv_k ON views_prop.s USING btree (k) INCLUDE (x)'),
    ]
    h.target.begin()
    maintainer.rebuild(pg_target, VIEWS[1:2])  # an index leading with the column exists now: none added
    cur.execute("SELECT COUNT(*) FROM pg_indexes WHERE schemaname = 'views_prop' AND indexname LIKE '%%cdcv%%'")
    assert cur.fetchone()[0] == 2
    pg_target.commit()
