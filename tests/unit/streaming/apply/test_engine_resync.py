"""The engine applies a resync range record (cdc.stream.resync_range, op "x") at its place in the stream: target
rows of the range that it does not keep are deleted in the batch transaction, later changes stand."""

from __future__ import annotations

import pytest

from cdc.config.models import ApplyConfig, TargetConfig
from cdc.schema.table_map import TableMap
from cdc.stream.resync_range import ResyncRange, ResyncRangeError
from streaming.apply.engine import ApplyEngine
from streaming.targets.duckdb.target import DuckDbTarget
from streaming.targets.parquet.target import ParquetTarget
from streaming.testing import StreamBuilder

T = "shop.items"


def _engine(target=None) -> ApplyEngine:
    t = target or DuckDbTarget(TargetConfig(name="duck", kind="duckdb", path=":memory:"))
    return ApplyEngine("src", t, TableMap.from_config(ApplyConfig(source="src", target=t.name))).start()


def _row(k: int, v: int = 0) -> dict:
    return {"sku": k, "qty": v}


def _range(after, through, keep) -> tuple:
    rng = ResyncRange(("sku",), None if after is None else (after,), None if through is None else (through,),
                      frozenset((k,) for k in keep))
    return ("x", T, None, None, {"resync": rng.to_text()})


def _drifted() -> tuple[StreamBuilder, ApplyEngine]:
    """A target holding 1..8 through the stream, then drifted by hand: 3 deleted, 20 and 21 added, 5 changed."""
    b = StreamBuilder().schema(T, [("sku", "int"), ("qty", "int")], ["sku"])
    b.tx(*[("c", T, None, _row(k)) for k in range(1, 9)])
    e = _engine()
    e.apply_records(b.as_records(), 0)
    e.target.execute("DELETE FROM items WHERE sku = 3")
    e.target.execute("INSERT INTO items VALUES (20, 9), (21, 9)")
    e.target.execute("UPDATE items SET qty = 99 WHERE sku = 5")
    e.target.commit()
    return b, e


def _rows(e: ApplyEngine) -> list[tuple]:
    return e.target.execute("SELECT sku, qty FROM items ORDER BY 1").fetchall()


def test_chunks_with_ranges_make_the_drifted_target_equal_and_keep_window_keys():
    b, e = _drifted()
    n = len(b.items)
    # the source meanwhile deleted 7 and 8 (stream), and inserted 30 within the last chunk's window
    b.tx(("d", T, _row(7), None), ("d", T, _row(8), None))
    b.tx(*[("r", T, None, _row(k)) for k in (1, 2, 3, 4, 5)], _range(None, 5, [1, 2, 3, 4, 5]))
    b.tx(("c", T, None, _row(30, 1)))  # inside the next window: kept, though the chunk did not read it
    b.tx(("r", T, None, _row(6)), _range(5, None, [6, 30]))
    e.apply_records(b.as_records()[n:], 1)
    assert _rows(e) == [(1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0), (30, 1)]


def test_a_change_after_the_range_in_the_same_batch_is_not_deleted():
    b, e = _drifted()
    n = len(b.items)
    b.tx(*[("r", T, None, _row(k)) for k in range(1, 9)], _range(None, None, range(1, 9)))
    b.tx(("c", T, None, _row(25, 2)))  # after the range's place: a newer change, never undone by it
    e.apply_records(b.as_records()[n:], 1)
    assert _rows(e) == [*[(k, 0) for k in range(1, 9)], (25, 2)]


def test_an_empty_source_table_empties_the_target_but_for_window_changes():
    b, e = _drifted()
    n = len(b.items)
    b.tx(*[("d", T, _row(k), None) for k in range(1, 9)])
    b.tx(("c", T, None, _row(40)))
    b.tx(_range(None, None, [40]))
    e.apply_records(b.as_records()[n:], 1)
    assert _rows(e) == [(40, 0)]
    assert e.target.read_progress("src").last_sequence == b.seq - 1


def test_a_replayed_range_is_skipped_like_any_record():
    b, e = _drifted()
    n = len(b.items)
    b.tx(_range(None, None, range(1, 9)))
    recs = b.as_records()[n:]
    e.apply_records(recs, 1)
    e.target.execute("INSERT INTO items VALUES (50, 1)")
    e.target.commit()
    assert e.apply_records(recs, 1).skipped and (50, 1) in _rows(e)


def test_a_target_without_range_deletes_stops_and_writes_nothing_of_the_batch(tmp_path):
    t = ParquetTarget(TargetConfig(name="pq", kind="parquet", path=str(tmp_path)))
    e = _engine(t)
    b = StreamBuilder().schema(T, [("sku", "int"), ("qty", "int")], ["sku"])
    b.tx(("r", T, None, _row(1)), _range(None, None, [1]))
    with pytest.raises(ResyncRangeError, match="cannot apply a resync range of items"):
        e.apply_records(b.as_records(), 0)
    assert e.target.read_progress("src") is None


def test_a_range_naming_another_key_is_refused():
    b, e = _drifted()
    n = len(b.items)
    bad = ResyncRange(("qty",), None, None, frozenset())
    b.tx(("x", T, None, None, {"resync": bad.to_text()}))
    with pytest.raises(ResyncRangeError, match="names key"):
        e.apply_records(b.as_records()[n:], 1)
    assert len(_rows(e)) == 9  # nothing deleted


def test_the_duckdb_decoder_carries_the_range_like_the_record_decoder():
    from streaming.stream.decode import JsonChunkDecoder

    b = StreamBuilder().schema(T, [("sku", "int"), ("qty", "int")], ["sku"])
    b.tx(("r", T, None, _row(1)), _range(None, 4, [1]))
    enc = b.encoded()
    out = JsonChunkDecoder(0).decode(list(range(len(enc))), [k for k, _ in enc], [v for _, v in enc]).to_pylist()
    x = [r for r in out if r["op"] == "x"]
    assert len(x) == 1 and x[0]["kind"] == "data" and x[0]["tbl"] == T and x[0]["key"] is None
    assert ResyncRange.from_text(x[0]["meta"], T).through == (4,)
    assert x[0]["meta"] == b.as_records()[3].meta


def test_the_lake_targets_declare_they_cannot_apply_ranges_and_the_database_targets_can():
    from streaming.targets.lake import LakeTarget
    from streaming.targets.mysql.target import MySqlTarget
    from streaming.targets.oracle.target import OracleTarget
    from streaming.targets.postgres.target import PostgresTarget

    assert not LakeTarget.resync_ranges and not ParquetTarget.resync_ranges  # Delta and Iceberg are LakeTargets
    assert all(t.resync_ranges for t in (PostgresTarget, MySqlTarget, OracleTarget, DuckDbTarget))


def test_the_range_travels_in_avro_too():
    from cdc.stream.serde import get_serdes
    from streaming.stream.records import to_row

    b = StreamBuilder().schema(T, [("sku", "int"), ("qty", "int")], ["sku"])
    b.tx(_range(None, 4, [1]))
    k, v = get_serdes("avro", "plain")
    rows = [to_row(0, i, k.encode(key) if key else None, v.encode(val), k, v) for i, (key, val) in enumerate(b.items)]
    [x] = [r for r in rows if r[6] == "x"]
    assert ResyncRange.from_text(x[11], T) == ResyncRange(("sku",), None, (4,), frozenset({(1,)}))
