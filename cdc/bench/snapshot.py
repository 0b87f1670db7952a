"""`cdc bench snapshot --rows N [--writer-tps 1000] [--server mariadb|mysql97]`: a writer's commit latency
with and without the initial snapshot, and the snapshot's rows/s and CPU per row.

Starts its own server (cdc.dev: MariaDB, or MySQL 9.7 from ``make setup``'s tree), loads N rows into
``bench.t`` (BIGINT key, an INT, a 20-59 character VARCHAR), then starts a writer in ITS OWN PROCESS
(cdc/bench/snapshot_writer.py: one connection, autocommit single-row updates paced at ``--writer-tps``,
each commit's start and latency kept), so its latency is the database's and not this interpreter's.
The writer runs ``--seconds`` alone (the baseline window, after ``--warmup-s``), then during an initial
snapshot (MySqlSource, ``snapshot: initial``, no publisher) that reads every row; the commits are split
into the two windows by their start time. Prints, per window, the writer's p50/p99 commit latency and
achieved commits a second; ``p99_delta_ms`` (during minus alone; the target is within 10 ms);
``snapshot_rows_per_s`` (the target is 100,000 on 1M rows); ``snapshot_cpu_us_per_row`` (this process's
CPU, every thread of the snapshot reader, per row read) and ``server_cpu_us_per_row`` (the server
process's CPU in the same window, the writer's commits included). Both servers get a 256 MB buffer
pool so the table is read from memory. Times move with the host's load (``load_avg_1m`` at the end).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SERVERS = ("mariadb", "mysql97")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--writer-tps", type=int, default=1_000, help="the writer's commits a second")
    parser.add_argument("--seconds", type=float, default=5.0, help="the writer alone (baseline window)")
    parser.add_argument("--warmup-s", type=float, default=1.0, help="the writer's first seconds, not counted")
    parser.add_argument("--chunk-rows", type=int, default=None, help="snapshot_chunk_rows (default: the source's)")
    parser.add_argument("--server", choices=SERVERS, default="mariadb")


def _say(msg: str) -> None:
    print(f"[bench snapshot] {msg}", file=sys.stderr, flush=True)


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return round(1000 * xs[min(len(xs) - 1, int(p * len(xs)))], 3) if xs else 0.0


def _proc_cpu_s(pid: int) -> float:
    """utime + stime of a process (Linux /proc), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load(db, rows: int) -> None:
    """``rows`` rows, 100,000 per INSERT, from a cross join of digits (no sequence engine on MySQL)."""
    db.query("CREATE DATABASE IF NOT EXISTS bench")
    db.query("CREATE TABLE bench.t (id BIGINT PRIMARY KEY, v INT NOT NULL, note VARCHAR(64))")
    db.query("CREATE TABLE bench.d (d INT PRIMARY KEY)")
    db.query("INSERT INTO bench.d VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)")
    n = "(a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d)"
    for lo in range(0, rows, 100_000):
        db.query(f"INSERT INTO bench.t SELECT {lo} + {n} + 1, 0, REPEAT('x', 20 + ({lo} + {n} + 1) % 40) "
                 f"FROM bench.d a, bench.d b, bench.d c, bench.d e, bench.d f WHERE {lo} + {n} < {rows}")
    db.query("DROP TABLE bench.d")
    got = db.query("SELECT COUNT(*) FROM bench.t")[0][0]
    if got != rows:
        raise RuntimeError(f"loaded {got} rows into bench.t, expected {rows}")


def _server(kind: str, base: Path):
    extra = {"innodb_buffer_pool_size": "256M"}
    if kind == "mysql97":
        from cdc.dev.mysql import MySQL

        return MySQL(base, server_id=78, name="bench", extra=extra)
    from cdc.dev.mariadb import MariaDB

    return MariaDB(base, server_id=78, name="bench", extra=extra)


def _snapshot(db, chunk_rows: int | None) -> tuple[int, float, float, float]:
    """Run the initial snapshot; (rows, wall s, this process's CPU s, server CPU s)."""
    from cdc.contract import SourceContext
    from cdc.metrics import SourceMetrics
    from cdc.stream.events import Change, Heartbeat
    from readers.mysql.config import MySqlSourceConfig
    from readers.mysql.reader import MySqlSource

    extra = {"snapshot_chunk_rows": chunk_rows} if chunk_rows else {}
    cfg = MySqlSourceConfig(name="bench", hosts=[db.address], user="cdc", password="cdc", tables=["bench.t"],
                            snapshot="initial", heartbeat_interval_s=0.5, **extra)
    src = MySqlSource(cfg, SourceContext(metrics=SourceMetrics("bench")))
    rows = 0
    t0, c0, s0 = time.perf_counter(), time.process_time(), _proc_cpu_s(db.proc.pid)
    src.start(None)
    try:
        for ev in src.events():
            if type(ev) is Change and ev.op == "r":
                rows += 1
            elif isinstance(ev, Heartbeat) and "snapshot" not in (ev.resume or {}):
                break
    finally:
        src.close()
    return rows, time.perf_counter() - t0, time.process_time() - c0, _proc_cpu_s(db.proc.pid) - s0


def _window(starts: list[float], lat: list[float], lo: float, hi: float) -> list[float]:
    return [x for s, x in zip(starts, lat) if lo <= s < hi]


def run(args: argparse.Namespace) -> dict:
    if args.rows < 1 or args.writer_tps < 1 or args.seconds <= 0:
        raise SystemExit("cdc bench snapshot: --rows and --writer-tps must be at least 1, --seconds above 0")
    with tempfile.TemporaryDirectory(prefix="cdc-bench-snapshot-") as tmp:
        db = _server(args.server, Path(tmp))
        writer = None
        try:
            db.start()
            version = db.query("SELECT VERSION()")[0][0]
            _say(f"{args.server} {version}: loading {args.rows} rows")
            _load(db, args.rows)
            writer = subprocess.Popen(
                [sys.executable, "-m", "cdc.bench.snapshot_writer", db.host, str(db.port), "bench.t",
                 str(args.rows), str(args.writer_tps)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            if writer.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the writer process exited ({writer.wait(10)}) before it was ready")
            time.sleep(args.warmup_s)
            a0 = time.monotonic()
            time.sleep(args.seconds)
            a1 = time.monotonic()
            _say(f"writer alone for {args.seconds:g}s; the snapshot under the writer")
            rows, wall, cpu, server_cpu = _snapshot(db, args.chunk_rows)
            d1 = time.monotonic()
            d0 = d1 - wall
            out, _ = writer.communicate("stop\n", timeout=60)
            res = json.loads(out.strip().splitlines()[-1])
        finally:
            if writer is not None and writer.poll() is None:
                writer.kill()
                writer.wait(10)
            db.stop()
    starts, lat = res["start"], res["latency"]
    alone, during = _window(starts, lat, a0, a1), _window(starts, lat, d0, d1)
    return {"server": args.server, "server_version": version, "rows": args.rows, "snapshot_rows": rows,
            "snapshot_s": round(wall, 2), "snapshot_rows_per_s": round(rows / wall),
            "snapshot_cpu_us_per_row": round(1e6 * cpu / max(rows, 1), 2),
            "server_cpu_us_per_row": round(1e6 * server_cpu / max(rows, 1), 2),
            "writer_tps_target": args.writer_tps,
            "writer_tps_alone": round(len(alone) / (a1 - a0)), "writer_tps_during": round(len(during) / wall),
            "p50_ms_alone": _pct(alone, 0.5), "p99_ms_alone": _pct(alone, 0.99),
            "p50_ms_during": _pct(during, 0.5), "p99_ms_during": _pct(during, 0.99),
            "p99_delta_ms": round(_pct(during, 0.99) - _pct(alone, 0.99), 3),
            "writer_errors": res["errors"], "writer_process": "separate", "load_avg_1m": round(os.getloadavg()[0], 1)}
