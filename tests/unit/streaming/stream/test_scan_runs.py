"""The boundary scan's run path (BoundaryScanner._take: plain transactions taken without a call per record) ends
in exactly the state the record-by-record path (BoundaryScanner._boundary) ends in, on every stream: one
writer's, two writers interleaved, damaged ones, with producer retries (runs appended twice), other writer
epochs, records without a sequence and records that are not JSON; whatever fetch sizes split it into."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

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
    changes = ("retry", "no-sequence", "garbage", "tombstone", "bad-count", "moved", "row-epoch", "collections")
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
                d = orjson.loads(v)
                d["data_collections"] = draw(st.sampled_from(([], None, [{"data_collection": "db.a",
                                                                          "event_count": 1}])))
                wire[at] = (k, orjson.dumps(d), e)
        else:  # the sequence first no longer: the peek decodes the whole value
            d = orjson.loads(v)
            seq = d.pop("sequence", None)
            wire[at] = (k, orjson.dumps({**d, "sequence": seq}), e)
    return wire


@settings(max_examples=1000, deadline=None)
@given(wire=streams(), data=st.data())
def test_runs_end_where_record_by_record_ends(wire, data):
    cuts = data.draw(st.lists(st.integers(1, 7), max_size=6))
    assert _in_runs(wire, cuts) == _one_by_one(wire)


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
