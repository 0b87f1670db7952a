"""The Oracle reader (LogMiner simulator) under ``max_buffer_bytes`` with many concurrent medium
transactions (#13 item 8): the row path's store stays under the bound, the columnar path's open rows under
its share of it (the rest in Arrow IPC chunk files), and the output equals the model's."""

from __future__ import annotations

from cdc.contract import SourceContext
from cdc.metrics import SourceMetrics
from readers.oracle.config import OracleSourceConfig
from readers.oracle.reader import OracleSource
from tests.unit.readers.oracle.helpers import expected, run

# 120 transactions open at once (one per lane), 300-500 rows each: every one passes the dispatcher's
# 256 inline rows into the store; ~15 MB of rows are buffered at once without a bound.
OPTS = "seed=5,transactions=240,lanes=120,rows_min=300,rows_max=500,rollback_rate=0.1,partial_rollback_rate=0.3"
BOUND = 2 << 20


def _source(tmp_path, name: str, bound: int | None, pipeline: str = "rows", **cfg) -> OracleSource:
    config = OracleSourceConfig(name="ora", dsn="simulator:" + OPTS, tables=["APP.*"], dictionary_path=str(tmp_path),
                                heartbeat_interval_s=0.05, poll_interval_s=0.01, parse_workers=0, pipeline=pipeline,
                                **cfg)
    context = SourceContext(SourceMetrics("ora"), spill_dir=str(tmp_path / name))
    if bound is not None:
        context.max_buffer_bytes = bound
    return OracleSource(config, context)


def test_many_open_transactions_stay_under_max_buffer_bytes_and_the_output_is_the_models(tmp_path):
    """Medium transactions: past the dispatcher's inline rows, into the store, spilled largest first."""
    bounded = _source(tmp_path, "bounded", BOUND)
    got, _ = run(bounded)
    free = _source(tmp_path, "free", 1 << 40)
    got_free, _ = run(free)
    model = expected(OPTS)
    assert got == model and got_free == model
    peak = bounded.store.peak_memory_bytes + bounded.dispatcher.peak_inline_bytes  # each peak: their sum bounds both
    free_peak = free.store.peak_memory_bytes + free.dispatcher.peak_inline_bytes
    print(f"oracle memory bound: peak {peak / 2**20:.2f} MB with max_buffer_bytes {BOUND / 2**20:.0f} MB "
          f"({bounded.store.pressure_spills} pressure spills); without: {free_peak / 2**20:.1f} MB; "
          f"{sum(len(r) for _, _, r in model)} rows in {len(model)} transactions")
    assert peak <= BOUND
    assert bounded.store.pressure_spills > 0
    assert free_peak > 4 * BOUND and free.store.pressure_spills == 0


def test_the_columnar_path_holds_its_share_and_spills_the_rest_as_arrow(tmp_path):
    """``pipeline: columnar``: the open transactions' raw rows held between batches stay under its share of
    ``max_buffer_bytes`` (a quarter), the largest go to Arrow IPC chunk files, none is left behind; without
    a bound nothing spills and far more is held."""
    bounded = _source(tmp_path, "bounded", BOUND, pipeline="columnar")
    got, _ = run(bounded)
    free = _source(tmp_path, "free", 1 << 40, pipeline="columnar", spill_threshold_rows=10**9)  # no row bound either
    got_free, _ = run(free)
    assert got == expected(OPTS) and got_free == got
    feed = bounded.columnar
    print(f"oracle columnar memory bound: open rows peak {feed.peak_pending_bytes / 2**20:.2f} MB with a share of "
          f"{feed.max_pending_bytes / 2**20:.2f} MB, {feed.spill.spilled_rows} rows spilled; without a bound "
          f"{free.columnar.peak_pending_bytes / 2**20:.1f} MB")
    assert feed.peak_pending_bytes <= BOUND // 4 == feed.max_pending_bytes
    assert feed.spill.spilled_rows > 10_000 and feed.batches_rows == 0  # spilled, never handed to the row path
    assert len(feed.spill) == 0 and not list((tmp_path / "bounded" / "ora").iterdir())  # every chunk file removed
    assert bounded.store.spilled_bytes == 0
    assert free.columnar.spill.spilled_rows == 0 and free.columnar.peak_pending_bytes > 4 * BOUND


# 400 transactions open at once, 60-200 rows each: all of them fit the dispatcher's inline lists
# (256 rows), ~10 MB of rows held at once without a bound.
SMALL = "seed=6,transactions=800,lanes=400,rows_min=60,rows_max=200,rollback_rate=0.1,partial_rollback_rate=0.3"
SMALL_BOUND = 4 << 20


def test_many_open_small_transactions_count_too(tmp_path):
    """Small transactions never pass the inline rows on their own: under the bound the largest
    move into the store anyway, so they count and spill like the others."""
    config = OracleSourceConfig(name="ora", dsn="simulator:" + SMALL, tables=["APP.*"], dictionary_path=str(tmp_path),
                                heartbeat_interval_s=0.05, poll_interval_s=0.01, parse_workers=0, pipeline="rows")
    src = OracleSource(config, SourceContext(SourceMetrics("ora"), spill_dir=str(tmp_path / "s"),
                                             max_buffer_bytes=SMALL_BOUND))
    got, _ = run(src)
    assert got == expected(SMALL)
    store, inline = src.store.peak_memory_bytes, src.dispatcher.peak_inline_bytes
    print(f"oracle small transactions: peak {store / 2**20:.2f} MB in the store + {inline / 2**20:.2f} MB inline "
          f"with max_buffer_bytes {SMALL_BOUND / 2**20:.0f} MB ({src.store.pressure_spills} pressure spills)")
    assert store + inline <= SMALL_BOUND * 1.1  # inline rows may pass their share by one fetched batch between looks
    assert src.store.pressure_spills > 0
