"""`cdc bench mysql --rows N`: binlog -> Kafka vs the raw python-mysql-replication decode loop.

Starts its own MariaDB and tansu broker (cdc.dev), writes N realistic rows
(several column types) in transactions of ``--batch`` rows with INSERT ...
SELECT from the sequence engine, then measures on that same binlog:

* raw: BinLogStreamReader from the start GTID state, iterating every
  WriteRowsEvent and touching every value of every row (the floor any
  Python reader built on the library pays);
* pipeline: MySqlSource -> Publisher -> broker, timed until the broker
  acknowledged the END of the last transaction.

Raw and pipeline runs alternate ``--repeat`` times (the shared machine's load
varies); the best run of each counts. Prints raw_rows_per_s,
pipeline_rows_per_s, ratio, rows, seconds, peak_rss_mb.

Why the pipeline can beat the raw loop: the reader decodes rows with
readers.mysql.fastrows (integers, floats and UTF-8 strings read directly,
everything else by the library's own code, identical values), while the raw
baseline is the library exactly as shipped.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

from cdc.progress_bar import progress


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--batch", type=int, default=100_000, help="rows per source transaction")
    parser.add_argument("--repeat", type=int, default=2, help="alternate raw/pipeline runs; the best of each counts")


def _say(msg: str) -> None:
    print(f"[bench mysql] {msg}", file=sys.stderr, flush=True)


def _load(db, rows: int, batch: int) -> tuple[str, str]:
    db.query("CREATE DATABASE IF NOT EXISTS bench")
    db.query("CREATE TABLE bench.orders (id BIGINT PRIMARY KEY, customer VARCHAR(64) NOT NULL, "
             "amount DECIMAL(12,2), qty INT, created DATETIME(6), status ENUM('new','paid','shipped'), "
             "note VARCHAR(255))")
    start = db.gtid_binlog_pos()
    done = 0
    with progress(rows, "[bench mysql] load rows") as bar:
        while done < rows:
            n = min(batch, rows - done)
            db.query(f"INSERT INTO bench.orders SELECT seq, CONCAT('customer-', seq % 9973), (seq % 100000) / 100, "
                     f"seq % 17, TIMESTAMP('2024-01-01') + INTERVAL seq SECOND, 1 + seq % 3, "
                     f"REPEAT('x', 20 + seq % 40) FROM bench.seq_{done + 1}_to_{done + n}")
            done += n
            bar.advance(n)
    return start, db.gtid_binlog_pos()


def _raw(db, start: str, rows: int) -> float:
    """The library as shipped: our leaner row decoder (readers.mysql.fastrows) is switched off."""
    from readers.mysql import fastrows

    fastrows.uninstall()
    try:
        return _raw_loop(db, start, rows)
    finally:
        fastrows.install()


def _raw_loop(db, start: str, rows: int) -> float:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import WriteRowsEvent

    from readers.mysql.connection import connection_settings

    stream = BinLogStreamReader(
        connection_settings=connection_settings(db.address, "cdc", "cdc", 5),
        server_id=990001, blocking=False, auto_position=start, is_mariadb=True, only_events=[WriteRowsEvent],
        only_schemas=["bench"], enable_logging=False)
    seen = 0
    t0 = time.perf_counter()
    for ev in stream:
        for r in ev.rows:
            for _v in r["values"].values():
                pass
            seen += 1
        if seen >= rows:
            break
    elapsed = time.perf_counter() - t0
    stream.close()
    if seen < rows:
        raise RuntimeError(f"raw loop saw {seen} of {rows} rows")
    return elapsed


def _pipeline(db, broker, start: str, end: str, rows: int, batch: int) -> float:
    from cdc.config import KafkaConfig
    from cdc.contract import SourceContext
    from cdc.events import Commit
    from cdc.metrics import SourceMetrics
    from cdc.publish.publisher import Publisher
    from readers.mysql.config import MySqlSourceConfig
    from readers.mysql.position import GtidSet
    from readers.mysql.reader import MySqlSource

    metrics = SourceMetrics("bench")
    cfg = MySqlSourceConfig(name="bench", hosts=[db.address], user="cdc", password="cdc", tables=["bench.*"],
                            server_id=990002, snapshot="never")
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=f"bench{time.time_ns()}")
    pub = Publisher("bench", "mysql", kafka, metrics)
    pub.recover()
    src = MySqlSource(cfg, SourceContext(metrics=metrics))
    src.start({"gtid_set": start})
    target = GtidSet.parse(end)
    t0 = time.perf_counter()
    with progress(rows, "[bench mysql] pipeline rows") as bar:  # a transaction is one load batch
        for ev in src.events():
            pub.publish(ev)
            if type(ev) is Commit:
                bar.advance(min(batch, rows - bar.completed))
                if src.state.issuperset(target):
                    break
        pub.flush()
    elapsed = time.perf_counter() - t0
    src.close()
    pub.close()
    return elapsed


def run(args: argparse.Namespace) -> dict:
    from cdc.dev.broker import Broker
    from cdc.dev.mariadb import MariaDB

    with tempfile.TemporaryDirectory(prefix="cdc-bench-mysql-") as tmp:
        db = MariaDB(Path(tmp), server_id=77, name="bench")
        broker = Broker(log_dir=Path(tmp) / "broker")
        try:
            db.start()
            broker.start()
            _say(f"loading {args.rows} rows")
            start, end = _load(db, args.rows, args.batch)
            raw_runs, pipe_runs = [], []
            for i in range(max(1, args.repeat)):  # alternate, so machine noise hits both alike
                _say(f"run {i + 1}: raw decode loop")
                raw_runs.append(_raw(db, start, args.rows))
                _say(f"run {i + 1}: pipeline (reader -> publisher -> broker ack)")
                pipe_runs.append(_pipeline(db, broker, start, end, args.rows, args.batch))
            raw_s, pipe_s = min(raw_runs), min(pipe_runs)
        finally:
            broker.stop()
            db.stop()
    raw_rate, pipe_rate = args.rows / raw_s, args.rows / pipe_s
    return {"rows": args.rows, "raw_rows_per_s": round(raw_rate), "pipeline_rows_per_s": round(pipe_rate),
            "ratio": round(pipe_rate / raw_rate, 3), "raw_seconds": round(raw_s, 2),
            "pipeline_seconds": round(pipe_s, 2), "runs": len(raw_runs),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
