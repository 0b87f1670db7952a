"""cdc.spill: big transactions go to chunk files, undo works wherever the row is, files are cleaned."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.spill.store import SpillPolicy, TransactionStore


def test_spills_in_chunks_and_cleans_up(tmp_path):
    seen = []
    store = TransactionStore(str(tmp_path / "s"), SpillPolicy(threshold_rows=10, chunk_rows=4),
                             on_bytes=lambda m, s: seen.append((m, s)))
    buf = store.open("tx1")
    for i in range(100):
        buf.append(("row", i), key=f"r{i}", nbytes=10)
    assert buf.spilled
    assert list(buf) == [("row", i) for i in range(100)]
    buf._wait_written()
    files = os.listdir(tmp_path / "s")
    assert len(files) == 25 and all(f.endswith(".chunk") for f in files)
    assert max(s for _, s in seen) > 0
    buf.discard()
    assert os.listdir(tmp_path / "s") == []
    assert store.spilled_bytes == 0
    store.close()


def test_leftovers_of_an_earlier_process_are_removed(tmp_path, caplog):
    d = tmp_path / "s"
    d.mkdir(mode=0o700)
    (d / "tx00000001.000000.chunk").write_bytes(b"old")
    (d / "tx00000001.000001.chunk").write_bytes(b"older")
    with caplog.at_level("INFO", logger="cdc.spill"):
        store = TransactionStore(str(d))
    assert os.listdir(d) == []
    assert f"swept 2 stale spill files (8 bytes) from {d}" in caplog.text
    store.close()
    store.close()  # twice: a no-op


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(st.one_of(st.tuples(st.just("add"), st.integers(0, 5)), st.tuples(st.just("undo"), st.integers(0, 5))),
                    max_size=60), threshold=st.integers(1, 10), chunk=st.integers(1, 4))
def test_undo_removes_the_latest_earlier_row_anywhere(tmp_path_factory, ops, threshold, chunk):
    store = TransactionStore(str(tmp_path_factory.mktemp("s")), SpillPolicy(threshold_rows=threshold, chunk_rows=chunk))
    buf = store.open("tx")
    model: list[tuple[int, int]] = []
    for n, (kind, key) in enumerate(ops):
        if kind == "add":
            buf.append((n, key), key=key)
            model.append((n, key))
        else:
            buf.undo(key)
            for i in range(len(model) - 1, -1, -1):
                if model[i][1] == key:
                    del model[i]
                    break
    assert list(buf) == model
    buf.discard()
    store.close()
