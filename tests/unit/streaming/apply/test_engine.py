"""The apply engine against an in-memory DuckDB target (embedded, no service)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.config.models import ApplyConfig, TargetConfig
from cdc.schema.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.errors import BadRecord, StreamCorrupt, UnsupportedDdl
from streaming.targets.duckdb.target import DuckDbTarget
from streaming.testing import StreamBuilder

COLS = [("id", "int"), ("name", "varchar(20)"), ("amount", "decimal(10,2)")]


def _engine(dead_letter: str | None = None, **apply) -> ApplyEngine:
    t = DuckDbTarget(TargetConfig(name="duck", kind="duckdb", path=":memory:", dead_letter_table=dead_letter))
    cfg = ApplyConfig(source="src", target="duck", **apply)
    return ApplyEngine("src", t, TableMap.from_config(cfg), views=cfg.views).start()


def _rows(e: ApplyEngine, table: str) -> list[tuple]:
    return e.target.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()


def _base() -> StreamBuilder:
    b = StreamBuilder()
    b.schema("shop.orders", COLS, ["id"]).schema("shop.items", [("sku", "int"), ("qty", "int")], ["sku"])
    return b


def test_transactions_abort_and_net_effect_land_in_one_batch():
    b = _base()
    b.tx(("c", "shop.orders", None, {"id": 1, "name": "a", "amount": "1.50"}),
         ("c", "shop.items", None, {"sku": 7, "qty": 1}))
    b.tx(("c", "shop.orders", None, {"id": 2, "name": "b", "amount": "2.00"}), abort=True)
    b.tx(("u", "shop.orders", {"id": 1, "name": "a", "amount": "1.50"}, {"id": 3, "name": "a", "amount": "1.50"}),
         ("c", "shop.orders", None, {"id": 4, "name": "d", "amount": "4.00"}),
         ("d", "shop.orders", {"id": 4, "name": "d", "amount": "4.00"}, None))
    e = _engine()
    res = e.apply_records(b.as_records(), batch_id=0)
    assert res.transactions == 2 and res.aborted == 1
    assert [tuple(map(str, r)) for r in _rows(e, "orders")] == [("3", "a", "1.50")]
    assert _rows(e, "items") == [(7, 1)]
    prog = e.target.read_progress("src")
    assert prog.last_sequence == b.seq - 1 and prog.batch_id == 0


def test_replayed_batch_is_skipped_and_restart_knows_schema():
    b = _base().tx(("c", "shop.items", None, {"sku": 1, "qty": 1}))
    e = _engine()
    recs = b.as_records()
    e.apply_records(recs, 0)
    assert e.apply_records(recs, 0).skipped
    # a fresh engine on the same target remembers tables (cdc_schema) and progress
    e2 = ApplyEngine("src", e.target, e.table_map).start()
    b2 = StreamBuilder(start_sequence=b.seq).tx(("u", "shop.items", {"sku": 1, "qty": 1}, {"sku": 1, "qty": 5}))
    e2.apply_records(b2.as_records(len(recs)), 1)
    assert _rows(e2, "items") == [(1, 5)]


def test_add_column_followed_and_a_ddl_not_followed_stops_after_committing_what_precedes():
    b = _base().tx(("c", "shop.items", None, {"sku": 1, "qty": 1}))
    b.schema("shop.items", [("sku", "int"), ("qty", "int"), ("note", "varchar(9)")], ["sku"], ddl="ALTER ... ADD note")
    b.tx(("c", "shop.items", None, {"sku": 2, "qty": 2, "note": "x"}))
    b.schema("shop.items", [("sku", "int"), ("qty", "date"), ("note", "varchar(9)")], ["sku"],
             ddl="ALTER TABLE items MODIFY qty DATE")  # another type family while the column holds values
    stop_seq = b.seq - 1
    b.tx(("c", "shop.items", None, {"sku": 3, "qty": "2020-01-01", "note": "y"}))
    e = _engine()
    with pytest.raises(UnsupportedDdl) as info:
        e.apply_records(b.as_records(), 0)
    assert info.value.sequence == stop_seq and info.value.table == "shop.items"
    assert _rows(e, "items") == [(1, 1, None), (2, 2, "x")]
    assert e.target.read_progress("src").last_sequence == stop_seq - 1


def test_bad_value_is_named_or_dead_lettered():
    def stream():
        return _base().tx(("c", "shop.items", None, {"sku": 1, "qty": 1})) \
            .tx(("c", "shop.items", None, {"sku": 2, "qty": "not a number"}))
    e = _engine()
    with pytest.raises(BadRecord) as info:
        e.apply_records(stream().as_records(), 0)
    err = info.value
    assert err.table == "shop.items" and err.key == {"sku": 2} and err.sequence is not None
    assert "not a number" in str(err)
    assert e.target.table_columns("items") is None  # nothing of the batch is visible, not even the CREATE
    e = _engine(dead_letter="cdc_dead")
    res = e.apply_records(stream().as_records(), 0)
    assert res.dead_letters == 1 and _rows(e, "items") == [(1, 1)]
    assert e.target.execute("SELECT source_table, sequence FROM cdc_dead").fetchall() == [("shop.items", err.sequence)]


def test_undecodable_and_missing_key_and_unterminated():
    e = _engine()
    recs = _base().as_records()
    recs[1].kind, recs[1].error, recs[1].sequence = "UNDECODABLE", "JSONDecodeError: junk", None
    with pytest.raises(BadRecord, match="offset 1 does not decode"):
        e.apply_records(recs, 0)
    e = _engine()
    with pytest.raises(BadRecord, match="lacks primary-key column 'sku'") as info:
        e.apply_records(_base().tx(("c", "shop.items", None, {"qty": 1})).as_records(), 0)
    assert info.value.sequence is not None
    with pytest.raises(StreamCorrupt):
        _engine().apply_records(_base().tx(("c", "shop.items", None, {"sku": 1, "qty": 1}), unterminated=True)
                                .as_records(), 0)


def test_mapping_rename_and_exclude():
    e = _engine(tables=[{"source": "shop.orders", "target": "orders_copy"}, "shop.items"], exclude=["shop.items"])
    b = _base().tx(("c", "shop.orders", None, {"id": 1, "name": "a", "amount": "1.00"}),
                   ("c", "shop.items", None, {"sku": 1, "qty": 1}))
    e.apply_records(b.as_records(), 0)
    assert len(_rows(e, "orders_copy")) == 1 and e.target.table_columns("items") is None


def test_parquet_changelog_sink_is_replay_safe(tmp_path):
    import pyarrow.parquet as pq

    from streaming.targets.parquet.target import ParquetTarget

    t = ParquetTarget(TargetConfig(name="pq", kind="parquet", path=str(tmp_path)))
    e = ApplyEngine("src", t, TableMap.from_config(ApplyConfig(source="src", target="pq"))).start()
    b = _base().tx(("c", "shop.items", None, {"sku": 1, "qty": 1}), ("c", "shop.items", None, {"sku": 2, "qty": 2}))
    b.tx(("d", "shop.items", {"sku": 1, "qty": 1}, None))
    recs = b.as_records()
    e.apply_records(recs, 0)
    assert e.apply_records(recs, 0).skipped
    files = sorted((tmp_path / "items").iterdir())
    assert len(files) == 1
    data = pq.read_table(files[0]).to_pylist()
    assert [(r["_op"], r["sku"]) for r in data] == [("u", 2)]
    e2 = ApplyEngine("src", ParquetTarget(t.config), e.table_map).start()
    assert e2.progress.last_sequence == b.seq - 1 and "shop.items" in e2.catalog.tables


def test_first_sight_schema_inside_a_transaction():
    b = StreamBuilder()
    b.tx()  # opens tx; emulate the publisher: BEGIN, SCHEMA, data, END
    b.items.clear()
    from cdc.stream import envelope
    b.items.append((None, envelope.begin_record(b._next(), "0-1-2", b.ts)))  # the id of the tx below
    b.schema("shop.items", [("sku", "int"), ("qty", "int")], ["sku"])
    b.items[-1][1]["resume"] = None  # inside a transaction the publisher writes no resume state
    b.tx(("c", "shop.items", None, {"sku": 1, "qty": 1}))
    b.items = [it for i, it in enumerate(b.items) if not (i == 2 and it[1].get("status") == "BEGIN")]
    for i, (_, value) in enumerate(b.items):  # a stream without holes (a gap would stop the engine)
        value["sequence"] = i + 1
    e = _engine()
    e.apply_records(b.as_records(), 0)
    assert _rows(e, "items") == [(1, 1)]


def test_string_width_changes_are_followed():
    b = StreamBuilder().schema("shop.s", [("id", "int"), ("v", "varchar(13)")], ["id"])
    b.schema("shop.s", [("id", "int"), ("v", "varchar(10)")], ["id"], ddl="ALTER ... ADD w")
    b.schema("shop.s", [("id", "int"), ("v", "varchar(30)")], ["id"], ddl="ALTER ... MODIFY v varchar(30)")
    b.tx(("c", "shop.s", None, {"id": 1, "v": "x" * 30}))
    e = _engine()
    e.apply_records(b.as_records(), 0)
    assert _rows(e, "s") == [(1, "x" * 30)]


def test_views_hook_maintains_a_view_in_the_batch_transaction():
    views = [{"name": "qty_total", "sql": "SELECT SUM(i.qty) AS total FROM items i"}]
    e = _engine(views=views)
    b = _base().tx(("c", "shop.items", None, {"sku": 1, "qty": 2}), ("c", "shop.items", None, {"sku": 2, "qty": 3}))
    e.apply_records(b.as_records(), 0)
    b2 = StreamBuilder(start_sequence=b.seq)
    b2.schemas = b.schemas
    b2.tx(("u", "shop.items", {"sku": 1, "qty": 2}, {"sku": 1, "qty": 10}))
    e.apply_records(b2.as_records(100), 1)
    assert [int(v) for v in e.target.execute("SELECT total FROM qty_total").fetchone()] == [13]


def test_ddl_that_commits_implicitly_commits_what_precedes_with_its_progress_row():
    """MySQL/Oracle DDL commits the open transaction: what precedes the SCHEMA record goes with a progress
    row, so a replay after a crash does not insert keyless rows twice."""
    def stream():
        b = StreamBuilder().schema("shop.log", [("v", "int")], [])
        b.tx(("c", "shop.log", None, {"v": 1}))
        barrier = b.seq
        b.schema("shop.items", [("sku", "int"), ("qty", "int")], ["sku"])
        b.tx(("c", "shop.items", None, {"sku": 1, "qty": "not a number"}))
        return b, barrier

    for commits in (False, True):
        e = _engine()
        e.target.ddl_commits = commits
        b, barrier = stream()
        with pytest.raises(BadRecord):
            e.apply_records(b.as_records(), 0)
        prog = e.target.read_progress("src")
        if commits:
            assert prog.last_sequence == barrier - 1 and _rows(e, "log") == [(1,)]
        else:
            assert prog is None and e.target.table_columns("log") is None


@st.composite
def _streams(draw):
    """Random transactions on a keyed and a keyless table (key moves, aborts, a replayed prefix)."""
    b = _base().schema("shop.log", [("v", "int")], [])
    rows: dict[int, dict] = {}
    for t in range(draw(st.integers(1, 6))):
        ops = []
        for _ in range(draw(st.integers(1, 6))):
            kind = draw(st.sampled_from(["c", "u", "d", "k", "log"]))
            free = [k for k in range(6) if k not in rows]
            if kind == "log":
                ops.append(("c", "shop.log", None, {"v": draw(st.integers(0, 2))}))
            elif kind == "c" and free:
                k = draw(st.sampled_from(free))
                rows[k] = {"id": k, "name": str(t), "amount": "1.00"}
                ops.append(("c", "shop.orders", None, rows[k]))
            elif rows and kind in ("u", "d", "k"):
                k = draw(st.sampled_from(sorted(rows)))
                old = rows.pop(k)
                if kind == "d":
                    ops.append(("d", "shop.orders", old, None))
                    continue
                nk = draw(st.sampled_from(free)) if kind == "k" and free else k
                rows[nk] = {**old, "id": nk, "name": draw(st.sampled_from(["a", "b"]))}
                ops.append(("u", "shop.orders", old, rows[nk]))
        abort = draw(st.booleans()) and t % 2 == 1
        if abort:  # the model forgets what the aborted transaction did
            for op, _tbl, before, after in reversed(ops):
                if _tbl != "shop.orders":
                    continue
                if after is not None:
                    rows.pop(after["id"], None)
                if before is not None:
                    rows[before["id"]] = before
        b.tx(*ops, abort=abort)
    cuts = [0] + [i + 1 for i, (_k, v) in enumerate(b.items) if v.get("status") in ("END", "ABORTED", "SCHEMA")]
    return b, draw(st.sampled_from(cuts)), rows  # the first micro-batch ends at a transaction boundary


@settings(max_examples=60, deadline=None)
@given(_streams())
def test_columnar_and_record_paths_leave_the_same_target(case):
    b, split, model = case
    recs = b.as_records()
    out = []
    for columnar in (True, False):
        e = _engine()
        e.target.columnar = columnar
        e.apply_records(recs[:split], 0)
        e.apply_records(recs, 1)  # the prefix is a replay now
        out.append((_rows(e, "orders") if e.target.table_columns("orders") else [],
                    sorted(_rows(e, "log")) if e.target.table_columns("log") else [],
                    e.target.read_progress("src").last_sequence))
    assert out[0] == out[1]
    assert [(r[0], r[1]) for r in out[0][0]] == [(k, v["name"]) for k, v in sorted(model.items())]


@pytest.mark.parametrize("columnar", [True, False])
def test_a_row_image_missing_a_column_is_a_bad_record_never_null(columnar):
    # A partial row image (binlog_row_image=MINIMAL on a session, or a foreign producer) must not
    # land as NULLs in the target: the batch stops naming table, columns and position.
    b = _base().tx(("c", "shop.orders", None, {"id": 1, "name": "a", "amount": "1.50"}))
    good = b.seq - 1
    b.tx(("u", "shop.orders", {"id": 1, "name": "a", "amount": "1.50"}, {"id": 1, "name": "b"}))
    e = _engine()
    e.target.columnar = columnar
    recs = b.as_records()
    e.apply_records(recs[:-3], 0)
    with pytest.raises(BadRecord, match=r"row image of shop.orders lacks columns \['amount'\]") as info:
        e.apply_records(recs, 1)
    assert info.value.table == "shop.orders" and info.value.sequence == good + 2
    assert [tuple(map(str, r)) for r in _rows(e, "orders")] == [("1", "a", "1.50")]
    assert e.target.read_progress("src").last_sequence == good  # still the END of the first transaction


def test_the_bulk_json_path_sees_a_missing_key():
    import pyarrow as pa

    from streaming.apply.engine import _names_every_column

    cols = ["id", "amount"]
    assert _names_every_column(pa.array(['{"id":1,"amount":"2"}', '{"id": 2, "amount" : null}']), cols)
    assert not _names_every_column(pa.array(['{"id":1,"amount":"2"}', '{"id":2}']), cols)
    # a string value that looks like the key is escaped in JSON, so it cannot stand in for it
    assert not _names_every_column(pa.array([r'{"id":1,"note":"\"amount\":1"}']), cols)
