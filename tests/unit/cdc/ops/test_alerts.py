"""Webhook alerts against a local HTTP receiver: a source's stop, fencing, dead letters and lag over the
threshold reach the webhook as Slack-compatible JSON naming the error class as /readyz does (no message
text) and the way back; each once (and once when it clears); a failing webhook is retried, then dropped;
a hanging webhook never blocks notify()."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from prometheus_client import CollectorRegistry

from cdc.errors import CdcError
from cdc.ops import alerts
from cdc.ops.alerts import Notifier
from cdc.ops.config import AlertsConfig
from cdc.publish.lease import WriterFenced
from cdc.runtime.daemon import Daemon, SourceSpec


class Receiver:
    """A webhook on loopback: records each JSON body; answers ``fail_first`` requests with 500; ``hang_s``:
    waits that long before answering."""

    def __init__(self, fail_first: int = 0, hang_s: float = 0.0) -> None:
        self.bodies: list[dict] = []
        self.requests = 0
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers["Content-Length"]))
                outer.requests += 1
                time.sleep(hang_s)
                if outer.requests <= fail_first:
                    self.send_response(500)
                else:
                    outer.bodies.append(json.loads(data))
                    self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.stop()


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch):
    monkeypatch.setattr(alerts, "RETRY_BASE_S", 0.05)


def _texts(r: Receiver, n: int) -> list[str]:
    deadline = time.monotonic() + 10
    while len(r.bodies) < n and time.monotonic() < deadline:
        time.sleep(0.02)
    return [b["text"] for b in r.bodies]


class _Refused(CdcError):
    pass


def test_stops_fencing_dead_letters_and_lag_reach_the_webhook_once(receiver):
    cfg = AlertsConfig(enabled=True, webhook_url=receiver.url, lag_threshold_s=60, check_interval_s=3600)
    d = Daemon([SourceSpec("shop", "mysql", make=lambda c: None), SourceSpec("bill", "mysql", make=lambda c: None)],
               kafka=None, registry=CollectorRegistry(), metrics_port=None, alerts=cfg, config_path="/etc/cdc.yaml")
    watch = d.alerts.start()
    try:
        shop, bill = d.workers
        watch.check()
        assert _texts(receiver, 0) == []  # nothing to say yet
        shop.error, shop.done = _Refused("row value SECRET refused", gtid="0-1-9"), True
        bill.error, bill.done = WriterFenced("fenced by host:1:abc", topic="cdc.bill"), True
        shop.metrics.dead_letter("shop.orders")
        shop.metrics.dead_letter("shop.orders")
        bill.metrics.transaction_published(int((time.time() - 600) * 1000))
        watch.check()
        watch.check()  # nothing changed: nothing more sent
        texts = _texts(receiver, 4)
        assert len(texts) == 4, texts
        stop, dead, fenced, lag = texts
        assert stop.startswith("cdc source stopped: source shop failed: _Refused") and "SECRET" not in stop
        assert "cdc source skip --config /etc/cdc.yaml --source shop --gtid 0-1-9" in stop
        assert "POST /api/v1/sources/shop/restart" in stop
        assert dead.startswith("cdc dead letters: source shop sent 2 record(s)") and "shop.orders" in dead
        assert fenced.startswith("cdc fenced: source bill failed: WriterFenced")
        assert lag.startswith("cdc lag: source bill is 6") and "alerts.lag_threshold_s 60s" in lag
        shop.error, shop.done = None, False  # restarted
        bill.metrics.transaction_published(int(time.time() * 1000))
        watch.check()
        assert _texts(receiver, 6)[4:] == ["cdc recovered: source shop runs again",
                                           "cdc lag: source bill is back under 60s"]
    finally:
        watch.stop()


def test_a_failing_webhook_is_retried_then_the_alert_dropped():
    flaky = Receiver(fail_first=2)
    try:
        n = Notifier(flaky.url, timeout_s=2, retries=3, queue_size=10).start()
        n.notify("one")
        assert _texts(flaky, 1) == ["one"] and flaky.requests == 3
        n.stop()
    finally:
        flaky.stop()
    gone = Receiver()
    gone.stop()  # nothing listens on its port any more
    n = Notifier(gone.url, timeout_s=1, retries=2, queue_size=10).start()
    n.notify("lost")
    n.stop(timeout_s=5)
    assert (n.sent, n.dropped) == (0, 1)


def test_a_hanging_webhook_never_blocks_notify():
    slow = Receiver(hang_s=1.5)
    try:
        n = Notifier(slow.url, timeout_s=0.5, retries=0, queue_size=2).start()
        started = time.monotonic()
        for i in range(10):
            n.notify(f"alert {i}")
        assert time.monotonic() - started < 0.2  # queued or dropped, never waited for
        assert n.dropped >= 7
        n.stop(timeout_s=3)
    finally:
        slow.stop()


def test_the_alerts_section_needs_one_url(tmp_path):
    with pytest.raises(ValueError, match="exactly one of alerts.webhook_url"):
        AlertsConfig(enabled=True)
    with pytest.raises(ValueError, match="http:// or https://"):
        AlertsConfig(enabled=True, webhook_url="ftp://x")
    url = tmp_path / "hook"
    url.write_text("https://hooks.example/T000/B000/xyz\n")
    assert alerts.webhook_url(AlertsConfig(enabled=True, webhook_url_file=str(url))) == \
        "https://hooks.example/T000/B000/xyz"
    with pytest.raises(CdcError, match="cannot read the webhook URL") as exc:
        alerts.webhook_url(AlertsConfig(enabled=True, webhook_url_file=str(tmp_path / "missing")))
    assert exc.value.fields["key"] == "alerts.webhook_url_file"
