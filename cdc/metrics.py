"""The metric catalogue. Readers, the publisher and the apply job report
through these hooks; nothing else touches prometheus_client directly.

Every metric lives in an injected CollectorRegistry (one per process in
production, a fresh one per test), follows Prometheus naming (``_total``
counters, units in the name) and carries the ``source`` label (and
``table``/``op`` where it concerns one). Durations are observed in seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, PlatformCollector, ProcessCollector
from prometheus_client.core import GaugeMetricFamily

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
BATCH_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120)


class _Catalogue:
    """All metric families of one registry, created once."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        s, st, sto = ["source"], ["source", "table"], ["source", "table", "op"]
        self.events_read = Counter("cdc_source_events_read_total", "Row changes read from the source log", sto, registry=r)
        self.events_published = Counter("cdc_source_events_published_total", "Row changes acknowledged by the broker", sto, registry=r)
        self.tx_read = Counter("cdc_source_transactions_read_total", "Committed transactions read", s, registry=r)
        self.tx_published = Counter("cdc_source_transactions_published_total", "Transactions whose END the broker acknowledged", s, registry=r)
        self.records_published = Counter("cdc_source_records_published_total", "Stream records acknowledged (data and markers)", s, registry=r)
        self.bytes_published = Counter("cdc_source_published_bytes_total", "Bytes of record values acknowledged", s, registry=r)
        self.schema_changes = Counter("cdc_source_schema_changes_total", "Schema-change records published", s, registry=r)
        self.heartbeats = Counter("cdc_source_heartbeats_total", "Heartbeat records published", s, registry=r)
        # cdc_source_lag_seconds is computed at scrape time (see _SourceLagCollector)
        self.last_commit = Gauge("cdc_source_last_commit_timestamp_seconds", "Source commit time of the last published transaction", s, registry=r)
        self.last_sequence = Gauge("cdc_source_last_published_sequence", "Sequence of the last acknowledged record", s, registry=r)
        self.last_scn = Gauge("cdc_source_last_commit_scn", "Oracle: commit SCN of the last published transaction", s, registry=r)
        self.last_gtid_seq = Gauge("cdc_source_last_gtid_sequence", "MySQL: sequence number of the last published GTID", s, registry=r)
        self.open_tx = Gauge("cdc_source_open_transactions", "Transactions read but not yet committed or published", s, registry=r)
        self.oldest_open = Gauge("cdc_source_oldest_open_transaction_age_seconds", "Age of the oldest open transaction", s, registry=r)
        self.buffered = Gauge("cdc_source_buffered_bytes", "Bytes of change data held in memory", s, registry=r)
        self.spilled = Gauge("cdc_source_spilled_bytes", "Bytes of change data spilled to disk", s, registry=r)
        self.reconnects = Counter("cdc_source_reconnects_total", "Reconnects to the source", s, registry=r)
        self.failovers = Counter("cdc_source_failovers_total", "Switches to a new primary", s, registry=r)
        self.divergences = Counter("cdc_source_divergences_total",
                                   "Checkpoint not contained in the (new) primary's history: a loud stop", s, registry=r)
        self.resnapshots = Counter("cdc_source_resnapshots_total",
                                   "Automatic re-snapshots (snapshot: when_needed) because the source log was gone "
                                   "past the checkpoint", s, registry=r)
        self.last_publish = Gauge("cdc_source_last_publish_timestamp_seconds",
                                  "Wall-clock time of the last broker acknowledgement (data, marker or heartbeat)",
                                  s, registry=r)
        self.errors = Counter("cdc_source_errors_total", "Errors by class", ["source", "class"], registry=r)
        self.up = Gauge("cdc_source_up", "1 while the reader is connected and streaming", s, registry=r)
        self.publish_latency = Histogram("cdc_publish_latency_seconds", "Produce call to broker acknowledgement",
                                         s, buckets=LATENCY_BUCKETS, registry=r)
        self.dead_letters = Counter("cdc_dead_letter_records_total", "Records sent to the dead-letter topic", st, registry=r)

        a, at, ato = ["source", "target"], ["source", "target", "table"], ["source", "target", "table", "op"]
        self.apply_batches = Counter("cdc_apply_batches_total", "Micro-batches applied", a, registry=r)
        self.apply_tx = Counter("cdc_apply_transactions_total", "Source transactions applied", a, registry=r)
        self.apply_rows = Counter("cdc_apply_rows_total", "Net rows written to the target", ato, registry=r)
        self.apply_skipped = Counter("cdc_apply_skipped_batches_total", "Batches skipped as replays", a, registry=r)
        self.apply_errors = Counter("cdc_apply_errors_total", "Apply errors by class", ["source", "target", "class"], registry=r)
        self.apply_duration = Histogram("cdc_apply_batch_duration_seconds", "Time to apply one micro-batch",
                                        a, buckets=BATCH_BUCKETS, registry=r)
        self.apply_last_commit = Gauge("cdc_apply_last_commit_timestamp_seconds",
                                       "Source commit time of the last applied transaction", a, registry=r)
        self.apply_last_sequence = Gauge("cdc_apply_last_sequence", "Last applied stream sequence", a, registry=r)
        self.apply_last_batch = Gauge("cdc_apply_last_batch_timestamp_seconds",
                                      "Wall-clock time of the last target commit (data or progress row)", a, registry=r)
        self.apply_lag_records = Gauge("cdc_apply_lag_records",
                                       "Records of the changes topic the planner has seen but no micro-batch holds yet",
                                       a, registry=r)
        self.apply_dead_letters = Counter("cdc_apply_dead_letter_rows_total", "Rows sent to the dead-letter table", at, registry=r)
        self.apply_retries = Counter("cdc_apply_retries_total", "Micro-batches rolled back whole and retried after a "
                                     "transient target error (lock or statement timeout, deadlock, lost connection)",
                                     ["source", "target", "cause"], registry=r)
        self._freshness: dict[tuple[str, str], float] = {}
        r.register(_FreshnessCollector(self._freshness))
        self._caught_up: dict[str, float] = {}
        self._progress: dict[str, float] = {}
        r.register(_SourceLagCollector(self._caught_up))


class _SourceLagCollector:
    """``cdc_source_lag_seconds``: now - the source time the stream is caught up to.

    "Caught up to" is the commit time of the last published transaction, or
    the source time of the last heartbeat when the source is idle, whichever
    is later. Computed at scrape time, so a stalled reader shows a lag that
    grows, instead of a gauge frozen at its last value.
    """

    def __init__(self, caught_up: dict[str, float]) -> None:
        self._caught_up = caught_up

    def collect(self) -> Iterable[GaugeMetricFamily]:
        fam = GaugeMetricFamily("cdc_source_lag_seconds",
                                "Now minus the source time the published stream is caught up to",
                                labels=["source"])
        now = time.time()
        for source, ts in list(self._caught_up.items()):
            fam.add_metric([source], max(0.0, now - ts))
        yield fam

    def describe(self) -> Iterable[GaugeMetricFamily]:
        return []


class _FreshnessCollector:
    """``cdc_apply_target_freshness_seconds``: now - the source time the target is caught up to, computed
    at scrape time: the commit time of the last applied transaction, or the source time of a later applied
    HEARTBEAT (an idle source's target is as fresh as its last applied heartbeat; the apply job applies
    those at most every ``apply[].freshness_interval_s``)."""

    def __init__(self, last_commit: dict[tuple[str, str], float]) -> None:
        self._last = last_commit

    def collect(self) -> Iterable[GaugeMetricFamily]:
        fam = GaugeMetricFamily("cdc_apply_target_freshness_seconds",
                                "Now minus the source time the target is caught up to (last applied transaction "
                                "or heartbeat)",
                                labels=["source", "target"])
        now = time.time()
        for (source, target), ts in list(self._last.items()):
            fam.add_metric([source, target], max(0.0, now - ts))
        yield fam

    def describe(self) -> Iterable[GaugeMetricFamily]:
        return []


_catalogues: dict[int, tuple[CollectorRegistry, _Catalogue]] = {}
_lock = threading.Lock()


def catalogue(registry: CollectorRegistry) -> _Catalogue:
    """The metric families of ``registry``, created on first use (thread-safe)."""
    key = id(registry)
    with _lock:
        entry = _catalogues.get(key)
        if entry is None or entry[0] is not registry:  # id() reuse after a registry was collected
            entry = (registry, _Catalogue(registry))
            _catalogues[key] = entry
        return entry[1]


def process_registry() -> CollectorRegistry:
    """A fresh registry with the standard process_* and python_info collectors.

    The daemon and the apply job use one of these per process, so dashboards
    can show resident memory and CPU next to the catalogue.
    """
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    return registry


def _adder(child: Any) -> Any:
    """What adds a non-negative amount to the labelled Counter ``child`` (the reader's hooks, once or twice per
    transaction): its value's own ``inc`` (the same lock, the same number) where the child is prometheus_client's
    stock Counter, whose ``inc`` only checks that the child is observable and the amount not negative before
    calling exactly that (three Python calls per transaction saved); else ``child.inc``."""
    value = getattr(child, "_value", None)
    inc = getattr(value, "inc", None)
    if type(child) is Counter and type(child).inc is _STOCK_INC and callable(inc) and child._is_observable():
        return inc
    return child.inc


_STOCK_INC = Counter.inc


class SourceMetrics:
    """Hooks for one source. ``registry=None`` gives a private registry (tests, tools)."""

    def __init__(self, source: str, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.source = source
        self._m = catalogue(self.registry)
        m, s = self._m, source
        for g in (m.open_tx, m.oldest_open, m.buffered, m.spilled, m.up):
            g.labels(s).set(0)
        for c in (m.tx_read, m.tx_published, m.records_published, m.bytes_published, m.schema_changes,
                  m.heartbeats, m.reconnects, m.failovers, m.divergences, m.resnapshots):
            c.labels(s)  # export at 0 from the start, so rate() has a series
        m.errors.labels(s, "none")
        m.publish_latency.labels(s)
        self._read_children: dict[tuple[str, str], Any] = {}
        self._published_children: dict[tuple[str, str], Any] = {}
        self._tx_read = _adder(m.tx_read.labels(s))
        self._started = time.time()
        m.last_publish.labels(s).set(self._started)  # "no progress yet" starts counting now

    # reading
    def event_read(self, table: str, op: str, n: int = 1) -> None:
        add = self._read_children.get((table, op))  # labels() costs more than inc(): a child per (table, op)
        if add is None:
            if len(self._read_children) > 10_000:
                self._read_children.clear()
            add = self._read_children[(table, op)] = _adder(self._m.events_read.labels(self.source, table, op))
        add(n)

    def transaction_read(self, count: int = 1) -> None:
        self._tx_read(count)

    def open_transactions(self, count: int, oldest_age_s: float = 0.0) -> None:
        self._m.open_tx.labels(self.source).set(count)
        self._m.oldest_open.labels(self.source).set(oldest_age_s)

    def buffer_bytes(self, in_memory: int, spilled: int) -> None:
        self._m.buffered.labels(self.source).set(in_memory)
        self._m.spilled.labels(self.source).set(spilled)

    def reconnect(self, cause: BaseException | str | None = None) -> None:
        """One reconnect attempt; ``cause`` (the error that broke the connection) also counts in errors_total."""
        self._m.reconnects.labels(self.source).inc()
        if cause is not None:
            self.error(cause)

    def failover(self) -> None:
        self._m.failovers.labels(self.source).inc()

    def error(self, exc_or_class: BaseException | str) -> None:
        """Count an error under its class name; a divergence also counts in divergences_total."""
        cls = exc_or_class if isinstance(exc_or_class, str) else type(exc_or_class).__name__
        self._m.errors.labels(self.source, cls).inc()
        if "Diverg" in cls:
            self._m.divergences.labels(self.source).inc()

    def divergence(self) -> None:
        """The checkpoint is not in the new primary's history (without an error() call)."""
        self._m.divergences.labels(self.source).inc()

    def resnapshot(self) -> None:
        """The source log no longer reaches the checkpoint and the source re-snapshots its tables instead."""
        self._m.resnapshots.labels(self.source).inc()

    def seconds_since_progress(self) -> float:
        """Seconds since the broker last acknowledged anything (for /readyz "not stalled")."""
        return max(0.0, time.time() - self._m._progress.get(self.source, self._started))

    def connected(self, up: bool) -> None:
        self._m.up.labels(self.source).set(1 if up else 0)

    # publishing (call only after the broker acknowledged)
    def events_published(self, table: str, op: str, n: int = 1) -> None:
        child = self._published_children.get((table, op))  # as event_read: a child per (table, op)
        if child is None:
            if len(self._published_children) > 10_000:
                self._published_children.clear()
            child = self._published_children[(table, op)] = self._m.events_published.labels(self.source, table, op)
        child.inc(n)

    def records_published(self, n: int, nbytes: int, last_sequence: int) -> None:
        self._m.records_published.labels(self.source).inc(n)
        self._m.bytes_published.labels(self.source).inc(nbytes)
        self._m.last_sequence.labels(self.source).set(last_sequence)
        self._progressed()

    def transaction_published(self, commit_ts_ms: int, *, scn: int | None = None, gtid_seq: int | None = None,
                              count: int = 1) -> None:
        """``count`` transactions acknowledged, the last of them committed at ``commit_ts_ms`` (at ``scn``)."""
        m, s = self._m, self.source
        m.tx_published.labels(s).inc(count)
        m.last_commit.labels(s).set(commit_ts_ms / 1000.0)
        self._caught_up_to(commit_ts_ms / 1000.0)
        if scn is not None:
            m.last_scn.labels(s).set(scn)
        if gtid_seq is not None:
            m.last_gtid_seq.labels(s).set(gtid_seq)

    def idle(self, source_ts_ms: int) -> None:
        """A heartbeat: the source is caught up to ``source_ts_ms``."""
        self._m.heartbeats.labels(self.source).inc()
        self._progressed()
        self._caught_up_to(source_ts_ms / 1000.0)

    def _progressed(self) -> None:
        now = time.time()
        self._m._progress[self.source] = now
        self._m.last_publish.labels(self.source).set(now)

    def _caught_up_to(self, source_ts_s: float) -> None:
        caught = self._m._caught_up
        caught[self.source] = max(caught.get(self.source, 0.0), source_ts_s)

    def schema_change(self) -> None:
        self._m.schema_changes.labels(self.source).inc()

    def publish_latency(self, seconds: float) -> None:
        self._m.publish_latency.labels(self.source).observe(seconds)

    def dead_letter(self, table: str) -> None:
        self._m.dead_letters.labels(self.source, table).inc()


class ApplyMetrics:
    """Hooks for one (source, target) apply stream."""

    def __init__(self, source: str, target: str, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.labels = (source, target)
        self._m = catalogue(self.registry)
        for c in (self._m.apply_batches, self._m.apply_tx, self._m.apply_skipped):
            c.labels(*self.labels)
        self._m.apply_errors.labels(*self.labels, "none")
        self._m.apply_duration.labels(*self.labels)

    def batch_applied(self, seconds: float, transactions: int, last_sequence: int, last_commit_ts_ms: int | None,
                      heartbeat_ts_ms: int | None = None) -> None:
        """A batch committed on the target; ``heartbeat_ts_ms``: its last heartbeat's source time, if any."""
        m = self._m
        m.apply_batches.labels(*self.labels).inc()
        m.apply_tx.labels(*self.labels).inc(transactions)
        m.apply_duration.labels(*self.labels).observe(seconds)
        m.apply_last_sequence.labels(*self.labels).set(last_sequence)
        m.apply_last_batch.labels(*self.labels).set(time.time())
        if last_commit_ts_ms is not None:
            m.apply_last_commit.labels(*self.labels).set(last_commit_ts_ms / 1000.0)
        caught_up = max((t for t in (last_commit_ts_ms, heartbeat_ts_ms) if t is not None), default=None)
        if caught_up is not None:
            m._freshness[self.labels] = max(m._freshness.get(self.labels, 0.0), caught_up / 1000.0)

    def records_behind(self, n: int) -> None:
        """Records between the last planned batch's end and the stream head the planner has seen."""
        self._m.apply_lag_records.labels(*self.labels).set(n)

    def rows_applied(self, table: str, op: str, n: int) -> None:
        self._m.apply_rows.labels(*self.labels, table, op).inc(n)

    def batch_skipped(self) -> None:
        self._m.apply_skipped.labels(*self.labels).inc()

    def error(self, exc_or_class: BaseException | str) -> None:
        cls = exc_or_class if isinstance(exc_or_class, str) else type(exc_or_class).__name__
        self._m.apply_errors.labels(*self.labels, cls).inc()

    def dead_letter(self, table: str) -> None:
        self._m.apply_dead_letters.labels(*self.labels, table).inc()

    def batch_retried(self, cause: str) -> None:
        """A batch failed transiently (``cause``: the driver's error class), was rolled back and is retried."""
        self._m.apply_retries.labels(*self.labels, cause).inc()
