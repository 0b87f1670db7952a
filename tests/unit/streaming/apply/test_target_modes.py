"""Target-side modes (apply[].tables[].mode / metadata_columns) through the real engine on an in-memory DuckDB:
soft delete, append-only history, metadata columns; a replayed batch writes nothing twice; other tables
are written as they are."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cdc.config.models import ApplyConfig, TargetConfig
from cdc.schema.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.apply.target_modes import TargetModes
from streaming.stream.records import Batch
from streaming.targets.duckdb.target import DuckDbTarget
from streaming.testing import StreamBuilder

COLS = [("id", "int"), ("name", "varchar(20)")]
TS = "2023-11-14 22:13:20"  # StreamBuilder's commit time, 1_700_000_000_000 ms


def _engine(tables) -> ApplyEngine:
    t = DuckDbTarget(TargetConfig(name="duck", kind="duckdb", path=":memory:"))
    return ApplyEngine("src", t, TableMap.from_config(ApplyConfig(source="src", target="duck", tables=tables))).start()


def _stream() -> StreamBuilder:
    b = StreamBuilder()
    b.schema("shop.a", COLS, ["id"]).schema("shop.b", COLS, ["id"])
    for t in ("shop.a", "shop.b"):
        b.tx(("c", t, None, {"id": 1, "name": "x"}), ("c", t, None, {"id": 2, "name": "y"}))
        b.tx(("u", t, {"id": 1, "name": "x"}, {"id": 1, "name": "x2"}), ("d", t, {"id": 2, "name": "y"}, None))
    return b


def _rows(e, sql):
    return [tuple(str(v) if v is not None and not isinstance(v, (int, bool)) else v for v in r)
            for r in e.target.execute(sql).fetchall()]


def test_soft_delete_marks_the_row_and_the_other_table_is_a_mirror():
    e = _engine([{"source": "shop.a", "mode": "soft_delete"}, "shop.b"])
    recs = _stream().as_records()
    e.apply_records(recs, 0)
    got = _rows(e, "SELECT id, name, _cdc_deleted, CAST(_cdc_deleted_at AS VARCHAR) FROM a ORDER BY id")
    assert got[0] == (1, "x2", False, None)
    assert got[1][:3] == (2, "y", True) and got[1][3].startswith(TS)
    assert _rows(e, "SELECT * FROM b ORDER BY id") == [(1, "x2")]  # no mode: rows deleted, no extra column
    assert e.apply_records(recs, 0).skipped


def test_history_keeps_every_change_once_and_metadata_columns():
    e = _engine([{"source": "shop.*", "mode": "history", "metadata_columns": True}])
    b = _stream()
    recs = b.as_records()
    e.apply_records(recs[:6], 0)
    e.apply_records(recs, 1)  # overlaps the first batch: its records are replays, written once
    got = _rows(e, "SELECT id, name, _cdc_op, _cdc_sequence, _cdc_txid IS NOT NULL, "
                   "_cdc_applied_at IS NOT NULL FROM a ORDER BY _cdc_sequence")
    assert [(r[0], r[1], r[2]) for r in got] == [(1, "x", "c"), (2, "y", "c"), (1, "x2", "u"), (2, "y", "d")]
    assert all(r[4] and r[5] for r in got) and len({r[3] for r in got}) == 4
    assert _rows(e, "SELECT count(*) FROM b") == [(4,)]


def test_metadata_columns_on_a_mirror():
    e = _engine([{"source": "shop.a", "metadata_columns": True}])
    e.apply_records(_stream().as_records(), 0)
    got = _rows(e, "SELECT id, name, _cdc_op, CAST(_cdc_commit_ts AS VARCHAR) FROM a ORDER BY id")
    assert len(got) == 1 and got[0][:3] == (1, "x2", "u") and got[0][3].startswith(TS)


def test_a_batch_without_a_mode_table_is_left_as_it_is():
    recs = StreamBuilder().schema("shop.b", COLS, ["id"]).tx(("c", "shop.b", None, {"id": 1, "name": "x"})).as_records()
    batch = Batch.from_records(recs[1:])
    modes = TargetModes.of_map(TableMap.from_config(ApplyConfig(
        source="src", target="duck", tables=[{"source": "shop.a", "mode": "history"}, "shop.b"])))
    assert modes.rewrite(batch) is batch


def test_unknown_mode_refused():
    with pytest.raises(ValidationError, match="mode"):
        ApplyConfig(source="src", target="duck", tables=[{"source": "shop.a", "mode": "scd2"}])


def test_compare_counts_soft_deleted_rows_absent_skips_mode_columns_and_refuses_history(tmp_path):
    import duckdb

    from cdc.compare.endpoints import Endpoint
    from cdc.compare.errors import CompareError
    from cdc.compare.table_diff import TableCompare

    t = DuckDbTarget(TargetConfig(name="duck", kind="duckdb", path=str(tmp_path / "tgt.duckdb")))
    cfg = ApplyConfig(source="src", target="duck", tables=[{"source": "*.a", "mode": "soft_delete",
                                                           "metadata_columns": True}])
    e = ApplyEngine("src", t, TableMap.from_config(cfg)).start()
    b = StreamBuilder().schema("main.a", COLS, ["id"])
    b.tx(("c", "main.a", None, {"id": 1, "name": "x"}), ("c", "main.a", None, {"id": 2, "name": "y"}))
    b.tx(("d", "main.a", {"id": 2, "name": "y"}, None))
    e.apply_records(b.as_records(), 0)
    e.close()
    con = duckdb.connect(str(tmp_path / "src.duckdb"))  # the source as it is now
    con.execute("CREATE TABLE a (id INTEGER PRIMARY KEY, name VARCHAR(20)); INSERT INTO a VALUES (1, 'x')")
    con.close()
    src = Endpoint("src", "duckdb", {"path": str(tmp_path / "src.duckdb")}, "main")
    tgt = Endpoint("tgt", "duckdb", {"path": str(tmp_path / "tgt.duckdb")}, "main")
    modes = TargetModes.of_map(TableMap.from_config(cfg))
    report = TableCompare(src, "main.a", tgt, "main.a", modes=modes).run()
    assert report.equal and report.same == 1 and not report.type_mismatches, report.render()
    assert any("soft-delete target" in w for w in report.warnings)
    plain = TableCompare(src, "main.a", tgt, "main.a").run()
    assert not plain.equal  # the control: the soft-deleted row is there
    history = TargetModes.of_map(TableMap.from_config(ApplyConfig(source="src", target="duck", tables=[
        {"source": "*.a", "mode": "history"}])))
    with pytest.raises(CompareError, match="append-only history"):
        TableCompare(src, "main.a", tgt, "main.a", modes=history).run()


def test_soft_delete_column_wise_rewrite_is_the_record_rewrite(monkeypatch):
    """A batch whose shaped tables are all plain soft-delete ones is rewritten column-wise: the same records as
    the record-by-record rewrite, over hostile images (quotes, braces, unicode, an empty image, an image that
    already has the column, NULLs), deletes, markers, SCHEMA records and a table without a mode."""
    from streaming.apply.target_modes import TableMode, _data
    from streaming.stream.records import DATA

    b = StreamBuilder()
    b.schema("shop.a", COLS, ["id"]).schema("shop.b", COLS, ["id"])
    hostile = [{"id": 1, "name": 'é"}\\'}, {"id": 2, "name": None}, {}, {"id": 3, "_cdc_deleted": True},
               {"id": 4, "name": "\U0001f600", "n": 1.5, "big": 2**63 - 1, "nested": {"a": [1, "}"]}}]
    for t in ("shop.a", "shop.b"):
        b.tx(*[("c", t, None, img) for img in hostile])
        b.tx(*[("u", t, img, {**img, "name": "v2"}) for img in hostile[:2]], ("d", t, hostile[0], None))
        b.tx(("r", t, None, hostile[4]), ("c", t, None, None))
    b.schema("shop.a", COLS + [("more", "int")], ["id"]).tx(("c", "shop.a", None, hostile[0]))
    recs = b.as_records()
    soft = TableMode("soft_delete")
    modes = TargetModes([("shop.a", soft)])
    from streaming.apply import target_modes

    slow = []
    monkeypatch.setattr(target_modes, "_data", lambda rec, *a: slow.append(rec) or _data(rec, *a))
    got = modes.rewrite(Batch.from_records(recs)).records()
    assert len(slow) == 4  # the empty image, the one with the column, the delete, the insert without an image
    want = [_data(r, soft, "now") if r.tbl == "shop.a" and r.kind == DATA and r.op in ("c", "u", "d", "r") else
            modes._schema(r) if r.kind == "SCHEMA" else r for r in recs]
    assert got == want
    assert sum('"_cdc_deleted":false' in (r.after or "") for r in got) == 10
    assert sum("_cdc_deleted_at" in (r.meta or "") for r in got) == 2  # shop.a's two SCHEMA records
