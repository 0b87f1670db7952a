"""Run `cdc run` as a real subprocess (so kill -9 is real) against a MariaDB or MySQL source."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

CDC = str(Path(sys.executable).with_name("cdc"))


def write_config(path: Path, *, hosts: list[str], tables: list[str], bootstrap: str, prefix: str,
                 name: str = "s1", server_id: int = 0, user: tuple[str, str] = ("cdc", "cdc")) -> Path:
    """``user``: (user, password) the source captures as (a MySQL 9.7 server's ``capture_user``)."""
    cfg = {
        "sources": [{"name": name, "kind": "mysql", "hosts": hosts, "user": user[0], "password": user[1],
                     "tables": tables, "heartbeat_interval_s": 1.0, "reconnect_backoff_s": 0.2, "snapshot": "never",
                     "server_id": server_id or 500_000 + os.getpid() % 100_000}],
        "kafka": {"bootstrap_servers": bootstrap, "topic_prefix": prefix},
        "metrics": {"port": 0},
        "drain_timeout_s": 20,
    }
    path.write_text(yaml.safe_dump(cfg))
    return path


class Daemon:
    """One `cdc run --config` process; stderr goes to ``log``."""

    def __init__(self, config: Path, log: Path) -> None:
        self.config, self.log = config, log
        self.proc: subprocess.Popen | None = None

    def start(self) -> Daemon:
        out = open(self.log, "ab")  # noqa: SIM115 - handed to the child, closed here after spawn
        env = {**os.environ, "PYTHONFAULTHANDLER": "1"}  # SIGABRT prints every thread's stack (stacks())
        self.proc = subprocess.Popen([CDC, "run", "--config", str(self.config)], stdout=out, stderr=out, env=env)
        out.close()
        return self

    def stacks(self) -> str:
        """Abort the running daemon and return what it printed: every thread's Python stack (for a test's
        failure report: where a daemon that stopped making progress is)."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGABRT)
            self.proc.wait(10)
        return self.tail(400)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, timeout: float = 30) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                return -9
        return self.proc.returncode

    def peak_rss_mb(self) -> float:
        """VmHWM of the running process (peak resident set), in MB."""
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except FileNotFoundError:
            return ""


def wait_for(cond, timeout: float, what: str, interval: float = 0.5, daemon: Daemon | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(interval)
    detail = f"\n--- daemon log tail ---\n{daemon.tail()}" if daemon is not None else ""
    raise AssertionError(f"timed out after {timeout}s waiting for {what}{detail}")


def run_until_stop(config: Path, log: Path, what: str, timeout: float = 60) -> str:
    """Start `cdc run` with ``config`` and wait until it stops by itself with exit 2 (a named stop: a refused
    transaction); return its log."""
    daemon = Daemon(config, log).start()
    try:
        wait_for(lambda: daemon.proc.poll() is not None, timeout, what, daemon=daemon)
        assert daemon.proc.returncode == 2, daemon.tail()
    finally:
        daemon.stop()
    return log.read_text()
