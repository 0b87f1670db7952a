"""`cdc bench apply --rows N`: the Spark apply into PostgreSQL vs a naive upsert and raw COPY.

(``--target delta|iceberg``: the lake targets against their library's bulk append, cdc.bench.apply_lake.)

Same run, same rows, same PostgreSQL (started here unless ``--postgres DSN``):

- apply:  the change stream of N row changes (transactions of ``--tx-rows``
          rows: inserts, and every tenth row updated again later) is written
          to the broker first; then the apply job (Spark local[2], the real
          `cdc-stream` source and engine) runs until the progress row holds
          the last sequence. ``apply_rows_per_s`` is the steady state:
          N / (first micro-batch start .. last batch commit), which includes
          reading, planning between batches and the target transactions
          (``read_s``/``engine_s``/``plan_s`` split it);
          query start-up (first plan, the first boundary scan) is reported
          on its own as ``startup_s``, and
          ``apply_total_rows_per_s`` is N / (query start .. last commit).
          Spark session creation and the start of its Python workers (the job's
          warm-up) are excluded from both; `cdc bench oltp` counts every start.
- naive:  what a hand-written consumer does: one ``INSERT ... ON CONFLICT DO
          UPDATE`` statement per row change, one commit per source
          transaction (END record), over the first ``--naive-rows`` rows. It
          is handed already-decoded rows (no broker read, no JSON decode),
          so it is, if anything, flattered.
- copy:   ``COPY ... FROM STDIN`` of the same N rows into an unindexed table
          (the target's bulk-load limit).
- spark read: the Spark read path alone (streaming.stream.datasource.warm_up): 200,000
          decoded rows already in Arrow in the Python workers, through a Python
          data source to ``toArrow()`` on the driver, packed and unpacked as the
          job moves them (streaming.stream.records.pack; best of 3), as
          ``spark_read_rows_per_s``: no apply that reads through Spark is faster.
- broker read: the same topic read from the broker with nothing done to the records (two consumers in two
          processes at once, each half of it, the executors' fetch settings; best of 2), as
          ``broker_read_rows_per_s`` and ``broker_read_ratio_to_copy``: no apply that reads through the broker
          is faster.
- keyed copy: ``COPY`` of the same N rows into a logged table with the
          primary key, like the real target table (what the table itself can
          take: index and WAL, no broker, decoding or Spark), as
          ``keyed_copy_rows_per_s`` and ``keyed_copy_ratio_to_copy``.
- batched: a Kafka-Connect-JDBC-style sink, the usual production consumer (a per-row consumer is a
          weak baseline): it reads the SAME records of the changes topic from the broker
          (confluent-kafka, ``consume`` of up to 5,000 at a time, the same large fetch settings as the
          job's executors), decodes each value with ``orjson.loads``, and writes the row changes by
          ``executemany`` in batches of 500 (upserts as ``INSERT ... ON CONFLICT DO UPDATE``, deletes as
          ``DELETE``; a batch is flushed early where the kind changes, so order holds), one commit per
          batch: ``batched_rows_per_s``, ``speedup_vs_batched`` (timed from creating the consumer to the
          last commit; no Kafka offset commits, no dedup by sequence: an at-least-once sink, as Connect's).
          ``batched_predecoded_rows_per_s`` / ``speedup_vs_batched_predecoded``: the same write loop handed
          the row changes already decoded in memory (no broker read, no JSON decode), i.e. only the
          PostgreSQL side of such a sink (an upper bound no real consumer reaches).
- mixed:  a realistic workload: ``--mixed-keys`` rows loaded first, then N
          changes to EXISTING keys (60% updates, 20% deletes, 20% inserts of
          deleted or new keys, seeded), applied by the job while they are
          produced: ``mixed_apply_rows_per_s`` (first produce of the mixed
          part .. its last commit; the load is not counted) and, for the same
          changes, the batched consumer from the broker (``batched_mixed_rows_per_s`` /
          ``mixed_speedup_vs_batched``; the loaded keys are written first, untimed) and the pre-decoded
          write loop (``batched_mixed_predecoded_rows_per_s`` / ``mixed_speedup_vs_batched_predecoded``).
- transforms (``--transforms``, instead of all the above): the same apply twice on the same rows, alternated
          ``--repeat`` times, into fresh schemas: the stream as above (upsert target), and the stream a daemon
          with two computed columns (TRANSFORMS_COMPUTED, computed by cdc.transforms' mapper over every row
          image) writes, applied to a ``soft_delete`` target (streaming/apply/target_modes.py rewrites every
          record). Prints ``transforms`` (steady rows/s and the driver's CPU per row, best run of each way)
          and ``transform_overhead`` (steady time per row with / without - 1).
- latency: a steady ``--tps`` single-row transactions per second for
          ``--latency-s`` seconds, produced with their commit time; a poller
          reads ``cdc_progress`` every 20 ms; latency = visible - commit.
          (This measures broker -> Spark -> target; the capture side has
          its own bench, `cdc bench mysql`.)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from cdc.bench.apply_stream import COLS, External, bench_row, bench_stream
from cdc.progress_bar import progress


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--tx-rows", type=int, default=100, help="rows per source transaction")
    parser.add_argument("--naive-rows", type=int, default=20_000, help="rows for the naive baseline")
    parser.add_argument("--mixed-keys", type=int, default=100_000,
                        help="rows loaded before the mixed workload (whose changes touch these keys)")
    parser.add_argument("--tps", type=int, default=1000, help="transactions/s for the latency run")
    parser.add_argument("--latency-s", type=float, default=20.0)
    parser.add_argument("--postgres", help="DSN of a PostgreSQL to use; default: start one")
    parser.add_argument("--kafka", help="bootstrap of a broker to use; default: start tansu")
    parser.add_argument("--target", choices=["postgres", "delta", "iceberg"], default="postgres",
                        help="delta/iceberg: the lake target vs its library's bulk append (cdc.bench.apply_lake)")
    parser.add_argument("--batch-records", type=int, default=200_000, help="lake: records per micro-batch")
    parser.add_argument("--update-rows", type=int, default=100_000, help="lake: updates of the update-heavy run")
    parser.add_argument("--no-spark", action="store_true", help="lake: skip the Spark run (engine and append only)")
    parser.add_argument("--transforms", action="store_true",
                        help="only the apply, with and without two computed columns and a soft-delete target, "
                             "and the transforms' overhead (same run)")
    parser.add_argument("--repeat", type=int, default=2, help="--transforms: alternated runs of each way; the best "
                        "of each counts")


# the two computed columns of the --transforms stream, as a source's sources[].transforms computed: would add them
TRANSFORMS_COMPUTED = {"amount_x2": {"expr": "amount * 2", "type": "decimal(14,2)"},
                       "label": {"expr": "CONCAT(UPPER(name), '-', id)", "type": "varchar(64)"}}


def _say(msg: str) -> None:
    print(f"[bench apply] {msg}", file=sys.stderr, flush=True)


def _mixed_stream(keys: int, n: int, tx_rows: int, seed: int = 7):
    """``keys`` inserts, then ``n`` changes to existing keys: 60% updates, 20% deletes, 20% inserts (a
    deleted key again, or a new one). Returns the builder and the index of the first mixed item."""
    import random

    from streaming.testing import StreamBuilder

    rnd = random.Random(seed)
    b = StreamBuilder(source="bench")
    b.schema("bench.t", COLS, ["id"])
    for i in range(0, keys, tx_rows):
        b.tx(*[("c", "bench.t", None, bench_row(j)) for j in range(i, min(keys, i + tx_rows))])
    split = len(b.items)
    live, dead, version = list(range(keys)), [], {}
    pos = {k: k for k in live}  # key -> index in live (O(1) delete by swap)
    next_key = keys
    for i in range(0, n, tx_rows):
        ops, touched = [], set()
        for _ in range(min(tx_rows, n - i)):
            roll = rnd.random()
            if roll < 0.8 and live:
                k = live[rnd.randrange(len(live))]
                if k in touched:  # one change per key per transaction keeps the images simple
                    continue
                touched.add(k)
                v = version.get(k, 0)
                if roll < 0.6:
                    version[k] = v + 1
                    ops.append(("u", "bench.t", bench_row(k, v), bench_row(k, v + 1)))
                else:
                    ops.append(("d", "bench.t", bench_row(k, v), None))
                    last = live.pop()
                    if last != k:
                        live[pos[k]] = last
                        pos[last] = pos[k]
                    del pos[k]
                    dead.append(k)
            else:
                if dead and rnd.random() < 0.5:
                    k = dead.pop(rnd.randrange(len(dead)))
                else:
                    k, next_key = next_key, next_key + 1
                if k in touched:
                    continue
                touched.add(k)
                version[k] = version.get(k, 0) + 1
                ops.append(("c", "bench.t", None, bench_row(k, version[k])))
                pos[k] = len(live)
                live.append(k)
        if ops:
            b.tx(*ops)
    return b, split


def transformed_stream(n: int, tx_rows: int):
    """bench_stream's changes as a daemon with TRANSFORMS_COMPUTED publishes them: the shaped schema, and every
    image through the table's column mapper (cdc/transforms/mapper.py), computed columns added."""
    from cdc.registry import type_parser
    from cdc.stream.events import Column, TableId, TableSchema
    from cdc.transforms.config import TransformsConfig
    from cdc.transforms.mapper import SourceTransforms
    from streaming.testing import StreamBuilder

    parse = type_parser("mysql")
    schema = TableSchema(TableId("bench", "t"), tuple(Column(c, t, c != "id", None, parse(t)) for c, t in COLS),
                         ("id",))
    cfg = TransformsConfig.model_validate({"tables": [{"match": "bench.t", "computed": TRANSFORMS_COMPUTED}]})
    mapper = SourceTransforms("bench", cfg).mapper(schema)
    b = StreamBuilder(source="bench")
    b.schema("bench.t", [(c.name, c.type) for c in mapper.schema.columns], ["id"])
    row = mapper.row
    for i in range(0, n, tx_rows):  # bench_stream's changes, each image shaped
        b.tx(*[("u", "bench.t", row(bench_row(j - 50)), row(bench_row(j - 50, 1))) if j % 10 == 9 and j >= 50
               else ("c", "bench.t", None, row(bench_row(j))) for j in range(i, min(n, i + tx_rows))])
    return b


def _transforms(args, bootstrap: str, admin, dsn: str, work: Path) -> dict[str, Any]:
    """--transforms: the apply of bench_stream into an upsert table vs the transformed stream into a soft-delete
    table, alternated; the best steady run of each."""
    import psycopg

    from streaming.apply import job
    from streaming.testing import produce

    ways = {"without": (bench_stream(args.rows, args.tx_rows), {}),
            "with": (transformed_stream(args.rows, args.tx_rows),
                     {"tables": [{"source": "bench.t", "mode": "soft_delete"}]})}
    for name, (b, _) in ways.items():
        admin.create_topic(f"b{name}.bench.changes")
        produce(bootstrap, f"b{name}.bench.changes", b.encoded(), timeout=300)
    spark = job.build_session("local[2]", "cdc-bench-apply")
    runs: dict[str, list[tuple[float, float]]] = {"without": [], "with": []}
    try:
        for i in range(max(1, args.repeat)):
            for name, (b, extra) in ways.items():
                schema = f"bench_{name}_{i}"
                with psycopg.connect(dsn, autocommit=True) as c:
                    c.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
                    c.execute(f"CREATE SCHEMA {schema}")
                cfg = _config(bootstrap, f"b{name}", dsn, schema, work / f"ck-{schema}", max_records_per_batch=200_000,
                              **extra)
                _say(f"run {i + 1}: apply {name} transforms")
                steady_s, cpu_s = _apply_once(cfg, spark, dsn, schema, b)
                runs[name].append((steady_s, cpu_s))
                _say(f"run {i + 1}: {name} transforms: {args.rows / steady_s:,.0f} rows/s steady")
    finally:
        spark.stop()
    best = {k: (min(s for s, _ in v), min(c for _, c in v)) for k, v in runs.items()}
    return {"rows": args.rows, "transforms": {
        "rule": "2 computed columns (" + ", ".join(f"{k} = {v['expr']}" for k, v in TRANSFORMS_COMPUTED.items())
                + "), soft_delete target; without: the plain stream, upsert target",
        "apply_rows_per_s": {k: round(args.rows / s) for k, (s, _) in best.items()},
        "driver_cpu_us_per_row": {k: round(c / args.rows * 1e6, 2) for k, (_, c) in best.items()}},
        "transform_overhead": round(best["with"][0] / best["without"][0] - 1, 3),
        "runs": len(runs["with"]), "load_avg_1m": round(__import__("os").getloadavg()[0], 1)}


def _apply_once(cfg, spark, dsn: str, schema: str, b) -> tuple[float, float]:
    """(steady seconds: first batch start .. last batch commit, the driver process's CPU seconds meanwhile) of one
    apply job over the whole stream of ``b``."""
    import psycopg

    from streaming.apply import job

    stop = threading.Event()
    streams: list = []
    c0 = time.process_time()
    th = threading.Thread(target=job.run, args=(cfg,), kwargs={"spark": spark, "stop_event": stop,
                                                               "streams_out": streams}, daemon=True)
    th.start()
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            _wait_applied(c, schema, b.seq - 1, th)
        wait_until = time.monotonic() + 30  # the last batch's timing is noted just after its commit
        while streams and sum(t[3] for t in streams[0].timings) < len(b.items) and time.monotonic() < wait_until:
            time.sleep(0.05)
        cpu = time.process_time() - c0
    finally:
        stop.set()
        th.join(60)
    timings = list(streams[0].timings) if streams else []
    if not timings:
        raise RuntimeError(f"the apply job into {schema} noted no batch timings")
    return max(1e-9, timings[-1][2] - timings[0][0]), cpu


def run(args: argparse.Namespace) -> dict[str, Any]:
    if getattr(args, "target", "postgres") != "postgres":
        from cdc.bench import apply_lake
        return apply_lake.run(args)
    import psycopg

    from cdc.dev.broker import Broker
    from cdc.dev.postgres import Postgres
    from streaming.apply import job
    from streaming.testing import produce

    work = Path(tempfile.mkdtemp(prefix="cdc-bench-apply-"))
    pg = broker = None
    try:
        if args.postgres:
            dsn = args.postgres
        else:
            pg = Postgres(work / "pg").start()
            dsn = pg.dsn
        if args.kafka:
            bootstrap = args.kafka
        else:
            broker = Broker(log_dir=work).start()
            bootstrap = broker.bootstrap
        admin = broker or External(bootstrap)
        if getattr(args, "transforms", False):
            return _transforms(args, bootstrap, admin, dsn, work)
        _say(f"building a stream of {args.rows} row changes")
        b = bench_stream(args.rows, args.tx_rows)
        topic = "bench.bench.changes"
        admin.create_topic(topic)
        produce(bootstrap, topic, b.encoded(), timeout=300)
        last_seq = b.seq - 1
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("DROP SCHEMA IF EXISTS bench_apply CASCADE")
            c.execute("CREATE SCHEMA bench_apply")
        cfg = _config(bootstrap, "bench", dsn, "bench_apply", work / "ck", max_records_per_batch=200_000)
        spark = job.build_session("local[2]", "cdc-bench-apply")
        from streaming.stream.datasource import warm_up

        warm_up(spark, 2, packed=True)  # the Python workers start before the clock, as the session does
        _say("apply: running the Spark job")
        t0 = time.monotonic()
        stop = threading.Event()
        streams: list = []
        th = threading.Thread(target=job.run, args=(cfg,), kwargs={"spark": spark, "stop_event": stop,
                                                                   "streams_out": streams}, daemon=True)
        th.start()
        with psycopg.connect(dsn, autocommit=True) as c, \
                progress(last_seq, "[bench apply] stream sequence applied") as bar:
            _wait_applied(c, "bench_apply", last_seq, th, on_progress=bar.update)
        t_end = time.monotonic()
        applied_s = t_end - t0
        wait_until = time.monotonic() + 30  # the last batch's timing is noted just after its commit
        while streams and sum(t[3] for t in streams[0].timings) < len(b.items) and time.monotonic() < wait_until:
            time.sleep(0.05)
        total_rate = args.rows / applied_s
        timings = list(streams[0].timings) if streams else []
        steady_from = timings[0][0] if timings else t0
        steady_s = max(1e-9, (timings[-1][2] if timings else t_end) - steady_from)
        apply_rate = args.rows / steady_s
        for a, r, e, n in timings:
            _say(f"apply: batch of {n} records at +{a - t0:.1f}s: read {r - a:.1f}s, apply {e - r:.1f}s")
        _say(f"apply: {args.rows} rows; start-up {steady_from - t0:.1f}s, then {steady_s:.1f}s in {len(timings)} "
             f"batches -> {apply_rate:,.0f} rows/s steady ({total_rate:,.0f} rows/s including start-up)")

        stop.set()
        th.join(60)
        mixed = _mixed(args, bootstrap, admin, dsn, spark, work)
        latency = _latency(args, bootstrap, admin, dsn, spark, work, b.schemas)

        naive_rate = _naive(dsn, b, args.naive_rows)
        batched_rate = _batched_consumer(dsn, bootstrap, topic, b.items)
        predecoded_rate = _batched(dsn, b.items)
        copy_rate = _copy(dsn, args.rows)
        keyed_rate = _copy(dsn, args.rows, keyed=True)
        read_limit = _spark_read(spark, 200_000)
        broker_rate = _broker_read(bootstrap, topic, len(b.items))
        _say(f"broker read: {len(b.items)} records, two consumers at once, no decoding -> {broker_rate:,.0f} records/s")
        _say(f"spark read path: 200000 prepared rows -> {read_limit:,.0f} rows/s")
        spark.stop()
        read_s = sum(r - a for a, r, _e, _n in timings)
        engine_s = sum(e - r for _a, r, e, _n in timings)
        return {"rows": args.rows, "apply_rows_per_s": round(apply_rate), "startup_s": round(steady_from - t0, 1),
                "apply_total_rows_per_s": round(total_rate), "batches": len(timings),
                # where the steady-state time went: Spark reading the batches (executors + transfer to the
                # driver), the engine (net effect + target transaction), planning between batches
                "read_s": round(read_s, 1), "engine_s": round(engine_s, 1),
                "plan_s": round(max(0.0, steady_s - read_s - engine_s), 1),
                "naive_rows_per_s": round(naive_rate),
                "copy_rows_per_s": round(copy_rate), "ratio_to_copy": round(apply_rate / copy_rate, 3),
                "speedup_vs_naive": round(apply_rate / naive_rate, 1),
                "batched_rows_per_s": round(batched_rate), "speedup_vs_batched": round(apply_rate / batched_rate, 2),
                "batched_predecoded_rows_per_s": round(predecoded_rate),
                "speedup_vs_batched_predecoded": round(apply_rate / predecoded_rate, 2),
                **mixed,
                "keyed_copy_rows_per_s": round(keyed_rate), "keyed_copy_ratio_to_copy": round(keyed_rate / copy_rate, 3),
                "spark_read_rows_per_s": round(read_limit), "spark_read_ratio_to_copy": round(read_limit / copy_rate, 3),
                "broker_read_rows_per_s": round(broker_rate),
                "broker_read_ratio_to_copy": round(broker_rate / copy_rate, 3),
                **latency}
    finally:
        if broker is not None:
            broker.stop()
        if pg is not None:
            pg.destroy()


def _naive(dsn: str, b, n: int) -> float:
    import psycopg

    with psycopg.connect(dsn) as c:
        c.execute("DROP TABLE IF EXISTS bench_apply.naive")
        c.execute("CREATE TABLE bench_apply.naive (id bigint PRIMARY KEY, name varchar(40), amount numeric(12,2), "
                  "at timestamp(6))")
        c.commit()
        done, t0 = 0, time.monotonic()
        for k, v in b.items:
            if done >= n:
                break
            if v.get("status") == "END":
                c.commit()
            if "op" not in v:
                continue
            r = v["after"]
            c.execute("INSERT INTO bench_apply.naive VALUES (%s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
                      "name = EXCLUDED.name, amount = EXCLUDED.amount, at = EXCLUDED.at",
                      (r["id"], r["name"], r["amount"], r["at"]))
            done += 1
        c.commit()
        rate = done / (time.monotonic() - t0)
    _say(f"naive: {done} rows -> {rate:,.0f} rows/s")
    return rate


_UPSERT = ("INSERT INTO {} VALUES (%s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
           "name = EXCLUDED.name, amount = EXCLUDED.amount, at = EXCLUDED.at")


def _sink_changes(values) -> Any:
    """(is_delete, parameters) of each data record among the decoded record ``values`` (markers skipped)."""
    for v in values:
        op = v.get("op")
        if op is None:
            continue
        if op == "d":
            yield True, (v["before"]["id"],)
        else:
            r = v["after"]
            yield False, (r["id"], r["name"], r["amount"], r["at"])


def _sink_write(c, changes, table: str, size: int) -> int:
    """The JDBC-sink write loop: ``executemany`` batches of ``size`` row changes (upserts as
    ``INSERT ... ON CONFLICT DO UPDATE``, deletes as ``DELETE``; a batch flushes early where the kind
    changes, so per-key order holds), one commit per full batch and at the end. Returns the rows written."""
    upsert, delete = _UPSERT.format(table), f"DELETE FROM {table} WHERE id = %s"
    done, kind, batch = 0, None, []
    with c.cursor() as cur:
        for is_delete, params in changes:
            if batch and (is_delete != kind or len(batch) >= size):
                cur.executemany(delete if kind else upsert, batch)
                if len(batch) >= size:
                    c.commit()
                done += len(batch)
                batch = []
            kind = is_delete
            batch.append(params)
        if batch:
            cur.executemany(delete if kind else upsert, batch)
            done += len(batch)
    c.commit()
    return done


def _sink_table(c, table: str) -> None:
    c.execute(f"DROP TABLE IF EXISTS {table}")
    c.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, name varchar(40), amount numeric(12,2), "
              "at timestamp(6))")
    c.commit()


def _batched(dsn: str, items: list, start: int = 0, table: str = "bench_apply.batched_predecoded",
             size: int = 500) -> float:
    """The JDBC-sink write loop (:func:`_sink_write`) over ``items[start:]``, handed the row changes already
    decoded (no broker read, no JSON decode: only the PostgreSQL side of a sink); the rows before ``start``
    are loaded first, untimed. Rows/s of the timed part."""
    import psycopg

    with psycopg.connect(dsn) as c:
        _sink_table(c, table)
        _sink_write(c, _sink_changes(v for _k, v in items[:start]), table, size)
        t0 = time.monotonic()
        done = _sink_write(c, _sink_changes(v for _k, v in items[start:]), table, size)
        rate = done / (time.monotonic() - t0)
    _say(f"batched, pre-decoded ({table}): {done} rows -> {rate:,.0f} rows/s")
    return rate


def _batched_consumer(dsn: str, bootstrap: str, topic: str, items: list, start: int = 0,
                      table: str = "bench_apply.batched", size: int = 500) -> float:
    """A Kafka-Connect-JDBC-style consumer: reads records ``start ..`` of ``topic`` (partition 0, the same
    records the apply job read) from the broker with confluent-kafka (``consume`` of up to 5,000 records at
    a time, librdkafka fetching ahead in its own thread), decodes each value with ``orjson.loads`` and
    writes through :func:`_sink_write` (500-row ``executemany``, one commit per batch). No Kafka offset
    commits (a Connect worker commits them every ``offset.flush.interval.ms``, 60 s by default) and no
    dedup by ``sequence`` (an at-least-once sink). The rows before ``start`` (``items[:start]``) are
    loaded first, untimed. Rows/s of the timed part: from creating the consumer to the last commit."""
    import orjson
    import psycopg
    from confluent_kafka import TopicPartition

    from cdc.config.kafka_settings import KafkaConnection, create_client

    end = len(items)  # the topic holds exactly these records, at offsets 0..len-1

    def records(consumer):
        at = start
        while at < end:
            # consume() waits for num_messages or the timeout: never ask for more than are left
            msgs = consumer.consume(num_messages=min(5000, end - at), timeout=1.0)
            for m in msgs:
                if m.error() is not None:
                    raise RuntimeError(f"batched consumer: {m.error()}")
                if m.offset() >= at:
                    at = m.offset() + 1
                    yield orjson.loads(m.value())
                    if at >= end:
                        return

    with psycopg.connect(dsn) as c:
        _sink_table(c, table)
        _sink_write(c, _sink_changes(v for _k, v in items[:start]), table, size)
        t0 = time.monotonic()
        consumer = create_client("consumer", KafkaConnection.of(bootstrap).settings("consumer", {
            "group.id": f"bench-jdbc-sink-{time.time_ns()}", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 10_485_760}))
        try:
            consumer.assign([TopicPartition(topic, 0, start)])
            done = _sink_write(c, _sink_changes(records(consumer)), table, size)
        finally:
            consumer.close()
        rate = done / (time.monotonic() - t0)
    _say(f"batched consumer ({table}, from {topic}): {done} rows -> {rate:,.0f} rows/s")
    return rate


def _config(bootstrap: str, prefix: str, dsn: str, schema: str, checkpoint: Path, **apply: Any):
    """The config of one bench apply run: stream ``<prefix>.bench.changes`` into ``schema`` of the PostgreSQL."""
    from cdc.config.loader import parse_config

    return parse_config({
        "kafka": {"bootstrap_servers": bootstrap, "topic_prefix": prefix},
        "targets": [{"name": "pg", "kind": "postgres", "dsn": dsn, "schema": schema}],
        "apply": [{"source": "bench", "target": "pg", "checkpoint_dir": str(checkpoint), "trigger_interval_s": 0.1,
                   **apply}]})


def _wait_applied(c, schema: str, sequence: int, job_thread: threading.Thread, on_progress=None) -> None:
    """Until the progress row in ``schema`` reaches ``sequence`` (30 minutes at most; the job must live)."""
    import psycopg

    t0 = time.monotonic()
    while True:
        try:
            row = c.execute(f"SELECT last_sequence FROM {schema}.cdc_progress").fetchone()
        except psycopg.errors.UndefinedTable:
            row = None
        if row and on_progress:
            on_progress(row[0])
        if row and row[0] >= sequence:
            return
        if not job_thread.is_alive() or time.monotonic() - t0 > 1800:
            raise RuntimeError(f"the apply job into {schema} stopped or took over 30 minutes")
        time.sleep(0.05)


def _mixed(args, bootstrap: str, admin, dsn: str, spark, work: Path) -> dict[str, Any]:
    """The apply job on the mixed workload (see the module docstring), and the batched sink on the same
    changes; the loaded keys are applied first and not timed."""
    import psycopg
    from confluent_kafka import Producer

    from cdc.publish.producer import producer_config
    from streaming.apply import job
    from streaming.testing import produce

    b, split = _mixed_stream(args.mixed_keys, args.rows, args.tx_rows)
    encoded = b.encoded()
    load_last = b.items[split - 1][1]["sequence"]
    last = b.seq - 1
    rows = sum(1 for _k, v in b.items[split:] if "op" in v)
    topic = "mixed.bench.changes"
    admin.create_topic(topic)
    produce(bootstrap, topic, encoded[:split], timeout=300)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("DROP SCHEMA IF EXISTS bench_mixed CASCADE")
        c.execute("CREATE SCHEMA bench_mixed")
    cfg = _config(bootstrap, "mixed", dsn, "bench_mixed", work / "ck-mixed", max_records_per_batch=200_000)
    stop = threading.Event()
    th = threading.Thread(target=job.run, args=(cfg,), kwargs={"spark": spark, "stop_event": stop}, daemon=True)
    th.start()
    with psycopg.connect(dsn, autocommit=True) as c:
        _say(f"mixed: loading {args.mixed_keys} keys")
        _wait_applied(c, "bench_mixed", load_last, th)
        _say(f"mixed: {rows} changes to existing keys, applied while produced")
        p = Producer(producer_config(bootstrap))
        t0 = time.monotonic()
        for k, v in encoded[split:]:
            while True:
                try:
                    p.produce(topic, value=v, key=k, partition=0)
                    break
                except BufferError:
                    p.poll(0.01)
        p.flush(300)
        _wait_applied(c, "bench_mixed", last, th)
        apply_rate = rows / (time.monotonic() - t0)
        held = dict(c.execute("SELECT id, name FROM bench_mixed.t").fetchall())
    stop.set()
    th.join(60)
    want: dict[int, str] = {}
    for _k, v in b.items:
        if "op" in v:
            if v["op"] == "d":
                del want[v["before"]["id"]]
            else:
                want[v["after"]["id"]] = v["after"]["name"]
    if held != want:
        raise RuntimeError(f"mixed: the target holds {len(held)} rows, the source fold {len(want)}; "
                           f"{sum(1 for k in want if held.get(k) != want[k])} differ")
    _say(f"mixed: apply {apply_rate:,.0f} rows/s; the target equals the source ({len(held)} rows)")
    batched_rate = _batched_consumer(dsn, bootstrap, topic, b.items, start=split, table="bench_apply.batched_mixed")
    predecoded_rate = _batched(dsn, b.items, start=split, table="bench_apply.batched_mixed_predecoded")
    return {"mixed_rows": rows, "mixed_apply_rows_per_s": round(apply_rate),
            "batched_mixed_rows_per_s": round(batched_rate),
            "mixed_speedup_vs_batched": round(apply_rate / batched_rate, 2),
            "batched_mixed_predecoded_rows_per_s": round(predecoded_rate),
            "mixed_speedup_vs_batched_predecoded": round(apply_rate / predecoded_rate, 2)}


def _copy(dsn: str, n: int, keyed: bool = False) -> float:
    """COPY of the N rows into an unindexed UNLOGGED table (the bulk-load limit) or, ``keyed``, into a logged
    table with the primary key like the real target table (what that table itself can take: the index and
    the WAL any apply into it pays; no broker, decoding or Spark)."""
    import psycopg

    table, label = ("bench_apply.keyed_limit", "keyed copy") if keyed else ("bench_apply.copy_limit", "copy")
    ddl = ("CREATE TABLE {} (id bigint PRIMARY KEY, " if keyed else "CREATE UNLOGGED TABLE {} (id bigint, ").format(table)
    with psycopg.connect(dsn) as c:
        c.execute(f"DROP TABLE IF EXISTS {table}")
        c.execute(ddl + "name varchar(40), amount numeric(12,2), at timestamp(6))")
        c.commit()
        t0 = time.monotonic()
        with c.cursor().copy(f"COPY {table} FROM STDIN") as cp:
            for i in range(n):
                r = bench_row(i)
                cp.write_row((r["id"], r["name"], r["amount"], r["at"]))
        c.commit()
        rate = n / (time.monotonic() - t0)
    _say(f"{label}: {n} rows -> {rate:,.0f} rows/s")
    return rate


BROKER_READ_STALL_S = 60.0


def _read_half(bootstrap: str, topic: str, start: int, end: int) -> tuple[float, float]:
    """Consume records [start, end) of ``topic`` partition 0 with the job's executor fetch settings, touching
    each value and nothing else; (wall-clock start, end) of the read."""
    from confluent_kafka import TopicPartition

    from cdc.config.kafka_settings import create_client
    from streaming.stream.batches import consumer_config

    t0 = time.time()
    c = create_client("consumer", consumer_config(bootstrap, {"fetch.max.bytes": 52_428_800,
                                                              "max.partition.fetch.bytes": 10_485_760}))
    try:
        c.assign([TopicPartition(topic, 0, start)])
        at, moved = start, time.monotonic()
        while at < end:
            for m in c.consume(num_messages=min(5000, end - at), timeout=1.0):
                if m.error() is None and m.value() is not None and m.offset() >= at:
                    at, moved = m.offset() + 1, time.monotonic()
            if time.monotonic() - moved > BROKER_READ_STALL_S:
                raise RuntimeError(f"broker read: no record of {topic}[0] at offset {at} for {BROKER_READ_STALL_S:.0f} s "
                                   f"(range {start}..{end})")
    finally:
        c.close()
    return t0, time.time()


def _broker_read(bootstrap: str, topic: str, n: int) -> float:
    """What reading the stream from the broker costs alone: records/s of two consumers in two processes at
    once (as the job's two executors read a batch), each half of the ``n`` records, no decoding; the best of
    2. No apply that reads through the broker is faster than this."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    best = float("inf")
    # spawned, not forked: this process runs Spark's gateway and the broker's threads
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        for _ in range(2):
            spans = list(pool.map(_read_half, [bootstrap] * 2, [topic] * 2, [0, n // 2], [n // 2, n]))
            best = min(best, max(e for _s, e in spans) - min(s for s, _e in spans))
    return n / best


def _spark_read(spark: Any, rows: int, repeat: int = 3) -> float:
    """The Spark read path's own rate: ``rows`` decoded rows, prepared as Arrow in the Python workers (no
    broker, no decoding, no target), through a Python data source to ``toArrow()`` on the driver, the way
    the apply job gets each micro-batch; best of ``repeat`` after one read to warm the path."""
    from streaming.stream.datasource import warm_up

    warm_up(spark, 2, rows, packed=True)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.monotonic()
        n = warm_up(spark, 2, rows, packed=True).num_rows
        best = min(best, time.monotonic() - t0)
    return n / best


def _latency(args, bootstrap: str, admin, dsn: str, spark, work: Path, schemas) -> dict[str, Any]:
    import psycopg
    from confluent_kafka import Producer

    from cdc.config.kafka_settings import KafkaConnection
    from streaming.apply import job
    from streaming.testing import StreamBuilder

    topic = "lat.bench.changes"
    admin.create_topic(topic)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("DROP SCHEMA IF EXISTS bench_lat CASCADE")
        c.execute("CREATE SCHEMA bench_lat")
    cfg = _config(bootstrap, "lat", dsn, "bench_lat", work / "ck-lat")
    stop = threading.Event()
    streams: list = []
    th = threading.Thread(target=job.run, args=(cfg,), kwargs={"spark": spark, "stop_event": stop,
                                                               "streams_out": streams}, daemon=True)
    th.start()
    p = Producer(KafkaConnection.of(bootstrap).settings("producer", {"linger.ms": 2}))
    b = StreamBuilder(source="bench")
    b.schemas = dict(schemas)
    b.schema("bench.t", COLS, ["id"])
    commits: list[tuple[int, float]] = []  # (END sequence, commit wall time)
    polls: list[tuple[float, int]] = []
    done = threading.Event()

    def poller():
        with psycopg.connect(dsn, autocommit=True) as c:
            while not done.is_set():
                try:
                    row = c.execute("SELECT last_sequence FROM bench_lat.cdc_progress").fetchone()
                except psycopg.errors.UndefinedTable:
                    row = None
                if row:
                    polls.append((time.time(), row[0]))
                time.sleep(0.02)

    pt = threading.Thread(target=poller, daemon=True)
    pt.start()
    for k, v in b.encoded():
        p.produce(topic, key=k, value=v, partition=0)
    b.items.clear()
    _say(f"latency: {args.tps} tx/s for {args.latency_s:.0f}s (after a 10 s warm-up)")
    start = time.time()
    n = 0
    warm = 10.0
    while time.time() - start < warm + args.latency_s:
        due = start + n / args.tps
        now = time.time()
        if due > now:
            time.sleep(due - now)
        b.ts = int(time.time() * 1000) - 10
        b.tx(("c", "bench.t", None, bench_row(10_000_000 + n)))
        for k, v in b.encoded():
            p.produce(topic, key=k, value=v, partition=0)
        if time.time() - start >= warm:
            commits.append((b.seq - 1, time.time()))
        b.items.clear()
        p.poll(0)
        n += 1
    p.flush(60)
    deadline = time.time() + 120
    while time.time() < deadline and (not polls or polls[-1][1] < commits[-1][0]):
        time.sleep(0.1)
    done.set()
    pt.join(5)
    stop.set()
    th.join(60)
    lat = []
    j = 0
    for seq, t in commits:
        while j < len(polls) and polls[j][1] < seq:
            j += 1
        if j < len(polls):
            lat.append(polls[j][0] - t)
    lat.sort()
    timings = [t for t in (streams[0].timings if streams else []) if t[3]]
    if len(timings) > 1:  # the micro-batch cycle is what latency is made of: say where it goes
        cycle = (timings[-1][2] - timings[0][0]) / len(timings)
        read = sum(r - a for a, r, _e, _n in timings) / len(timings)
        apply = sum(e - r for _a, r, e, _n in timings) / len(timings)
        _say(f"latency: {len(timings)} batches, one every {cycle:.2f}s (read {read:.2f}s, apply {apply:.2f}s, "
             f"the rest is Spark planning and the boundary scan)")
    if not lat:
        return {"latency_p50_s": None, "latency_p99_s": None}
    return {"latency_p50_s": round(lat[len(lat) // 2], 3), "latency_p99_s": round(lat[int(len(lat) * 0.99) - 1], 3),
            "latency_tx": len(lat)}
