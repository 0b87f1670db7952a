"""cdc.bench.compare helpers: the sizes it times and the database CPU it reports."""

from __future__ import annotations

import os

from cdc.bench.compare import _cpu_seconds, sizes_for


def test_sizes_grow_tenfold_up_to_the_requested_rows():
    assert sizes_for(1_000_000) == [10_000, 100_000, 1_000_000]
    assert sizes_for(250_000) == [10_000, 100_000, 250_000]
    assert sizes_for(5_000) == [5_000]


def test_cpu_seconds_of_a_process_grow_with_its_work():
    before = _cpu_seconds(os.getpid())
    sum(i * i for i in range(2_000_000))
    assert _cpu_seconds(os.getpid()) > before
    assert _cpu_seconds(None) == 0.0 and _cpu_seconds(2**31 - 1) == 0.0  # unknown / no such process
