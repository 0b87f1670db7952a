"""Readiness rule, the HTTP endpoints and the log formats (no services)."""

from __future__ import annotations

import io
import json
import logging
import threading

from cdc.metrics import SourceMetrics, process_registry
from cdc.runtime.health import HealthServer, source_readiness
from cdc.runtime.logs import setup_logging
from tests.fixtures.http import http_get


def test_readiness_needs_a_connected_source_that_progresses(monkeypatch):
    m = SourceMetrics("s")
    assert source_readiness(m, 1.0) == "not connected to the source"
    m.connected(True)
    assert source_readiness(m, 1.0) is None
    monkeypatch.setattr(m, "seconds_since_progress", lambda: 60.0)
    assert "no heartbeat or transaction" in source_readiness(m, 1.0)


def test_endpoints_serve_metrics_health_and_readiness():
    registry = process_registry()
    m = SourceMetrics("shop", registry)
    reasons = {"shop": "not connected to the source"}
    server = HealthServer(registry, lambda: dict(reasons), "127.0.0.1", 0).start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        assert http_get(base + "/healthz") == (200, b"ok\n")
        code, body = http_get(base + "/readyz")
        assert code == 503 and json.loads(body) == {"ready": False, "reasons": reasons}
        reasons.clear()
        assert http_get(base + "/readyz")[0] == 200
        m.records_published(3, 100, 3)
        code, body = http_get(base + "/metrics")
        assert code == 200 and b'cdc_source_records_published_total{source="shop"} 3.0' in body
        assert http_get(base + "/nope")[0] == 404
    finally:
        server.stop()


def test_json_logs_carry_source_position_and_txid():
    try:
        _check_logs()
    finally:
        root = logging.getLogger()
        for h in [h for h in root.handlers if getattr(h, "_cdc", False)]:
            root.removeHandler(h)


def _check_logs():
    buf = io.StringIO()
    setup_logging("INFO", json_lines=True, stream=buf)
    log = logging.getLogger("cdc.test")
    log.info("published %d", 3, extra={"position": {"gtid_set": "u:1-3"}, "txid": "u:3"})
    t = threading.Thread(target=lambda: log.warning("from a worker"), name="source:shop")
    t.start()
    t.join()
    lines = [json.loads(line) for line in buf.getvalue().splitlines()]
    assert lines[0]["msg"] == "published 3" and lines[0]["position"] == {"gtid_set": "u:1-3"}
    assert lines[0]["txid"] == "u:3" and lines[0]["level"] == "INFO"
    assert lines[1]["source"] == "shop"
    setup_logging("INFO", json_lines=False, stream=buf)
    log.info("plain", extra={"source": "shop", "txid": "u:4"})
    assert "[shop tx u:4]: plain" in buf.getvalue().splitlines()[-1]


def test_a_probe_shows_an_error_by_class_and_position_fields_never_its_message(caplog):
    from cdc.errors import DecodeError
    from cdc.runtime.health import describe

    err = DecodeError("cannot decode 'alice@example.com' in shop.users", table="shop.users", column="email",
                      position="bin.000003:1234", value="alice@example.com")
    assert describe(err) == "DecodeError (table shop.users, column email, position bin.000003:1234)"
    assert describe(ValueError("secret 42")) == "ValueError"

    def ready():
        raise err

    server = HealthServer(process_registry(), ready, "127.0.0.1", 0).start()
    try:
        with caplog.at_level("ERROR", logger="cdc.runtime.health"):
            code, body = http_get(f"http://127.0.0.1:{server.port}/readyz")
    finally:
        server.stop()
    assert code == 503 and b"alice" not in body and b"DecodeError (table shop.users" in body
    assert "alice@example.com" in caplog.text  # the full error goes to the log
