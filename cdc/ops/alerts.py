"""Alerts that reach people: a webhook notifier (``alerts:`` config, cdc/ops/config.py).

:class:`AlertWatch` looks at the daemon's sources every ``alerts.check_interval_s`` from its own thread
and posts, as Slack-compatible JSON (``{"text": ...}``), when

- a source stops on an error (``source stopped``), or is fenced by another writer (``fenced``:
  WriterFenced), naming the error class and position as /readyz does (cdc.runtime.health.describe: no
  message text, so no row value) and the way back (the CLI command and the API call); once per stop,
  and once more when it streams again;
- a source writes dead letters (cdc_dead_letter_records_total grew): how many, which tables;
- a source's lag (cdc_source_lag_seconds) goes over ``alerts.lag_threshold_s``; once, and once when it is
  back under.

:class:`Notifier` sends them from another thread: ``notify`` never blocks (a full queue drops the alert
and logs it), each POST has ``alerts.timeout_s``, a failed one is retried ``alerts.retries`` times with
backoff, then dropped and logged. The pipeline never waits for the webhook.
"""

from __future__ import annotations

import logging
import queue
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import orjson

from cdc.errors import ConfigError
from cdc.ops.config import AlertsConfig
from cdc.runtime.health import describe

log = logging.getLogger(__name__)

RETRY_BASE_S = 1.0


def webhook_url(cfg: AlertsConfig) -> str:
    """The webhook URL of ``cfg`` (read from ``alerts.webhook_url_file`` when set); ConfigError naming the
    key when the file cannot be read or does not hold an http(s) URL."""
    if cfg.webhook_url is not None:
        return cfg.webhook_url
    try:
        url = Path(cfg.webhook_url_file).read_text().strip()
    except OSError as exc:
        raise ConfigError(f"cannot read the webhook URL from {cfg.webhook_url_file}: {exc.strerror}",
                          key="alerts.webhook_url_file") from None
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{cfg.webhook_url_file} does not hold an http:// or https:// URL",
                          key="alerts.webhook_url_file")
    return url


class Notifier:
    """Posts ``{"text": ...}`` to ``url`` from its own thread; ``sent``/``dropped`` count what became of them."""

    def __init__(self, url: str, *, timeout_s: float, retries: int, queue_size: int) -> None:
        self.url, self.timeout_s, self.retries = url, timeout_s, retries
        self._queue: queue.Queue[str | None] = queue.Queue(maxsize=queue_size)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._send_all, name="ops-alerts", daemon=True)
        self.sent = self.dropped = 0

    def start(self) -> Notifier:
        self._thread.start()
        return self

    def notify(self, text: str) -> None:
        """Queue one alert; never blocks (a full queue drops it, logged)."""
        try:
            self._queue.put_nowait(text)
        except queue.Full:
            self.dropped += 1
            log.error("alert dropped: %d alerts already wait for the webhook (alerts.queue_size): %s",
                      self._queue.qsize(), text)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Send what is queued within ``timeout_s``, then stop (what is left is logged as dropped)."""
        self._stop.set()
        try:
            self._queue.put_nowait(None)
        except queue.Full:
            pass
        self._thread.join(timeout_s)

    def _send_all(self) -> None:
        while True:
            text = self._queue.get()
            if text is None:
                return
            self._send(text)

    def _send(self, text: str) -> None:
        body = orjson.dumps({"text": text})
        for attempt in range(self.retries + 1):
            req = urllib.request.Request(self.url, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                    resp.read()
                self.sent += 1
                return
            except (urllib.error.URLError, OSError, ValueError) as exc:
                why = f"HTTP {exc.code}" if isinstance(exc, urllib.error.HTTPError) else type(exc).__name__
                if attempt == self.retries or self._stop.wait(RETRY_BASE_S * 2 ** attempt):
                    self.dropped += 1
                    log.error("alert not delivered to the webhook after %d attempt(s) (%s): %s", attempt + 1, why,
                              text)
                    return
                log.warning("alert webhook failed (%s); retrying", why)


class AlertWatch:
    """Watches ``daemon`` (cdc.runtime.daemon.Daemon) and tells ``notifier`` what changed (module docstring)."""

    def __init__(self, daemon: Any, cfg: AlertsConfig, notifier: Notifier, config_path: str | None = None) -> None:
        self.daemon, self.cfg, self.notifier, self.config_path = daemon, cfg, notifier, config_path
        self._stopped: dict[str, int] = {}  # source -> id of the error alerted
        self._lagging: set[str] = set()
        self._dead: dict[str, float] = {}
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="ops-alert-watch", daemon=True)

    @classmethod
    def from_config(cls, daemon: Any, cfg: AlertsConfig, config_path: str | None = None) -> AlertWatch:
        notifier = Notifier(webhook_url(cfg), timeout_s=cfg.timeout_s, retries=cfg.retries, queue_size=cfg.queue_size)
        return cls(daemon, cfg, notifier, config_path)

    def start(self) -> AlertWatch:
        self.notifier.start()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._halt.set()
        self._thread.join(self.cfg.check_interval_s + 5)
        self.check()  # a source that failed as the daemon stopped is still told
        self.notifier.stop(self.cfg.timeout_s + 1)

    def _watch(self) -> None:
        while not self._halt.wait(self.cfg.check_interval_s):
            try:
                self.check()
            except Exception:
                log.exception("alert check failed")

    def check(self) -> None:
        """One look at every source; alerts what changed since the last look."""
        from cdc.ops.handlers import way_back

        registry = self.daemon.registry
        for w in self.daemon.workers:
            name, err = w.spec.name, w.error
            if err is not None and self._stopped.get(name) != id(err):
                self._stopped[name] = id(err)
                kind = "fenced" if type(err).__name__ == "WriterFenced" else "source stopped"
                back = "; ".join(way_back(name, "failed", err, self.config_path))
                self.notifier.notify(f"cdc {kind}: source {name} failed: {describe(err)}; stream position "
                                     f"{w.last_resume}. Way back: {back}")
            elif err is None and name in self._stopped and not w.done:
                del self._stopped[name]
                self.notifier.notify(f"cdc recovered: source {name} runs again")
            dead = _dead_letters(registry, name)
            if dead > self._dead.get(name, 0.0):
                tables = sorted(t for t, v in dead_by_table(registry, name).items() if v > 0)
                self.notifier.notify(f"cdc dead letters: source {name} sent {dead - self._dead.get(name, 0.0):.0f} "
                                     f"record(s) to the dead-letter topic ({dead:.0f} in all; tables "
                                     f"{', '.join(tables)})")
            self._dead[name] = dead
            lag = registry.get_sample_value("cdc_source_lag_seconds", {"source": name})
            if lag is not None and lag > self.cfg.lag_threshold_s and name not in self._lagging:
                self._lagging.add(name)
                self.notifier.notify(f"cdc lag: source {name} is {lag:.0f}s behind (alerts.lag_threshold_s "
                                     f"{self.cfg.lag_threshold_s:g}s)")
            elif name in self._lagging and (lag is None or lag <= self.cfg.lag_threshold_s):
                self._lagging.discard(name)
                self.notifier.notify(f"cdc lag: source {name} is back under {self.cfg.lag_threshold_s:g}s")


def dead_by_table(registry: Any, source: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for metric in registry.collect():
        if metric.name != "cdc_dead_letter_records":
            continue
        for s in metric.samples:
            if s.name == "cdc_dead_letter_records_total" and s.labels.get("source") == source:
                out[s.labels.get("table", "")] = s.value
    return out


def _dead_letters(registry: Any, source: str) -> float:
    return sum(dead_by_table(registry, source).values())
