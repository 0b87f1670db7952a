"""Packed rows (the ``packed`` option of cdc-stream): unpacking what was packed gives back the same record
rows, in order, however the runs were cut."""

from __future__ import annotations

import pyarrow as pa
import pytest

from streaming.stream import records
from streaming.stream.decode import JsonChunkDecoder
from streaming.stream.records import FIELDS, arrow_schema, pack, unpack
from streaming.testing import StreamBuilder

DEFAULT_PACK_BYTES = records.PACK_BYTES


def _batches(n_tx: int, chunk: int) -> list[pa.RecordBatch]:
    b = StreamBuilder(source="s")
    b.schema("db.t", [("id", "bigint"), ("v", "varchar(10)")], ["id"])
    for i in range(n_tx):
        b.tx(("c", "db.t", None, {"id": i, "v": "a" * (i % 7)}),
             ("u", "db.t", {"id": i, "v": "a"}, {"id": i + 10_000, "v": "b"}))
    b.tx(("c", "db.t", None, {"id": -1, "v": "x"}), abort=True)
    enc = b.encoded()
    enc.append((None, b"not json"))  # an UNDECODABLE row travels like any other
    dec = JsonChunkDecoder(3)
    return [dec.decode(list(range(s, min(s + chunk, len(enc)))), [k for k, _ in enc[s:s + chunk]],
                       [v for _, v in enc[s:s + chunk]]) for s in range(0, len(enc), chunk)]


def _collected(packed: list[pa.RecordBatch], per_chunk: int) -> pa.Table:
    """What toArrow() on the driver gives: the packed rows in Arrow batches of ``per_chunk`` rows."""
    table = pa.Table.from_batches(packed)
    return pa.Table.from_batches([b for s in range(0, table.num_rows, per_chunk)
                                  for b in table.slice(s, per_chunk).combine_chunks().to_batches()])


@pytest.mark.parametrize("pack_bytes", [DEFAULT_PACK_BYTES, 2_000, 1])
def test_unpack_gives_back_the_rows_in_order(monkeypatch, pack_bytes):
    monkeypatch.setattr(records, "PACK_BYTES", pack_bytes)
    batches = _batches(200, 150)
    want = pa.Table.from_batches(batches)
    packed = list(pack(batches + [batches[0].slice(0, 0)]))  # an empty batch packs to nothing
    assert all(p.num_rows == 1 for p in packed)
    assert sum(p.column(1)[0].as_py() for p in packed) == want.num_rows
    assert {p.column(0)[0].as_py() for p in packed} == {3}
    if pack_bytes == DEFAULT_PACK_BYTES:
        assert len(packed) == len(batches)  # small batches: one packed row each
    else:
        assert len(packed) > len(batches)  # cut into runs of at most pack_bytes (one record at least)
    got = unpack(_collected(packed, 4))
    assert got.schema == arrow_schema()
    assert got.to_pylist() == want.to_pylist()
    assert [r["kind"] for r in got.to_pylist()][-1] == "UNDECODABLE"


def test_unpack_of_nothing_is_an_empty_table_of_the_record_schema():
    empty = pa.table({"part": pa.array([], pa.int32()), "records": pa.array([], pa.int32()),
                      "arrow": pa.array([], pa.binary())})
    got = unpack(empty)
    assert got.num_rows == 0 and got.schema.names == list(FIELDS)


def test_runs_are_cut_by_the_rows_own_sizes(monkeypatch):
    """Small records then large ones in one batch: no packed run holds much more than PACK_BYTES (the
    average row size would put dozens of large records in one run), and the rows come back in order."""
    monkeypatch.setattr(records, "PACK_BYTES", 100_000)
    small = _batches(300, 10_000)[0]
    rows = small.to_pylist()
    big = [{**r, "after": "x" * 20_000} for r in rows[:60]]
    batch = pa.RecordBatch.from_pylist(rows + big, schema=arrow_schema())
    packed = list(pack([batch]))
    assert max(p.column(2)[0].as_buffer().size for p in packed) < 100_000 + 25_000
    assert unpack(pa.Table.from_batches(packed)).to_pylist() == batch.to_pylist()


def test_a_packed_row_short_of_its_records_is_an_error():
    packed = list(pack(_batches(20, 1000)))
    short = pa.RecordBatch.from_arrays([packed[0].column(0), pa.array([packed[0].column(1)[0].as_py() + 1],
                                                                      pa.int32()), packed[0].column(2)],
                                       names=["part", "records", "arrow"])
    with pytest.raises(ValueError, match="packed rows hold"):
        unpack(pa.Table.from_batches([short]))


def test_packed_runs_are_compressed():
    """JSON row images repeat themselves: a packed run is far smaller than the Arrow buffers it carries
    (the JVM moves that much less), and unpack restores them without being told."""
    n = 2_000
    batch = pa.RecordBatch.from_pylist(
        [{"part": 0, "offset": i, "sequence": i + 1, "kind": "data", "tbl": "db.t", "op": "c", "key": f'{{"id":{i}}}',
          "after": f'{{"id":{i},"name":"name {i}","amount":"{i}.00","at":"2024-05-06T07:08:01.000001"}}'}
         for i in range(n)], schema=records.arrow_schema())
    (packed,) = records.pack([batch])
    assert packed.column(2)[0].as_buffer().size < batch.nbytes / 3
    assert records.unpack(pa.Table.from_batches([packed])).equals(pa.Table.from_batches([batch]))
