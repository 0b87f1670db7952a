"""Values DuckDB refused or lost (issue #14), through the apply engine into a real DuckDB.

Faults injected: BIT(10) and BIT(64) values (the stream's unsigned integers; the old map said
BLOB: every row dead-lettered), BIGINT UNSIGNED 2^64-1 (Arrow refused it: "Python int too large to
convert to C long"), TIME beyond 24 h and negative (the old map said TIME), DECIMAL(65,30) (DuckDB's
DECIMAL stops at 38 digits: the whole apply stopped). The user now finds each value exactly in the
target. And a value DuckDB truly refuses: the dead-letter row must give the row's own error, not
"Current transaction is aborted" (a failed statement aborts DuckDB's transaction, and the staged
view's cleanup used to raise that instead).
"""

from __future__ import annotations

from datetime import timedelta

from cdc.config.models import ApplyConfig, TargetConfig
from cdc.schema.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.targets.duckdb.target import DuckDbTarget
from streaming.testing import StreamBuilder

COLS = [("id", "int"), ("b10", "bit(10)"), ("b64", "bit(64)"), ("ub", "bigint unsigned"), ("tm", "time(6)"),
        ("d65", "decimal(65,30)"), ("y", "year")]
ROWS = [
    {"id": 1, "b10": 1023, "b64": 2**64 - 1, "ub": 2**64 - 1, "tm": "838:59:59.000000",
     "d65": "12345678901234567890123456789012345.123456789012345678901234567890", "y": 0},
    {"id": 2, "b10": 0, "b64": 2**63, "ub": 0, "tm": "-838:59:59.000000", "d65": "-0.000000000000000000000000000001",
     "y": 2155},
    {"id": 3, "b10": None, "b64": None, "ub": None, "tm": "-00:00:01.250000", "d65": None, "y": None},
]


def _engine(dead_letter: str | None = None) -> ApplyEngine:
    t = DuckDbTarget(TargetConfig(name="duck", kind="duckdb", path=":memory:", dead_letter_table=dead_letter))
    cfg = ApplyConfig(source="src", target="duck")
    return ApplyEngine("src", t, TableMap.from_config(cfg), views=cfg.views).start()


def test_extreme_values_arrive_exactly():
    b = StreamBuilder().schema("s.v", COLS, ["id"])
    for r in ROWS:
        b.tx(("c", "s.v", None, r))
    e = _engine()
    e.apply_records(b.as_records(), 0)
    got = e.target.execute("SELECT * FROM v ORDER BY id").fetchall()
    assert got == [
        (1, 1023, 2**64 - 1, 2**64 - 1, timedelta(hours=838, minutes=59, seconds=59),
         "12345678901234567890123456789012345.123456789012345678901234567890", 0),
        (2, 0, 2**63, 0, -timedelta(hours=838, minutes=59, seconds=59), "-0.000000000000000000000000000001", 2155),
        (3, None, None, None, -timedelta(seconds=1.25), None, None)]


def test_dead_letter_reason_is_the_rows_own_error():
    b = StreamBuilder().schema("s.t", [("id", "int"), ("n", "int")], ["id"])
    for i in range(3):
        b.tx(("c", "s.t", None, {"id": i, "n": i}))
    b.tx(("c", "s.t", None, {"id": 100, "n": "not a number"}))
    b.tx(("c", "s.t", None, {"id": 101, "n": 1}))
    e = _engine(dead_letter="cdc_dead")
    assert e.apply_records(b.as_records(), 0).dead_letters == 1
    [(table, error)] = e.target.execute("SELECT source_table, error FROM cdc_dead").fetchall()
    assert table == "s.t" and "not a number" in error and "aborted" not in error, error
    assert "{'id': 100}" in error
    assert [r[0] for r in e.target.execute("SELECT id FROM t ORDER BY id").fetchall()] == [0, 1, 2, 101]
