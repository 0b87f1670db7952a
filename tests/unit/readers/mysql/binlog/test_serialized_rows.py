"""Rows the native pass decoded leave the reader as one ChangeBatch per rows event (reader._serialized): the
publisher must write, byte for byte, the records it writes for the equal Changes, in every encoding."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.stream.events import Begin, Change, ChangeBatch, Column, Commit, TableId, TableSchema
from readers.mysql.binlog.decode import ConvertedRow
from readers.mysql.reader import _serialized
from tests.unit.cdc.publish.fakes import publisher

T = TableId("shop", "or\"ders")
COLS = (Column("id", "int", False), Column("k2", "varchar(9)", False), Column("v", "varchar(9)"),
        Column("x", "double"))
KEYS = {"none": (), "one": ("id",), "two": ("id", "k2")}

values = st.one_of(st.none(), st.integers(-2**63, 2**64 - 1), st.floats(allow_nan=False, allow_infinity=False),
                   st.text(max_size=8))
rows = st.fixed_dictionaries({"id": st.integers(0, 99), "k2": st.text(max_size=3), "v": values, "x": values})


def _records(events: list, encoding: str, monkeypatch) -> list:
    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.5)  # the records' ts_ms
    pub, fake, _ = publisher(encoding)
    for ev in events:
        pub.publish(ev)
    return fake.records



@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from("cud"), key=st.sampled_from(sorted(KEYS)), images=st.lists(st.tuples(rows, rows),
       min_size=1, max_size=5), row_no=st.integers(0, 5), thread=st.sampled_from([None, 0, 77]),
       file=st.sampled_from(["mysql-bin.000001", None, "a\"b"]), encoding=st.sampled_from(["json", "avro"]))
def test_batch_records_equal_change_records(op, key, images, row_no, thread, file, encoding):
    schema = TableSchema(T, COLS, KEYS[key])
    conv = [(ConvertedRow(b), ConvertedRow(a)) for b, a in images]
    if op == "c":
        raw, shown = [{"values": a} for _, a in conv], [(None, a) for _, a in conv]
    elif op == "d":
        raw, shown = [{"values": b} for b, _ in conv], [(b, None) for b, _ in conv]
    else:
        raw, shown = [{"before_values": b, "after_values": a} for b, a in conv], conv
    batch = _serialized(raw, op, (T, schema), "0-1-9", file, 4, row_no, 12, thread)
    assert type(batch) is ChangeBatch and len(batch) == len(raw)
    changes = [Change(T, op, b, a, {"gtid": "0-1-9", "file": file, "pos": 4, "row": row_no + i, "server_id": 12,
                                    **({} if thread is None else {"thread": thread})}, schema)
               for i, (b, a) in enumerate(shown)]
    frame = [Begin("0-1-9", 5000)], [Commit("0-1-9", 5000, {"gtid_set": "0-1-9"}, {"gtid": "0-1-9"})]
    with pytest.MonkeyPatch.context() as mp:
        want = _records(frame[0] + changes + frame[1], encoding, mp)
    with pytest.MonkeyPatch.context() as mp:
        got = _records(frame[0] + [batch] + frame[1], encoding, mp)
    assert got == want
    assert list(batch.changes()) == changes


def test_not_native_rows_or_values_without_json_stay_changes():
    schema = TableSchema(T, COLS, ("id",))
    assert _serialized([{"values": {"id": 1}}], "c", (T, schema), "0-1-1", "f", 4, 0, 1, None) is None
    mixed = [{"before_values": {"id": 1}, "after_values": ConvertedRow({"id": 1})}]
    assert _serialized(mixed, "u", (T, schema), "0-1-1", "f", 4, 0, 1, None) is None
    odd = [{"values": ConvertedRow({"id": 1, "v": object()})}]
    assert _serialized(odd, "c", (T, schema), "0-1-1", "f", 4, 0, 1, None) is None
