"""The boundary scan's run path (BoundaryScanner._take: plain transactions taken without a call per record) ends
in exactly the state the record-by-record path (BoundaryScanner._boundary) ends in, on every stream: one
writer's, two writers interleaved, damaged ones, with producer retries (runs appended twice), other writer
epochs, records without a sequence and records that are not JSON, markers in bytes orjson reads but the C loop
(streaming/stream/_scan_native.c) does not vouch for; whatever fetch sizes split it into; with the C loop and
without it."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.stream import batches
from streaming.stream.batches import BoundaryScanner, _PartitionScan
from tests.unit.cdc.stream.structure_streams import damaged, interleaved, renumber, valid, write

Wire = tuple[bytes | None, bytes | None, int]  # (key bytes, value bytes, writer epoch) as the scan reads them


def _wire(records) -> list[Wire]:
    return [(orjson.dumps(k) if k is not None else None, orjson.dumps(v), 0) for k, v in records]


def _loads(v: bytes) -> dict | None:
    try:
        return orjson.loads(v)
    except orjson.JSONDecodeError:
        return None


def _state(scan: _PartitionScan) -> tuple:
    s = scan.structure
    check = None if s is None else (s.in_transaction, s.open_txid, s.open_offset, s.open_sequence, s.epoch,
                                    None if s.broken is None else str(s.broken))
    return (scan.scanned_to, scan.boundaries, scan.sizes, scan.size, scan.last_seq, scan.hole_ok, scan.broken_at,
            scan.last_real, check)


def _one_by_one(wire: list[Wire]) -> tuple:
    s = BoundaryScanner("127.0.0.1:9", "t", "json")
    scan = _PartitionScan(0, 0, [])
    for off, (k, v, e) in enumerate(wire):
        s._take_one(scan, off, k, v, e)
    return _state(scan)


def _in_runs(wire: list[Wire], cuts: list[int]) -> tuple:
    s = BoundaryScanner("127.0.0.1:9", "t", "json")
    scan = _PartitionScan(0, 0, [])
    at = 0
    for size in [*cuts, len(wire)]:
        part = wire[at:at + size]
        if part:
            s._take(scan, at, [k for k, _, _ in part], [v for _, v, _ in part], [e for _, _, e in part])
            at += len(part)
    return _state(scan)


def _field(v: bytes, name: bytes, to: bytes) -> bytes:
    """v with the value of its top-level field ``name`` (a string, number or null) written as ``to``."""
    at = v.find(b'"' + name + b'":')
    if at < 0:
        return v
    a = at + len(name) + 3
    b = a + 1
    if v[a:a + 1] == b'"':
        b = v.index(b'"', a + 1) + 1
    else:
        while b < len(v) and v[b:b + 1] not in (b",", b"}"):
            b += 1
    return v[:a] + to + v[b:]


# rewrites of a marker's bytes: each either valid JSON that reads the same or otherwise to orjson (duplicate
# keys: the last wins), or not JSON at all; the C loop must take exactly what the Python loop takes
MARKER_EDITS = (
    lambda v: v.replace(b",", b", ", 1),  # whitespace
    lambda v: v[:-1] + b' }',
    lambda v: v[:-1] + b',"status":"END"}',  # duplicate keys: orjson keeps the last
    lambda v: v[:-1] + b',"status":"BEGIN"}',
    lambda v: v[:-1] + b',"id":"other"}',
    lambda v: v[:-1] + b',"event_count":1}',
    lambda v: v[:-1] + b',"sequence":0}',
    lambda v: v.replace(b'"status"', b'"stat\\u0075s"', 1),  # an escaped key orjson reads as "status"
    lambda v: _field(v, b"id", b'"S-\\u0030"'),  # an escaped id
    lambda v: _field(v, b"id", '"S-\u00e9"'.encode()),  # a non-ASCII id
    lambda v: _field(v, b"id", b"null"),
    lambda v: _field(v, b"id", b"7"),
    lambda v: _field(v, b"event_count", b"1.0"),
    lambda v: _field(v, b"event_count", b"01"),
    lambda v: _field(v, b"event_count", b"1e0"),
    lambda v: _field(v, b"event_count", b"-0"),
    lambda v: _field(v, b"event_count", b"true"),
    lambda v: _field(v, b"event_count", b"123456789012345678901"),
    lambda v: _field(v, b"ts_ms", b"1.5"),
    lambda v: _field(v, b"ts_ms", b"99999999999999999999999"),
    lambda v: _field(v, b"ts_ms", b"NaN"),
    lambda v: _field(v, b"ts_ms", b'"\\n"'),
    lambda v: _field(v, b"ts_ms", b"[" * 40 + b"]" * 40),  # deep nesting
    lambda v: _field(v, b"ts_ms", b'{"a":[1,{"b":null}],"c":{}}'),
    lambda v: _field(v, b"ts_ms", b"[1,]"),
    lambda v: _field(v, b"ts_ms", b"tru"),
    lambda v: _field(v, b"status", b'"END\\u0000"'),
    lambda v: v + b"x",  # bytes after the object
    lambda v: v + b" ",
    lambda v: v.replace(b'{"sequence":', b'{"sequence":00', 1),  # the head: leading zeros, 19 digits
    lambda v: v.replace(b'{"sequence":', b'{"sequence":1000000000000000000', 1),
    lambda v: v.replace(b'"BEGIN"', b'"begin"').replace(b'"END"', b'"end"'),
    lambda v: v[:-1] + b',"id":null}',  # a duplicate id of another type
    lambda v: v[:-1] + b',"event_count":"1"}',
    lambda v: _field(v, b"id", b'"S-\\q"'),  # not JSON: a bad escape, a raw control character, not UTF-8
    lambda v: _field(v, b"ts_ms", b'"a\nb"'),
    lambda v: _field(v, b"ts_ms", b'"\xff"'),
    lambda v: _field(v, b"ts_ms", b"[" * 1100 + b"]" * 1100),  # deeper than orjson reads
)


@st.composite
def streams(draw) -> list[Wire]:
    kind = draw(st.sampled_from(("valid", "interleaved", "damaged", "small")))
    if kind == "valid":
        records = draw(valid())
    elif kind == "interleaved":
        records = draw(interleaved())[0]
    elif kind == "damaged":
        records = draw(damaged())[1]
    else:  # many one-row transactions: the run path's own shape
        sizes = draw(st.lists(st.integers(0, 3), min_size=1, max_size=10))
        records = write([("tx", [("c", "db.a", i, i)] * n) for i, n in enumerate(sizes)], 1, "S")
        rows = [i for i, (k, _v) in enumerate(records) if k is not None and "key" in k]
        if rows and draw(st.booleans()):  # a data record lost: an END whose event_count no longer holds
            del records[draw(st.sampled_from(rows))]
        records = renumber(records)
    wire = _wire(records)
    # writer epochs: one for all, or a change somewhere (a newer writer, an older one's late records)
    base = draw(st.sampled_from((0, 0, 1, 3)))
    epochs = [base] * len(wire)
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, max(0, len(wire) - 1)))
        to = draw(st.sampled_from((0, 1, 2, 5, -1)))
        span = draw(st.integers(1, 4))
        for j in range(at, min(len(wire), at + span) if draw(st.booleans()) else len(wire)):
            epochs[j] = to
    wire = [(k, v, e) for (k, v, _), e in zip(wire, epochs, strict=True)]
    # producer retries (a run appended twice), records without a sequence, values that are not JSON, tombstones
    changes = ("retry", "no-sequence", "garbage", "tombstone", "bad-count", "moved", "row-epoch", "collections",
               "marker-bytes", "marker-bytes")
    for how in draw(st.lists(st.sampled_from(changes), max_size=2)):
        if not wire:
            break
        at = draw(st.integers(0, len(wire) - 1))
        k, v, e = wire[at]
        if v is None or _loads(v) is None:  # an earlier change made it a tombstone or garbage already
            continue
        if how == "retry":
            n = draw(st.integers(1, 4))
            wire[at + n:at + n] = wire[at:at + n]
        elif how == "no-sequence":
            d = orjson.loads(v)
            d.pop("sequence", None)
            wire[at] = (k, orjson.dumps(d), e)
        elif how == "garbage":
            wire[at] = (k, v[: len(v) // 2], e)
        elif how == "tombstone":
            wire[at] = (k, None, e)
        elif how == "bad-count":  # an END's event_count or transaction id
            ends = [i for i, (_k, v2, _e) in enumerate(wire) if v2 and b'"END"' in v2]
            if ends:
                at = draw(st.sampled_from(ends))
                k, v, e = wire[at]
                d = _loads(v)
                if d is None:
                    continue
                field = draw(st.sampled_from(("event_count", "id")))
                d[field] = draw(st.sampled_from((None, "1", 0, 1, 99, True, "S-0")))
                wire[at] = (k, orjson.dumps(d), e)
        elif how == "row-epoch":  # one data record of another writer epoch than its transaction
            rows = [i for i, (k2, _v, _e) in enumerate(wire) if k2 and b'"key":' in k2]
            if rows:
                at = draw(st.sampled_from(rows))
                k, v, e = wire[at]
                wire[at] = (k, v, draw(st.sampled_from((0, 1, 2, -1))))
        elif how == "collections":  # an empty transaction's data_collections (the scan checks those)
            ends = [i for i, (_k, v2, _e) in enumerate(wire) if v2 and b'"END"' in v2 and b'"event_count":0' in v2]
            if ends:
                at = draw(st.sampled_from(ends))
                k, v, e = wire[at]
                d = _loads(v)
                if d is None:  # an earlier change made it something else than JSON
                    continue
                d["data_collections"] = draw(st.sampled_from(([], None, [{"data_collection": "db.a",
                                                                          "event_count": 1}])))
                wire[at] = (k, orjson.dumps(d), e)
        elif how == "marker-bytes":  # a marker (no key) rewritten in bytes the C loop may not vouch for
            marks = [i for i, (k2, v2, _e) in enumerate(wire) if k2 is None and v2 and _loads(v2) is not None]
            if marks:
                at = draw(st.sampled_from(marks))
                k, v, e = wire[at]
                wire[at] = (k, draw(st.sampled_from(MARKER_EDITS))(v), e)
        else:  # the sequence first no longer: the peek decodes the whole value
            d = orjson.loads(v)
            seq = d.pop("sequence", None)
            wire[at] = (k, orjson.dumps({**d, "sequence": seq}), e)
    return wire


@pytest.mark.parametrize("c_loop", [True, False], ids=["C loop", "Python loop"])
@settings(max_examples=1000, deadline=None)
@given(wire=streams(), data=st.data())
def test_runs_end_where_record_by_record_ends(c_loop, wire, data):
    cuts = data.draw(st.lists(st.integers(1, 7), max_size=6))
    assert batches._TAKE_PLAIN is not None, "streaming.stream._scan_native is not built (make setup)"
    with pytest.MonkeyPatch.context() as mp:
        if not c_loop:
            mp.setattr(batches, "_TAKE_PLAIN", None)
        assert _in_runs(wire, cuts) == _one_by_one(wire)


@pytest.mark.parametrize("edit", range(len(MARKER_EDITS)))
def test_every_marker_edit_at_every_marker_ends_where_record_by_record_ends(edit):
    """Each of MARKER_EDITS at each marker of plain one- and two-row transactions and heartbeats, the whole
    stream in one run: the C loop, the Python loop and record by record end in one state."""
    plain = _wire(write([("tx", [("c", "db.a", 0, 0)]), ("hb", []), ("tx", [("c", "db.a", 1, 1)] * 2),
                         ("tx", [("c", "db.a", 2, 2)]), ("hb", []), ("tx", [("c", "db.a", 3, 3)])], 1, "S"))
    for at in [i for i, (k, _v, _e) in enumerate(plain) if k is None]:
        k, v, e = plain[at]
        wire = [*plain[:at], (k, MARKER_EDITS[edit](v), e), *plain[at + 1:]]
        want = _one_by_one(wire)
        assert _in_runs(wire, []) == want, (at, wire[at])
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(batches, "_TAKE_PLAIN", None)
            assert _in_runs(wire, []) == want, (at, wire[at])


@pytest.mark.parametrize("head", [b'{"sequence":{n}x', b'{"sequence":{n}.5', b'{"sequence":{n} ', b'{"sequence": {n}',
                                  b'{"sequence":+{n}', b'{"sequence":0{n}', b'{"sequence":-{n}'])
def test_a_data_record_head_the_c_loop_does_not_vouch_for(head):
    plain = _wire(write([("tx", [("c", "db.a", i, i)] * 2) for i in range(3)], 1, "S"))
    for at in [i for i, (k, _v, _e) in enumerate(plain) if k is not None and b'"key":' in k]:
        k, v, e = plain[at]
        n = orjson.loads(v)["sequence"]
        edited = head.replace(b"{n}", str(n).encode()) + v[len(b'{"sequence":' + str(n).encode()):]
        wire = [*plain[:at], (k, edited, e), *plain[at + 1:]]
        want = _one_by_one(wire)
        assert _in_runs(wire, []) == want, (at, edited)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(batches, "_TAKE_PLAIN", None)
            assert _in_runs(wire, []) == want, (at, edited)


def test_the_c_loop_takes_plain_transactions_whole_and_stops_where_it_does_not_vouch():
    wire = _wire(write([("tx", [("c", "db.a", i, i)]) for i in range(4)], 1, "S"))
    keys, values, epochs = [k for k, _, _ in wire], [v for _, v, _ in wire], [e for _, _, e in wire]
    start = next(i for i, (k, v, _e) in enumerate(wire) if k is None and b'"BEGIN"' in v and i > 0)
    last = orjson.loads(values[start])["sequence"] - 1
    bounds, sizes = [], []
    taken, size, seq, real = batches._TAKE_PLAIN(keys, values, epochs, start, last, 0, 0, 100, bounds, sizes)
    assert taken == len(wire) and seq == last + len(wire) - start and real == 100 + len(wire)
    assert bounds == [100 + b for b in range(start + 3, len(wire) + 1, 3)] and size == sizes[-1]
    values[-1] = values[-1].replace(b",", b", ", 1)  # the last END in bytes it does not vouch for
    bounds, sizes = [], []
    taken, _size, seq, _real = batches._TAKE_PLAIN(keys, values, epochs, start, last, 0, 0, 100, bounds, sizes)
    assert taken == len(wire) - 3 and seq == last + taken - start and bounds[-1] == 100 + taken


def test_one_row_transactions_are_taken_whole_by_the_run_path():
    wire = _wire(write([("hb", [])] + [("tx", [("c", "db.a", i, i)]) for i in range(3)], 1, "S"))
    # the first transaction carries the table's definition (a SCHEMA): record by record; the rest are plain
    s = BoundaryScanner("127.0.0.1:9", "t", "json")
    scan = _PartitionScan(0, 0, [])
    calls = []
    record = s._boundary
    s._boundary = lambda *a: calls.append(a[1]) or record(*a)
    s._take(scan, 0, [k for k, _, _ in wire], [v for _, v, _ in wire], [e for _, _, e in wire])
    assert scan.boundaries == [1, 5, 8, 11] and scan.last_seq == 11
    assert scan.sizes == [sum(len(k or b"") + len(v) for k, v, _ in wire[:b]) for b in scan.boundaries]
    assert calls == [0, 1, 2, 3, 4]  # the heartbeat syncs the structure; the SCHEMA's transaction goes one by one
