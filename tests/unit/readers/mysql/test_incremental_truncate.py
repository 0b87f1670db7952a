"""readers.mysql.incremental: a TRUNCATE of the table being snapshotted, inside a chunk's window,
drops every row of that chunk (they are gone from the source) instead of failing on the missing image."""

from __future__ import annotations

from types import SimpleNamespace

from cdc.stream.events import Begin, Change, Commit, TableId
from readers.mysql.incremental import IncrementalSnapshots


def test_truncate_in_the_window_empties_the_chunk_buffer():
    inc = IncrementalSnapshots(None, "ops.signal", 10)
    inc.table, inc.chunk_id, inc.in_window = "d.t", "chunk-1", True
    inc.reader = SimpleNamespace(key=["id"])
    inc.buffer = {(1,): {"id": 1}, (2,): {"id": 2}, (3,): {"id": 3}}
    t = TableId("d", "t")
    events = [Begin("0-1-5", 0), Change(t, "d", {"id": 1}, None), Commit("0-1-5", 0, {}),
              Begin("0-1-6", 0), Change(t, "t", None, None), Commit("0-1-6", 0, {})]
    seen = []
    for ev in inc.wrap(iter(events)):
        seen.append(ev)
        if ev is events[2]:
            assert set(inc.buffer) == {(2,), (3,)}  # a delete drops its key
    assert seen == events and inc.buffer == {}
