"""`cdc bench mysql --rows N [--txn-rows K]`: binlog -> Kafka vs the raw python-mysql-replication decode loop.

Starts its own MariaDB and tansu broker (cdc.dev), writes N realistic rows
(several column types) in transactions of ``--txn-rows`` rows with INSERT ...
SELECT from the sequence engine, then measures on that same binlog:

* raw: BinLogStreamReader from the start GTID state, iterating every
  WriteRowsEvent and touching every value of every row (the floor any
  Python reader built on the library pays);
* pipeline: MySqlSource -> Publisher -> broker, timed until the broker
  acknowledged the END of the last transaction; once with the native rows
  pass and the TABLE_MAP cache (readers/mysql/binlog/native_rows.py, when it was
  compiled here: ``native``; readers/mysql/binlog/fastrows.py), once on the Python path
  with the cache (fastrows + the library + RowConverter: ``python``, what runs
  where no C compiler was), once without either (``uncached``);
* reader: MySqlSource alone (no publishing), each way, for the reader's share;
* decode: the reader's own binlog stream alone (readers/mysql/binlog/fastevents.py with the first
  way's rows pass), every row touched, no change events: the decode stage.

``--transforms``: the pipeline runs once more each way with a transforms rule on every table (TRANSFORMS_RULE:
``customer`` HMAC-hashed, ``note`` excluded; the hash key from a temp file), alternated with the plain runs, and
prints ``transforms``: rows/s and CPU us/row with and without, and ``transform_overhead`` (CPU per row with /
without - 1: the same-run ratio a loaded host does not move).

``--mix``: instead of inserts into one table, transactions over MIX_TABLES tables, 20 % inserts, 60 %
updates, 20 % deletes (mix_statements; the OLTP shape of issue 40, with ``--txn-rows 1``). Every stream
here is a blocking one that stops at the last row: a non-blocking dump is reset by MariaDB at the end of the
binlog, and the library then silently reconnects and reads again, which skewed the raw loop before.

The runs alternate ``--repeat`` times (the shared machine's load varies); the
best run of each counts, for wall clock and for CPU alike. Prints
raw_rows_per_s, pipeline_rows_per_s (native when compiled, else Python),
python_pipeline_rows_per_s, ratio (pipeline / raw), transactions_per_s,
``cpu_us_per_row_stage`` (reader, publish, pipeline, raw library decode) and
``cpu_us_per_row``: this process's CPU time (user + system, every thread: the
reader, the publisher and the Kafka client's threads; not MariaDB's or the
broker's) per row for raw, and for pipeline and reader each way. CPU per row
is the figure to compare on a loaded host; rows/s moves with the load. With
several transactions (``--txn-rows`` below ``--rows``) it also prints txn_per_s
and raw_txn_per_s (transactions per second of the pipeline and of the raw loop on
the same binlog), txn_ratio (their ratio), ``cpu_us_per_txn``, ``cpu_us_per_txn_stage`` (decode; what the
reader adds to it; what publishing adds; the pipeline; the raw library loop) and ``cpu_txn_ratio`` (raw CPU
per transaction / pipeline CPU per transaction: the same-run ratio a loaded host does not move).

``--instructions``: also ``instructions_per_txn`` (reader, pipeline: the native way), counted by valgrind
(cdc.bench.instructions): what one transaction costs in instructions, a figure that does not move with the host's
load, for comparing one build with another.

Why the Python pipeline can beat the raw loop: the reader decodes rows with
readers.mysql.binlog.fastrows (integers, floats and UTF-8 strings read directly,
everything else by the library's own code, identical values), while the raw
baseline is the library exactly as shipped.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from cdc.progress_bar import progress


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--txn-rows", "--batch", dest="batch", type=int, default=100_000,
                        help="rows per source transaction (5: the small transactions OLTP writes)")
    parser.add_argument("--repeat", type=int, default=2, help="alternate raw/pipeline runs; the best of each counts")
    parser.add_argument("--native-only", action="store_true",
                        help="only the raw loop and the native pass (no runs on the Python path): a shorter run")
    parser.add_argument("--transforms", action="store_true",
                        help="also run the pipeline with one HMAC-hashed and one excluded column on every row, and "
                             "print the transforms' overhead (same run)")
    parser.add_argument("--instructions", action="store_true",
                        help="also count the instructions one transaction costs in the reader and the pipeline "
                             "(valgrind; a figure a busy host does not move): instructions_per_txn")
    parser.add_argument("--mix", action="store_true",
                        help=f"OLTP-shaped binlog: transactions over {MIX_TABLES} tables, 20%% inserts, 60%% updates, "
                             "20%% deletes (rows changed: --rows), instead of inserts into one table")


MIX_TABLES = 4  # tables of the --mix load
TRANSFORMS_RULE = {"match": "bench.*", "exclude": ["note"], "columns": {"customer": {"mask": "hash"}}}
MIX_OPS = "IUUUD"  # per table, in turn: 20 % inserts, 60 % updates, 20 % deletes
_ORDERS = ("(id BIGINT PRIMARY KEY, customer VARCHAR(64) NOT NULL, amount DECIMAL(12,2), qty INT, "
           "created DATETIME(6), status ENUM('new','paid','shipped'), note VARCHAR(255))")
_ORDER_ROW = ("seq, CONCAT('customer-', seq % 9973), (seq % 100000) / 100, seq % 17, "
              "TIMESTAMP('2024-01-01') + INTERVAL seq SECOND, 1 + seq % 3, REPEAT('x', 20 + seq % 40)")


def _say(msg: str) -> None:
    print(f"[bench mysql] {msg}", file=sys.stderr, flush=True)


def _load(db, rows: int, batch: int) -> tuple[str, str]:
    db.query("CREATE DATABASE IF NOT EXISTS bench")
    db.query(f"CREATE TABLE bench.orders {_ORDERS}")
    start = db.gtid_binlog_pos()
    done = 0
    conn = db.connect()  # autocommit: one statement, one transaction
    try:
        with conn.cursor() as cur, progress(rows, "[bench mysql] load rows") as bar:
            while done < rows:
                n = min(batch, rows - done)
                cur.execute(f"INSERT INTO bench.orders SELECT {_ORDER_ROW} FROM bench.seq_{done + 1}_to_{done + n}")
                done += n
                bar.advance(n)
    finally:
        conn.close()
    return start, db.gtid_binlog_pos()


def mix_statements(rows: int, batch: int, tables: int = MIX_TABLES, seed_blocks: int = 20):
    """(seed statements, measured statements) of the --mix load: each table seeded with ``seed_blocks`` blocks
    of ``batch`` rows (before the measured binlog), then transactions of ``batch`` rows each, round robin over
    the tables, per table in turn insert / update x3 / delete (MIX_OPS): an insert adds a block of new ids, an
    update changes a live block, a delete removes the oldest live block. Rows changed: ``rows`` (the last
    transaction may be short)."""
    live = [list(range(seed_blocks)) for _ in range(tables)]  # live blocks per table (block b: ids b*batch+1..)
    nxt = [seed_blocks] * tables
    seed = [f"INSERT INTO bench.t{t} SELECT {_ORDER_ROW} FROM bench.seq_1_to_{seed_blocks * batch}"
            for t in range(tables)]
    out: list[tuple[str, int]] = []
    done = j = 0
    while done < rows:
        n = min(batch, rows - done)
        t, op = j % tables, MIX_OPS[(j // tables) % len(MIX_OPS)]
        if op == "I" or not live[t]:
            b = nxt[t]
            nxt[t] += 1
            live[t].append(b)
            lo = b * batch + 1
            out.append((f"INSERT INTO bench.t{t} SELECT {_ORDER_ROW} FROM bench.seq_{lo}_to_{lo + n - 1}", n))
        elif op == "U":
            b = live[t][(j * 7919) % len(live[t])]
            lo = b * batch + 1
            q = f"UPDATE bench.t{t} SET qty = qty + 1, amount = amount + 1, note = 'u{j}' WHERE id BETWEEN {lo} AND "
            out.append((q + f"{lo + n - 1}", n))  # 'u{j}': every row changed, its size kept
        else:
            b = live[t].pop(0)
            lo = b * batch + 1
            out.append((f"DELETE FROM bench.t{t} WHERE id BETWEEN {lo} AND {lo + n - 1}", n))
        done += n
        j += 1
    return seed, out


def _load_mix(db, rows: int, batch: int) -> tuple[str, str]:
    """The --mix binlog (mix_statements): the seed before the start GTID, one transaction per statement after."""
    db.query("CREATE DATABASE IF NOT EXISTS bench")
    seed, measured = mix_statements(rows, batch)
    for t in range(MIX_TABLES):
        db.query(f"CREATE TABLE bench.t{t} {_ORDERS}")
    for q in seed:
        db.query(q)
    start = db.gtid_binlog_pos()
    conn = db.connect()  # autocommit: one statement, one transaction
    try:
        with conn.cursor() as cur, progress(rows, "[bench mysql] load rows (mixed)") as bar:
            for q, n in measured:
                if cur.execute(q) != n:
                    raise RuntimeError(f"bench mysql --mix: {q!r} changed {cur.rowcount} rows, not {n}")
                bar.advance(n)
    finally:
        conn.close()
    return start, db.gtid_binlog_pos()


def _raw(db, start: str, rows: int) -> tuple[float, float]:
    """The library as shipped: our leaner row decoder (readers.mysql.binlog.fastrows) is switched off."""
    from readers.mysql.binlog import fastrows

    fastrows.uninstall()
    try:
        return _raw_loop(db, start, rows)
    finally:
        fastrows.install()


def _raw_loop(db, start: str, rows: int, fast: bool = False) -> tuple[float, float]:
    """The library's decode loop; ``fast``: through the reader's own stream (readers/mysql/binlog/fastevents.py,
    the guarded connection, fastrows and the native rows pass as installed): the decode stage of the reader."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    from readers.mysql.connection import connection_settings

    kinds = [WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent]
    if fast:
        from readers.mysql.binlog import binlog_events
        from readers.mysql.binlog.fastevents import FastStream
        from readers.mysql.reader import _guarded_connect

        stream = FastStream(connection_settings=connection_settings(db.address, "cdc", "cdc", 5),
                            server_id=990003, blocking=True, auto_position=start, is_mariadb=True,
                            only_events=binlog_events.ALL_EVENTS, pymysql_wrapper=_guarded_connect,
                            enable_logging=False)
    else:
        stream = BinLogStreamReader(
            connection_settings=connection_settings(db.address, "cdc", "cdc", 5),
            server_id=990001, blocking=True, auto_position=start, is_mariadb=True, only_events=kinds,
            only_schemas=["bench"], enable_logging=False)
    kinds = tuple(kinds)
    seen = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for ev in stream:
        if not isinstance(ev, kinds) or ev.schema != "bench":
            continue
        for r in ev.rows:
            for image in r.values():  # values; or before_values and after_values
                for _v in image.values():
                    pass
            seen += 1
        if seen >= rows:
            break
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    stream.close()
    if seen < rows:
        raise RuntimeError(f"raw loop saw {seen} of {rows} rows")
    return elapsed, cpu


def _decode(db, start: str, rows: int, native: bool) -> tuple[float, float]:
    """The reader's binlog decode alone: its stream (fast events, TABLE_MAP cache, fastrows / native rows),
    every row of every rows event touched, no change events, no publishing."""
    from readers.mysql.binlog import fastrows

    fastrows.install(native=native)
    try:
        return _raw_loop(db, start, rows, fast=True)
    finally:
        fastrows.install()


def _pipeline(db, broker, start: str, end: str, rows: int, batch: int, native: bool,
              publish: bool = True, table_map_cache: bool = True,
              transforms: dict | None = None) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of the reader (+ publisher, + broker acknowledgements) over the binlog;
    ``transforms``: the source's ``transforms`` config (--transforms)."""
    from cdc.config.models import KafkaConfig
    from cdc.contract import SourceContext
    from cdc.metrics import SourceMetrics
    from cdc.publish.publisher import Publisher
    from cdc.stream.events import Commit
    from readers.mysql.binlog import fastrows
    from readers.mysql.config import MySqlSourceConfig
    from readers.mysql.position import GtidSet
    from readers.mysql.reader import MySqlSource

    fastrows.install(native=native, table_map_cache=table_map_cache)
    metrics = SourceMetrics("bench")
    cfg = MySqlSourceConfig(name="bench", hosts=[db.address], user="cdc", password="cdc", tables=["bench.*"],
                            server_id=990002, snapshot="never", transforms=transforms)
    pub = None
    if publish:
        kafka = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=f"bench{time.time_ns()}")
        pub = Publisher("bench", "mysql", kafka, metrics)
        pub.recover()
    src = MySqlSource(cfg, SourceContext(metrics=metrics))
    src.start({"gtid_set": start})
    target = GtidSet.parse(end)
    label = ("pipeline" if publish else "reader") + (" native" if native else " python") + (
        "" if table_map_cache else " uncached") + (" transforms" if transforms else "")
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        with progress(rows, f"[bench mysql] {label} rows") as bar:  # a transaction is one load batch
            for ev in src.events():
                if pub is not None:
                    pub.publish(ev)
                if type(ev) is Commit:
                    bar.advance(min(batch, rows - bar.completed))
                    if src.gtid_state.issuperset(target):
                        break
            if pub is not None:
                pub.flush()
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        src.close()
        if pub is not None:
            pub.close()
        fastrows.install()
    return elapsed, cpu


def run(args: argparse.Namespace) -> dict:
    from cdc.dev.broker import Broker
    from cdc.dev.mariadb import MariaDB
    from readers.mysql.binlog.native_rows import NATIVE

    # (name, native pass, TABLE_MAP cache); "uncached": the Python path without the cache, as before both
    modes = ([("native", True, True)] if NATIVE else []) + [("python", False, True), ("uncached", False, False)]
    if NATIVE and getattr(args, "native_only", False):
        modes = modes[:1]
    runs: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="cdc-bench-mysql-") as tmp:
        db = MariaDB(Path(tmp), server_id=77, name="bench")
        broker = Broker(log_dir=Path(tmp) / "broker")
        try:
            db.start()
            broker.start()
            _say(f"loading {args.rows} rows in transactions of {args.batch}")
            start, end = (_load_mix if getattr(args, "mix", False) else _load)(db, args.rows, args.batch)
            shaped = None
            if getattr(args, "transforms", False):
                key = Path(tmp) / "hash.key"
                key.write_bytes(os.urandom(32))
                shaped = {"hash_key_file": str(key), "tables": [TRANSFORMS_RULE]}
            for i in range(max(1, args.repeat)):  # alternate, so machine noise hits every run alike
                _say(f"run {i + 1}: raw decode loop")
                runs.setdefault("raw", []).append(_raw(db, start, args.rows))
                _say(f"run {i + 1}: the reader's decode alone (its stream, {modes[0][0]} rows)")
                runs.setdefault("decode", []).append(_decode(db, start, args.rows, modes[0][1]))
                for name, native, cache in modes:
                    _say(f"run {i + 1}: pipeline, {name} rows (reader -> publisher -> broker ack)")
                    runs.setdefault(f"pipeline_{name}", []).append(
                        _pipeline(db, broker, start, end, args.rows, args.batch, native, table_map_cache=cache))
                    if shaped is not None:
                        _say(f"run {i + 1}: pipeline, {name} rows, with transforms (1 hashed, 1 excluded column)")
                        runs.setdefault(f"pipeline_{name}_transforms", []).append(_pipeline(
                            db, broker, start, end, args.rows, args.batch, native, table_map_cache=cache,
                            transforms=shaped))
                    _say(f"run {i + 1}: reader alone, {name} rows")
                    runs.setdefault(f"reader_{name}", []).append(_pipeline(
                        db, broker, start, end, args.rows, args.batch, native, publish=False, table_map_cache=cache))
            counted = None
            if getattr(args, "instructions", False):  # cdc.bench.instructions: valgrind, the native way
                from cdc.bench.instructions import per_transaction

                counted = {}
                for stage in ("reader", "pipeline"):
                    _say(f"instructions: the {stage} under valgrind, twice")
                    counted[stage] = round(per_transaction(stage, db.address, start, end,
                                                           broker.bootstrap if stage == "pipeline" else None))
        finally:
            broker.stop()
            db.stop()
    best = {k: (min(w for w, _ in v), min(c for _, c in v)) for k, v in runs.items()}
    rate = {k: args.rows / w for k, (w, _) in best.items()}
    cpu = {k: round(c / args.rows * 1e6, 2) for k, (_, c) in best.items()}
    pipe = "pipeline_native" if NATIVE else "pipeline_python"
    txns = -(-args.rows // args.batch)
    out = {"rows": args.rows, "txn_rows": args.batch, "native": NATIVE,
           "mix": f"{MIX_TABLES} tables, 20% inserts, 60% updates, 20% deletes" if getattr(args, "mix", False)
           else "inserts, 1 table",
           "raw_rows_per_s": round(rate["raw"]), "pipeline_rows_per_s": round(rate[pipe]),
           "python_pipeline_rows_per_s": round(rate["pipeline_python"]) if "pipeline_python" in rate else None,
           "ratio": round(rate[pipe] / rate["raw"], 3),
           "transactions_per_s": round(txns / best[pipe][0], 1),
           "raw_transactions_per_s": round(txns / best["raw"][0], 1),
           "cpu_us_per_row": cpu,
           "raw_seconds": round(best["raw"][0], 2), "pipeline_seconds": round(best[pipe][0], 2),
           "runs": len(runs["raw"]),
           "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
           "load_avg_1m": round(os.getloadavg()[0], 1)}  # other work on the host at the end of the runs
    if NATIVE and "pipeline_python" in cpu:
        out["native_cpu_gain"] = round(cpu["pipeline_python"] / max(cpu["pipeline_native"], 1e-9), 2)
    way = pipe.removeprefix("pipeline_")
    if f"{pipe}_transforms" in best:  # --transforms: the same runs with and without the rule
        out["transforms"] = {
            "rule": f"{TRANSFORMS_RULE['match']}: customer hashed (HMAC-SHA256), note excluded, every row",
            "rows_per_s": {"without": round(rate[pipe]), "with": round(rate[f"{pipe}_transforms"])},
            "cpu_us_per_row": {"without": cpu[pipe], "with": cpu[f"{pipe}_transforms"]}}
        out["transform_overhead"] = round(best[f"{pipe}_transforms"][1] / best[pipe][1] - 1, 3)
    # CPU per row by stage, from the same runs: the reader alone (binlog read, event parsing, row decoding, change
    # events), what publishing adds to it (records, the Kafka client, acknowledgements), and the raw library loop
    out["cpu_us_per_row_stage"] = {"reader": cpu[f"reader_{way}"],
                                   "publish": round(cpu[pipe] - cpu[f"reader_{way}"], 2),
                                   "pipeline": cpu[pipe], "raw_library_decode": cpu["raw"]}
    if args.batch < args.rows:  # several transactions: the per-transaction figures, same runs, same binlog
        out["txn_per_s"] = out["transactions_per_s"]
        out["raw_txn_per_s"] = out["raw_transactions_per_s"]
        out["txn_ratio"] = round(best["raw"][0] / best[pipe][0], 3)
        out["cpu_us_per_txn"] = {k: round(c / txns * 1e6, 1) for k, (_, c) in best.items()}
        per_txn = {k: c / txns * 1e6 for k, (_, c) in best.items()}
        # the same stages per transaction: the binlog decode (the reader's stream alone), what the reader adds
        # to it (change events, state, filters), what publishing adds (records, the Kafka client, acks)
        out["cpu_us_per_txn_stage"] = {
            "decode": round(per_txn["decode"], 1),
            "reader": round(per_txn[f"reader_{way}"] - per_txn["decode"], 1),
            "publish": round(per_txn[pipe] - per_txn[f"reader_{way}"], 1),
            "pipeline": round(per_txn[pipe], 1), "raw_library_decode": round(per_txn["raw"], 1)}
        out["cpu_txn_ratio"] = round(per_txn["raw"] / per_txn[pipe], 3)  # same-run CPU ratio, load-proof
    if counted is not None:
        out["instructions_per_txn"] = counted
    return out


def stage_main(argv: list[str]) -> int:
    """``python -m cdc.bench.mysql --stage reader|pipeline ADDRESS START END [BOOTSTRAP]``: one stage over a
    running server's binlog, untimed (what cdc.bench.instructions counts under valgrind)."""
    from types import SimpleNamespace

    stage, address, start, end = (argv + [""] * 4)[:4]
    bootstrap = argv[4] if len(argv) > 4 else None
    if stage not in ("reader", "pipeline") or (stage == "pipeline") != (bootstrap is not None) or not end:
        print("usage: python -m cdc.bench.mysql --stage reader|pipeline ADDRESS START END [BOOTSTRAP]", file=sys.stderr)
        return 2
    _pipeline(SimpleNamespace(address=address), SimpleNamespace(bootstrap=bootstrap), start, end, 1, 1, True,
              publish=stage == "pipeline")
    return 0


if __name__ == "__main__" and sys.argv[1:2] == ["--stage"]:
    sys.exit(stage_main(sys.argv[2:]))
