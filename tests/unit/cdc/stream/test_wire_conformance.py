"""The publisher's JSON hot path splices data-record bytes from constants: they must be exactly the
bytes the JSON serde gives for cdc.envelope's dicts (the change-stream contract, byte for byte)."""

from __future__ import annotations

import pytest

from cdc.stream import envelope
from cdc.stream.events import Begin, Change, Column, Commit, TableId, TableSchema
from cdc.stream.serde import get_serdes
from tests.unit.cdc.publish.fakes import decoded, publisher

A, B = TableId("shop", "orders"), TableId("shop", "items")
SA = TableSchema(A, (Column("id", "int", False), Column("v", "varchar(9)")), ("id",))
SB = TableSchema(B, (Column("oid", "int", False), Column("n", "int", False), Column("q", "int")), ("oid", "n"))


@pytest.mark.parametrize("change", [
    Change(A, "u", {"id": 5, "v": "x"}, {"id": 5, "v": "y"}, {"gtid": "u:9", "pos": 4}, SA),
    Change(A, "c", None, {"id": 6, "v": "é\"\\\n\u2028"}, {}, SA),
    Change(A, "r", None, {"id": 7, "v": None}, {"scn": 12}, SA),
    Change(B, "d", {"oid": 1, "n": 2, "q": 1.5}, None, {"scn": 1, "commit_scn": 2, "txId": "1.2.3"}, SB),
    Change(TableId("s\"q", "t\u00e9"), "u", {"a": True}, {"a": False, "b": -3}, {"row": 1}, None),
    Change(A, "u", {"id": 5, "v": "x"}, {"id": 5, "v": "y"}, {"ts_ms": 3, "table": "over", "x": 1}, SA),
])
def test_data_record_bytes_are_orjson_of_the_envelope_dicts(change):
    pub, fake, _ = publisher()
    for ev in [Begin("x\"1", 1000), change, Commit("x\"1", 1000, {"g": 1}, {})]:
        pub.publish(ev)
    _, vbytes, kbytes = [r for r in fake.records if b'"op"' in (r[1] or b"")][0]
    value = decoded(fake)[-2][2]
    ekey, evalue = envelope.data_record(change, sequence=value["sequence"], source_name="s", connector="mysql",
                                        txid="x\"1", commit_ts_ms=1000, total_order=1, data_collection_order=1,
                                        now_ms=value["ts_ms"])
    ks, vs = get_serdes("json")
    assert vbytes == vs.encode(evalue)
    assert kbytes == ks.encode(ekey)


def test_multi_column_key_and_keyless_table_bytes():
    keyless = TableSchema(A, SA.columns, ())
    pub, fake, _ = publisher()
    for ev in [Begin("t", 5), Change(B, "u", {"oid": 1, "n": 2, "q": 3}, {"oid": 1, "n": 2, "q": 4}, {}, SB),
               Change(A, "c", None, {"id": 1, "v": "a"}, {}, keyless), Commit("t", 5, {}, {})]:
        pub.publish(ev)
    keys = [k for _, v, k in fake.records if b'"op"' in (v or b"")]
    assert keys == [b'{"table":"shop.items","key":{"oid":1,"n":2}}', b'{"table":"shop.orders","key":{"id":1,"v":"a"}}']



@pytest.mark.parametrize("txid,ts", [("1.2.3", 1700000000123), ("x\"é", 0), ("u:1", 1.5)])
def test_begin_record_bytes(txid, ts):
    pub, fake, _ = publisher()
    pub.publish(Begin(txid, ts))
    _, vbytes, kbytes = fake.records[0]
    assert kbytes is None and vbytes == get_serdes("json")[1].encode(envelope.begin_record(1, txid, ts))


@pytest.mark.parametrize("tables", [[], [A], [A, B, A]])
def test_end_record_bytes(tables):
    """END (spliced from constants) is orjson of envelope.end_record's dict: counts per table in first-row
    order, the resume state and the native position as given."""
    pub, fake, _ = publisher()
    resume = {"low_watermark_scn": 5, "commit_scn": 7, "xids_at_commit_scn": ["1.2.3", "x\"é"]}
    position = {"scn": 7, "commit_scn": 7, "txId": "x\"é"}
    schemas = {A: SA, B: SB}
    rows = [Change(t, "c", None, {"id": i, "oid": i, "n": i, "v": "x"}, {"row": i}, schemas[t])
            for i, t in enumerate(tables)]
    for ev in [Begin("x\"é", 1000), *rows, Commit("x\"é", 1001, resume, position)]:
        pub.publish(ev)
    counts: dict[str, int] = {}
    for t in tables:
        counts[str(t)] = counts.get(str(t), 0) + 1
    value = fake.records[-1][1]
    seq = 2 + len(tables) + len(set(tables))  # BEGIN, a SCHEMA record per table, the rows, then END
    assert value == get_serdes("json")[1].encode(envelope.end_record(seq, "x\"é", 1001, counts, resume, position))
