"""`make demo` / `cdc dev demo`: the whole pipeline on this machine, narrated.

Steps (each printed as it runs, and summed up at the end):
1. start MariaDB primary + replica, the broker and PostgreSQL (cdc.dev.stack);
2. create the changes topic and start the daemon (`cdc run`) if it is installed;
3. create the demo schema and run the concurrent write workload (cdc.dev.workload)
   while a console consumer shows the stream live;
4. wait until the stream holds every committed transaction;
5. run the Spark apply job into DuckDB (``run_apply_step``) if it is installed, and
   show source vs target row counts and fingerprints side by side;
6. stop everything.

A stage whose component is not installed yet is reported as "not available"
and the demo continues with the rest; the exit status is non-zero only when
something that ran failed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from cdc.dev import procs
from cdc.dev.stack import DevStack
from cdc.dev.watch import StreamWatcher
from cdc.dev.workload import TABLES, run_workload
from cdc.progress_bar import progress
from cdc.stream.envelope import changes_topic

SOURCE, PREFIX, DB = "demo", "cdc", "demo"


@dataclass
class DemoReport:
    steps: list[tuple[str, str, str]] = field(default_factory=list)  # (step, ok|skipped|FAILED, detail)

    def add(self, step: str, status: str, detail: str = "") -> None:
        self.steps.append((step, status, detail))
        print(f"    [{status}] {step}{': ' + detail if detail else ''}", flush=True)

    @property
    def failed(self) -> bool:
        return any(s == "FAILED" for _, s, _ in self.steps)


def _say(text: str) -> None:
    print(f"\n==> {text}", flush=True)


def available(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def run_demo(state_dir: Path, seconds: float = 8.0, wait_s: float = 90.0) -> int:
    """The demo flow; returns the process exit status. Services live under ``state_dir/demo``."""
    report = DemoReport()
    # every demo starts fresh servers, so an earlier run's target, checkpoints and logs are stale
    shutil.rmtree(Path(state_dir) / "demo", ignore_errors=True)
    stack = DevStack(Path(state_dir) / "demo", source_db=DB)
    daemon: subprocess.Popen | None = None
    watcher: StreamWatcher | None = None
    try:
        _say("1. starting the embedded services")
        stack.start()
        cfg = stack.write_config(topic_prefix=PREFIX, source=SOURCE)
        report.add("services", "ok", f"config written to {cfg}")
        topic = changes_topic(PREFIX, SOURCE)
        stack.broker.create_topic(topic, partitions=1)

        _say("2. starting the capture daemon (`cdc run`)")
        if available("cdc.runtime.run_cmd"):
            daemon = _start_daemon(cfg, stack.dir / "daemon.log")
            watcher = StreamWatcher(stack.broker.bootstrap, topic).start()
            ready = _wait_daemon_ready(daemon, watcher, stack.metrics_port, timeout=60)
            report.add("daemon", "ok" if ready else "FAILED",
                       f"pid {daemon.pid}, log {stack.dir / 'daemon.log'}" + ("" if ready else " (not ready in 60s)"))
        else:
            report.add("daemon", "skipped", "cdc.runtime.run_cmd is not installed yet: no stream will be written")

        _say(f"3. schema `{DB}` and a {seconds:.0f}s concurrent write workload on the primary")
        total_ms = int(seconds * 1000)  # the workload runs for a time: its progress is in milliseconds
        with progress(total_ms, "workload ms", stream=sys.stdout, interval_s=3.0) as bar:
            t0 = time.monotonic()

            def tick() -> None:
                if watcher is not None:
                    bar.set_description(f"workload ms ({watcher.line()})")
                bar.update(min(total_ms, int((time.monotonic() - t0) * 1000)))

            summary = run_workload(stack.primary.connect, DB, seconds=seconds, seed=42, on_progress=tick)
            bar.update(total_ms)
        report.add("workload", "ok", f"{summary.committed} committed, {summary.rolled_back} rolled back, "
                                     f"{sum(summary.rows.values())} rows changed in {summary.seconds:.1f}s")
        stack.replica.wait_caught_up(stack.primary, timeout=60)
        report.add("replica", "ok", f"caught up at GTID {stack.replica.gtid_binlog_pos()}")

        if watcher is not None:
            _say("4. waiting until the stream holds every committed transaction")
            with progress(summary.committed, "committed transactions in the stream", stream=sys.stdout,
                          interval_s=3.0) as bar:
                done = watcher.wait_for(summary.committed, wait_s, on_tick=lambda: bar.update(watcher.transactions))
                bar.update(watcher.transactions)
            print(f"    {watcher.line()}")
            report.add("stream", "ok" if done else "FAILED",
                       f"{watcher.transactions} END markers for {summary.committed} committed transactions")
            if watcher.sample:
                print(f"    a data record: {str(watcher.sample[0])[:300]}")

        _say("5. Spark apply into DuckDB, then source vs target")
        source = fingerprints_mysql(stack.primary, DB)
        target = run_apply_step(cfg, stack, report)
        _print_side_by_side(source, target)
        if target is not None:
            same = all(source[t] == target.get(t) for t in TABLES)
            report.add("compare", "ok" if same else "FAILED", "target equals source" if same else "tables differ")
    except Exception as exc:  # noqa: BLE001 - the demo reports, then stops everything
        report.add("demo", "FAILED", f"{type(exc).__name__}: {exc}")
    finally:
        _say("6. stopping")
        if watcher is not None:
            watcher.stop()
        if daemon is not None:
            procs.terminate(daemon, timeout=20)
            report.add("daemon stop", "ok" if daemon.returncode in (0, -15) else "FAILED",
                       f"exit status {daemon.returncode}")
        stack.stop()
    _say("summary")
    for step, status, detail in report.steps:
        print(f"    {status:8} {step:12} {detail}")
    return 1 if report.failed else 0


def _start_daemon(cfg: Path, log: Path) -> subprocess.Popen:
    return procs.spawn([sys.executable, "-m", "cdc.cli", "run", "--config", str(cfg)], log)


def _wait_daemon_ready(daemon: subprocess.Popen, watcher: StreamWatcher, metrics_port: int, timeout: float) -> bool:
    """Ready = /readyz answers 200, or the daemon wrote its first record (a heartbeat)."""
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and daemon.poll() is None:
        if watcher.counts["records"]:
            return True
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/readyz", timeout=1) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.3)
    return False


def run_apply_step(cfg: Path, stack: DevStack, report: DemoReport, timeout: float = 300) -> dict | None:
    """Run `cdc apply` into the DuckDB target until it has caught up; return the target's fingerprints.

    Hook for streaming.apply.apply_cmd: uses its run-until-caught-up flag when it has
    one (``--once``/``--available-now``/``--until-idle``), else runs it for a
    bounded time and stops it with SIGTERM. Returns None when the apply job is
    not installed yet.
    """
    if not available("streaming.apply.apply_cmd"):
        report.add("apply", "skipped", "streaming.apply.apply_cmd is not installed yet")
        return None
    log = stack.dir / "apply.log"
    argv = [sys.executable, "-m", "cdc.cli", "apply", "--config", str(cfg)]
    help_text = subprocess.run(argv[:4] + ["--help"], capture_output=True, text=True, timeout=60).stdout
    flag = next((f for f in ("--available-now", "--once", "--until-idle") if f in help_text), None)
    proc = procs.spawn(argv + ([flag] if flag else []), log)
    try:
        proc.wait(timeout=timeout if flag else 60)
    except subprocess.TimeoutExpired:
        procs.terminate(proc, timeout=30)
    ok = proc.returncode in (0, -15) if flag is None else proc.returncode == 0
    why = "" if ok else next((ln for ln in reversed(procs.tail(log, 200).splitlines()) if "error" in ln.lower()), "")
    report.add("apply", "ok" if ok else "FAILED", f"exit status {proc.returncode}, log {log}" + (f": {why}" if why else ""))
    return fingerprints_duckdb(Path(stack.dir / "target.duckdb"))


# ---- fingerprints comparable across engines -------------------------------------------------

def _norm(v: Any) -> str:
    if v is None:
        return "\\N"
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, Decimal):
        return format(v.normalize(), "f")
    if isinstance(v, float):
        return repr(round(v, 9))
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, datetime):
        return v.replace(tzinfo=None).isoformat(sep=" ")
    if isinstance(v, date):
        return v.isoformat()
    return str(v)


def _fingerprint(rows: list[tuple]) -> tuple[int, str]:
    digest = hashlib.md5()
    for row in sorted("\x1f".join(_norm(v) for v in r) for r in rows):
        digest.update(row.encode() + b"\n")
    return len(rows), digest.hexdigest()[:12]


_COLUMNS = {  # compared columns (defaults like updated_at differ legitimately in how engines fill them)
    "customers": "id, name, email, balance, version",
    "orders": "id, customer_id, status, amount, note, version",
    "order_items": "order_id, line_no, sku, qty, price",
    "events": "id, kind, score, day, data, flag, label",
}


def fingerprints_mysql(db_server, db: str) -> dict[str, tuple[int, str]]:
    conn = db_server.connect(db)
    try:
        with conn.cursor() as cur:
            out = {}
            for t in TABLES:
                cur.execute(f"SELECT {_COLUMNS[t]} FROM `{t}`")
                out[t] = _fingerprint(list(cur.fetchall()))
            return out
    finally:
        conn.close()


def fingerprints_duckdb(path: Path) -> dict[str, tuple[int, str]]:
    import duckdb

    if not path.exists():
        return {}
    con = duckdb.connect(str(path), read_only=True)
    try:
        out = {}
        for t in TABLES:
            try:
                out[t] = _fingerprint(con.execute(f'SELECT {_COLUMNS[t]} FROM "{t}"').fetchall())
            except duckdb.Error:
                hits = con.execute("SELECT table_schema FROM information_schema.tables WHERE table_name = ?",
                                   [t]).fetchall()
                if hits:
                    rows = con.execute(f'SELECT {_COLUMNS[t]} FROM "{hits[0][0]}"."{t}"').fetchall()
                    out[t] = _fingerprint(rows)
        return out
    finally:
        con.close()


def _print_side_by_side(source: dict, target: dict | None) -> None:
    print(f"    {'table':12} {'source rows':>11} {'source md5':>13}   {'target rows':>11} {'target md5':>13}")
    for t in TABLES:
        s = source.get(t, ("-", "-"))
        g = (target or {}).get(t, ("-", "-"))
        mark = "" if target is None else ("  same" if s == g else "  DIFFERENT")
        print(f"    {t:12} {s[0]:>11} {s[1]:>13}   {g[0]:>11} {g[1]:>13}{mark}")
