"""Every registered SQL target kind is in the conformance suite (tests/fixtures/targets.py), or says why not."""

from __future__ import annotations

from streaming.targets import KINDS, target_class
from tests.fixtures.targets import NO_SERVER, PROVISION, conformance_kinds, sql_kinds


def test_every_registered_sql_kind_runs_the_conformance_suite_or_names_why_not():
    assert set(sql_kinds()) >= {"postgres", "mysql", "duckdb", "oracle"}
    missing = [k for k in sql_kinds() if k not in PROVISION and k not in NO_SERVER]
    assert not missing, f"SQL target kinds with no provisioner in tests/fixtures/targets.py: {missing}"
    assert set(PROVISION) <= set(KINDS) and set(NO_SERVER) <= set(KINDS)
    assert conformance_kinds() == [k for k in sorted(KINDS) if k in PROVISION]


def test_the_suite_selects_by_declared_capability():
    atomic = conformance_kinds(lambda cls: cls.batch_commit == "atomic" and cls.table_ddl == "all")
    assert atomic == conformance_kinds() and all(target_class(k).constraints == "enforced" for k in atomic)
