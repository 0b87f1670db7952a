"""cdc.stream.snapshot_marks.with_ends: the first and the last row of a snapshot, over chunks read ahead."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cdc.stream.snapshot_marks import with_ends


def _marks(sizes, fresh=True, complete=True):
    return [(n, first, last) for n, first, last in with_ends(iter(sizes), bool, fresh=fresh, complete=lambda: complete)]


def test_first_and_last_chunk_with_rows_skip_empty_chunks():
    assert _marks([0, 3, 0, 2, 0]) == [(0, False, False), (3, True, False), (0, False, False), (2, False, True),
                                       (0, False, False)]


def test_a_resumed_snapshot_has_no_first_and_a_stopped_one_no_last():
    assert _marks([3, 2], fresh=False) == [(3, False, False), (2, False, True)]
    assert _marks([3, 2], complete=False) == [(3, True, False), (2, False, False)]
    assert _marks([]) == [] and _marks([0, 0]) == [(0, False, False), (0, False, False)]


@given(st.lists(st.integers(0, 3), max_size=12), st.booleans(), st.booleans())
def test_every_chunk_once_in_order_and_one_first_one_last(sizes, fresh, complete):
    marks = _marks(sizes, fresh, complete)
    assert [n for n, _, _ in marks] == sizes
    with_rows = [i for i, n in enumerate(sizes) if n]
    firsts = [i for i, (_, f, _) in enumerate(marks) if f]
    lasts = [i for i, (_, _, la) in enumerate(marks) if la]
    assert firsts == (with_rows[:1] if fresh else [])
    assert lasts == (with_rows[-1:] if complete else [])
