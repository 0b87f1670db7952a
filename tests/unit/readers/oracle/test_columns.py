"""Oracle column sizes: ALL_TAB_COLUMNS' DATA_LENGTH / CHAR_LENGTH / DATA_PRECISION / DATA_SCALE become the type
of the schema record (readers/oracle/columns.py), so the apply's widen / narrow rules see a length change; a
dictionary that does not give them stops the reader (fail closed)."""

from __future__ import annotations

import pytest

from cdc.schema.evolution import diff, type_change
from cdc.stream.events import SchemaChange, TableId, expand
from readers.oracle import columns
from readers.oracle.config import OracleSourceConfig
from readers.oracle.convert import stream_type
from readers.oracle.errors import ColumnSizesUnreadable
from readers.oracle.session import Standby
from readers.oracle.sim import evolve, simulator
from readers.oracle.sim.simulator import catalog_row
from readers.oracle.snapshot import OracleSnapshot
from tests.unit.readers.oracle.helpers import source

EVOLVE = "seed=11,transactions=110,lanes=1,tables=2,rollback_rate=0,evolve=4"


def _type(declared: str) -> str:
    return columns.columns("APP.T", [catalog_row("C", declared, True, None)])[0].type


@pytest.mark.parametrize(("declared", "want"), [
    ("VARCHAR2(20)", "varchar2(20)"), ("VARCHAR2(20 BYTE)", "varchar2(20)"), ("VARCHAR2(20 CHAR)", "varchar2(20)"),
    ("NVARCHAR2(30)", "nvarchar2(30)"), ("CHAR(3)", "char(3)"), ("CHAR", "char(1)"), ("NCHAR(10)", "nchar(10)"),
    ("RAW(16)", "raw(16)"), ("NUMBER(12,2)", "number(12,2)"), ("NUMBER(10)", "number(10,0)"),
    ("NUMBER(*,2)", "number(38,2)"), ("INTEGER", "number(38,0)"), ("NUMBER", "number"), ("DATE", "date"),
    ("TIMESTAMP(3)", "timestamp(3)"), ("TIMESTAMP(6) WITH TIME ZONE", "timestamp(6) with time zone"),
    ("CLOB", "clob"), ("BINARY_DOUBLE", "binary_double"),
])
def test_the_declared_size_reaches_the_type(declared, want):
    assert _type(declared) == want


@pytest.mark.parametrize(("old", "new", "how"), [
    ("VARCHAR2(20)", "VARCHAR2(40)", "widen"), ("VARCHAR2(40)", "VARCHAR2(20)", "narrow"),
    ("NVARCHAR2(10)", "NVARCHAR2(20)", "widen"), ("CHAR(5)", "CHAR(3)", "narrow"), ("NCHAR(4)", "NCHAR(8)", "widen"),
    ("RAW(8)", "RAW(16)", "widen"), ("RAW(16)", "RAW(8)", "narrow"),
    ("NUMBER(8,2)", "NUMBER(12,2)", "widen"), ("NUMBER(12,2)", "NUMBER(8,2)", "narrow"),
    ("NUMBER(8,2)", "NUMBER(8,3)", "narrow"), ("NUMBER(10)", "NUMBER", "widen"), ("INTEGER", "NUMBER(10)", "narrow"),
    ("TIMESTAMP(3)", "TIMESTAMP(6)", "widen"), ("DATE", "TIMESTAMP(3)", "widen"),
])
def test_a_length_change_is_a_type_change_the_apply_knows(old, new, how):
    a, b = stream_type(_type(old)), stream_type(_type(new))
    assert type_change(a, b).how == how, (a, b)


def test_a_type_without_its_size_stops_naming_the_column_and_what_to_grant():
    row = ("NAME", "VARCHAR2", "Y", None, 20, None, None, None)  # CHAR_LENGTH NULL
    with pytest.raises(ColumnSizesUnreadable) as e:
        columns.columns("APP.T", [row])
    assert "APP.T.NAME" in str(e.value) and "CHAR_LENGTH" in str(e.value) and "SELECT ANY DICTIONARY" in str(e.value)
    with pytest.raises(ColumnSizesUnreadable, match="answered 4 of the 8 columns"):
        columns.columns("APP.T", [("ID", "NUMBER", "N", None)])  # a catalog answering without the sizes


def test_a_dictionary_without_the_size_columns_stops_the_source(tmp_path):
    opts = "seed=3,transactions=20,tables=2,no_sizes=1"
    standby = Standby(OracleSourceConfig(name="ora", dsn="simulator:" + opts, tables=["APP.*"],
                                         dictionary_path=str(tmp_path)))
    try:
        with pytest.raises(ColumnSizesUnreadable) as e:
            standby.table_schema("APP", "T0", None)
    finally:
        standby.close()
    assert "ORA-00904" in str(e.value) and "APP.T0" in str(e.value) and "ALL_TAB_COLUMNS" in str(e.value)
    src = source(opts, tmp_path)
    with pytest.raises(ColumnSizesUnreadable):  # no row is published with a definition lacking the sizes
        src.start(None)
        for _ in expand(src.events()):
            pass
    src.close()
    snap = OracleSnapshot(simulator.instance(opts).connect("standby"), [TableId("APP", "T0")], chunk_rows=10)
    with pytest.raises(ColumnSizesUnreadable):
        list(snap.events())


def _step_scn(sim, kind: str) -> int:
    return sim.evolve_ddl_scn(next(k for k, step in enumerate(evolve.PLAN) if step[0] == kind))


def test_definitions_as_of_scn_carry_the_sizes_in_force_then(tmp_path):
    sim = simulator.instance(EVOLVE)
    standby = Standby(OracleSourceConfig(name="ora", dsn="simulator:" + EVOLVE, tables=["APP.*"],
                                         dictionary_path=str(tmp_path)))
    try:
        at = _step_scn(sim, "widen VARCHAR2(20) to VARCHAR2(40)")
        before = {c.name: c.type for c in standby.table_schema("APP", "E", at - 1).columns}
        after = {c.name: c.type for c in standby.table_schema("APP", "E", at).columns}
        now = {c.name: c.type for c in standby.table_schema("APP", "E", None).columns}
    finally:
        standby.close()
    assert (before["TITLE"], after["TITLE"], now["TITLE"]) == ("varchar2(20)", "varchar2(40)", "varchar2(10)")
    assert (before["QTY"], now["QTY"]) == ("number(8,2)", "number(12,2)")


def test_each_length_ddl_is_a_schema_record_with_its_type_change(tmp_path):
    src = source(EVOLVE, tmp_path, tables=evolve.CAPTURED, dictionary="redo_log")
    src.start(None)
    records = []
    try:
        for ev in expand(src.events()):
            if isinstance(ev, SchemaChange) and ev.ddl and "modify" in ev.ddl:
                records.append(ev)
            if src.caught_up() and len(records) >= 8:
                break
    finally:
        src.close()
    by_sql = {r.ddl.rstrip(";"): r for r in records}
    prev = None
    seen = {}
    for kind, _t, sql, _ in evolve.PLAN:
        if sql in by_sql and by_sql[sql].table.table == "E":
            rec = by_sql[sql]
            if prev is not None:
                seen[kind] = [(c.kind, c.column, c.old, c.new, c.how) for c in diff(prev, rec.schema, rec.ddl)
                              if c.kind == "type"]
            prev = rec.schema
    assert seen["widen TIMESTAMP(3) to TIMESTAMP(6)"] == [("type", "BORN", "datetime(3)", "datetime(6)", "widen")]
    assert seen["widen VARCHAR2(20) to VARCHAR2(40)"] == [("type", "TITLE", "varchar2(20)", "varchar2(40)", "widen")]
    assert seen["widen NUMBER(8,2) to NUMBER(12,2)"] == [("type", "QTY", "number(8,2)", "number(12,2)", "widen")]
    assert seen["narrow VARCHAR2(40) to VARCHAR2(12), every value fits"] == [
        ("type", "TITLE", "varchar2(40)", "varchar2(12)", "narrow")]
    assert seen["narrow VARCHAR2(12) to VARCHAR2(10)"] == [("type", "TITLE", "varchar2(12)", "varchar2(10)", "narrow")]


@pytest.mark.parametrize(("opts", "ok"), [("seed=3,transactions=20,tables=2", True),
                                          ("seed=3,transactions=20,tables=2,no_sizes=1", False)])
def test_cdc_check_says_whether_the_dictionary_gives_the_sizes(tmp_path, opts, ok):
    from readers.oracle.check import checks

    config = OracleSourceConfig(name="ora", dsn="simulator:" + opts, tables=["APP.T*"], dictionary_path=str(tmp_path))
    got = [c for c in checks(config, "sources[0]") if c.check == "source ora: column sizes"]
    assert len(got) == 1 and got[0].ok is ok, got
    if not ok:
        assert "ORA-00904" in got[0].detail and "SELECT ANY DICTIONARY" in got[0].fix, got
