"""`cdc bench snapshot --rows N [--tps 1000]`: a writer's commit latency with and without the initial snapshot.

Starts its own MariaDB (cdc.dev), loads N rows, then runs a writer committing ``--tps`` single-row updates
per second (paced, one connection, autocommit) for ``--seconds`` alone, then again while an initial
snapshot (MySqlSource, ``snapshot: initial``, no publisher) reads every row. Prints the writer's p50/p99
commit latency in both phases (``p99_delta_ms``: with minus without; the target is within 10 ms) and
``snapshot_rows_per_s`` (the target is 100,000 on 1M rows). Times move with the host's load: run it on a
quiet machine for figures to compare.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--tps", type=int, default=1_000, help="writer commits per second")
    parser.add_argument("--seconds", type=float, default=5.0, help="the writer alone, before the snapshot")
    parser.add_argument("--chunk-rows", type=int, default=5_000)


def _say(msg: str) -> None:
    print(f"[bench snapshot] {msg}", file=sys.stderr, flush=True)


class _Writer(threading.Thread):
    def __init__(self, db, rows: int, tps: int) -> None:
        super().__init__(daemon=True)
        self.conn, self.rows, self.tps = db.connect("bench"), rows, tps
        self.stop, self.latencies = threading.Event(), []

    def run(self) -> None:
        n, t0 = 0, time.perf_counter()
        with self.conn.cursor() as cur:
            while not self.stop.is_set():
                k = 1 + (n * 7919) % self.rows
                s = time.perf_counter()
                cur.execute("UPDATE t SET v = v + 1 WHERE id = %s", (k,))
                self.latencies.append(time.perf_counter() - s)
                n += 1
                wait = t0 + n / self.tps - time.perf_counter()
                if wait > 0:
                    self.stop.wait(wait)
        self.conn.close()

    def take(self) -> list[float]:
        out, self.latencies = self.latencies, []
        return out


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return round(1000 * xs[min(len(xs) - 1, int(p * len(xs)))], 3) if xs else 0.0


def run(args: argparse.Namespace) -> dict:
    from cdc.contract import SourceContext
    from cdc.dev.mariadb import MariaDB
    from cdc.metrics import SourceMetrics
    from cdc.stream.events import Heartbeat
    from readers.mysql.config import MySqlSourceConfig
    from readers.mysql.reader import MySqlSource

    with tempfile.TemporaryDirectory(prefix="cdc-bench-snapshot-") as tmp:
        db = MariaDB(Path(tmp), server_id=78, name="bench")
        try:
            db.start()
            db.query("CREATE DATABASE IF NOT EXISTS bench")
            db.query("CREATE TABLE bench.t (id BIGINT PRIMARY KEY, v INT NOT NULL, note VARCHAR(64))")
            _say(f"loading {args.rows} rows")
            for lo in range(0, args.rows, 100_000):
                db.query(f"INSERT INTO bench.t SELECT seq, 0, REPEAT('x', 20 + seq % 40) "
                         f"FROM bench.seq_{lo + 1}_to_{min(args.rows, lo + 100_000)}")
            writer = _Writer(db, args.rows, args.tps)
            writer.start()
            time.sleep(args.seconds)
            alone = writer.take()
            _say("snapshot under the writer")
            cfg = MySqlSourceConfig(name="bench", hosts=[db.address], user="cdc", password="cdc",
                                    tables=["bench.t"], snapshot="initial", snapshot_chunk_rows=args.chunk_rows,
                                    heartbeat_interval_s=0.5)
            src = MySqlSource(cfg, SourceContext(metrics=SourceMetrics("bench")))
            t0, rows = time.perf_counter(), 0
            src.start(None)
            try:
                for ev in src.events():
                    if type(ev).__name__ == "Change" and ev.op == "r":
                        rows += 1
                    if isinstance(ev, Heartbeat) and "snapshot" not in (ev.resume or {}):
                        break
            finally:
                src.close()
            took = time.perf_counter() - t0
            during = writer.take()
            writer.stop.set()
            writer.join(10)
        finally:
            db.stop()
    return {"rows": args.rows, "snapshot_rows": rows, "snapshot_rows_per_s": round(rows / took),
            "writer_tps_target": args.tps, "writer_tps_alone": round(len(alone) / args.seconds),
            "writer_tps_during": round(len(during) / took),
            "p50_ms_alone": _pct(alone, 0.5), "p99_ms_alone": _pct(alone, 0.99),
            "p50_ms_during": _pct(during, 0.5), "p99_ms_during": _pct(during, 0.99),
            "p99_delta_ms": round(_pct(during, 0.99) - _pct(alone, 0.99), 3), "server": "mariadb"}
