"""`cdc bench oracle`: LogMiner simulator -> reader -> publisher -> broker ack, vs raw confluent-kafka produce.

``--rows N``: a mixed workload of about N rows (interleaved transactions, a few
rollbacks, partial rollbacks and CSF rows); reports ``reader_rows_per_s``
(first row read to the last record acknowledged) and ``peak_rss_mb``, and two
baselines produced with confluent-kafka and flushed in the same run:

- ``same_records_rows_per_s`` / ``ratio_to_same_records``: the very records
  the pipeline wrote (read back from its topic: markers included, same keys
  and values, the publisher's producer settings and lz4 compression),
  produced again to another topic; in rows of the run per second. This is
  the ceiling any reader of these rows can reach through one producer;
- ``x_values_rows_per_s`` / ``ratio_to_x_values``: as many ``b"x" * size``
  values as rows (size: the average record), the older baseline. Such values
  compress to almost nothing, so it flatters the producer: even a reader
  costing zero would score ~0.4 against it.
``reader_rows_per_cpu_s`` divides by the CPU time of the reading thread alone
and ``load_avg_1m`` shows how busy the shared machine was during the run.
``--pipeline columnar`` (the source's default): the source fetches Arrow batches (``fetch_df_batches``; the
prerendered ranges are replayed from Arrow IPC files, as python-oracledb fills Arrow buffers natively),
routes them with readers/oracle/columnar/stage.py and builds the records' JSON in the native pass
(readers/oracle/columnar/redo_json.py; ``native`` says whether it was compiled here). ``--pipeline rows``: fetchmany
tuples and the per-row dispatcher.

``cpu_us_per_row`` splits the CPU by stage with two more passes over the same prerendered rows (``--rows``
only; ``--no-stages`` skips them): ``fetch`` (the LogMiner session threads handing out batches, nothing
consumed: process CPU), ``reader`` (the reader thread taking every event of the source, nothing published:
routing, the native pass, the Begin/ChangeBatch/Commit events; of which ``native_pass``), and ``publish``
(the timed run's reader-thread CPU less ``reader``: records, producer calls, acknowledgement bookkeeping).
librdkafka's own threads and the broker are in none of them.
``--transforms`` (``--rows`` only): after the timed run, the same prerendered rows run twice more, alternated:
once with a transforms rule on every table (TRANSFORMS_RULE: ``NAME`` HMAC-hashed, ``NOTE`` excluded; the hash
key from a temp file), once again without; prints ``transforms``: rows/s and CPU us/row with and without (the
best of the two plain runs), and ``transform_overhead`` (CPU per row with / without - 1: the same-run ratio a
loaded host does not move). CPU here is the whole process's and its parse workers' (the shaped rows may be
parsed in another place than the plain ones: the native pass of the columnar pipeline declines shaped tables).
``--big-txn N``: one N-row UPDATE transaction (spills to disk); reports rows/s
and the peak RSS of the process (target < 300 MB for 1,000,000 rows).

The simulator plays the database. Generating its rows costs more CPU than
reading them (~30 us per row), and a real Oracle does that work on another
host; so by default the rows of every SCN range the reader will ask for are
rendered to files BEFORE the timing starts (``prerender_s``), and the timed
run replays them (the reader still decodes every row, as a client decodes
what the server sends). ``--prebuilt-rows`` (``--rows`` only) keeps them
decoded in memory instead, so fetchmany hands out prebuilt tuples: the
reader's rate without any fetch cost (an upper bound: a real driver decodes),
with those rows in peak_rss_mb (~1 kB per row). ``--live-sim`` generates them during the run
instead, in forked processes competing for the same cores. The simulator's
in-memory model (the database's state) is frozen out of the garbage
collector's scans (``gc.freeze``) for the timed run, as a real reader's heap
does not hold the database.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import tempfile
import time
import uuid
from typing import Any


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=None, help="mixed workload of about this many rows")
    parser.add_argument("--big-txn", type=int, default=None, help="one UPDATE transaction of this many rows")
    parser.add_argument("--sessions", type=int, default=2, help="parallel LogMiner sessions")
    parser.add_argument("--bootstrap", default=None, help="use this broker instead of starting tansu")
    parser.add_argument("--live-sim", action="store_true",
                        help="generate the simulator's rows during the timed run (default: rendered before it)")
    parser.add_argument("--prebuilt-rows", action="store_true",
                        help="keep the prerendered rows decoded in memory: fetchmany hands out prebuilt tuples "
                             "(no fetch cost at all; ~1 kB of RSS per row)")
    parser.add_argument("--pipeline", choices=("rows", "columnar"), default=None,
                        help="the Oracle source's pipeline: rows (fetchmany) or columnar (fetch_df_batches, Arrow); "
                             "default: the source's default (columnar)")
    parser.add_argument("--no-stages", action="store_true",
                        help="skip the two extra passes that split the CPU per row by stage")
    parser.add_argument("--parse-workers", type=int, default=None,
                        help="SQL_REDO parse processes (0: in the reader; default: the source's default)")
    parser.add_argument("--transforms", action="store_true",
                        help="also run the pipeline with one HMAC-hashed and one excluded column on every row, and "
                             "print the transforms' overhead (same run; --rows only)")


# --transforms: the simulator's tables are APP.T0.. with ID, NAME, AMOUNT, CREATED, NOTE
TRANSFORMS_RULE = {"match": "APP.*", "exclude": ["NOTE"], "columns": {"NAME": {"mask": "hash"}}}


def _rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _raw_produce(bootstrap: str, topic: str, records) -> float:
    """Seconds to produce ``records`` ((key, value) pairs) with the publisher's producer settings and
    wait for every acknowledgement."""
    from confluent_kafka import Producer

    from cdc.publish.producer import producer_config
    p = Producer(producer_config(bootstrap))
    t0 = time.perf_counter()
    for i, (key, value) in enumerate(records):
        while True:
            try:
                p.produce(topic, value, key)
                break
            except BufferError:
                p.poll(0.01)
        if i % 1000 == 0:
            p.poll(0)
    if p.flush(300):
        raise RuntimeError(f"bench oracle: the baseline produce to {topic} was not acknowledged in 300 s")
    return time.perf_counter() - t0


def _read_topic(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes]]:
    """Every record of ``topic`` partition 0, in order (the pipeline's own output, for the baseline)."""
    from confluent_kafka import Consumer, TopicPartition

    from cdc.config.kafka_settings import KafkaConnection

    c = Consumer(KafkaConnection.of(bootstrap).settings("consumer", {
        "group.id": f"bench-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False, "auto.offset.reset": "earliest"}))
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        c.assign([TopicPartition(topic, 0, low)])
        out: list[tuple[bytes | None, bytes]] = []
        deadline = time.monotonic() + 600
        while len(out) < high - low:
            if time.monotonic() > deadline:
                raise RuntimeError(f"bench oracle: read {len(out)} of {high - low} records of {topic} in 600 s")
            for m in c.consume(10_000, 1.0):
                if m.error() is None:
                    out.append((m.key(), m.value()))
        return out
    finally:
        c.close()


def _stages(options: str, args: argparse.Namespace, workers: int, timed: dict[str, Any],
            work: str) -> dict[str, Any]:
    """CPU microseconds per published row by stage (module docstring), from two passes over the rows
    prerendered in ``work``."""
    from cdc.metrics import SourceMetrics
    from cdc.stream.events import Change, ChangeBatch, Heartbeat
    from readers.oracle.sim.demo import make_source

    def source(work: str) -> Any:
        return make_source("oracle_bench", options, work, SourceMetrics("oracle_bench"), sessions=args.sessions,
                           scn_range_size=20_000, fetch_size=5000, parse_workers=workers, pipeline=args.pipeline)

    out: dict[str, Any] = {}
    src = source(tempfile.mkdtemp(dir=work))  # fetch: the session threads alone, their batches dropped
    src.start(None)
    c0, fetched, last_hi, head = time.process_time(), 0, 0, src.standby.head_scn()
    deadline = time.monotonic() + 600
    try:
        for rr in src.miner.results(idle_timeout_s=0.5):
            if rr is None:
                if last_hi >= head - 1 or time.monotonic() > deadline:  # every range mined (or give up)
                    break
                continue
            for batch in rr.batches():
                fetched += len(batch) if isinstance(batch, list) else batch.num_rows
            last_hi = rr.hi
    finally:
        src.close()
    out["fetched_rows"] = fetched
    out["fetch"] = round((time.process_time() - c0) / max(timed["rows"], 1) * 1e6, 2)
    src = source(tempfile.mkdtemp(dir=work))  # reader: every event taken, nothing published
    src.start(None)
    c0, rows = time.thread_time(), 0
    try:
        for ev in src.events():
            if type(ev) is ChangeBatch:
                rows += len(ev)
            elif type(ev) is Change:
                rows += 1
            elif type(ev) is Heartbeat and src.caught_up():
                break
        reader = time.thread_time() - c0
        native = src.columnar.native_cpu_s if src.columnar is not None else 0.0
    finally:
        src.close()
    out["reader"] = round(reader / max(rows, 1) * 1e6, 2)
    out["native_pass"] = round(native / max(rows, 1) * 1e6, 2)
    out["publish"] = round(timed["cpu_seconds"] / max(timed["rows"], 1) * 1e6 - out["reader"], 2)
    return out


def _cpu_s() -> float:
    """CPU seconds of this process (every thread) and of its waited-for children (the parse workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _transforms(options: str, args: argparse.Namespace, workers: int, bootstrap: str, work: str,
                plain: dict[str, Any]) -> dict[str, Any]:
    """The ``--transforms`` figures (module docstring): a run with TRANSFORMS_RULE, then one more without,
    over the rows prerendered in ``work``; ``plain``: the timed run's (rows, seconds, process CPU)."""
    from cdc.config.models import KafkaConfig
    from cdc.metrics import SourceMetrics
    from cdc.publish.publisher import Publisher
    from readers.oracle.sim.demo import make_source, pump

    key = os.path.join(work, "hash.key")
    with open(key, "wb") as fh:
        fh.write(os.urandom(32))
    shaped = {"hash_key_file": key, "tables": [TRANSFORMS_RULE]}
    runs: dict[str, list[tuple[int, float, float]]] = {"without": [plain["run"]], "with": []}
    for name, transforms in (("with", shaped), ("without", None)):
        print(f"bench oracle: one more run {name} transforms", file=sys.stderr)
        metrics = SourceMetrics("oracle_bench")
        pub = Publisher("oracle_bench", "oracle", KafkaConfig(bootstrap_servers=bootstrap,
                                                              topic_prefix=f"bench{uuid.uuid4().hex[:6]}"), metrics)
        resume = pub.recover()
        src = make_source("oracle_bench", options, tempfile.mkdtemp(dir=work), metrics, sessions=args.sessions,
                          scn_range_size=20_000, fetch_size=5000, parse_workers=workers, pipeline=args.pipeline,
                          transforms=transforms)
        gc.collect()
        gc.freeze()
        c0 = _cpu_s()
        try:
            stats = pump(src, pub, resume)
        finally:
            gc.unfreeze()
            pub.close()
        runs[name].append((stats["rows"], stats["seconds"], _cpu_s() - c0))
    best = {name: (min(r[1] for r in rs), min(r[2] for r in rs), rs[0][0]) for name, rs in runs.items()}
    rate = {name: rows / wall for name, (wall, _, rows) in best.items()}
    cpu = {name: round(c / rows * 1e6, 2) for name, (_, c, rows) in best.items()}
    return {"transforms": {"rule": f"{TRANSFORMS_RULE['match']}: NAME hashed (HMAC-SHA256), NOTE excluded, every row",
                           "rows_per_s": {"without": round(rate["without"]), "with": round(rate["with"])},
                           "cpu_us_per_row": cpu},
            "transform_overhead": round(cpu["with"] / cpu["without"] - 1, 3)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from cdc.config.models import KafkaConfig
    from cdc.dev.broker import Broker
    from cdc.metrics import SourceMetrics
    from cdc.progress_bar import progress
    from cdc.publish.publisher import Publisher
    from cdc.publish.topics import ensure_topic
    from readers.oracle.columnar import redo_json
    from readers.oracle.config import OracleSourceConfig
    from readers.oracle.reader import default_parse_workers
    from readers.oracle.sim.demo import make_source, pump

    if args.big_txn and getattr(args, "transforms", False):
        raise RuntimeError("bench oracle: --transforms measures the mixed workload (--rows); leave out --big-txn")
    if args.big_txn:
        options = f"seed=1,transactions=1,lanes=1,threads=1,big_txn_rows={args.big_txn},log_scns=200000,process=1"
    else:
        rows = args.rows or 100_000
        options = (f"seed=1,transactions={max(1, rows // 5)},lanes=8,threads=2,rows_min=4,rows_max=6,"
                   "rollback_rate=0.01,partial_rollback_rate=0.02,csf_rate=0.001,log_scns=50000,process=1")
    workers = args.parse_workers if args.parse_workers is not None else default_parse_workers()
    pipeline = args.pipeline or OracleSourceConfig.model_fields["pipeline"].default
    args.pipeline = pipeline
    broker = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        broker = Broker().start()
        bootstrap = broker.bootstrap
    try:
        prefix = f"bench{uuid.uuid4().hex[:6]}"
        metrics = SourceMetrics("oracle_bench")
        publisher = Publisher("oracle_bench", "oracle", KafkaConfig(bootstrap_servers=bootstrap, topic_prefix=prefix),
                              metrics)
        with tempfile.TemporaryDirectory(prefix="cdc-bench-oracle-") as work:
            resume = publisher.recover()
            src = make_source("oracle_bench", options, work, metrics, sessions=args.sessions,
                              scn_range_size=20_000, fetch_size=5000, parse_workers=workers, pipeline=args.pipeline)
            print(f"bench oracle: simulator workload {options}", file=sys.stderr)
            prerender_s = None
            if not args.live_sim:
                from readers.oracle.session import CONTENTS_SQL
                from readers.oracle.sim import simulator
                sim = simulator.instance(options)
                t0 = time.perf_counter()
                sim.prerender(work, CONTENTS_SQL, sim.workload.base_scn, 20_000, 5000,
                              in_memory=args.prebuilt_rows and not args.big_txn, arrow=args.pipeline == "columnar")
                prerender_s = round(time.perf_counter() - t0, 2)
            # The simulator's model of the database (millions of objects) lives in this process; a
            # real reader's heap does not hold the database. Keep it out of the collector's scans.
            gc.collect()
            gc.freeze()
            c0 = _cpu_s()
            try:
                with progress(args.big_txn or args.rows or 100_000, "[bench oracle] rows published") as bar:
                    stats = pump(src, publisher, resume, on_commit=bar.update)  # per transaction: total approximate
            finally:
                gc.unfreeze()
            run_cpu = _cpu_s() - c0
            published = publisher._bytes
            publisher.close()
            stages = None if args.big_txn or args.no_stages else _stages(options, args, workers, stats, work)
            shaped = None
            if getattr(args, "transforms", False) and not args.big_txn:
                shaped = _transforms(options, args, workers, bootstrap, work,
                                     {"run": (stats["rows"], stats["seconds"], run_cpu)})
        rows_s = stats["rows"] / stats["seconds"]
        result: dict[str, Any] = {"rows": stats["rows"], "transactions": stats["transactions"],
                                  "reader_rows_per_s": round(rows_s), "seconds": round(stats["seconds"], 2),
                                  # CPU of the reading+publishing thread alone: what one free core would give
                                  "reader_rows_per_cpu_s": round(stats["rows"] / max(stats["cpu_seconds"], 1e-9)),
                                  "load_avg_1m": round(os.getloadavg()[0], 1),
                                  "simulator": "live" if args.live_sim else
                                  "prebuilt" if args.prebuilt_rows and not args.big_txn else "prerendered",
                                  "prerender_s": prerender_s,
                                  "parse_workers": workers, "pipeline": pipeline, "native": redo_json.NATIVE}
        # the parse workers (and live simulator processes) have ended by now: their peak, separately
        result["children_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
        if args.big_txn:
            result["peak_rss_mb"] = _rss_mb()
            return result
        result["peak_rss_mb"] = _rss_mb()  # before the baselines hold the records in memory
        if stages is not None:
            result["cpu_us_per_row"] = stages
        if shaped is not None:
            result.update(shaped)
        same = _read_topic(bootstrap, publisher.topic)
        size = max(1, published // max(1, len(same)))
        ensure_topic(bootstrap, f"{prefix}.same")
        same_rate = stats["rows"] / _raw_produce(bootstrap, f"{prefix}.same", same)
        del same
        ensure_topic(bootstrap, f"{prefix}.x")
        x_rate = stats["rows"] / _raw_produce(bootstrap, f"{prefix}.x", ((None, b"x" * size)
                                                                         for _ in range(stats["rows"])))
        result.update({"same_records_rows_per_s": round(same_rate), "ratio_to_same_records": round(rows_s / same_rate, 3),
                       "x_values_rows_per_s": round(x_rate), "ratio_to_x_values": round(rows_s / x_rate, 3),
                       "avg_record_bytes": size})
        return result
    finally:
        if broker is not None:
            broker.stop()
