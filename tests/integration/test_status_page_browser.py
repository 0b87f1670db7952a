"""The status page in a real browser: headless Chromium (Debian's `chromium`, deploy/install-system-deps.sh)
loads /status served by the operations API of a real cdc.runtime.daemon.Daemon (its sources not started:
one streaming-looking source with a position and a lag, one failed on a named GTID) and an apply item on a
DuckDB target. The DOM Chromium built shows each source, its position, the way back (CLI and API) and the
apply item's progress; the lag chart is an inline SVG; the browser logged no console error (a control page
with a script error proves the scan sees one); the screenshot is a PNG of the window's size.

Fails, never skips, when Chromium is missing: run deploy/install-system-deps.sh.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry

from cdc.config.models import TargetConfig
from cdc.errors import CdcError
from cdc.ops.config import ApiConfig
from cdc.runtime.daemon import Daemon, SourceSpec
from streaming.targets.duckdb.target import DuckDbTarget
from streaming.targets.progress_row import Progress

WINDOW = (1200, 900)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--enable-logging=stderr", "--v=0",
         f"--window-size={WINDOW[0]},{WINDOW[1]}"]


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("chromium is not installed: run deploy/install-system-deps.sh (apt-get install chromium)")
    return path


def browse(url: str, profile: Path, *extra: str) -> tuple[str, str]:
    """(stdout, stderr) of one headless Chromium run on ``url``; bounded by a timeout."""
    run = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *extra, url], capture_output=True,
                         text=True, timeout=90, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout, run.stderr


def console_errors(stderr: str) -> list[str]:
    """Lines of Chromium's log that report a page's console message or an uncaught script error."""
    return [line for line in stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]


class _GtidRefused(CdcError):
    """A refused transaction, as the MySQL reader names it."""


@pytest.fixture
def daemon(tmp_path):
    db = str(tmp_path / "t.duckdb")
    cfg = tmp_path / "cdc.yaml"
    cfg.write_text(yaml.safe_dump({"kafka": {"bootstrap_servers": "127.0.0.1:1"},
                                   "targets": [{"name": "duck", "kind": "duckdb", "path": db}],
                                   "apply": [{"source": "shop", "target": "duck"}]}))
    t = DuckDbTarget(TargetConfig(name="duck", kind="duckdb", path=db)).open()
    t.write_progress(Progress("shop", 40, 12, {"gtid_set": "0-1-40"}, int(time.time() * 1000) - 2000))
    t.commit()
    t.close()
    specs = [SourceSpec("shop", "mysql", make=lambda ctx: None), SourceSpec("billing", "mysql", make=lambda ctx: None)]
    d = Daemon(specs, kafka=None, registry=CollectorRegistry(), metrics_port=None,
               api=ApiConfig(enabled=True, port=0), config_path=str(cfg))
    shop, billing = d.workers
    shop.position, shop.acknowledged = {"gtid_set": "0-1-42"}, 44
    shop.metrics.transaction_published(int(time.time() * 1000) - 3000)
    billing.position, billing.done = {"gtid_set": "0-2-7"}, True
    billing.error = _GtidRefused("statement-format event refused", gtid="0-2-8")
    now = time.time()
    for i, lag in enumerate([0.5, 4.0, 9.0, 3.0, 1.0]):
        d.api.handlers.lag.add("shop", lag, at=now - 50 + 10 * i)
    d.api.start()
    try:
        yield d
    finally:
        d.api.stop()


def test_the_status_page_renders_in_chromium_without_console_errors(daemon, tmp_path):
    url = f"http://{daemon.api.host}:{daemon.api.port}/status"
    dom, log = browse(url, tmp_path / "profile", "--dump-dom")
    assert console_errors(log) == [], console_errors(log)
    for text in ("cdc status", "<td>shop</td>", "gtid_set=0-1-42", "<td>billing</td>", "gtid_set=0-2-7", "failed",
                 "cdc source skip --config", "--gtid 0-2-8", "POST /api/v1/sources/billing/skip",
                 "POST /api/v1/sources/billing/restart", "<td>duck</td>", "gtid_set=0-1-40", "<td>12</td>"):
        assert text in dom, text
    assert '<svg id="lag-chart"' in dom and "<polyline" in dom

    shot = tmp_path / "status.png"
    _, log = browse(url, tmp_path / "profile2", f"--screenshot={shot}")
    assert console_errors(log) == []
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == WINDOW
    assert len(png) > 20_000, len(png)  # a page of tables and a chart, not a blank window


def test_the_console_scan_sees_a_script_error(tmp_path):
    """The control: the same flags on a page whose script fails report it in the log the test scans."""
    page = tmp_path / "broken.html"
    page.write_text("<!doctype html><html><body><p>x</p><script>console.error('cdc-marker'); undefinedCall();"
                    "</script></body></html>")
    _, log = browse(page.as_uri(), tmp_path / "profile", "--dump-dom")
    errors = console_errors(log)
    assert any("cdc-marker" in line for line in errors) and any("Uncaught" in line for line in errors), log[-2000:]
