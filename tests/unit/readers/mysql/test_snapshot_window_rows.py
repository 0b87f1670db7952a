"""The rows a snapshot's read no longer sees (deleted in its window, readers/mysql/snapshot_window.unseen) go out
with the chunk whose key range holds them: a restart after that chunk (which reads on above its last key and
takes deleted rows above it only) has each of them in the stream exactly once, whichever chunk it stops after."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from readers.mysql.snapshot_window import rolled_back, unseen


def _emitted(keys: list[int], images: dict, chunk: int, stop_after: int | None) -> list[int]:
    """Ids the snapshot emits reading ``keys`` (the rows its read sees) in chunks of ``chunk``, with the window
    ``images``; abandoned after chunk ``stop_after`` (None: never) and resumed above that chunk's last key with
    the same window (a restart's window holds the first one: the same images for these keys)."""
    out: list[int] = []

    def run(after: int | None, stop: int | None) -> int | None:
        used: set = set()
        rest = [k for k in keys if after is None or k > after]
        n = 0
        while True:
            read = rest[n * chunk:(n + 1) * chunk]
            last = len(read) < chunk
            rows = rolled_back([{"id": k} for k in read], ["id"], images, used)
            rows += unseen(["id"], images, used, None if after is None else [after],
                           None if last or not read else [read[-1]])
            out.extend(r["id"] for r in rows)
            if read:
                after = read[-1]
            if last or (stop is not None and n == stop):
                return None if last else after
            n += 1

    resumed = run(None, stop_after)
    if resumed is not None:
        run(resumed, None)
    return out


@settings(max_examples=300, deadline=None)
@given(st.sets(st.integers(1, 60), max_size=40), st.sets(st.integers(1, 60), max_size=15), st.integers(1, 7),
       st.one_of(st.none(), st.integers(0, 8)))
def test_each_row_of_the_state_at_low_goes_out_once_across_a_restart(seen, deleted, chunk, stop_after):
    keys = sorted(seen - deleted)  # the read: the rows that exist now
    images = {(k,): {"id": k} for k in deleted}  # deleted in the window: their rows at LOW
    got = _emitted(keys, images, chunk, stop_after)
    assert sorted(got) == sorted(set(keys) | deleted) and len(got) == len(set(got))


def test_a_deleted_row_goes_out_with_its_own_chunk():
    images = {(3,): {"id": 3}, (9,): {"id": 9}}
    used: set = set()
    assert unseen(["id"], images, used, None, [5]) == [{"id": 3}]
    assert unseen(["id"], images, used, [5], None) == [{"id": 9}]
    assert unseen(["id"], images, used, None, None) == []  # each once
