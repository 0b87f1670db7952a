"""The engine's sequence rule (in-memory DuckDB): duplicates dropped anywhere, a gap never applied past."""

from __future__ import annotations

import dataclasses

import pytest

from streaming.errors import StreamCorrupt
from streaming.testing import StreamBuilder
from tests.unit.streaming.apply.test_engine import _base, _engine, _rows


def _three_tx() -> StreamBuilder:
    b = _base()
    for i in range(3):
        b.tx(("c", "shop.items", None, {"sku": i, "qty": i}), ("u", "shop.items", {"sku": i, "qty": i},
                                                                 {"sku": i, "qty": 10 + i}))
    return b


def test_a_duplicated_end_inside_the_next_transaction_and_a_duplicated_run_apply_once():
    b = _three_tx()
    recs = b.as_records()
    kinds = [r.kind for r in recs]
    first_end = kinds.index("END")
    dup_end = recs[first_end]
    # END of tx 1 appended again after the BEGIN of tx 2; then tx 3 (BEGIN..END) appended twice
    second_end = kinds.index("END", first_end + 1)
    tx3 = recs[second_end + 1:]
    stream = recs[:first_end + 2] + [dup_end] + recs[first_end + 2:] + tx3
    stream = [dataclasses.replace(r, offset=off) for off, r in enumerate(stream)]
    e = _engine()
    res = e.apply_records(stream, 0)
    assert res.transactions == 3 and _rows(e, "items") == [(0, 10), (1, 11), (2, 12)]
    assert e.target.read_progress("src").last_sequence == b.seq - 1


def test_a_gap_inside_a_batch_stops_before_anything_is_written():
    b = _three_tx()
    e = _engine()
    recs = b.as_records()
    e.apply_records(recs[:6], 0)  # schemas + tx 1
    before = e.target.read_progress("src")
    rest = recs[6:7] + recs[9:]  # BEGIN of tx 2, then 2 records lost
    with pytest.raises(StreamCorrupt, match=r"sequence 8\.\.9 missing in cdc\.src\.changes\[0\] after offset 6"):
        e.topic = "cdc.src.changes"
        e.apply_records(rest, 1)
    assert e.target.read_progress("src") == before and _rows(e, "items") == [(0, 10)]


def test_a_gap_between_the_progress_row_and_the_next_batch_is_refused():
    b = _three_tx()
    e = _engine()
    recs = b.as_records()
    e.apply_records(recs[:6], 0, {"next": {"0": 6}, "topic": "t"})
    with pytest.raises(StreamCorrupt, match=r"sequence 7\.\.10 missing in .*\[0\] after offset 5.*stays at sequence 6"):
        e.apply_records(recs[10:], 1)
    assert e.target.read_progress("src").last_sequence == 6


def test_an_empty_target_starts_at_the_beginning_of_the_stream():
    recs = _three_tx().as_records()
    e = _engine()
    with pytest.raises(StreamCorrupt, match=r"first record for the empty target 'duck' has sequence 7 .*1\.\.6"):
        e.apply_records(recs[6:], 0)
    assert e.target.read_progress("src") is None


def test_a_batch_of_duplicates_past_the_progress_offsets_moves_the_offsets_on():
    recs = _three_tx().as_records()
    e = _engine()
    e.apply_records(recs[:6], 0, {"next": {"0": 6}, "topic": "t"})
    dups = [dataclasses.replace(r, offset=6 + i) for i, r in enumerate(recs[2:6])]  # tx 1 appended again
    res = e.apply_records(dups, 1, {"next": {"0": 10}, "topic": "t"})
    prog = e.target.read_progress("src")
    assert res.skipped and prog.last_sequence == 6 and prog.next_offsets["next"] == {"0": 10}
    assert e.apply_records(dups, 1, {"next": {"0": 10}, "topic": "t"}).skipped  # a replay of it: no write
    assert e.target.read_progress("src") == prog
