"""The metric catalogue: names, labels, and that every hook moves its metric."""

import time

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from cdc.errors import SourceUnavailable
from cdc.metrics import ApplyMetrics, SourceMetrics, process_registry


def samples(registry: CollectorRegistry) -> dict[tuple[str, tuple], float]:
    text = generate_latest(registry).decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(registry, name, **labels):
    return samples(registry).get((name, tuple(sorted(labels.items()))))


def test_source_series_exist_at_zero_from_the_start():
    reg = CollectorRegistry()
    SourceMetrics("shop", reg)
    for name in ("cdc_source_transactions_read_total", "cdc_source_transactions_published_total",
                 "cdc_source_records_published_total", "cdc_source_reconnects_total",
                 "cdc_source_failovers_total", "cdc_source_divergences_total", "cdc_source_open_transactions",
                 "cdc_source_buffered_bytes", "cdc_source_spilled_bytes", "cdc_source_up"):
        assert value(reg, name, source="shop") == 0, name
    assert value(reg, "cdc_source_errors_total", source="shop", **{"class": "none"}) == 0
    assert value(reg, "cdc_publish_latency_seconds_count", source="shop") == 0


def test_every_source_hook_moves_its_metric():
    reg = CollectorRegistry()
    m = SourceMetrics("shop", reg)
    m.event_read("shop.orders", "c", 3)
    m.transaction_read()
    m.open_transactions(2, 1.5)
    m.buffer_bytes(1000, 4096)
    m.reconnect()
    m.failover()
    m.error(SourceUnavailable("lost", host="h"))
    m.error("GtidDivergence")
    m.connected(True)
    m.events_published("shop.orders", "c", 3)
    m.records_published(5, 500, 42)
    commit_ms = int(time.time() * 1000) - 3000
    m.transaction_published(commit_ms, gtid_seq=17)
    m.schema_change()
    m.publish_latency(0.004)
    m.dead_letter("shop.orders")
    s = "shop"
    assert value(reg, "cdc_source_events_read_total", source=s, table="shop.orders", op="c") == 3
    assert value(reg, "cdc_source_events_published_total", source=s, table="shop.orders", op="c") == 3
    assert value(reg, "cdc_source_transactions_read_total", source=s) == 1
    assert value(reg, "cdc_source_transactions_published_total", source=s) == 1
    assert value(reg, "cdc_source_open_transactions", source=s) == 2
    assert value(reg, "cdc_source_oldest_open_transaction_age_seconds", source=s) == 1.5
    assert value(reg, "cdc_source_buffered_bytes", source=s) == 1000
    assert value(reg, "cdc_source_spilled_bytes", source=s) == 4096
    assert value(reg, "cdc_source_reconnects_total", source=s) == 1
    assert value(reg, "cdc_source_failovers_total", source=s) == 1
    assert value(reg, "cdc_source_errors_total", source=s, **{"class": "SourceUnavailable"}) == 1
    assert value(reg, "cdc_source_divergences_total", source=s) == 1
    assert value(reg, "cdc_source_up", source=s) == 1
    assert value(reg, "cdc_source_records_published_total", source=s) == 5
    assert value(reg, "cdc_source_published_bytes_total", source=s) == 500
    assert value(reg, "cdc_source_last_published_sequence", source=s) == 42
    assert value(reg, "cdc_source_last_gtid_sequence", source=s) == 17
    assert value(reg, "cdc_source_last_commit_timestamp_seconds", source=s) == commit_ms / 1000
    assert 3.0 <= value(reg, "cdc_source_lag_seconds", source=s) < 60
    assert value(reg, "cdc_source_schema_changes_total", source=s) == 1
    assert value(reg, "cdc_publish_latency_seconds_count", source=s) == 1
    assert value(reg, "cdc_dead_letter_records_total", source=s, table="shop.orders") == 1
    assert m.seconds_since_progress() < 60


def test_lag_is_computed_at_scrape_time_and_heartbeats_catch_up():
    reg = CollectorRegistry()
    m = SourceMetrics("shop", reg)
    assert value(reg, "cdc_source_lag_seconds", source="shop") is None  # unknown before anything published
    old_ms = int(time.time() * 1000) - 600_000
    m.transaction_published(old_ms)
    assert value(reg, "cdc_source_lag_seconds", source="shop") >= 600
    m.idle(int(time.time() * 1000))
    assert value(reg, "cdc_source_lag_seconds", source="shop") < 60
    m.transaction_published(old_ms)  # an older commit never moves the caught-up point back
    assert value(reg, "cdc_source_lag_seconds", source="shop") < 60
    assert value(reg, "cdc_source_heartbeats_total", source="shop") == 1


def test_two_sources_share_one_registry():
    reg = CollectorRegistry()
    a, b = SourceMetrics("a", reg), SourceMetrics("b", reg)
    a.transaction_read()
    assert value(reg, "cdc_source_transactions_read_total", source="a") == 1
    assert value(reg, "cdc_source_transactions_read_total", source="b") == 0
    b.transaction_read()
    assert value(reg, "cdc_source_transactions_read_total", source="b") == 1


def test_apply_hooks():
    reg = CollectorRegistry()
    m = ApplyMetrics("shop", "pg", reg)
    labels = {"source": "shop", "target": "pg"}
    assert value(reg, "cdc_apply_batches_total", **labels) == 0
    assert value(reg, "cdc_apply_target_freshness_seconds", **labels) is None
    commit_ms = int(time.time() * 1000) - 2000
    m.batch_applied(0.3, 4, 99, commit_ms)
    m.rows_applied("shop.orders", "u", 7)
    m.batch_skipped()
    m.error(RuntimeError("x"))
    m.dead_letter("shop.orders")
    assert value(reg, "cdc_apply_batches_total", **labels) == 1
    assert value(reg, "cdc_apply_transactions_total", **labels) == 4
    assert value(reg, "cdc_apply_last_sequence", **labels) == 99
    assert value(reg, "cdc_apply_last_commit_timestamp_seconds", **labels) == commit_ms / 1000
    assert 2.0 <= value(reg, "cdc_apply_target_freshness_seconds", **labels) < 60
    assert value(reg, "cdc_apply_rows_total", table="shop.orders", op="u", **labels) == 7
    assert value(reg, "cdc_apply_skipped_batches_total", **labels) == 1
    assert value(reg, "cdc_apply_errors_total", **{"class": "RuntimeError"}, **labels) == 1
    assert value(reg, "cdc_apply_dead_letter_rows_total", table="shop.orders", **labels) == 1
    assert value(reg, "cdc_apply_batch_duration_seconds_count", **labels) == 1


def test_naming_rules():
    reg = process_registry()
    SourceMetrics("s", reg)
    ApplyMetrics("s", "t", reg)
    names = {fam.name for fam in reg.collect()}
    assert "process_resident_memory_bytes" in names
    for fam in reg.collect():
        if not fam.name.startswith("cdc_"):
            continue
        if fam.type == "counter":
            assert fam.samples[0].name.endswith("_total") if fam.samples else True
        assert not fam.name.endswith("_ms"), f"{fam.name}: use seconds"


@pytest.mark.parametrize("cls", ["GtidDivergence", "DivergedHistory"])
def test_divergence_errors_count_as_divergence(cls):
    reg = CollectorRegistry()
    SourceMetrics("s", reg).error(cls)
    assert value(reg, "cdc_source_divergences_total", source="s") == 1


def test_the_read_hooks_count_as_the_counters_own_inc():
    """event_read and transaction_read add to the counter's value without Counter.inc's per-call checks (once or
    twice per transaction): the exported numbers are those of inc() called the same way, across tables and ops."""
    from prometheus_client import Counter

    from cdc.metrics import _adder

    fast, slow = CollectorRegistry(), CollectorRegistry()
    m = SourceMetrics("shop", fast)
    plain = Counter("x_total", "x", ["t"], registry=slow)
    stock = Counter("z_total", "z", ["t"], registry=CollectorRegistry()).labels("a")
    assert _adder(stock).__self__ is stock._value  # the stock Counter: its value's inc
    for i in range(50):
        table, op = f"shop.t{i % 3}", "cud"[i % 4 % 3]
        m.event_read(table, op, i % 5)
        m.transaction_read()
        plain.labels(f"{table}/{op}").inc(i % 5)
    assert value(fast, "cdc_source_transactions_read_total", source="shop") == 50
    for key, n in samples(slow).items():
        if key[0] == "x_total":
            table, op = dict(key[1])["t"].split("/")
            assert value(fast, "cdc_source_events_read_total", source="shop", table=table, op=op) == n

    class Custom(Counter):
        def inc(self, amount=1, exemplar=None):
            super().inc(amount * 2)

    other = Custom("y_total", "y", ["t"], registry=CollectorRegistry()).labels("a")
    _adder(other)(3)  # a Counter whose inc does more: called as it is
    assert other._value.get() == 6
