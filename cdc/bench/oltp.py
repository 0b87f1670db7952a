"""`cdc bench oltp --ops N`: a firenibble-shaped binlog drained end to end, MariaDB -> `cdc run` -> broker ->
`cdc apply` -> PostgreSQL, until `cdc compare` says EQUAL.

The workload is Wirekite's "firenibble" shape: ``--tables`` tables (10), 20 % inserts, 60 % updates, 20 %
deletes, every row its own commit (autocommit single-row statements), ``--ops`` operations (1,000,000).

1. cdc.dev starts MariaDB, the broker and PostgreSQL; the tables are created and seeded (``--seed`` rows each),
   `cdc run` takes its initial snapshot of them and is stopped once it streams (its checkpoint kept).
2. The N operations are written to MariaDB with nothing reading them (``load_s``, ``load_ops_per_s``), by
   ``--connections`` (4) connections at once, each with its own tables.
3. Timed: `cdc run` (resuming at its checkpoint) and `cdc apply` (Spark local[2]) start together; the clock
   stops when the target has the source's row counts and `cdc compare` then exits 0 (EQUAL), checked
   every ``--poll`` seconds. ``ops_per_s`` = N / that time (start-up of both processes included; Spark's
   start alone is ``apply_startup_s``-like seconds on a loaded host).
4. ``cpu_s``: CPU seconds (user + system, each process and its children: Spark's JVM under `cdc apply`) over the
   timed drain, for cdc run, cdc apply, MariaDB, the broker and PostgreSQL; ``cpu_us_per_op`` of each, and
   ``cpu_us_per_op_apply``: `cdc apply`'s split by process (``jvm``: Spark's JVM; ``boundary_scan``: the stream
   source's Python runner, which reads every record to find where transactions end; ``executors``: the Python
   workers reading and decoding the micro-batches; ``driver``: the engine's Python, writing the target).
5. With ``--steady-rate R`` (e.g. 5000): R single-row insert transactions a second for ``--steady-s`` seconds
   (over ``--connections`` connections) into ``bench.lag`` (each row holding its commit's wall-clock microseconds); a poller reads the target every
   20 ms and takes arrival - commit of each row: ``lag_ms_p50``/``lag_ms_p99`` and the rate reached
   (``steady_tx_per_s``; below R when this host's writer cannot keep up).
6. Where the apply's time went, from the micro-batches `cdc apply` logs: ``drain_apply_*`` over the drain,
   ``steady_apply_*`` over the steady run: batches, seconds reading them (Spark: executors consume and decode, the
   transfer to the driver) and in the engine (net effect, target transaction, progress row), and each per source
   transaction (``*_us_per_tx``).

Every service, and both cdc processes, are stopped at the end, whatever happened. The host is shared: the JSON
holds ``load_avg_1m``; compare CPU per operation and the share of each process, not wall-clock rates.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from cdc.progress_bar import progress

CDC = str(Path(sys.executable).with_name("cdc"))
_ROW = "(%s, %s, %s, %s, NOW(6))"
_COLS = "(id BIGINT PRIMARY KEY, k INT NOT NULL, c VARCHAR(120) NOT NULL, pad VARCHAR(60), at DATETIME(6))"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ops", type=int, default=1_000_000, help="operations, each its own commit")
    parser.add_argument("--tables", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1000, help="rows per table before the measured operations")
    parser.add_argument("--steady-rate", type=int, default=0,
                        help="then this many single-row transactions a second, for the end-to-end lag (0: off)")
    parser.add_argument("--steady-s", type=float, default=20.0, help="seconds of the steady run")
    parser.add_argument("--poll", type=float, default=2.0, help="seconds between the drain's completion checks")
    parser.add_argument("--timeout", type=float, default=3600.0, help="give up on the drain after this many seconds")
    parser.add_argument("--connections", type=int, default=4,
                        help="writer connections of the load and the steady run (each its own tables / keys)")


def _say(msg: str) -> None:
    print(f"[bench oltp] {msg}", file=sys.stderr, flush=True)


def firenibble(ops: int, tables: int, seed: int, rng: random.Random, only: list[int] | None = None):
    """(table, statement, args) of the measured operations: 20 % inserts of new ids, 60 % updates and 20 %
    deletes of a live id, the table chosen at random (among ``only`` when given: one loader connection's
    tables); every one changes exactly one row."""
    live = [list(range(1, seed + 1)) for _ in range(tables)]
    nxt = [seed + 1] * tables
    choices = only if only is not None else list(range(tables))
    for _ in range(ops):
        t = choices[rng.randrange(len(choices))]
        r = rng.random()
        if r < 0.2 or len(live[t]) < 2:
            i = nxt[t]
            nxt[t] += 1
            live[t].append(i)
            yield t, f"INSERT INTO bench.t{t} VALUES {_ROW}", (i, i % 1000, f"c{i}" * 4, "p" * (i % 50))
        elif r < 0.8:
            i = live[t][rng.randrange(len(live[t]))]
            yield t, f"UPDATE bench.t{t} SET k = k + 1, c = %s WHERE id = %s", (f"u{rng.random()}", i)
        else:
            j = rng.randrange(len(live[t]))
            live[t][j], live[t][-1] = live[t][-1], live[t][j]
            yield t, f"DELETE FROM bench.t{t} WHERE id = %s", (live[t].pop(),)


def _processes() -> dict[int, tuple[int, float]]:
    """Every live process: pid -> (parent pid, CPU seconds of its own and of its reaped children)."""
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        f = raw[raw.rindex(")") + 2:].split()  # fields from the state on (field 3)
        stats[int(entry)] = (int(f[1]), sum(int(x) for x in f[11:15]) / tick)  # ppid; utime stime cutime cstime
    return stats


def _tree(pid: int, procs: dict[int, tuple[int, float]]) -> list[int]:
    """``pid`` and every live descendant of it in ``procs`` (:func:`_processes`)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in procs:
            out.append(p)
            todo += [c for c, (pp, _) in procs.items() if pp == p]
    return out


def tree_cpu_s(pid: int, procs: dict[int, tuple[int, float]] | None = None) -> float:
    """CPU seconds (user + system) of process ``pid`` and every live descendant, plus their reaped children
    (``procs``: one :func:`_processes` reading for several calls)."""
    procs = _processes() if procs is None else procs
    return sum(procs[p][1] for p in _tree(pid, procs))


# the processes of `cdc apply` (Spark local), by what their command line runs
APPLY_PARTS = (("jvm", "java"), ("boundary_scan", "python_streaming_source_runner"), ("executors", "pyspark.daemon"))


def apply_cpu_parts(pid: int, procs: dict[int, tuple[int, float]] | None = None) -> dict[str, float]:
    """:func:`tree_cpu_s` of `cdc apply` (``pid``) split by part (APPLY_PARTS; the rest, the driver's Python, as
    ``driver``): each live process with its reaped children (a pyspark daemon's forked workers)."""
    procs = _processes() if procs is None else procs
    parts = dict.fromkeys([name for name, _ in APPLY_PARTS] + ["driver"], 0.0)
    for p in _tree(pid, procs):
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            cmd = ""
        parts[next((n for n, marker in APPLY_PARTS if marker in cmd), "driver")] += procs[p][1]
    return parts


def _spawn(args: list[str], log: Path) -> subprocess.Popen:
    from cdc.dev import procs

    return procs.spawn([CDC, *args], log)


def _stop(proc: subprocess.Popen | None) -> int | None:
    if proc is None:
        return None
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    return proc.returncode


def _wait_log(proc: subprocess.Popen, log: Path, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"bench oltp: {proc.args} exited {proc.returncode} before '{text}'; see {log}")
        time.sleep(0.5)
    raise RuntimeError(f"bench oltp: no '{text}' in {log} after {timeout:.0f}s")


def _counts(cur, tables: int, sql: str) -> list[int]:
    out = []
    for t in range(tables):
        cur.execute(sql.format(t=t))
        out.append(cur.fetchone()[0])
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    from cdc.dev.stack import DevStack

    rng = random.Random(40)
    tmp = Path(tempfile.mkdtemp(prefix="cdc-bench-oltp-"))
    stack = DevStack(tmp / "stack", source_db="bench", with_replica=False)
    daemon = apply = None
    try:
        stack.start(log=_say)
        db, pg = stack.primary, stack.postgres
        db.query("CREATE DATABASE IF NOT EXISTS bench")
        for t in range(args.tables):
            db.query(f"CREATE TABLE bench.t{t} {_COLS}")
            db.query(f"INSERT INTO bench.t{t} SELECT seq, seq % 1000, REPEAT(CONCAT('c', seq), 4), "
                     f"REPEAT('p', seq % 50), NOW(6) FROM bench.seq_1_to_{args.seed}")
        db.query("CREATE TABLE bench.lag (id BIGINT PRIMARY KEY, us BIGINT NOT NULL)")
        raw = stack.config(source="bench")
        raw["apply"] = [{"source": "bench", "target": "postgres", "checkpoint_dir": str(tmp / "spark-checkpoint")}]
        raw["metrics"] = {"port": 0}
        config = tmp / "cdc.yaml"
        config.write_text(yaml.safe_dump(raw, sort_keys=False))

        _say("cdc run: initial snapshot of the seeded tables, stopped once it is done")
        daemon = _spawn(["run", "--config", str(config)], tmp / "run-1.log")
        # not before: a restart in the middle of the snapshot rolls its new read back over the whole binlog
        # written since the first read (readers/mysql/snapshot_window.py), which the drain would then pay for
        _wait_log(daemon, tmp / "run-1.log", "snapshot done", 300)
        if _stop(daemon) != 0:
            raise RuntimeError(f"bench oltp: the first cdc run exited {daemon.returncode}; see {tmp / 'run-1.log'}")
        daemon = None

        _say(f"loading {args.ops} operations, each its own commit, over {args.tables} tables "
             f"({args.connections} connections)")
        t0 = time.perf_counter()
        _load(db, args, rng)
        load_s = time.perf_counter() - t0
        conn = db.connect()
        try:
            with conn.cursor() as cur:
                source_counts = _counts(cur, args.tables, "SELECT COUNT(*) FROM bench.t{t}")
        finally:
            conn.close()

        _say("timed: cdc run + cdc apply drain the binlog into PostgreSQL until cdc compare says EQUAL")
        services = {"mariadb": db.proc.pid, "broker": stack.broker.proc.pid, "postgres": pg.proc.pid}
        procs = _processes()
        cpu0 = {k: tree_cpu_s(p, procs) for k, p in services.items()}
        t0 = time.perf_counter()
        daemon = _spawn(["run", "--config", str(config)], tmp / "run-2.log")
        apply = _spawn(["apply", "--config", str(config), "--master", "local[2]", "--metrics-port", "0"],
                       tmp / "apply.log")
        pids = services | {"cdc_run": daemon.pid, "cdc_apply": apply.pid}
        compares = 0
        with pg.connect() as pgc, pgc.cursor() as cur:
            while True:
                for name, p in (("cdc run", daemon), ("cdc apply", apply)):
                    if p.poll() is not None:
                        raise RuntimeError(f"bench oltp: {name} exited {p.returncode} during the drain; see {tmp}")
                if time.perf_counter() - t0 > args.timeout:
                    raise RuntimeError(f"bench oltp: not EQUAL after {args.timeout:.0f}s; logs in {tmp}")
                time.sleep(args.poll)
                procs = _processes()  # before the check's own CPU
                cpu_now = {k: tree_cpu_s(p, procs) for k, p in pids.items()}
                apply_parts = apply_cpu_parts(apply.pid, procs)
                elapsed = time.perf_counter() - t0
                try:
                    got = _counts(cur, args.tables, "SELECT COUNT(*) FROM t{t}")  # the apply's tables: public.t<n>
                except Exception:  # noqa: BLE001 - the apply has not created every table yet
                    pgc.rollback()
                    continue
                if got != source_counts:
                    continue
                compares += 1
                check = subprocess.run([CDC, "compare", "--config", str(config), "--source", "bench",
                                        "--target", "postgres", "--tables",
                                        *(f"bench.t{t}" for t in range(args.tables))],
                                       capture_output=True, text=True, timeout=600, check=False)
                if check.returncode == 0:
                    break
        drain_s = elapsed
        batches = apply_batches((tmp / "apply.log").read_text(errors="replace"))
        cpu = {k: round(cpu_now[k] - cpu0.get(k, 0.0), 2) for k in pids}
        out: dict[str, Any] = {
            "ops": args.ops, "tables": args.tables, "mix": "20% inserts, 60% updates, 20% deletes, 1 row per commit",
            "ops_per_s": round(args.ops / drain_s), "drain_s": round(drain_s, 1), "load_s": round(load_s, 1),
            "load_ops_per_s": round(args.ops / load_s), "cpu_s": cpu,
            "cpu_us_per_op": {k: round(v / args.ops * 1e6, 1) for k, v in cpu.items()},
            "cpu_us_per_op_apply": {k: round(v / args.ops * 1e6, 1) for k, v in apply_parts.items()},
            "compares": compares, "equal": True, **_stages(batches, "drain_")}
        if args.steady_rate > 0:
            out |= _steady(db, pg, args.steady_rate, args.steady_s, args.connections)
            steady = apply_batches((tmp / "apply.log").read_text(errors="replace"))[len(batches):]
            out |= _stages(steady, "steady_")
        out["load_avg_1m"] = round(os.getloadavg()[0], 1)
        return out
    finally:
        _stop(apply)
        _stop(daemon)
        stack.stop()


_BATCH = re.compile(r"batch \d+: (\d+) records, (\d+) transactions, .*\(read ([\d.]+)s, apply ([\d.]+)s\)")


def _load(db, args: argparse.Namespace, rng: random.Random) -> None:
    """The measured operations, written by ``--connections`` autocommit connections at once, each with its own
    tables (so every operation still changes one live row) and its share of the operations."""
    workers = max(1, min(args.connections, args.tables))
    shares = [args.ops // workers + (w < args.ops % workers) for w in range(workers)]
    seeds = [rng.randrange(1 << 30) for _ in range(workers)]
    errors: list[BaseException] = []

    def body(w: int, bar) -> None:
        conn = db.connect()  # autocommit
        try:
            with conn.cursor() as cur:
                mine = [t for t in range(args.tables) if t % workers == w]
                for n, (_, sql, params) in enumerate(
                        firenibble(shares[w], args.tables, args.seed, random.Random(seeds[w]), mine), 1):
                    if errors:
                        return
                    if cur.execute(sql, params) != 1:
                        raise RuntimeError(f"bench oltp: {sql} {params} changed {cur.rowcount} rows, not 1")
                    if n % 1000 == 0:
                        bar.advance(1000)
        except BaseException as exc:  # noqa: BLE001 - raised below, in the caller
            errors.append(exc)
        finally:
            conn.close()

    with progress(args.ops, "[bench oltp] load ops") as bar:
        threads = [threading.Thread(target=body, args=(w, bar), daemon=True) for w in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if errors:
        raise errors[0]


def apply_batches(log_text: str) -> list[tuple[int, int, float, float]]:
    """(records, transactions, read seconds, apply seconds) of each micro-batch `cdc apply` logged
    (streaming.apply.job: "<target> batch N: R records, T transactions, rows {...} (read Xs, apply Ys)")."""
    return [(int(m[1]), int(m[2]), float(m[3]), float(m[4])) for m in _BATCH.finditer(log_text)]


def _stages(batches: list[tuple[int, int, float, float]], prefix: str) -> dict[str, Any]:
    """Where the apply's micro-batches spent their time: Spark reading them (executors consuming and decoding,
    the transfer to the driver) and the engine (net effect, target transaction, progress row), in seconds and
    per source transaction."""
    work = [b for b in batches if b[1]]
    tx = sum(b[1] for b in work)
    read, engine = sum(b[2] for b in work), sum(b[3] for b in work)
    return {f"{prefix}apply_batches": len(work), f"{prefix}apply_read_s": round(read, 2),
            f"{prefix}apply_engine_s": round(engine, 2),
            f"{prefix}apply_read_us_per_tx": round(read / tx * 1e6, 1) if tx else None,
            f"{prefix}apply_engine_us_per_tx": round(engine / tx * 1e6, 1) if tx else None}


def _steady(db, pg, rate: int, seconds: float, connections: int) -> dict[str, Any]:
    """R single-row insert transactions a second into bench.lag, written by ``connections`` connections (each
    R / connections a second, ids interleaved); arrival - commit of each row at the target."""
    lags: list[float] = []
    done = threading.Event()
    workers = max(1, connections)
    sent = [0] * workers
    errors: list[BaseException] = []

    def poll() -> None:
        low, seen = 0, set()  # every id <= low has arrived; seen: the ones above it that have
        with pg.connect() as c, c.cursor() as cur:
            while not done.is_set() or len(lags) < sum(sent):  # every row sent has arrived
                try:
                    cur.execute("SELECT id, us FROM lag WHERE id > %s", (low,))
                    rows = cur.fetchall()
                except Exception:  # noqa: BLE001 - the table is not there before its first row is applied
                    c.rollback()
                    rows = []
                now = time.time() * 1e6
                for i, us in rows:
                    if i not in seen:
                        seen.add(i)
                        lags.append((now - us) / 1000)
                while low + 1 in seen:
                    low += 1
                    seen.discard(low)
                if done.is_set() and time.monotonic() > give_up:
                    return
                time.sleep(0.02)

    def write(w: int, t0: float) -> None:
        conn = db.connect()
        try:
            with conn.cursor() as cur:
                while (now := time.monotonic()) - t0 < seconds:
                    due = int((now - t0) * rate / workers)
                    while sent[w] < due:
                        cur.execute("INSERT INTO bench.lag VALUES (%s, %s)",
                                    (sent[w] * workers + w + 1, int(time.time() * 1e6)))
                        sent[w] += 1
                    time.sleep(0.001)
        except BaseException as exc:  # noqa: BLE001 - raised below
            errors.append(exc)
        finally:
            conn.close()

    give_up = float("inf")
    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    _say(f"steady: {rate} transactions/s for {seconds:.0f}s into bench.lag ({workers} connections)")
    t0 = time.monotonic()
    writers = [threading.Thread(target=write, args=(w, t0), daemon=True) for w in range(workers)]
    try:
        for t in writers:
            t.start()
        for t in writers:
            t.join()
        reached = sum(sent) / (time.monotonic() - t0)
    finally:
        give_up = time.monotonic() + 120
        done.set()
        poller.join(130)
    if errors:
        raise errors[0]
    lags.sort()
    if not lags:
        raise RuntimeError("bench oltp: no row of the steady run reached the target in 120 s")
    return {"steady_rate": rate, "steady_tx_per_s": round(reached), "steady_rows_seen": len(lags),
            "steady_rows_sent": sum(sent), "lag_ms_p50": round(lags[len(lags) // 2], 1),
            "lag_ms_p99": round(lags[min(len(lags) - 1, int(len(lags) * 0.99))], 1)}
