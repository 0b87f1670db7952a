"""cdc_apply_lag_records comes from a query's progress: the source's latestOffset minus its endOffset."""

from __future__ import annotations

from streaming.apply.job import records_behind


def _progress(end, latest) -> dict:
    return {"sources": [{"description": "cdc-stream", "endOffset": end, "latestOffset": latest}]}


def test_records_behind_is_latest_minus_end_per_partition():
    # Spark hands offsets as JSON text or as dicts; a partition the last batch did not name counts 0 (no start)
    end = '{"next": {"0": 100}, "topic": "t"}'
    assert records_behind(_progress(end, {"next": {"0": 130}, "topic": "t"})) == 30
    assert records_behind(_progress(end, '{"next": {"0": 100}, "topic": "t"}')) == 0
    assert records_behind(_progress({"next": {"0": 5}}, {"next": {"0": 5, "1": 7}})) == 0


def test_no_figure_when_the_progress_says_nothing():
    assert records_behind(None) is None
    assert records_behind({"sources": []}) is None
    assert records_behind(_progress(None, None)) is None  # before the first batch; or no scan reported yet
