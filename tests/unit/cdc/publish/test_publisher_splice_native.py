"""The C splice of data records (cdc/publish/_splice_native.c) against the publisher's Python splice: over
generated ChangeBatches (several tables, ops, sizes around the record limit, odd rows the C loop leaves to
Python, a table's schema changing inside the batch) both paths produce the same records, byte for byte, with
the same headers, sequences, counters and END record. Without the compiled module the comparison holds
trivially; ``test_the_compiled_module_loads`` fails when a ``_splice_native*.so`` was built but does not load."""

from __future__ import annotations

import importlib
import random
import re
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import orjson
import pytest

from cdc.publish import publisher as publisher_module
from cdc.stream.events import Begin, Change, ChangeBatch, Column, Commit, Heartbeat, TableId, TableSchema
from tests.unit.cdc.publish.fakes import publisher

A, B = TableId("shop", "orders"), TableId("s\"q", "t\u00e9")
SA = TableSchema(A, (Column("id", "int", False), Column("v", "varchar(9)")), ("id",))
SA2 = TableSchema(A, (Column("id", "int", False), Column("v", "varchar(9)"), Column("w", "int")), ("id",))
SB = TableSchema(B, (Column("oid", "int", False), Column("n", "int", False)), ("oid", "n"))
SN = TableSchema(B, (Column("oid", "int", False),), ())


def _row(rng: random.Random, op: str, i: int) -> tuple:
    text = rng.choice(["a", "é\"\\\n\u2028", "x" * rng.choice([1, 50, 300, 700]), "\x00\x7f"])
    image = orjson.dumps({"id": i, "v": text, "f": rng.choice([1.5, -0.0, 1e300, None])})
    before = image if op in ("u", "d") else b"null"
    after = image if op in ("c", "u", "r") else b"null"
    source = b"," + orjson.dumps({"gtid": f"0-1-{i}", "pos": rng.randrange(1 << 40), "row": i})[1:] \
        if rng.random() < 0.9 else b"}"
    return (op, orjson.dumps(i), before, after, source)


def _batches(seed: int) -> list[ChangeBatch]:
    rng = random.Random(seed)
    knowns = [(A, SA), (A, SA2), (B, SB), (B, SN), (A, None)]
    out = []
    for _ in range(rng.randint(1, 4)):
        tables, rows = [], []
        known = rng.choice(knowns)
        for i in range(rng.randint(1, 40)):
            if rng.random() < 0.1:
                known = rng.choice(knowns)
            tables.append(known)
            r = rng.random()
            if r < 0.03:  # a part that is not bytes: the Python path formats it (bytearray) the same way
                row = _row(rng, "c", i)
                row = (row[0], bytearray(row[1]), *row[2:])
            elif r < 0.05:  # a row image from an older reader as a list, not a tuple
                row = list(_row(rng, "u", i))
            else:
                row = _row(rng, rng.choice("cuudrt"), i)
            rows.append(row if type(row) is tuple else tuple(row) if rng.random() < 0.5 else row)
        out.append(ChangeBatch(tables, rows))
    return out


def _run(native: bool, batches: list[ChangeBatch], limit: int) -> tuple:
    publisher_module._NATIVE_OFF = not native
    try:
        pub, fake, _ = publisher(dead_letter_topic="dlq")
        pub._record_limit = limit
        pub.publish(Begin("t\"1", 1000))
        for b in batches:
            pub.publish(b)
        pub.publish(Commit("t\"1", 1001, {"gtid": "0-1-9"}, {"file": "f", "pos": 4}))
    finally:
        publisher_module._NATIVE_OFF = False
    records = [(t, k, v if v is None else re.sub(rb'"ts_ms":\d{13}', b'"ts_ms":0', v)) for t, v, k in fake.records]
    dead = [(t, re.sub(rb'"ts_ms":\d{13}', b'"ts_ms":0', v)) for t, v, _ in fake.records if t == "dlq"]
    return records, fake.headers, pub.next_sequence, pub._bytes, dead


@pytest.mark.parametrize("seed", range(60))
def test_the_c_splice_writes_the_records_of_the_python_splice(seed):
    batches = _batches(seed)
    limit = random.Random(seed).choice([1 << 40, 900, 1200])  # some rows above it: dead-lettered on both paths
    native, python = _run(True, batches, limit), _run(False, batches, limit)
    assert native[0] == python[0]  # records (topic, key, value), in order, END included
    assert native[1:] == python[1:]  # headers per record, next sequence, value bytes, dead letters
    assert any(b'"op"' in (v or b"") for _, _, v in native[0])


def test_an_unknown_op_fails_on_both_paths_after_the_same_records():
    batch = ChangeBatch([(A, SA)] * 3, [_row(random.Random(1), "c", 1), ("x", b"1", b"null", b"{}", b"}"),
                                         _row(random.Random(2), "c", 2)])
    outs = []
    for native in (True, False):
        publisher_module._NATIVE_OFF = not native
        try:
            pub, fake, _ = publisher()
            pub.publish(Begin("t", 1000))
            with pytest.raises(KeyError):
                pub.publish(batch)
        finally:
            publisher_module._NATIVE_OFF = False
        outs.append([(t, k, re.sub(rb'"ts_ms":\d{13}', b'"ts_ms":0', v)) for t, v, k in fake.records])
    # the source stops on both; the C loop had queued the row before the bad one (BEGIN, SCHEMA, row), the
    # Python splice had not yet handed it over: either way a prefix of the transaction, never a row after it
    assert outs[1] == outs[0][:2] and len(outs[0]) == (3 if publisher_module._native is not None else 2)


def test_the_compiled_module_loads():
    here = Path(publisher_module.__file__).parent
    built = sorted({p for suffix in (".so", ".pyd", *EXTENSION_SUFFIXES) for p in here.glob(f"_splice_native*{suffix}")})
    if not built:
        pytest.skip("cdc/publish/_splice_native.c not compiled here: the Python splice makes every record")
    assert publisher_module._native is not None, importlib.import_module("cdc.publish._splice_native")
    assert publisher_module._SPLICE_TX is not None, "the compiled splice predates splice_tx: rebuild (make venv)"


def _small_transactions(seed: int) -> list:
    """Reader events of many small transactions, mostly the shape the publisher sends in one call (Begin, one
    ChangeBatch of one table, Commit), mixed with every shape that must leave that path: several tables or
    batches, a Change, more than HOLD_ROWS rows, a row above the limit or one the C loop leaves to Python, a
    table seen first (its SCHEMA record), heartbeats, another txid at Commit (the stop), a flush between."""
    rng = random.Random(seed)
    knowns = [(A, SA), (A, SA2), (B, SB), (B, SN)]
    out: list = []
    for t in range(rng.randint(5, 30)):
        txid = f"0-1-{seed}-{t}"
        out.append(Begin(txid, 1000 + t))
        if rng.random() < 0.1:
            out.append("flush")
        for _ in range(1 if rng.random() < 0.8 else rng.randint(2, 3)):
            r = rng.random()
            known = rng.choice(knowns)
            nrows = 1 if r < 0.6 else rng.randint(2, 5) if r < 0.9 else rng.choice([64, 65, 100])
            tables, rows = [], []
            for i in range(nrows):
                if rng.random() < 0.05:
                    known = rng.choice(knowns)
                tables.append(known)
                rows.append(_row(rng, rng.choice("cuud"), i) if rng.random() < 0.97
                            else ("c", bytearray(b"1"), b"null", b"{}", b"}"))
            out.append(ChangeBatch(tables, rows))
            if rng.random() < 0.05:
                out.append(Change(A, "u", {"id": 1, "v": "a"}, {"id": 1, "v": "b"}, {"row": 9}, SA))
        out.append(Commit(txid, 2000 + t, {"gtid_set": f"0-1-{t}"}, {"gtid": txid, "file": "f", "pos": t}))
        if rng.random() < 0.1:
            out.append(Heartbeat(3000 + t, {"gtid_set": f"0-1-{t}"}))
    return out


def _run_events(native: bool, events: list, limit: int) -> tuple:
    publisher_module._NATIVE_OFF = not native
    try:
        pub, fake, metrics = publisher(dead_letter_topic="dlq")
        pub._record_limit = limit
        for ev in events:
            if ev == "flush":
                pub.flush()
            else:
                pub.publish(ev)
        pub.flush()
    finally:
        publisher_module._NATIVE_OFF = False
    records = [(t, k, v if v is None else re.sub(rb'"ts_ms":\d{13}', b'"ts_ms":0', v)) for t, v, k in fake.records]
    marks = [(index, kind, nbytes, seq) for index, kind, _, _, nbytes, seq in pub._acks.pending]
    return records, fake.headers, pub.next_sequence, pub._bytes, marks, pub._tx is None, _published(metrics)


def _published(metrics) -> dict:
    """Row changes acknowledged per (table, op), as the metrics count them from the ENDs' per-op counters."""
    return {(s.labels["table"], s.labels["op"]): s.value for m in metrics.registry.collect()
            for s in m.samples if s.name == "cdc_source_events_published_total"}


@pytest.mark.parametrize("seed", range(40))
def test_small_transactions_in_one_call_write_the_records_of_the_python_path(seed):
    """Publisher._commit_held (BEGIN, rows and END by splice_tx) against the Python path, which produces every
    record on its own: same records in the same order, same headers, sequences, value bytes, and the same
    acknowledgement marks (END at the same produced index, sequence and byte count), the same row changes per
    table and op in the metrics."""
    events = _small_transactions(seed)
    limit = random.Random(seed).choice([1 << 40, 1 << 40, 900])
    native, python = _run_events(True, events, limit), _run_events(False, events, limit)
    assert native[0] == python[0]
    assert native[1:] == python[1:]
    assert sum(native[-1].values()) > 0
    assert sum(1 for _, _, v in native[0] if v and b'"status":"END"' in v) == sum(isinstance(e, Commit) for e in events)


def test_a_held_begin_is_produced_before_anything_else_of_the_stream():
    """A BEGIN waiting for its rows goes out before a record that follows it in the stream (a SCHEMA record of a
    table first seen, a row the hold does not take), and at flush(); close() leaves an open transaction unwritten
    (a BEGIN without END would be closed with ABORTED at the next recovery: nothing is lost either way)."""
    if publisher_module._SPLICE_TX is None:
        pytest.skip("no C splice: nothing is held")
    pub, fake, _ = publisher()
    pub.publish(Begin("t1", 1))
    assert fake.records == [] and pub.in_transaction
    pub.publish(ChangeBatch([(A, SA)], [_row(random.Random(1), "c", 1)]))  # A first seen: SCHEMA before the row
    kinds = [orjson.loads(v).get("status") or orjson.loads(v).get("op") for _, v, _ in fake.records]
    assert kinds == ["BEGIN", "SCHEMA", "c"]
    pub.publish(Commit("t1", 2, {}, {}))
    pub.publish(Begin("t2", 3))
    pub.publish(ChangeBatch([(A, SA)], [_row(random.Random(2), "u", 2)]))  # held with its BEGIN
    assert len(fake.records) == 4
    pub.flush()
    assert [orjson.loads(v)["sequence"] for _, v, _ in fake.records] == [1, 2, 3, 4, 5, 6]
    pub.publish(Commit("t2", 4, {}, {}))
    assert [orjson.loads(v)["sequence"] for _, v, _ in fake.records] == [1, 2, 3, 4, 5, 6, 7]
    pub.publish(Begin("t3", 5))
    pub.publish(ChangeBatch([(A, SA)], [_row(random.Random(3), "d", 3)]))
    pub.close()
    assert len(fake.records) == 7
