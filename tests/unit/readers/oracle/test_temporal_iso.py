"""Oracle DATE/TIMESTAMP values in the stream's ISO encoding (``temporal: iso``, issue #14).

Faults this catches: an Oracle DATE described as ``date`` (a typed target would keep the day and
drop the time), TIMESTAMP(7..9) digits rounded or cut, a WITH TIME ZONE value not moved to UTC (or
moved the wrong way), a snapshot row and a LogMiner row of the same value published differently
(the snapshot renders Python datetimes, LogMiner writes its own fraction digits), a VARCHAR2 whose
text looks like ``TO_DATE(...)`` converted, ``conversions`` broken by the new encoding, and
``temporal: redo_text`` no longer giving the old stream byte for byte.
"""

from __future__ import annotations

import datetime as dt

import pytest

from cdc.errors import DecodeError
from cdc.stream.events import Change, Column, TableId, TableSchema
from readers.oracle.convert import Converter, iso_temporal, stream_schema, stream_type
from readers.oracle.sim import simulator
from readers.oracle.sim.workload import TYPES_TABLE, table_name
from readers.oracle.snapshot import redo_text
from tests.unit.readers.oracle.helpers import run, source

CASES = [  # SQL_REDO text -> stream value
    ("TO_DATE('2024-02-29 13:14:15', 'YYYY-MM-DD HH24:MI:SS')", "2024-02-29T13:14:15"),
    ("TO_TIMESTAMP('2024-02-29 13:14:15.')", "2024-02-29T13:14:15"),            # TIMESTAMP(0)
    ("TO_TIMESTAMP('2024-02-29 13:14:15.000000')", "2024-02-29T13:14:15"),
    ("TO_TIMESTAMP('2024-02-29 13:14:15.12')", "2024-02-29T13:14:15.120000"),   # isoformat's 6 digits
    ("TO_TIMESTAMP('2024-02-29 13:14:15.000001')", "2024-02-29T13:14:15.000001"),
    ("TO_TIMESTAMP('2024-02-29 13:14:15.123456000')", "2024-02-29T13:14:15.123456"),
    ("TO_TIMESTAMP('2024-02-29 13:14:15.123456789')", "2024-02-29T13:14:15.123456789"),  # never rounded
    ("TO_TIMESTAMP('2024-02-29 13:14:15.000000001')", "2024-02-29T13:14:15.000000001"),
    ("TO_TIMESTAMP_TZ('2024-02-29 23:14:15.123456 -06:00')", "2024-03-01T05:14:15.123456Z"),
    ("TO_TIMESTAMP_TZ('2024-01-01 00:30:00.000000 +14:00')", "2023-12-31T10:30:00Z"),
    ("TO_TIMESTAMP_TZ('2024-07-01 12:00:00.5 +05:30')", "2024-07-01T06:30:00.500000Z"),
    ("TO_TIMESTAMP_TZ('2024-07-01 12:00:00.123456789 America/New_York')", "2024-07-01T16:00:00.123456789Z"),
    ("TO_TIMESTAMP_TZ('2024-01-01 12:00:00 America/New_York')", "2024-01-01T17:00:00Z"),
]


@pytest.mark.parametrize(("redo", "want"), CASES)
def test_each_temporal_shape_becomes_the_iso_text(redo, want):
    assert iso_temporal(redo) == want
    assert iso_temporal(want.rstrip("Z")) == want.rstrip("Z") or want.endswith("Z")  # wall clock: idempotent


@pytest.mark.parametrize("bad", ["TO_DATE('-4712-01-01 00:00:00', 'SYYYY-MM-DD HH24:MI:SS')",
                                 "TO_TIMESTAMP_TZ('2024-01-01 00:00:00 Mars/Olympus')", "TO_YMINTERVAL('+02-03')",
                                 "TO_TIMESTAMP('2024-02-29 13:14:15.1234567890')"])
def test_other_shapes_are_a_named_decode_error_never_a_half_converted_value(bad):
    schema = stream_schema(TableSchema(TableId("S", "T"), (Column("ID", "number"), Column("D", "timestamp(9)"))),
                           "iso")
    ch = Change(TableId("S", "T"), "c", None, {"ID": "1", "D": bad}, {"scn": 7}, schema)
    with pytest.raises(DecodeError, match=r"S\.T\.D") as err:
        Converter({}, "iso")(ch)
    assert err.value.fields["value"] == bad and err.value.fields["position"] == 7


def test_schema_types_say_timestamp_for_date_and_keep_the_digits():
    assert {t: stream_type(t) for t in ("date", "timestamp(0)", "timestamp(9)", "timestamp(6) with time zone",
                                        "timestamp(3) with local time zone", "number", "varchar2", "raw")} == {
        "date": "datetime(0)", "timestamp(0)": "datetime(0)", "timestamp(9)": "datetime(9)",
        "timestamp(6) with time zone": "timestamp(6) with time zone",
        "timestamp(3) with local time zone": "datetime(3)", "number": "number", "varchar2": "varchar2", "raw": "raw"}


def test_snapshot_and_logminer_renderings_of_one_value_publish_the_same():
    """redo_text (the snapshot, from oracledb's datetime) and LogMiner's own text differ in fraction digits;
    after the Converter both are the same stream value."""
    pairs = [  # (column type, oracledb value, LogMiner's SQL_REDO text of the same value)
        ("date", dt.datetime(2024, 2, 29, 13, 14, 15), "TO_DATE('2024-02-29 13:14:15', 'YYYY-MM-DD HH24:MI:SS')"),
        ("timestamp(0)", dt.datetime(2024, 2, 29, 13, 14, 15), "TO_TIMESTAMP('2024-02-29 13:14:15.')"),
        ("timestamp(3)", dt.datetime(2024, 2, 29, 13, 14, 15, 120000), "TO_TIMESTAMP('2024-02-29 13:14:15.120')"),
        ("timestamp(9)", dt.datetime(2024, 2, 29, 13, 14, 15, 5), "TO_TIMESTAMP('2024-02-29 13:14:15.000005000')"),
        ("timestamp(6) with time zone",
         dt.datetime(2024, 2, 29, 23, 14, 15, 1, tzinfo=dt.timezone(dt.timedelta(hours=-6))),
         "TO_TIMESTAMP_TZ('2024-02-29 23:14:15.000001 -06:00')"),
    ]
    cols = tuple(Column(f"C{i}", t) for i, (t, _, _) in enumerate(pairs))
    schema = stream_schema(TableSchema(TableId("S", "T"), cols), "iso")
    snap = Change(TableId("S", "T"), "r", None, {f"C{i}": redo_text(v, t.upper()) for i, (t, v, _) in enumerate(pairs)},
                  {}, schema)
    mined = Change(TableId("S", "T"), "c", None, {f"C{i}": r for i, (_, _, r) in enumerate(pairs)}, {}, schema)
    conv = Converter({}, "iso")
    conv(snap)
    conv(mined)
    assert snap.after == mined.after
    assert mined.after == {"C0": "2024-02-29T13:14:15", "C1": "2024-02-29T13:14:15", "C2": "2024-02-29T13:14:15.120000",
                           "C3": "2024-02-29T13:14:15.000005", "C4": "2024-03-01T05:14:15.000001Z"}


def test_only_temporal_columns_convert_and_conversions_still_apply_after():
    schema = stream_schema(TableSchema(TableId("S", "T"), (Column("V", "varchar2"), Column("D", "date"),
                                                          Column("E", "date"))), "iso")
    text = "TO_DATE('2024-02-29 13:14:15', 'YYYY-MM-DD HH24:MI:SS')"
    ch = Change(TableId("S", "T"), "u", {"V": text, "D": text, "E": text}, {"V": text, "D": text, "E": text}, {}, schema)
    Converter({"S.T.E": "date"}, "iso")(ch)
    assert ch.before == ch.after == {"V": text, "D": "2024-02-29T13:14:15", "E": "2024-02-29"}


OPTS = "seed=5,transactions=12,lanes=3,types_at=4"


@pytest.mark.parametrize("temporal", ["iso", "redo_text"])
def test_reader_publishes_every_type_as_the_model_says(tmp_path, temporal):
    """The Oracle source on the simulator (APP.TYPES: DATE, TIMESTAMP(0/3/6/9), WITH (LOCAL) TIME ZONE, NUMBER,
    BINARY_DOUBLE, RAW, VARCHAR2, NCHAR; inserts and an update), with parse workers and without."""
    for workers in (0, 1):
        (tmp_path / str(workers)).mkdir()
        txs, _ = run(source(OPTS, tmp_path / str(workers), temporal=temporal, parse_workers=workers))
        want = [(s, x, r) for s, x, r in simulator.instance(OPTS).model.committed(temporal) if r]
        assert txs == want
    rows = [r for _, _, rs in txs for r in rs if r[2] == table_name(TYPES_TABLE)]
    assert len(rows) == 5
    first = rows[0][4]
    if temporal == "iso":
        assert (first["C_DATE"], first["C_TS0"], first["C_TS9"], first["C_TSTZ"], first["C_TSLTZ"]) == (
            "2024-02-29T13:14:15", "2024-02-29T13:14:15", "2024-02-29T13:14:15.123456",
            "2024-03-01T05:14:15.123456Z", "2024-02-29T19:14:15.123456")
        assert rows[3][4]["C_TS9"] == "2024-02-29T13:14:15.123456789"
    else:
        assert first["C_DATE"] == "TO_DATE('2024-02-29 13:14:15', 'YYYY-MM-DD HH24:MI:SS')"


def test_schema_of_the_stream_names_timestamps(tmp_path):
    src = source(OPTS, tmp_path)
    src.start(None)
    try:
        types = {c.name: c.type for c in src._schema("APP", "TYPES").columns}
    finally:
        src.close()
    assert types["C_DATE"] == "datetime(0)" and types["C_TS9"] == "datetime(9)"
    assert types["C_TSTZ"] == "timestamp(6) with time zone" and types["C_TSLTZ"] == "datetime(6)"
    assert types["C_NUM"] == "number" and types["C_RAW"] == "raw(16)" and types["C_VC"] == "varchar2(100)"


class _Flashback:
    """A stand-in for the snapshot's SQL (no Oracle here): one row of APP.TS, answering TO_CHAR as Oracle does."""

    def __init__(self):
        self.sql: list[str] = []

    def cursor(self):
        return self

    def execute(self, sql, binds):
        self.sql.append(sql)
        if "ALL_TAB_COLUMNS" in sql:
            self.rows = [("ID", "NUMBER", "N", None, 22, 0, None, None), ("D", "DATE", "Y", None, 7, 0, None, None),
                         ("T9", "TIMESTAMP(9)", "Y", None, 11, 0, None, 9),
                         ("TZ", "TIMESTAMP(6) WITH TIME ZONE", "Y", None, 13, 0, None, 6),
                         ("LTZ", "TIMESTAMP(6) WITH LOCAL TIME ZONE", "Y", None, 11, 0, None, 6)]
        elif "ALL_CONS_COLUMNS" in sql:
            self.rows = [("ID",)]
        elif "AS OF SCN" in sql:
            assert """TO_CHAR("T9", 'YYYY-MM-DD HH24:MI:SS.FF9')""" in sql  # the driver's datetime has microseconds
            assert """TO_CHAR("TZ", 'YYYY-MM-DD HH24:MI:SS.FF9 TZH:TZM')""" in sql  # ... and drops the zone
            assert """TO_CHAR("LTZ", 'YYYY-MM-DD HH24:MI:SS.FF9')""" in sql
            self.rows = [] if "a0" in binds else [
                ("1", dt.datetime(2024, 2, 29, 13, 14, 15), "2024-02-29 13:14:15.123456789",
                 "2024-02-29 23:14:15.000001000 -06:00", "2024-02-29 19:14:15.123456000")]
        else:
            raise AssertionError(sql)

    def fetchall(self):
        return self.rows

    def close(self):
        pass


def test_snapshot_keeps_nanoseconds_and_zones_and_publishes_what_logminer_would():
    from readers.oracle.snapshot import OracleSnapshot

    snap = OracleSnapshot(_Flashback(), [TableId("APP", "TS")], scn=50, temporal="iso")
    rows = [e for e in snap.events() if isinstance(e, Change)]
    assert [c.type for c in rows[0].schema.columns] == ["number", "datetime(0)", "datetime(9)",
                                                         "timestamp(6) with time zone", "datetime(6)"]
    mined = Change(TableId("APP", "TS"), "c", None, {  # the same row as LogMiner writes it
        "ID": "1", "D": "TO_DATE('2024-02-29 13:14:15', 'YYYY-MM-DD HH24:MI:SS')",
        "T9": "TO_TIMESTAMP('2024-02-29 13:14:15.123456789')",
        "TZ": "TO_TIMESTAMP_TZ('2024-02-29 23:14:15.000001 -06:00')", "LTZ": "TO_TIMESTAMP('2024-02-29 19:14:15.123456')"},
        {}, rows[0].schema)
    conv = Converter({}, "iso")
    conv(rows[0])
    conv(mined)
    assert rows[0].after == mined.after == {"ID": "1", "D": "2024-02-29T13:14:15", "T9": "2024-02-29T13:14:15.123456789",
                                            "TZ": "2024-03-01T05:14:15.000001Z", "LTZ": "2024-02-29T19:14:15.123456"}
