"""Views spell what differs per database in one place: the Dialect subclass of that database."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from streaming.views.dialect import DIALECTS, Dialect, dialect_for
from streaming.views.errors import ViewError

VIEWS_DIR = Path(__file__).resolve().parents[4] / "streaming" / "views"
NAME_TEST = re.compile(r"(dialect|kind|\.name)\s*(==|!=|\bin\b|\bnot in\b)\s*[(\[{]?\s*[\"']"
                       r"(mysql|mariadb|postgres|postgresql|duckdb|oracle)[\"']")


@pytest.mark.parametrize(("name", "temp", "drop", "avg"), [
    ("postgres", 'CREATE TEMP TABLE "t" ON COMMIT DROP AS SELECT 1', 'DROP TABLE IF EXISTS "t"',
     "CAST(s AS NUMERIC) / n"),
    ("duckdb", 'CREATE OR REPLACE TEMP TABLE "t" AS SELECT 1', 'DROP TABLE IF EXISTS "t"', "CAST(s AS DOUBLE) / n"),
    ("mysql", "CREATE TEMPORARY TABLE `t` AS SELECT 1", "DROP TEMPORARY TABLE IF EXISTS `t`", "s / n"),
])
def test_scratch_tables_and_avg(name, temp, drop, avg):
    d = dialect_for(name)
    assert (d.create_temp("t", "SELECT 1"), d.drop_temp("t"), d.avg("s", "n")) == (temp, drop, avg)


def test_how_maintenance_runs_per_database():
    def traits(d: Dialect) -> set[str]:
        return {t for t in ("ddl_commits", "temp_outlives_rollback", "drop_scratch_after", "temp_read_once",
                            "columnar_load", "merge_in_one_statement", "merge_in_place", "probe_indexes")
                if getattr(d, t)}

    assert traits(DIALECTS["postgres"]) == {"merge_in_one_statement", "probe_indexes"}
    assert traits(DIALECTS["duckdb"]) == {"drop_scratch_after", "columnar_load", "merge_in_place"}
    assert traits(DIALECTS["mysql"]) == {"ddl_commits", "temp_outlives_rollback", "temp_read_once", "probe_indexes"}
    assert DIALECTS["postgres"].table_options(True) == " WITH (fillfactor = 45)"
    assert DIALECTS["mysql"].table_options(True) == DIALECTS["duckdb"].table_options(False) == ""
    assert DIALECTS["postgres"].index_include(['"a"', '"b"']) == ' INCLUDE ("a", "b")'
    assert DIALECTS["mysql"].index_include(["`a`"]) == ""


def test_oracle_is_refused():
    with pytest.raises(ViewError, match="not supported on a 'oracle' target"):
        dialect_for("oracle")


def test_views_modules_do_not_test_the_database_name():
    found = [f"{p.name}:{no}: {line.strip()}" for p in sorted(VIEWS_DIR.rglob("*.py"))
             for no, line in enumerate(p.read_text().splitlines(), 1) if NAME_TEST.search(line)]
    assert found == []
