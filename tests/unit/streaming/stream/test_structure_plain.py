"""The whole-column shortcut of the structure check (streaming.stream.structure._plain_whole) and of the engine's
walk (ApplyEngine._plain_walk) only ever agree with the record-by-record way: on valid, damaged and interleaved
streams without SCHEMA or ABORTED records (the shape the shortcut takes), with writer epochs that keep or break
the epoch rules, :func:`first_violation` says the same with and without it; with the END markers read by the C
loop (streaming/stream/_scan_native.c ends_vouched) and without it, also on END values rewritten in bytes orjson
reads but the C loop does not vouch for."""

from __future__ import annotations

import dataclasses

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.stream import envelope
from streaming.stream import structure
from streaming.stream.records import Batch, StreamRecord, to_row
from streaming.testing import _Json
from tests.unit.cdc.stream.structure_streams import damaged, interleaved, renumber, valid

TOPIC = "cdc.src.changes"


def _plain_only(recs) -> list:
    """The records without SCHEMA and ABORTED ones (and the rows of aborted transactions), renumbered."""
    aborted = {v["id"] for _k, v in recs if v.get("status") == envelope.ABORTED}
    keep = [(k, v) for k, v in recs if v.get("status") not in (envelope.SCHEMA, envelope.ABORTED)
            and not (v.get("status") is None and v["transaction"]["id"] in aborted)
            and not (v.get("status") == envelope.BEGIN and v["id"] in aborted)]
    return renumber(keep)


def _batch(recs, epochs) -> Batch:
    return _batch_bytes([(orjson.dumps(k) if k is not None else None, orjson.dumps(v)) for k, v in recs], epochs)


def _batch_bytes(wire, epochs=None) -> Batch:
    j = _Json()
    rows = [StreamRecord(*to_row(0, i, k, v, j, j)) for i, (k, v) in enumerate(wire)]
    if epochs is not None:
        rows = [dataclasses.replace(r, epoch=e) for r, e in zip(rows, epochs)]
    return Batch.from_records(rows)


def _both(batch: Batch, last: int | None, epoch: int, monkeypatch) -> tuple:
    fast = structure.first_violation(batch, last, TOPIC, epoch)
    with monkeypatch.context() as m:
        m.setattr(structure, "_plain_whole", lambda *a, **k: False)
        slow = structure.first_violation(batch, last, TOPIC, epoch)
    key = (lambda r: None if r is None else (r[0], r[1].fields.get("offset"), str(r[1])))
    return key(fast), key(slow)


streams = st.one_of(valid(), damaged().map(lambda c: c[1]), interleaved().map(lambda c: c[0]))
epochs = st.one_of(st.none(), st.lists(st.sampled_from((0, 2, 3, 3, 3)), min_size=60, max_size=60))


@pytest.mark.parametrize("c_loop", [True, False], ids=["C loop", "Python loop"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
          derandomize=True)
@given(streams, epochs, st.sampled_from((0, 3)), st.integers(0, 3))
def test_the_shortcut_agrees_with_the_record_by_record_check(monkeypatch, c_loop, recs, marks, floor, skip):
    assert structure._ENDS_VOUCHED is not None, "streaming.stream._scan_native is not built (make setup)"
    recs = _plain_only(recs)
    if not recs:
        return
    marks = None if marks is None else (marks * (len(recs) // len(marks) + 1))[:len(recs)]
    batch = _batch(recs, marks)
    with monkeypatch.context() as m:
        if not c_loop:
            m.setattr(structure, "_ENDS_VOUCHED", None)
        fast, slow = _both(batch, skip or None, floor, monkeypatch)
    assert fast == slow


# END values rewritten in bytes: each still JSON that orjson reads (duplicate keys: the last wins), the same or
# otherwise; the C loop must vouch for none that the record-by-record check refuses
END_EDITS = (
    lambda v: v.replace(b",", b", ", 1),
    lambda v: v[:-1] + b',"event_count":2}',
    lambda v: v[:-1] + b',"event_count":1}',
    lambda v: v[:-1] + b',"data_collections":[]}',
    lambda v: v[:-1] + b',"data_collections":null}',
    lambda v: v.replace(b'"event_count":1,"data_collections"', b'"event_co\\u0075nt":1,"data_collections"', 1),
    lambda v: v.replace(b'"event_count":1,"data_collections"', b'"event_count":1,"event_count":2,"data_collections"'),
    lambda v: v.replace(b'{"data_collection":"db.a","event_count":1}',
                        b'{"data_collection":"db.a","event_count":1,"data_collection":"db.b"}'),
    lambda v: v.replace(b'{"data_collection":"db.a","event_count":1}',
                        b'{"data_collection":"db.a","event_count":1,"event_count":2}'),
    lambda v: v.replace(b'{"data_collection":"db.a","event_count":1}',
                        b'{"data_collection":"db.a","event_count":1,"x":[{"event_count":5}]}'),
    lambda v: v.replace(b'{"data_collection":"db.a"', b'{"data_collection":"db.\\u0061"', 1),
    lambda v: v.replace(b'"data_collection":"db.a","event_count":1', b'"event_count":1,"data_collection":"db.a"'),
    lambda v: v.replace(b'"event_count":1,"data_collections"', b'"event_count":1.0,"data_collections"', 1),
    lambda v: v.replace(b'"event_count":1,"data_collections"', b'"event_count":true,"data_collections"', 1),
    lambda v: v.replace(b'"data_collection":"db.a","event_count":1}', b'"data_collection":"db.a","event_count":1.0}'),
    lambda v: v.replace(b'"data_collection":"db.a","event_count":1}', b'"data_collection":"db.a","event_count":-1}'),
    lambda v: v.replace(b'[{"data_collection"', b'[{"data_collection":"db.a","event_count":0},{"data_collection"', 1),
    lambda v: v.replace(b'"ts_ms":', b'"x":[[{"a":"\\u00e9"}]],"ts_ms":', 1),
    lambda v: v.replace(b'"ts_ms":', b'"x":123456789012345678901,"ts_ms":', 1),
    lambda v: v.replace(b'"ts_ms":', b'"x":' + b"[" * 40 + b"]" * 40 + b',"ts_ms":', 1),
)


@pytest.mark.parametrize("edit", range(len(END_EDITS)))
def test_an_end_in_other_bytes_is_decided_as_record_by_record(monkeypatch, edit):
    from tests.unit.cdc.stream.structure_streams import write

    recs = renumber(write([("tx", [("c", "db.a", 1, 1)]), ("hb", []), ("tx", [("u", "db.a", 1, 2)])], 1, "A",
                          {"db.a"}))
    wire = [(orjson.dumps(k) if k is not None else None, orjson.dumps(v)) for k, v in recs]
    ends = [i for i, (k, v) in enumerate(wire) if k is None and b'"END"' in v]
    assert ends and all(b'"data_collections":[{"data_collection":"db.a","event_count":1}]' in wire[i][1] for i in ends)
    for at in ends:
        edited = END_EDITS[edit](wire[at][1])
        orjson.loads(edited)  # still JSON: the check reads it
        batch = _batch_bytes([*wire[:at], (None, edited), *wire[at + 1:]])
        assert batch.n == len(wire)
        fast, slow = _both(batch, None, 0, monkeypatch)
        assert fast == slow, (at, edited)
        with monkeypatch.context() as m:
            m.setattr(structure, "_ENDS_VOUCHED", None)
            assert _both(batch, None, 0, monkeypatch) == (fast, slow), (at, edited)


def test_plain_transactions_take_the_shortcut_and_a_wrong_event_count_does_not(monkeypatch):
    from tests.unit.cdc.stream.structure_streams import write

    recs = renumber(write([("tx", [("c", "db.a", 1, 1), ("c", "db.b", 2, 2)]), ("hb", []),
                           ("tx", [("u", "db.a", 1, 3)])], 1, "A", {"db.a", "db.b"}))
    assert structure._plain_whole(*_parts(_batch(recs, None)), 0)
    assert structure.first_violation(_batch(recs, None), None, TOPIC) is None
    bad = [(k, {**v, "event_count": 1}) if v.get("status") == envelope.END else (k, v) for k, v in recs]
    assert not structure._plain_whole(*_parts(_batch(bad, None)), 0)
    cut, err = structure.first_violation(_batch(bad, None), None, TOPIC)
    assert cut == 0 and "event_count" in str(err)


def _parts(batch: Batch):
    """(batch, stops, runs) as first_violation hands them to _plain_whole (every record new, no gap)."""
    import numpy as np

    stops = np.flatnonzero(~batch.is_data)
    data = np.flatnonzero(batch.is_data)
    names, codes = batch.table_index()
    width = len(names) + 1
    keys, counts = np.unique(np.searchsorted(stops, data).astype(np.int64) * width + codes[data], return_counts=True)
    return batch, stops, structure._RunCounts(names, keys // width, keys % width, counts)


@pytest.mark.parametrize("end", [
    {"event_count": 2},  # the count, not the data collection
    {"data_collections": [{"data_collection": "db.a", "event_count": 2}]},  # the data collection, not the count
    {"data_collections": [{"data_collection": "db.b", "event_count": 1}]},  # another table
    {"data_collections": [{"data_collection": "db.a", "event_count": True}]},
    {"event_count": True},
    {"data_collections": [{"data_collection": "db.a", "event_count": 1}, {"data_collection": "db.a",
                                                                          "event_count": 1}]},
    {"data_collections": ["db.a"]},
])
def test_a_one_table_transaction_whose_end_says_otherwise_is_not_plain(monkeypatch, end):
    from tests.unit.cdc.stream.structure_streams import write

    recs = renumber(write([("tx", [("c", "db.a", 1, 1)]), ("tx", [("u", "db.a", 1, 2)])], 1, "A", {"db.a"}))
    good = _batch(recs, None)
    assert structure._plain_whole(*_parts(good), 0)
    bad = [(k, {**v, **end}) if v.get("status") == envelope.END and v["id"] == "A-1" else (k, v) for k, v in recs]
    assert not structure._plain_whole(*_parts(_batch(bad, None)), 0)
    fast, slow = _both(_batch(bad, None), None, 0, monkeypatch)
    assert fast == slow and fast is not None and fast[0] == 3  # the second transaction, from its BEGIN
