"""The capture daemon: one worker thread per source (reader -> publisher).

:func:`run_source` is the loop of one source; :class:`Daemon` runs several,
serves /metrics /healthz /readyz, and turns signals and errors into an exit
status:

- 0: every source stopped at a transaction boundary (first SIGTERM/SIGINT,
  or every scripted source ran out), all records acknowledged;
- 1: a source did not reach a transaction boundary within
  ``drain_timeout_s``; whatever it wrote is closed with ABORTED at the next
  start, so nothing is lost or duplicated;
- 2: a source failed (a Terminal error, ...): the message names the source
  and the last acknowledged position. Sources fail alone: the others keep
  streaming, /readyz names the failed one, and the daemon exits once every
  source has ended. A supervisor restarts the daemon; recovery from the
  stream tail makes that exactly-once. With the operations API on (``api:``),
  the daemon does not exit when its last source failed: it keeps serving the
  API (the failed source's state and way back, restart and skip) until a
  signal stops it, then exits 2.

Readiness names the cause of a stall: the source thread both reads the
source and takes in the broker's acknowledgements, so a reader blocked on a
source that does not answer (a dark network path) leaves records looking
unacknowledged. :class:`ReadWatch` tells the two apart: while the thread has
been waiting on the reader for more than ``2 x max(STOP_CHECK_S, heartbeat
interval)`` (a reader that can yields at least that often), /readyz names the
source and how long it has been silent, not the broker.

The broker is the daemon's to wait for: a PublishError (records not
acknowledged within ``kafka.delivery_timeout_s``, a failed delivery, a
broker unreachable at start) restarts that source in the process, after a
backoff of 1, 2, 4 ... at most ``RESTART_MAX_S`` seconds, for as long as it
takes; each restart counts in ``cdc_source_reconnects_total`` (and
``cdc_source_errors_total{class="PublishError"}``), and /readyz says
"broker unreachable" meanwhile. A restart is a new publisher and a new
reader started from the stream's tail; if that tail ends BELOW a sequence
this process saw acknowledged, the broker lost acknowledged records (a
broker that came back empty): that is a StreamCorrupt stop naming both
sequences, never a new stream.

Transient errors inside readers (reconnects, failover) are the readers' to
retry; once a reader gave up (SourceUnavailable), the daemon restarts that
source like a broker failure, with the same backoff, for as long as it takes
(``source_restart_limit`` restarts in a row, when set): a source down for
minutes comes back by itself, and the other sources are not touched.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cdc.contract import STOP_CHECK_S, Source, SourceContext
from cdc.errors import ConfigError, PublishError, SourceUnavailable, StreamCorrupt
from cdc.metrics import SourceMetrics
from cdc.ops.control import SourceControl, checkpoint_of, paused_by
from cdc.publish.lease import WriterLease
from cdc.publish.opening import open_publisher
from cdc.publish.publisher import Publisher
from cdc.runtime.health import HealthServer, describe, source_readiness
from cdc.runtime.logs import THREAD_PREFIX, bind_source_state

log = logging.getLogger(__name__)


RESTART_BASE_S = 1.0
RESTART_MAX_S = 30.0


class ReadWatch:
    """Where the source thread is: ``since`` is the monotonic time it began waiting for the reader's next event
    (None while it publishes one, or before the reader started). Written by the source thread only; read by
    /readyz (a float or None: no lock needed)."""

    __slots__ = ("since",)

    def __init__(self) -> None:
        self.since: float | None = None

    def blocked_for(self) -> float:
        """Seconds the thread has been waiting on the reader (0 when it is not)."""
        since = self.since
        return 0.0 if since is None else max(0.0, time.monotonic() - since)


_END = object()


def write_operations(publisher: Publisher, ops: list[dict[str, Any]], resume: dict[str, Any] | None) -> None:
    """Write operations records (cdc.ops.control) at a transaction boundary: HEARTBEATs carrying the
    checkpoint ``resume`` unchanged plus the operation. Not flushed here."""
    from cdc.stream.events import Heartbeat

    base = checkpoint_of(resume) or {}
    for op in ops:
        publisher.publish(Heartbeat(op["at_ms"], {**base, "operation": op}))


def run_source(source: Source, publisher: Publisher, stop: threading.Event, *, metrics: SourceMetrics,
               acknowledged: int = 0, on_recovered: Callable[[], None] | None = None,
               watch: ReadWatch | None = None, control: SourceControl | None = None) -> bool:
    """Recover, start the reader at the stream's resume state, pump events until stopped.

    When ``stop`` is set, the reader is asked to stop; its iterator ends at the
    next transaction boundary (cdc.contract contract), and everything written
    is flushed (acknowledged) before this returns. Any error propagates after
    the reader is closed; a PublishError means "restart and recover".
    ``acknowledged``: a sequence an earlier publisher of this process saw in
    the stream; a tail below it raises StreamCorrupt before the reader starts.
    ``on_recovered`` is called once the tail was read and found sound. ``watch``: told when the thread
    waits on the reader (/readyz). ``control``: the operator's requests (cdc.ops): its pending operations
    records are written between transactions; a pause stops the reader at its next transaction boundary and
    ends with the pause record as the stream's last record. Returns True when the source stopped because it
    is paused (also when the stream's tail already was a pause record: the reader is then not started).
    """
    try:
        resume = publisher.recover()
        last = publisher.recovered()
        if last < acknowledged:
            raise StreamCorrupt(
                f"{publisher.topic} on {publisher.kafka.bootstrap_servers} now ends at sequence {last}"
                f"{' (empty)' if not last else ''} but "
                f"sequence {acknowledged} was acknowledged by the broker earlier (did the broker come back with "
                f"empty storage?): sequences {last + 1}..{acknowledged} are lost; nothing more is written. "
                f"Rebuild the stream explicitly (cdc stream reset) once the targets are dealt with",
                source=publisher.source_name, topic=publisher.topic, last_sequence=last,
                acknowledged_sequence=acknowledged)
    except BaseException:
        _close_unstarted(source, publisher)
        raise
    if on_recovered is not None:
        on_recovered()
    if control is not None:
        try:
            ops = control.take()
            if ops:
                write_operations(publisher, ops, resume)
                publisher.flush()
                resume = {**(checkpoint_of(resume) or {}), "operation": ops[-1]}
            if paused_by(resume) is not None:  # paused (now, or before the daemon's restart): do not read
                control.paused, control.paused_since = True, paused_by(resume)
        except BaseException:
            _close_unstarted(source, publisher)
            raise
        if control.paused:
            _close_unstarted(source, publisher)
            return True
    source.start(checkpoint_of(resume))
    stop_requested = False
    watch = ReadWatch() if watch is None else watch
    mono = time.monotonic
    try:
        publish = publisher.publish
        events = iter(source.events())
        while True:
            watch.since = mono()
            event = next(events, _END)
            watch.since = None
            if event is _END:
                break
            publish(event)
            if stop.is_set() and not stop_requested:
                source.request_stop()
                stop_requested = True
            if control is not None and control.wake.is_set() and not publisher.in_transaction:
                control.wake.clear()
                if control.paused:  # the pause record follows the reader's last transaction (below)
                    if not stop_requested:
                        source.request_stop()
                        stop_requested = True
                else:
                    write_operations(publisher, control.take(), publisher.last_resume)
        if publisher.in_transaction:
            log.warning("the reader ended inside a transaction; the next start closes it with ABORTED",
                        extra={"source": publisher.source_name})
        elif control is not None and control.pending:
            write_operations(publisher, control.take(), publisher.last_resume)
        publisher.flush()
        return control is not None and control.paused and not publisher.in_transaction
    except BaseException as exc:
        metrics.error(exc)
        if not isinstance(exc, PublishError):  # a reader failure: learn what is acknowledged, for the report
            try:
                publisher.flush(10)
            except Exception:  # noqa: BLE001, S110 - the original error is the one to raise
                pass
        raise
    finally:
        watch.since = None
        try:
            source.close()
        finally:
            publisher.close()


def _close_unstarted(source: Source, publisher: Publisher) -> None:
    publisher.close()
    try:
        source.close()
    except Exception:  # a reader never started may not close cleanly; an error being raised is the one to raise
        log.debug("closing the unstarted reader failed", exc_info=True)


@dataclass
class SourceSpec:
    """How to build one source: ``make(context) -> Source``; ``connector`` is ``mysql``/``oracle``/..."""

    name: str
    connector: str
    make: Callable[[SourceContext], Source]
    heartbeat_interval_s: float | None = 1.0  # None or 0: the source writes no heartbeats
    context_args: dict[str, Any] = field(default_factory=dict)
    outbox: Any = None  # the source's OutboxConfig (cdc.publish.outbox), if any


@dataclass
class _Worker:
    spec: SourceSpec
    metrics: SourceMetrics
    publisher: Publisher | None = None
    source: Source | None = None
    thread: threading.Thread | None = None
    error: BaseException | None = None
    done: bool = False
    restarts: int = 0  # consecutive broker restarts (reset when a publisher got records acknowledged)
    waiting: str | None = None  # why the source is waiting to restart (/readyz)
    acknowledged: int = 0  # highest sequence any publisher of this source saw in the stream
    lease: WriterLease | None = None  # one writer per stream, kept across the publisher's restarts
    position: Any = None  # resume state of the last acknowledged checkpoint, across restarts
    watch: ReadWatch = field(default_factory=ReadWatch)  # whether the source thread waits on the reader (/readyz)
    control: SourceControl = field(default_factory=SourceControl)  # the operator's requests (cdc.ops)
    holding: bool = False  # paused: the thread waits for a resume, no reader runs

    @property
    def last_resume(self) -> Any:
        pub = self.publisher
        return checkpoint_of((pub.last_resume if pub is not None else None) or self.position)


class Daemon:
    """Runs the given sources until they end, fail, or a signal asks to stop."""

    def __init__(self, specs: list[SourceSpec], kafka: Any, registry: Any, *, metrics_host: str = "127.0.0.1",
                 metrics_port: int | None = 0, drain_timeout_s: float = 30.0,
                 producer_config: dict | None = None, source_restart_limit: int = 0, api: Any = None,
                 config_path: str | None = None, alerts: Any = None) -> None:
        self.kafka, self.registry, self.drain_timeout_s = kafka, registry, drain_timeout_s
        self.source_restart_limit = source_restart_limit  # 0: restart an unreachable source for as long as it takes
        self.producer_config = producer_config
        self.stop = threading.Event()
        self.workers = [_Worker(s, SourceMetrics(s.name, registry)) for s in specs]
        try:
            self.health = (HealthServer(registry, self.readiness, metrics_host, metrics_port)
                           if metrics_port is not None else None)
        except OSError as exc:
            raise ConfigError(f"cannot serve /metrics on {metrics_host}:{metrics_port}: {exc.strerror}",
                              key="metrics.port") from None
        self.api = None
        if api is not None and api.enabled:  # the operations API (cdc/ops/server.py)
            from cdc.ops.server import OpsServer

            self.api = OpsServer(self, api, config_path=config_path)
        self.alerts = None
        if alerts is not None and alerts.enabled:  # webhook alerts (cdc/ops/alerts.py)
            from cdc.ops.alerts import AlertWatch

            self.alerts = AlertWatch.from_config(self, alerts, config_path)

    def readiness(self) -> dict[str, str]:
        """{source: why it is not ready} for /readyz: classes and positions only (cdc.runtime.health);
        the error's message, which may quote row values, is in the log line of the failure."""
        reasons = {}
        for w in self.workers:
            if w.done or w.error is not None:
                reasons[w.spec.name] = "stopped" if w.error is None else \
                    f"failed: {describe(w.error)}; stream position {_where(w)}"
                continue
            pub = w.publisher
            why = w.waiting or (pub.broker_problem() if pub is not None else None) \
                or source_readiness(w.metrics, w.spec.heartbeat_interval_s)
            if why and not w.waiting:
                why = self._silent_source(w) or why
            if why:
                reasons[w.spec.name] = why
        return reasons

    @staticmethod
    def _silent_source(w: _Worker) -> str | None:
        """The reason to give when the source thread has been waiting on the reader for longer than a reader
        that can takes to yield (then records only LOOK unacknowledged: acknowledgements are taken in by
        that thread), else None."""
        blocked = w.watch.blocked_for()
        limit = 2 * max(STOP_CHECK_S, w.spec.heartbeat_interval_s or 0)
        if blocked <= limit:
            return None
        return (f"source {w.spec.name} not answering: its reader has been waiting for the source for "
                f"{blocked:.1f}s (no event since; a reader that can yields at least every {limit / 2:g}s); "
                f"the source or the network path to it is down. Stream position {_where(w)}")

    def request_stop(self) -> None:
        """First signal: every source stops at its next transaction boundary. Safe from a signal handler."""
        self.stop.set()
        for w in self.workers:
            if w.source is not None:
                try:
                    w.source.request_stop()
                except Exception:
                    log.exception("request_stop failed", extra={"source": w.spec.name})

    def run(self) -> int:
        if self.health is not None:
            self.health.start()
            log.info("health server on http://%s:%d (/metrics /healthz /readyz)", self.health.host, self.health.port)
        if self.api is not None:
            self.api.start()
            log.info("operations API on http://%s:%d/api/v1 (status page /status)", self.api.host, self.api.port)
        if self.alerts is not None:
            self.alerts.start()
        try:
            try:
                for w in self.workers:
                    self._start(w)
            except BaseException:
                self.request_stop()  # sources already running stop at a boundary
                raise
            return self._wait()
        finally:
            if self.health is not None:
                self.health.stop()
            if self.api is not None:
                self.api.stop()
            if self.alerts is not None:
                self.alerts.stop()

    def _start(self, w: _Worker) -> None:
        self._build(w)
        w.thread = threading.Thread(target=self._work, args=(w,), name=THREAD_PREFIX + w.spec.name, daemon=True)
        w.thread.start()

    def _build(self, w: _Worker) -> None:
        spec = w.spec
        # the lease (kafka.writer_fencing) is kept across the publisher's restarts: the process never fences itself
        w.publisher, w.lease = open_publisher(self.kafka, spec.name, spec.connector, w.metrics, lease=w.lease,
                                              producer_config=self.producer_config)
        if spec.outbox is not None:
            from cdc.publish.outbox import attach

            attach(w.publisher, spec.outbox)
        ctx = SourceContext(metrics=w.metrics, **spec.context_args)
        if getattr(self.kafka, "dead_letter_topic", None):
            ctx.dead_letter = w.publisher.dead_letter
        w.source = spec.make(ctx)
        pub = w.publisher  # log lines about this source carry its position and open transaction id
        bind_source_state(spec.name, lambda: (pub.last_resume, getattr(pub._tx, "txid", None)))

    def _work(self, w: _Worker) -> None:
        try:
            while True:
                try:
                    paused = run_source(w.source, w.publisher, self.stop, metrics=w.metrics,
                                        acknowledged=w.acknowledged, on_recovered=lambda: setattr(w, "waiting", None),
                                        watch=w.watch, control=w.control)
                    w.acknowledged = max(w.acknowledged, w.publisher.acked_sequence)
                    if paused and not self.stop.is_set():
                        if self._hold(w):
                            self._build(w)
                            continue
                        return
                    log.info("source stopped at a transaction boundary, position %s", w.publisher.last_resume,
                             extra={"source": w.spec.name, "position": w.publisher.last_resume})
                    return
                except (PublishError, SourceUnavailable) as exc:  # broker or source away: wait, restart
                    if not self._wait_to_restart(w, exc):
                        if isinstance(exc, SourceUnavailable) and self.stop.is_set() and not w.publisher.in_transaction:
                            log.info("stopped while waiting for the source to be reachable, position %s",
                                     w.last_resume, extra={"source": w.spec.name, "position": w.last_resume})
                            return  # nothing open: it stops at its checkpoint like any other
                        raise
                    self._build(w)
        except BaseException as exc:
            w.error = exc
            log.error("source failed at position %s: %s", w.last_resume, exc,
                      extra={"source": w.spec.name, "position": w.last_resume},
                      exc_info=not hasattr(exc, "fields"))
            # sources fail alone: the others keep streaming; /readyz names this one until the daemon ends
            if not isinstance(exc, Exception):
                self.request_stop()
        finally:
            w.waiting = None
            w.done = True
            if w.lease is not None:
                w.lease.close()

    def _hold(self, w: _Worker) -> bool:
        """A paused source: no reader runs and the stream's last record is the pause record. The writer lease
        is let go (taken again on resume). Operations records asked for meanwhile (a skip, a resync) are
        written at once by a short-lived publisher, followed by the pause record again, so that the stream's
        tail still says paused. True once resumed (the resume record is pending: run_source writes it), False when
        the daemon stops."""
        log.info("source paused at position %s (%s)", w.last_resume, w.control.paused_since,
                 extra={"source": w.spec.name, "position": w.last_resume})
        if w.lease is not None:
            w.lease.close()
            w.lease = None
        w.holding = True
        try:
            while not self.stop.is_set():
                w.control.wake.wait(0.5)
                w.control.wake.clear()
                if not w.control.paused:
                    return True
                if w.control.pending:
                    self.write_now(w, w.control.take(), keep_paused=True)
            return False
        finally:
            w.holding = False

    def write_now(self, w: _Worker, ops: list[dict[str, Any]], *, keep_paused: bool = False) -> None:
        """Write operations records for a source no reader runs for (paused, or stopped): a short-lived
        publisher with its own writer lease. ``keep_paused``: the pause record is written again after them,
        so that the stream's tail still says paused (a restart stays paused)."""
        if keep_paused and w.control.paused_since is not None:
            ops = [*ops, w.control.paused_since]
        lease = (WriterLease(self.kafka.connection(), self.kafka.topic_prefix, w.spec.name,
                             timeout_s=min(30.0, getattr(self.kafka, "delivery_timeout_s", 30.0)))
                 if getattr(self.kafka, "writer_fencing", False) else None)
        pub = Publisher(w.spec.name, w.spec.connector, self.kafka, w.metrics, producer_config=self.producer_config,
                        lease=lease)
        try:
            resume = pub.recover()
            pub.recovered()
            write_operations(pub, ops, resume)
            pub.flush()
        finally:
            pub.close()
            if lease is not None:
                lease.close()

    def restart(self, w: _Worker) -> bool:
        """Start a source whose thread ended (stopped, failed) again, from the stream's tail; False when it
        still runs (nothing done). The restart record is written by the new run after recovery."""
        if w.thread is not None and w.thread.is_alive():
            return False
        w.error, w.done, w.restarts, w.waiting, w.lease = None, False, 0, None, None
        self._start(w)
        return True

    def _wait_to_restart(self, w: _Worker, exc: PublishError | SourceUnavailable) -> bool:
        """After a broker failure or a source its reader could not reach: back off (1, 2, 4 ... RESTART_MAX_S
        s), count it, say why in /readyz. False when the daemon is stopping or ``source_restart_limit``
        restarts in a row did not help (the error then ends the source)."""
        pub = w.publisher
        w.position = w.last_resume
        if pub.acked_sequence > w.acknowledged:  # this publisher got somewhere: start the backoff afresh
            w.acknowledged, w.restarts = pub.acked_sequence, 0
        if self.stop.is_set() or (self.source_restart_limit and w.restarts >= self.source_restart_limit):
            return False
        w.restarts += 1
        delay = min(RESTART_MAX_S, RESTART_BASE_S * 2 ** (w.restarts - 1))
        w.metrics.reconnect()  # run_source counted the error itself in cdc_source_errors_total
        what = "broker unreachable" if isinstance(exc, PublishError) else "source unreachable"
        # stays the /readyz reason until the next publisher has read the stream's tail
        w.waiting = f"{what}: restart {w.restarts} of the source (backoff {delay:g}s) after: {describe(exc)}"
        log.warning("%s at position %s, restarting the source from the stream's tail in %gs (restart %d): %s",
                    what, pub.last_resume, delay, w.restarts, exc,
                    extra={"source": w.spec.name, "position": pub.last_resume})
        return not self.stop.wait(delay)

    def _wait(self) -> int:
        drain_deadline: float | None = None
        while True:
            alive = [w for w in self.workers if w.thread is not None and w.thread.is_alive()]
            if not alive:
                if self.api is not None and not self.stop.is_set() and any(w.error for w in self.workers):
                    self.stop.wait(0.2)  # the operations API is the way back: skip or restart it there
                    continue
                break
            if self.stop.is_set() and drain_deadline is None:
                drain_deadline = time.monotonic() + self.drain_timeout_s
            if drain_deadline is not None and time.monotonic() > drain_deadline:
                for w in alive:
                    log.error("no transaction boundary within %.0fs; exiting without it (the next start "
                              "closes the open transaction with ABORTED)", self.drain_timeout_s,
                              extra={"source": w.spec.name, "position": w.publisher.last_resume})
                return 1
            alive[0].thread.join(0.2)
        failed = [w for w in self.workers if w.error is not None]
        if failed:
            self.failure = "; ".join(f"source {w.spec.name} stopped at position {_where(w)}: "
                                     f"{type(w.error).__name__}: {w.error}" for w in failed)
            return 2
        return 0

    failure: str | None = None


def _where(w: _Worker) -> str:
    resume = w.last_resume
    return "(none published yet: the next start begins at the source's current position)" if resume is None \
        else str(resume)
