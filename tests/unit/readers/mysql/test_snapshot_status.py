"""readers.mysql.snapshot_status: the status table (no services; the command runs in
tests/integration/test_snapshot_progress.py)."""

from __future__ import annotations

from cdc.stream.events import TableId
from readers.mysql.snapshot_status import render, snapshot_state


def test_status_render_gives_each_table_its_eta_at_the_measured_rate():
    rows = [(TableId("d", "a"), 1000, 1000), (TableId("d", "b"), 500, 2000), (TableId("d", "c"), 0, 3000)]
    out = render("shop", "incremental", rows, rate=100.0)
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines()[3:] if not line.startswith("-")}
    assert out.splitlines()[0] == "source shop: incremental snapshot, 100 rows/s"
    assert lines["d.a"] == ["1000", "1000", "100.0%"]
    assert lines["d.b"] == ["500", "2000", "25.0%", "15s"]  # 1500 rows at 100/s
    assert lines["d.c"] == ["0", "3000", "0.0%", "45s"]  # then 3000 more: 4500 rows
    assert lines["all"] == ["tables", "1500", "6000", "25.0%", "45s"]


def test_the_state_comes_from_the_resume_of_the_stream_tail():
    assert snapshot_state({"gtid_set": "0-1-5"}) is None
    assert snapshot_state({"gtid_set": "0-1-5", "snapshot": {"table": "d.a", "after": [7]}}) == \
        {"kind": "initial", "table": "d.a", "after": [7], "tables": None}
    inc = snapshot_state({"gtid_set": "0-1-5", "incremental": {"queue": ["d.c"], "table": "d.b", "after": None}})
    assert inc == {"kind": "incremental", "table": "d.b", "after": None,
                   "tables": [TableId("d", "b"), TableId("d", "c")]}
