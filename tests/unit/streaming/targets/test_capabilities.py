"""Target capabilities are declared on the target class; nothing probes a target for methods."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cdc.config.models import TargetConfig
from streaming.errors import TargetError
from streaming.targets.base import Target
from streaming.targets.duckdb.target import DuckDbTarget
from streaming.targets.mysql.target import MySqlTarget
from streaming.targets.oracle.target import OracleTarget
from streaming.targets.postgres.target import PostgresTarget

ROOT = Path(__file__).resolve().parents[4]


def test_capabilities_per_target():
    caps = {cls.__name__: (cls.columnar, cls.json_rows, cls.ddl_commits, cls.row_id_column)
            for cls in (PostgresTarget, DuckDbTarget, MySqlTarget, OracleTarget)}
    assert caps == {"PostgresTarget": (True, True, False, "ctid"), "DuckDbTarget": (True, False, False, "rowid"),
                    "MySqlTarget": (True, False, True, None), "OracleTarget": (False, False, True, "ROWID")}
    assert (Target.columnar, Target.json_rows, Target.ddl_commits, Target.row_id_column) == (False, False, False, None)


def test_no_capability_probes_in_engine_job_views():
    probe = re.compile(r"\b(getattr|hasattr)\(\s*(self\.)?target\b")
    for folder in ("streaming/apply", "streaming/views"):
        for path in (ROOT / folder).glob("*.py"):
            assert not probe.search(path.read_text()), f"{path}: probes the target instead of reading a capability"


def test_postgres_row_id_is_not_in_the_base_class():
    code = (ROOT / "streaming/targets/base.py").read_text().split('"""', 2)[2]  # past the module docstring
    assert "ctid" not in code


def test_keyless_delete_one_copy_through_the_row_id_on_duckdb():
    t = DuckDbTarget(TargetConfig(name="d", kind="duckdb", path=":memory:")).open()
    try:
        t.execute("CREATE TABLE main.k (a INTEGER, b VARCHAR)")
        t.execute("INSERT INTO main.k VALUES (1, NULL), (1, NULL), (2, 'x')")
        t.begin()
        t.delete_copies("k", ["a", "b"], [{"a": 1, "b": None}])
        t.commit()
        assert t.execute("SELECT a, b FROM main.k ORDER BY a").fetchall() == [(1, None), (2, "x")]
    finally:
        t.close()


def test_a_target_without_row_id_names_itself_and_the_table():
    class NoRowId(DuckDbTarget):
        row_id_column = None

    t = NoRowId(TargetConfig(name="nr", kind="duckdb", path=":memory:"))
    with pytest.raises(TargetError, match="'nr'.*keyless table k") as exc:
        t.delete_one_sql("k", ["a"])
    assert (exc.value.target, exc.value.table) == ("nr", "k")
