"""The daemon's HTTP endpoints: ``/metrics``, ``/healthz``, ``/readyz``.

A stdlib ``ThreadingHTTPServer`` in a daemon thread, bound to
``metrics.host:metrics.port`` (port 0 picks a free port; see ``.port``).

- ``/metrics``: Prometheus text exposition of the injected registry.
- ``/healthz``: 200 ``ok`` while the process runs and ``alive()`` (when
  given) returns no problems, else 503 with ``{"alive": false, "reasons":
  {...}}`` (the apply job: a streaming query terminated with an error).
- ``/readyz``: 200 when ``ready()`` returns no problems, else 503 with a
  JSON body ``{"ready": false, "reasons": {source: reason}}``.
  :func:`source_readiness` is the daemon's rule: the reader is connected
  (``cdc_source_up`` = 1) and the broker acknowledged a heartbeat or a
  transaction within ``READY_FACTOR`` x the source's heartbeat interval
  (with heartbeats off, only the connection counts).
  Before that rule the daemon (cdc.runtime.daemon) reports a broker that
  does not take records: ``"broker unreachable: N records not acknowledged
  for S s ..."`` (Publisher.broker_problem), ``"broker unreachable:
  restart K of the publisher ..."`` while the source waits to restart, and
  ``"failed: <ErrorClass> (<where>); stream position <resume state>"`` for a
  source that stopped on an error.
  A source whose reader has kept the source thread waiting for longer than a
  reader that can takes to yield is named instead of the broker or the
  heartbeat rule: ``"source NAME not answering: its reader has been waiting
  for the source for S s ..."`` (cdc.runtime.daemon.ReadWatch).

WHAT A PROBE BODY MAY SHOW: names (source, table, column, topic), classes
and positions, never row values. An error's message may quote a value (a
key, a column value, a database's error text), and these endpoints are
unauthenticated and scraped into monitoring systems, so an error appears
only through :func:`describe` (its class and its :data:`SAFE_FIELDS`); the
full error goes to the log. The bind address defaults to loopback
(``metrics.host: 127.0.0.1``); the container image sets 0.0.0.0.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from cdc.errors import CdcError
from cdc.metrics import SourceMetrics

log = logging.getLogger(__name__)

READY_FACTOR = 5.0
# error fields that say where and what kind, never what value: the ones a probe body may show
SAFE_FIELDS = ("table", "column", "sequence", "offset", "partition", "topic", "target", "source", "position",
               "gtid", "scn", "txid", "code", "bootstrap")


def describe(exc: BaseException) -> str:
    """``exc`` as a probe may show it: its class and its :data:`SAFE_FIELDS`, no message text."""
    fields = exc.fields if isinstance(exc, CdcError) else {}
    where = ", ".join(f"{k} {fields[k]}" for k in SAFE_FIELDS if fields.get(k) is not None)
    return f"{type(exc).__name__}" + (f" ({where})" if where else "")


def source_readiness(metrics: SourceMetrics, heartbeat_interval_s: float | None) -> str | None:
    """None when the source is ready, else why not."""
    up = metrics.registry.get_sample_value("cdc_source_up", {"source": metrics.source})
    if up != 1:
        return "not connected to the source"
    if not heartbeat_interval_s:  # heartbeats off: an idle source acknowledges nothing, and is fine
        return None
    limit = READY_FACTOR * heartbeat_interval_s
    idle = metrics.seconds_since_progress()
    if idle > limit:
        return f"no heartbeat or transaction acknowledged for {idle:.1f}s (limit {limit:.1f}s)"
    return None


class HealthServer:
    def __init__(self, registry: CollectorRegistry, ready: Callable[[], dict[str, str]],
                 host: str = "127.0.0.1", port: int = 0, alive: Callable[[], dict[str, str]] | None = None) -> None:
        self.registry, self.ready, self.alive = registry, ready, alive
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self.host, self.port = self._server.server_address[0], self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="health-http", daemon=True)

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that answers with ``_send`` and writes no access log line (scrapes and API calls are
    not log lines; the operations API logs its refusals and actions itself)."""

    def _send(self, code: int, body: bytes, ctype: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt: str, *args: object) -> None:
        return


def _make_handler(server: HealthServer) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, generate_latest(server.registry), CONTENT_TYPE_LATEST)
            elif path == "/healthz" and server.alive is None:
                self._send(200, b"ok\n", "text/plain")
            elif path in ("/healthz", "/readyz"):
                what = "alive" if path == "/healthz" else "ready"
                try:
                    reasons = (server.alive if path == "/healthz" else server.ready)()
                except Exception as exc:  # a probe must answer, not crash
                    log.exception("the %s check failed", what)
                    reasons = {"daemon": f"{what} check failed: {describe(exc)}"}
                body = orjson.dumps({what: not reasons, "reasons": reasons})
                self._send(503 if reasons else 200, body, "application/json")
            else:
                self._send(404, b"not found\n", "text/plain")

    return Handler
