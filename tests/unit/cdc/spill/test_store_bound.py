"""cdc.spill: the memory bound across many open transactions (#13 item 8)."""

from __future__ import annotations

import os
import random

from cdc.spill.store import SpillPolicy, TransactionStore

TXS, ROWS = 200, 2000
BOUND = 8 << 20


def _workload(seed: int = 7):
    """200 transactions of 2,000 rows (~320 bytes each, ~128 MB in all), appended interleaved in
    random order, with partial rollbacks (undo of an earlier key); commits in another random order."""
    rng = random.Random(seed)
    order = [t for t in range(TXS) for _ in range(ROWS)]
    rng.shuffle(order)
    return rng, order


def _run(tmp_path, bound: int | None):
    seen_peak = [0]

    def on_bytes(memory: int, _spilled: int) -> None:
        seen_peak[0] = max(seen_peak[0], memory)

    store = TransactionStore(str(tmp_path / f"s{bound}"), SpillPolicy(), on_bytes=on_bytes, max_memory_bytes=bound)
    rng, order = _workload()
    bufs = [store.open(f"tx{t}") for t in range(TXS)]
    counts = [0] * TXS
    for t in order:
        n = counts[t]
        counts[t] = n + 1
        item = (t, n, "v" * 200)
        bufs[t].append(item, key=(t, n % 50), nbytes=len(item[2]) + 120)
        if n % 97 == 96:
            bufs[t].undo((t, rng.randrange(50)))
    out = {}
    for t in rng.sample(range(TXS), TXS):
        out[t] = list(bufs[t])
        bufs[t].discard()
    assert store.memory_bytes == 0 and store.spilled_bytes == 0
    assert os.listdir(store.directory) == []
    store.close()
    return out, store, seen_peak[0]


def test_peak_memory_stays_under_the_bound_with_many_medium_transactions_and_the_output_is_identical(tmp_path):
    bounded, store, reported_peak = _run(tmp_path, BOUND)
    unbounded, free, _ = _run(tmp_path, None)
    assert bounded == unbounded
    assert sum(len(rows) for rows in bounded.values()) > TXS * ROWS * 0.9  # the undos removed a few
    total = TXS * ROWS * 320
    print(f"spill bound: {total / 2**20:.0f} MB through {TXS} open transactions; peak held "
          f"{store.peak_memory_bytes / 2**20:.2f} MB with max_memory_bytes {BOUND / 2**20:.0f} MB "
          f"({store.pressure_spills} pressure spills); unbounded peak {free.peak_memory_bytes / 2**20:.0f} MB")
    assert store.peak_memory_bytes <= BOUND
    assert reported_peak <= BOUND  # what cdc_source_buffered_bytes saw
    assert store.pressure_spills > 0
    assert free.peak_memory_bytes > 10 * BOUND  # without the bound nothing spills: 2,000 rows < threshold_rows


def test_the_largest_transaction_spills_first(tmp_path):
    store = TransactionStore(str(tmp_path / "s"), SpillPolicy(chunk_rows=100), max_memory_bytes=80_000)
    small, big = store.open("small"), store.open("big")
    for i in range(40):
        small.append(("s", i), nbytes=100)
    for i in range(600):  # held bytes above 80,000 - 3 x 10,000 (writer queue room) at the 461st row
        big.append(("b", i), nbytes=100)
    assert big.spilled and not small.spilled
    assert store.peak_memory_bytes <= 80_000
    assert list(big) == [("b", i) for i in range(600)] and list(small) == [("s", i) for i in range(40)]
    big.discard()
    small.discard()
    store.close()
