"""cdc.compare.table_diff.ordered_map: the parallel bucket pass hands slabs over in key order, bounded."""

from __future__ import annotations

import threading

import pytest

from cdc.compare.table_diff import ordered_map


def test_results_come_in_item_order_whatever_order_the_workers_finish_in():
    gates = {i: threading.Event() for i in range(6)}

    def fn(i):
        if i % 2 == 0:  # even items wait until the next odd one has run: workers finish out of order
            assert gates[i + 1].wait(timeout=10)
        gates[i].set()
        return i * 10

    assert list(ordered_map(fn, range(6), workers=2, ahead=4)) == [0, 10, 20, 30, 40, 50]


def test_never_more_than_ahead_calls_in_flight():
    started, lock = [], threading.Lock()

    def fn(i):
        with lock:
            started.append(i)
        return i

    it = ordered_map(fn, range(100), workers=3, ahead=5)
    assert next(it) == 0
    with lock:
        assert max(started) < 5  # item 0 is consumed only once items 0..4 were submitted
    it.close()


def test_an_error_is_raised_at_its_items_turn_and_later_items_are_cancelled():
    seen = []

    def fn(i):
        if i == 3:
            raise ValueError("slab 3 failed")
        seen.append(i)
        return i

    got = []
    with pytest.raises(ValueError, match="slab 3"):
        got.extend(ordered_map(fn, range(1000), workers=2, ahead=4))
    assert got == [0, 1, 2] and max(seen) < 10
