"""The paced writer of `cdc bench snapshot`, run as its own process so its latency is the database's.

``python -m cdc.bench.snapshot_writer HOST PORT TABLE ROWS TPS`` connects as root over TCP (autocommit,
the embedded servers of cdc.dev have no root password), prints ``ready`` on stdout, then commits
single-row updates ``UPDATE TABLE SET v = v + 1 WHERE id = k`` (k spread over 1..ROWS) at TPS commits a
second, paced on a schedule (commit n is due at start + n/TPS; a late writer catches up without
sleeping, so a stall shows as latency and as a lower achieved rate, not as skipped commits). It stops
when its stdin closes or says ``stop``, then prints one JSON object: ``{"start": [...], "latency": [...],
"errors": N}``, each commit's start on ``time.monotonic()`` (the same clock in every process of the
host, so the bench can split the commits into its phases) and its latency, in seconds.
"""

from __future__ import annotations

import json
import sys
import threading
import time


def run(host: str, port: int, table: str, rows: int, tps: int) -> dict:
    import pymysql

    conn = pymysql.connect(host=host, port=port, user="root", password="", autocommit=True, connect_timeout=10)
    stop = threading.Event()

    def watch_stdin() -> None:
        for line in sys.stdin:
            if line.strip() == "stop":
                break
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    starts: list[float] = []
    latencies: list[float] = []
    errors = 0
    sql = f"UPDATE {table} SET v = v + 1 WHERE id = %s"
    print("ready", flush=True)
    n, t0 = 0, time.monotonic()
    with conn.cursor() as cur:
        while not stop.is_set():
            k = 1 + (n * 7919) % rows
            s = time.monotonic()
            try:
                cur.execute(sql, (k,))
            except pymysql.MySQLError as exc:
                errors += 1
                print(f"[snapshot writer] commit {n}: {exc}", file=sys.stderr, flush=True)
                if errors > 100:
                    break
            else:
                starts.append(s)
                latencies.append(time.monotonic() - s)
            n += 1
            wait = t0 + n / tps - time.monotonic()
            if wait > 0:
                stop.wait(wait)
    conn.close()
    return {"start": starts, "latency": latencies, "errors": errors}


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        print("usage: python -m cdc.bench.snapshot_writer HOST PORT TABLE ROWS TPS", file=sys.stderr)
        return 2
    host, port, table, rows, tps = argv[0], int(argv[1]), argv[2], int(argv[3]), int(argv[4])
    if rows < 1 or tps < 1:
        print(f"snapshot_writer: ROWS ({rows}) and TPS ({tps}) must be at least 1", file=sys.stderr)
        return 2
    out = run(host, port, table, rows, tps)
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
