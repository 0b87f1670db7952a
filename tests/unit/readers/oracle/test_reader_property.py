"""Property: for random workloads the published stream equals the model's committed
transactions, in commit-SCN order, exactly once -- across parallel sessions, spills and
restarts at random points."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.readers.oracle.helpers import expected, run, source

workloads = st.builds(
    lambda seed, txns, lanes, threads, share, logs, rb, prb, csf: (
        f"seed={seed},transactions={txns},lanes={lanes},threads={threads},scn_share={share},log_scns={logs},"
        f"rollback_rate={rb},partial_rollback_rate={prb},csf_rate={csf},rows_max=6"),
    st.integers(0, 10**6), st.integers(1, 40), st.integers(1, 6), st.integers(1, 3), st.integers(1, 3),
    st.integers(5, 200), st.sampled_from([0.0, 0.2, 0.5]), st.sampled_from([0.0, 0.3, 0.8]),
    st.sampled_from([0.0, 0.1, 0.4]))

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(opts=workloads, sessions=st.integers(1, 4), size=st.integers(1, 60), spill=st.integers(1, 8),
       overlap=st.integers(0, 5), workers=st.sampled_from([0, 1]))
def test_stream_equals_model(tmp_path_factory, opts, sessions, size, spill, overlap, workers):
    tmp = tmp_path_factory.mktemp("ora")
    src = source(opts, tmp, sessions=sessions, scn_range_size=size, spill_threshold_rows=spill,
                 spill_chunk_rows=max(1, spill // 2), scn_overlap=overlap, parse_workers=workers)
    got, _ = run(src)
    assert got == expected(opts)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(opts=workloads, sessions=st.integers(1, 3), size=st.integers(1, 40),
       cuts=st.lists(st.integers(1, 6), min_size=1, max_size=4), workers=st.sampled_from([0, 1]))
def test_restarts_are_exactly_once(tmp_path_factory, opts, sessions, size, cuts, workers):
    """Stop after a random number of commits, restart from the last resume state, repeat."""
    tmp = tmp_path_factory.mktemp("ora")
    want = expected(opts)
    got, resume = [], None
    for cut in cuts + [None]:
        part, resume = run(source(opts, tmp, sessions=sessions, scn_range_size=size, spill_threshold_rows=3,
                                  spill_chunk_rows=2, parse_workers=workers), resume, stop_after=cut)
        got += part
        if cut is None or len(got) >= len(want):
            break
    if len(got) < len(want):
        part, _ = run(source(opts, tmp, sessions=sessions, scn_range_size=size), resume)
        got += part
    assert got == want


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(opts=workloads, step=st.integers(3, 40), beats=st.lists(st.integers(1, 15), min_size=1, max_size=3))
def test_restarts_from_heartbeats_with_open_transactions(tmp_path_factory, opts, step, beats):
    """The standby receives redo a little at a time; restart from heartbeat states taken while
    transactions are still open (low watermark below the last commit)."""
    opts = f"{opts},head_step={step}"
    tmp = tmp_path_factory.mktemp("ora")
    want = expected(opts)
    got, resume = [], None
    for k in beats:
        part, resume = run(source(opts, tmp, sessions=2, scn_range_size=step, heartbeat_interval_s=1e-6), resume,
                           stop_after_heartbeats=k)  # a heartbeat after every range
        got += part
    part, _ = run(source(opts, tmp, sessions=2, scn_range_size=step), resume)
    assert got + part == want


def test_read_metrics_count_every_change_once(tmp_path):
    """events_read per (table, op) and transactions_read equal the model's, inline and with a parse worker."""
    from collections import Counter

    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    opts = "seed=3,transactions=60,lanes=4,threads=2,rows_max=6,rollback_rate=0.2,partial_rollback_rate=0.3,csf_rate=0.1"
    want = Counter()
    for _scn, _xid, rows in expected(opts):
        for op, schema, table, _before, _after in rows:
            want[(f"{schema}.{table}", op)] += 1
    for workers in (0, 1):
        (tmp_path / str(workers)).mkdir()
        src = source(opts, tmp_path / str(workers), parse_workers=workers)
        got_txs, _ = run(src)
        text = generate_latest(src.metrics.registry).decode()
        samples = [s for fam in text_string_to_metric_families(text) for s in fam.samples]
        got = {(s.labels["table"], s.labels["op"]): s.value for s in samples
               if s.name == "cdc_source_events_read_total" and s.value}
        assert got == want
        [tx_read] = [s.value for s in samples if s.name == "cdc_source_transactions_read_total"]
        assert tx_read == len(got_txs) == len(expected(opts))
