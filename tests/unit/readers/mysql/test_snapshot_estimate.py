"""The snapshot's progress line: a stale row estimate never shows above 100 %, and says it is one."""

from __future__ import annotations

from cdc.progress_bar import Progress
from readers.mysql.snapshot import advance_within_estimate


def test_rows_past_a_stale_estimate_drop_the_total_instead_of_passing_100_percent():
    bar = Progress(2, "source s: snapshot rows (total estimated)")  # TABLE_ROWS said 2, the table has 200
    advance_within_estimate(bar, 1)
    assert "1/2 (50.0%)" in bar.line() and "estimated" in bar.line()
    lines = []
    for _ in range(199):
        advance_within_estimate(bar, 1)
        lines.append(bar.line())
    assert not any(f"({p:.1f}%)" in ln for ln in lines for p in (150.0, 200.0, 10000.0))
    line = bar.line()
    assert bar.completed == 200 and bar.total is None
    assert "10000" not in line and "%" not in line and "estimate exceeded" in line and ": 200 " in line


def test_within_the_estimate_the_percentage_stays():
    bar = Progress(100, "x (total estimated)")
    advance_within_estimate(bar, 100)
    assert "100/100 (100.0%)" in bar.line()
