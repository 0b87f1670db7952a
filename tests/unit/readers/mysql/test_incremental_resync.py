"""readers.mysql.incremental in resync mode: each chunk transaction ends with a resync range record whose
range is the chunk's key range (open at the ends of the table) and whose keep set is the chunk's keys plus
every key the stream changed in the window."""

from __future__ import annotations

from types import SimpleNamespace

from cdc.stream.events import Begin, Change, Column, Commit, TableId, TableSchema
from cdc.stream.resync_range import ResyncRange
from readers.mysql.incremental import RESYNC, IncrementalSnapshots

T = TableId("d", "t")
SCHEMA = TableSchema(T, (Column("a", "int", False), Column("b", "bigint", False), Column("v", "int", True)),
                     ("a", "b"))


def _inc(chunk_rows: int = 3) -> IncrementalSnapshots:
    src = SimpleNamespace(name="s", metrics=SimpleNamespace(event_read=lambda *a: None),
                          resume_state=lambda: {"gtid_set": "0-1-1"})
    inc = IncrementalSnapshots(src, "ops.signal", chunk_rows)
    inc._next_chunk = lambda: None  # no source connection: the test plays the chunk reads
    return inc


def _read(inc: IncrementalSnapshots, after, rows: list[dict]) -> None:
    """What _next_chunk does after reading ``rows`` of key > ``after`` under a LOW watermark."""
    inc.table, inc.resyncing, inc.after, inc.chunk_id = "d.t", True, after, "c1"
    inc.reader = SimpleNamespace(key=["a", "b"], schema=SCHEMA, key_of=lambda r: [r["a"], r["b"]])
    inc.chunk_last = len(rows) < inc.chunk_rows
    inc.chunk_after = [rows[-1]["a"], rows[-1]["b"]] if rows else after
    inc.buffer = {(r["a"], r["b"]): r for r in rows}
    inc.window_keys = set()
    inc.in_window = True


def _window_then_close(inc: IncrementalSnapshots, *changes: Change) -> list:
    sig = TableId("ops", "signal")
    events = [Begin("g1", 0), *changes, Commit("g1", 0, {}),
              Begin("g2", 0), Change(sig, "c", None, {"id": "c1:h", "type": "snapshot-window-close", "data": "c1"}),
              Commit("g2", 0, {})]
    return list(inc.wrap(iter(events)))[len(events):]


def _range_of(published: list) -> ResyncRange:
    x = [e for e in published if type(e) is Change and e.op == "x"]
    assert len(x) == 1 and published.index(x[0]) == len(published) - 2  # last record before the Commit
    return ResyncRange.from_text(x[0].source["resync"], "d.t")


def test_a_full_chunk_ranges_from_the_last_key_to_its_own_and_keeps_window_keys_even_key_changes():
    inc = _inc()
    _read(inc, [1, 5], [{"a": 1, "b": 6, "v": 0}, {"a": 1, "b": 9, "v": 0}, {"a": 2, "b": 1, "v": 0}])
    out = _window_then_close(
        inc, Change(T, "u", {"a": 1, "b": 9, "v": 0}, {"a": 1, "b": 7, "v": 0}),  # key change: old and new key
        Change(T, "c", None, {"a": 1, "b": 8, "v": 3}))
    rng = _range_of(out)
    assert (rng.key, rng.after, rng.through) == (("a", "b"), (1, 5), (2, 1))
    assert rng.keep == {(1, 6), (1, 7), (1, 8), (1, 9), (2, 1)}
    published = [e.after["b"] for e in out if type(e) is Change and e.op == "r"]
    assert published == [6, 1]  # (1, 9) is gone at the source: not brought back
    assert inc.after == [2, 1] and inc.table == "d.t"


def test_the_last_chunk_is_open_at_the_top_and_finishes_the_table():
    inc = _inc()
    _read(inc, [2, 1], [{"a": 3, "b": 0, "v": 0}])
    rng = _range_of(_window_then_close(inc))
    assert (rng.after, rng.through, rng.keep) == ((2, 1), None, {(3, 0)})
    assert inc.table is None and inc.progress() == {}


def test_an_empty_table_publishes_one_range_over_everything_keeping_only_window_changes():
    inc = _inc()
    _read(inc, None, [])
    out = _window_then_close(inc, Change(T, "c", None, {"a": 4, "b": 4, "v": 1}))
    assert [e.op for e in out if type(e) is Change] == ["x"]
    rng = _range_of(out)
    assert (rng.after, rng.through, rng.keep) == (None, None, {(4, 4)})


def test_resync_requests_queue_upgrade_and_survive_a_restart():
    inc = _inc()
    inc.table, inc.resyncing = "d.u", False
    sig = TableId("ops", "signal")
    inc._signal(Change(sig, "c", None, {"id": "r1", "type": "execute-snapshot", "data": "d.t"}))
    inc._signal(Change(sig, "c", None, {"id": "r2", "type": RESYNC, "data": "d.t,d.u"}))
    assert inc.queue == ["d.t", "d.u"] and inc.resync == ["d.t", "d.u"]  # d.u runs again, with ranges
    again = _inc()
    again.restore(inc.progress())
    assert (again.queue, again.resync, again.table, again.resyncing) == (["d.t", "d.u"], ["d.t", "d.u"], "d.u", False)
    again._finish_table()
    assert again.table == "d.t" and again.resyncing and again.resync == ["d.u"]
