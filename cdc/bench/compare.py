"""`cdc bench compare --rows N`: MD5 merge compare vs the seed's NOT EXISTS anti-join.

Same run, same MariaDB, same two tables per size (10k, 100k, ... up to N
rows): a source table and a copy with ``--diff-fraction`` of its rows
changed, deleted or added. Timed per size:

- merge:     cdc.compare.table_diff.TableCompare (bucket pass + row pass of the
             differing buckets; MD5 computed in the database);
- anti_join: the traditional shadow-table SQL of seeds/000: ``NOT EXISTS``
             in both directions plus a column-by-column join for changed rows;
- left_join: the same answers as ``LEFT JOIN ... IS NULL`` (not the seed's SQL;
             reported as ``speedup_vs_left_join`` for scale: MariaDB runs
             NOT EXISTS as a dependent subquery per row, a join it does not).

Both must find the same number of differences, else the bench fails.
The merge's bucket pass runs ``--parallel`` connections per side (default
2); the anti-join is the seed's three queries, one after the other, each a
single-threaded MariaDB query. Because wall-clock ratios on a shared host
move with the load, each size also reports the database server's own CPU
seconds per method (``merge_db_cpu_s``, ``anti_join_db_cpu_s``,
``db_cpu_ratio``: the work each method costs, whatever the parallelism)
and the 1-minute load average.
rows/s = source rows / seconds. Prints one JSON line (via cdc.bench.bench_cmd):
``merge_rows_per_s``, ``anti_join_rows_per_s``, ``speedup`` (largest size),
``sizes`` (per-size figures). Starts its own MariaDB (``--mysql host:port``
to use another) and drops its tables afterwards.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

from cdc.progress_bar import progress

COLUMNS = ("id BIGINT PRIMARY KEY, name VARCHAR(40) NOT NULL, qty INT NOT NULL, price DECIMAL(12,2), "
           "ts DATETIME(6), note VARCHAR(100)")
NON_KEY = ("name", "qty", "price", "ts", "note")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=1_000_000, help="largest size (sizes: 10k, 100k, ... up to it)")
    parser.add_argument("--diff-fraction", type=float, default=0.0001,
                        help="fraction of rows changed, deleted and added (each) in the copy")
    parser.add_argument("--repeat", type=int, default=1, help="runs per method and size (best is kept)")
    parser.add_argument("--parallel", type=int, default=2, help="connections per side for the merge's bucket pass")
    parser.add_argument("--mysql-pid", type=int, help="with --mysql: the server's process id, to report its CPU time")
    parser.add_argument("--mysql", help="host:port of a MariaDB to use (root, no password); default: start one")


def sizes_for(rows: int) -> list[int]:
    sizes, n = [], 10_000
    while n < rows:
        sizes.append(n)
        n *= 10
    return sizes + [rows]


def _load(cur, db: str, n: int, fraction: float) -> int:
    """Create db.src (n rows) and db.tgt (a copy with differences); return the number of differences."""
    cur.execute(f"DROP TABLE IF EXISTS {db}.src, {db}.tgt")
    cur.execute(f"CREATE TABLE {db}.src ({COLUMNS}) DEFAULT CHARSET=utf8mb4")
    cur.execute(f"CREATE TABLE {db}.tgt ({COLUMNS}) DEFAULT CHARSET=utf8mb4")
    cur.execute(f"INSERT INTO {db}.src SELECT seq, CONCAT('name-', seq), seq % 1000, seq / 7, "
                f"TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND, IF(seq % 10 = 0, NULL, REPEAT('x', seq % 50)) "
                f"FROM seq_1_to_{n}")
    cur.execute(f"INSERT INTO {db}.tgt SELECT * FROM {db}.src")
    every = max(2, int(1 / fraction)) if fraction > 0 else n + 1
    cur.execute(f"UPDATE {db}.tgt SET qty = qty + 1 WHERE id % {every} = 1")
    changed = cur.rowcount
    cur.execute(f"DELETE FROM {db}.tgt WHERE id % {every} = 2")
    deleted = cur.rowcount
    extra = max(1, n // every)
    cur.execute(f"INSERT INTO {db}.tgt SELECT {n} + seq, 'added', 0, 0, NULL, NULL FROM seq_1_to_{extra}")
    cur.execute(f"ANALYZE TABLE {db}.src, {db}.tgt")
    cur.fetchall()
    _settle(cur, db)
    return changed + deleted + extra


def _settle(cur, db: str) -> None:
    """Let the load's after-effects finish before anything is timed, so neither method pays for them:
    InnoDB purge of the UPDATE/DELETE (MariaDB 10.5+ waits for it on this setting) and a first read
    of both tables into the buffer pool."""
    cur.execute("SELECT COUNT(*) FROM information_schema.GLOBAL_VARIABLES "
                "WHERE VARIABLE_NAME = 'INNODB_MAX_PURGE_LAG_WAIT'")
    if cur.fetchone()[0]:  # MySQL / older MariaDB: no such variable
        cur.execute("SET GLOBAL innodb_max_purge_lag_wait = 0")
    for t in ("src", "tgt"):
        cur.execute(f"SELECT COUNT(*), SUM(LENGTH(note)) FROM {db}.{t}")
        cur.fetchall()


def _anti_join(cur, db: str) -> int:
    """The seed's method: NOT EXISTS both ways + a column-by-column join (NULL-safe)."""
    cur.execute(f"SELECT COUNT(*) FROM {db}.src s WHERE NOT EXISTS (SELECT 1 FROM {db}.tgt t WHERE t.id = s.id)")
    missing = cur.fetchone()[0]
    cur.execute(f"SELECT COUNT(*) FROM {db}.tgt t WHERE NOT EXISTS (SELECT 1 FROM {db}.src s WHERE s.id = t.id)")
    extra = cur.fetchone()[0]
    return missing + extra + _changed(cur, db)


def _changed(cur, db: str) -> int:
    """Rows present on both sides with a different value in some column (NULL-safe, column by column)."""
    same = " AND ".join(f"s.{c} <=> t.{c}" for c in NON_KEY)
    cur.execute(f"SELECT COUNT(*) FROM {db}.src s JOIN {db}.tgt t ON s.id = t.id WHERE NOT ({same})")
    return cur.fetchone()[0]


def _left_join(cur, db: str) -> int:
    """The same three answers written as LEFT JOIN ... IS NULL both ways (not the seed's SQL: shown for
    scale, since MariaDB runs NOT EXISTS as a dependent subquery per row while this is a plain join)."""
    cur.execute(f"SELECT COUNT(*) FROM {db}.src s LEFT JOIN {db}.tgt t ON t.id = s.id WHERE t.id IS NULL")
    missing = cur.fetchone()[0]
    cur.execute(f"SELECT COUNT(*) FROM {db}.tgt t LEFT JOIN {db}.src s ON s.id = t.id WHERE s.id IS NULL")
    extra = cur.fetchone()[0]
    return missing + extra + _changed(cur, db)


def _cpu_seconds(pid: int | None) -> float:
    """CPU time (user + system) the process ``pid`` has used so far; 0.0 when unknown."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _best(fn, repeat: int, pid: int | None = None) -> tuple[float, Any, float]:
    """(best wall seconds, result, database CPU seconds of that best run)."""
    best, result, cpu = float("inf"), None, 0.0
    for _ in range(repeat):
        c0 = _cpu_seconds(pid)
        t0 = time.perf_counter()
        result = fn()
        took = time.perf_counter() - t0
        if took < best:
            best, cpu = took, _cpu_seconds(pid) - c0
    return best, result, cpu


def run(args: argparse.Namespace) -> dict[str, Any]:
    import pymysql

    from cdc.compare.endpoints import from_dsn
    from cdc.compare.table_diff import TableCompare

    server, pid = None, None
    if args.mysql:
        host, _, port = args.mysql.rpartition(":")
        pid = args.mysql_pid
    else:
        from cdc.dev.mariadb import MariaDB

        server = MariaDB(tempfile.mkdtemp(prefix="cdc-bench-compare-"), server_id=1, name="bench",
                         extra={"innodb_buffer_pool_size": "1G"})
        server.start()
        host, port = server.host, str(server.port)
        pid = server.proc.pid if server.proc is not None else None
    db = "cdc_bench_compare"
    conn = pymysql.connect(host=host, port=int(port), user="root", autocommit=True)
    sizes: list[dict[str, Any]] = []
    try:
        cur = conn.cursor()
        cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {db}")
        cur.execute(f"USE {db}")
        ep = from_dsn("bench", f"mysql://root@{host}:{port}/{db}")
        sizes_run = sizes_for(args.rows)
        with progress(4 * len(sizes_run), "[bench compare] steps (load, merge, anti-join, left join per size)") as bar:
            for n in sizes_run:
                print(f"compare bench: loading {n} rows", file=sys.stderr, flush=True)
                injected = _load(cur, db, n, args.diff_fraction)
                bar.advance()
                t_merge, report, cpu_merge = _best(
                    lambda: TableCompare(ep, f"{db}.src", ep, f"{db}.tgt", parallel=args.parallel).run(), args.repeat,
                    pid)
                found = len(report.diffs)
                bar.advance()
                t_anti, anti_found, cpu_anti = _best(lambda: _anti_join(cur, db), args.repeat, pid)
                bar.advance()
                t_left, left_found, _ = _best(lambda: _left_join(cur, db), args.repeat, pid)
                bar.advance()
                if not (found == anti_found == left_found == injected):
                    raise RuntimeError(f"methods disagree at {n} rows: injected {injected}, merge found {found}, "
                                       f"anti-join found {anti_found}, left join found {left_found}")
                row = {"rows": n, "differences": injected, "merge_s": round(t_merge, 3),
                       "anti_join_s": round(t_anti, 3),
                       "merge_rows_per_s": round(n / t_merge), "anti_join_rows_per_s": round(n / t_anti),
                       "speedup": round(t_anti / t_merge, 2), "left_join_s": round(t_left, 3),
                       "speedup_vs_left_join": round(t_left / t_merge, 2), "load_avg_1m": round(os.getloadavg()[0], 2)}
                if pid is not None:  # the database's own CPU time: the work each method costs, whatever the load
                    row.update(merge_db_cpu_s=round(cpu_merge, 2), anti_join_db_cpu_s=round(cpu_anti, 2),
                               db_cpu_ratio=round(cpu_anti / cpu_merge, 2) if cpu_merge else None)
                print(f"compare bench: {row}", file=sys.stderr, flush=True)
                sizes.append(row)
        cur.execute(f"DROP DATABASE {db}")
    finally:
        conn.close()
        if server is not None:
            server.destroy()
    last = sizes[-1]
    return {"rows": last["rows"], "diff_fraction": args.diff_fraction, "database": "mariadb (same server, same tables)",
            "merge_rows_per_s": last["merge_rows_per_s"], "anti_join_rows_per_s": last["anti_join_rows_per_s"],
            "speedup": last["speedup"], "parallel": args.parallel,
            **{k: last[k] for k in ("speedup_vs_left_join", "merge_db_cpu_s", "anti_join_db_cpu_s", "db_cpu_ratio",
                                    "load_avg_1m") if k in last},
            "sizes": sizes}
