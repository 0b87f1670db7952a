"""The apply engine holds each batch to the stream's structure (in-memory DuckDB): what it writes is always what
the consumer library hands out of the same records, never part of a damaged or mixed transaction, and its
progress row stops before the transaction a violation breaks."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings

from cdc.config.models import ApplyConfig, TargetConfig
from cdc.schema.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.errors import StreamCorrupt
from streaming.stream.records import StreamRecord, to_row
from streaming.targets.duckdb.target import DuckDbTarget
from streaming.testing import _Json
from tests.unit.cdc.stream.structure_streams import TABLES, consume, damaged, interleaved, valid, write

TOPIC = "cdc.src.changes"


def _engine() -> ApplyEngine:
    t = DuckDbTarget(TargetConfig(name="duck", kind="duckdb", path=":memory:"))
    e = ApplyEngine("src", t, TableMap.from_config(ApplyConfig(source="src", target="duck"))).start()
    e.topic = TOPIC
    return e


def _records(recs) -> list[StreamRecord]:
    import orjson

    j = _Json()
    return [StreamRecord(*to_row(0, i, orjson.dumps(k) if k is not None else None, orjson.dumps(v), j, j))
            for i, (k, v) in enumerate(recs)]


def _state(e: ApplyEngine) -> dict[str, dict[int, int]]:
    out = {}
    for t in TABLES:
        name = t.split(".")[1]
        have = e.target.execute("SELECT table_name FROM information_schema.tables WHERE table_name = ?",
                                [name]).fetchall()
        out[t] = dict(e.target.execute(f"SELECT id, v FROM {name}").fetchall()) if have else {}
    return out


def _apply(recs, split: int | None = None) -> tuple[ApplyEngine, StreamCorrupt | None]:
    """Apply ``recs`` as one batch (or two, cut at ``split``); the StreamCorrupt it stopped on, if any."""
    e = _engine()
    rows = _records(recs)
    batches = [] if not rows else [rows] if split is None else [rows[:split], rows[split:]]
    try:
        for i, b in enumerate(batches):
            e.apply_records(b, i, {"next": {"0": b[-1].offset + 1}, "topic": TOPIC} if b else None)
    except StreamCorrupt as exc:
        return e, exc
    return e, None


def _same_as_the_consumer(recs, e: ApplyEngine, err: StreamCorrupt | None) -> None:
    out, c_err, _ = consume(recs)
    if err is not None and "ends inside a transaction" in str(err):
        return  # a batch cut inside a transaction (the boundary scan never cuts one): nothing of it written
    # the same target as the records up to the END of the last transaction handed out, applied alone
    reference, ref_err = _apply(recs[:out[-1].end_offset + 1] if out else [])
    assert ref_err is None and _state(e) == _state(reference)
    assert (err is None) == (c_err is None), (err, c_err)
    if err is not None:
        assert (err.fields.get("offset"), err.fields.get("sequence")) == (c_err.offset, c_err.sequence)
        progress = e.target.read_progress("src")
        applied = progress.last_sequence if progress else 0
        assert not out or applied >= out[-1].sequence  # every transaction handed out is applied...
        assert applied < err.fields["sequence"]  # ...and nothing at or past the violation
        if progress is not None and progress.next_offsets:
            assert int(progress.next_offsets["next"]["0"]) <= err.fields["offset"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(valid())
def test_a_valid_stream_is_applied_whole(recs):
    e, err = _apply(recs)
    assert err is None
    _same_as_the_consumer(recs, e, err)
    assert e.target.read_progress("src").last_sequence == recs[-1][1]["sequence"]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(damaged())
def test_a_damaged_stream_stops_before_the_damaged_transaction(case):
    _original, recs, at, how = case
    e, err = _apply(recs)
    assert err is not None, f"{how} not refused"
    assert err.fields["offset"] >= at
    _same_as_the_consumer(recs, e, err)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(interleaved())
def test_two_writers_from_one_tail_apply_only_what_the_consumer_hands_out(case):
    merged, _writers = case
    e, err = _apply(merged)
    _same_as_the_consumer(merged, e, err)


@pytest.mark.parametrize("split", [False, True])
def test_rows_of_the_other_daemon_inside_a_transaction_stop_the_apply_after_the_good_ones(split):
    """One writer's BEGIN, then (after the other's duplicates are dropped) the other's rows: nothing of that
    transaction is written, the transactions before it are, with the progress row at their END."""
    tail = write([("tx", [("c", "db.a", 1, 1)]), ("tx", [("c", "db.b", 2, 2)])], 1, "P")
    n = len(tail)  # BEGIN, table definition, row, END, twice
    a = write([("tx", [("c", "db.a", 3, 3), ("c", "db.a", 4, 4)])], n + 1, "A", {"db.a", "db.b"})
    b = write([("hb", []), ("tx", [("u", "db.a", 1, 9), ("c", "db.a", 5, 5)])], n + 1, "B", {"db.a", "db.b"})
    merged = tail + [a[0], b[0], a[1], b[2], a[2], b[1], a[3], b[3], b[4]]
    e, err = _apply(merged, n if split else None)
    assert err is not None and err.fields["offset"] == n + 3 and err.fields["sequence"] == n + 3
    assert f"a data record of db.a of transaction 'B-0' at offset {n + 3}, sequence {n + 3}" in str(err)
    assert f"transaction 'A-0' (BEGIN at offset {n}, sequence {n + 1}) is not applied" in str(err)
    assert _state(e) == {"db.a": {1: 1}, "db.b": {2: 2}}
    progress = e.target.read_progress("src")
    assert progress.last_sequence == n and progress.next_offsets["next"] == {"0": n}


def test_a_batch_of_duplicates_and_a_record_out_of_its_place_names_the_record():
    recs = write([("tx", [("c", "db.a", 1, 1), ("c", "db.a", 2, 2)])], 1, "P")
    rows = _records(recs)
    rows[3] = dataclasses.replace(rows[3], torder=1)  # the second row says it is the first
    e = _engine()
    with pytest.raises(StreamCorrupt, match=r"with total_order 1 at offset 3, sequence 4, where the stream's "
                                            r"structure expects the data record 2 of transaction 'P-0'"):
        e.apply_records(rows, 0)
    assert e.target.read_progress("src") is None


def _epoch_records(recs, epochs) -> list[StreamRecord]:
    return [dataclasses.replace(r, epoch=e) for r, e in zip(_records(recs), epochs, strict=True)]


@pytest.mark.parametrize("split", [None, 4])
def test_an_older_writers_transaction_after_a_newer_ones_is_not_applied(split):
    """A writer of epoch 9 commits one transaction; records of a writer of epoch 4, renumbered to fit the sequence
    rule, follow: the engine stops at them (naming both epochs) with the first transaction applied."""
    from tests.unit.cdc.stream.structure_streams import renumber

    recs = renumber(write([("tx", [("c", "db.a", 1, 1)])], 1, "B") + write([("tx", [("c", "db.a", 2, 2)])], 1, "A",
                                                                           {"db.a"}))
    rows = _epoch_records(recs, [9] * 4 + [4] * (len(recs) - 4))  # B: BEGIN, table definition, row, END
    e = _engine()
    batches = [rows] if split is None else [rows[:split], rows[split:]]
    with pytest.raises(StreamCorrupt) as info:
        for i, b in enumerate(batches):
            e.apply_records(b, i, {"next": {"0": b[-1].offset + 1}, "topic": TOPIC})
    assert info.value.fields["offset"] == 4 and info.value.fields["sequence"] == 5
    assert "with epoch 4" in str(info.value) and "epoch 9 or higher" in str(info.value)
    assert _state(e)["db.a"] == {1: 1} and e.target.read_progress("src").last_sequence == 4


def test_a_row_of_another_writer_inside_a_transaction_is_not_applied():
    recs = write([("tx", [("c", "db.a", 1, 1), ("c", "db.a", 2, 2)]), ("tx", [("c", "db.a", 3, 3)])], 1, "A")
    epochs = [5] * len(recs)
    epochs[3] = 6  # the second row of the first transaction (BEGIN, table definition, row, row, END, ...)
    e = _engine()
    with pytest.raises(StreamCorrupt) as info:
        e.apply_records(_epoch_records(recs, epochs), 0, {"next": {"0": len(recs)}, "topic": TOPIC})
    assert info.value.fields["offset"] == 3 and "a data record of db.a with epoch 6" in str(info.value)
    assert _state(e)["db.a"] == {} and e.target.read_progress("src") is None
