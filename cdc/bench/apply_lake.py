"""`cdc bench apply --target delta|iceberg`: the lake targets against their library's own bulk append.

Same run, same rows (the ``--rows`` insert-heavy stream of `cdc bench apply`:
transactions of ``--tx-rows`` inserts, every tenth change an update of an
earlier row):

- spark:   the stream is written to the broker, then the whole apply job
           (Spark local[2], the `cdc-stream` source, the engine, the target)
           runs until the latest consistent point holds the last sequence;
           ``apply_rows_per_s`` counts from the first micro-batch to the last
           commit, like the PostgreSQL bench (start-up is ``startup_s``);
- engine:  the engine and the target alone on the same records, in
           micro-batches of ``--batch-records`` already in memory as Arrow
           (what the driver does with a batch Spark handed it: net effect,
           JSON images -> Arrow, one commit per table + the progress log),
           as ``engine_rows_per_s``;
- append:  the library's bulk limit: ``write_deltalake(mode="append")`` /
           pyiceberg ``append`` of the same N rows (already Arrow, the
           target's types) into a new table, ``append_rows_per_s``;
           ``ratio`` = engine / append, ``spark_ratio`` = spark / append; and the same append
           starting from the rows' JSON images as the stream carries them (decode + Arrow + append,
           the simplest append-only consumer), ``append_from_json_rows_per_s`` and
           ``ratio_to_json_append``;
- update-heavy: ``--update-rows`` changes that are all updates of random
           existing keys of a table holding ``--rows`` rows, through the
           engine, ``update_rows_per_s`` (and ``update_ratio`` to append).
"""

from __future__ import annotations

import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any


def _say(msg: str) -> None:
    print(f"[bench apply {msg.split(':')[0]}] {msg}", file=sys.stderr, flush=True)


def _target_config(kind: str, work: Path, name: str) -> dict[str, Any]:
    if kind == "delta":
        return {"name": name, "kind": "delta", "path": str(work / name)}
    return {"name": name, "kind": "iceberg", "catalog_uri": f"sqlite:///{work}/{name}.db",
            "warehouse": str(work / f"{name}-wh")}


def _engine_rate(kind: str, work: Path, name: str, builder, rows: int, records_per_batch: int) -> tuple[float, Any]:
    from cdc.config.models import ApplyConfig, TargetConfig
    from cdc.schema.table_map import TableMap
    from streaming.apply.engine import ApplyEngine
    from streaming.targets import make_target

    tables = _batches_from(builder.as_records(), records_per_batch)
    target = make_target(TargetConfig(**_target_config(kind, work, name)))
    engine = ApplyEngine("bench", target, TableMap.from_config(ApplyConfig(source="bench", target=name))).start()
    t0 = time.monotonic()
    for i, t in enumerate(tables):
        engine.apply_arrow(t, i)
    elapsed = time.monotonic() - t0
    keys: set = set()  # the keys the stream leaves (an update of a row never inserted upserts it, as everywhere)
    for _k, v in builder.items:
        if v.get("op") in ("c", "u", "r"):
            keys.discard((v.get("before") or {}).get("id"))
            keys.add(v["after"]["id"])
        elif v.get("op") == "d":
            keys.discard(v["before"]["id"])
    got = sorted(target._read_all("t").column("id").to_pylist())
    if got != sorted(keys):  # a benchmark of a wrong result is worthless
        raise RuntimeError(f"bench apply {kind}: the target table holds {len(got)} keys, the stream leaves {len(keys)}")
    return rows / elapsed, engine


def _append_rate(kind: str, work: Path, rows: int, from_json: bool = False) -> float:
    """The library's append of ``rows`` rows into a new table: from Arrow already in the target's types, or
    (``from_json``) from the JSON row images the stream carries (orjson decode + Arrow build + append, what
    the simplest append-only consumer has to do)."""
    import orjson
    import pyarrow as pa

    from cdc.bench.apply_stream import COLS, bench_row
    from cdc.stream.events import Column, TableId, TableSchema
    from streaming.targets import lake_types

    schema = lake_types.arrow_schema(TableSchema(TableId.parse("bench.t"), tuple(Column(n, t) for n, t in COLS),
                                                 ("id",)), kind)
    schema = pa.schema([f.with_nullable(True) for f in schema])
    images = [orjson.dumps(bench_row(i)) for i in range(rows)]
    name = "append-json" if from_json else "append"
    if kind == "delta":
        from deltalake import write_deltalake

        def write(data):
            write_deltalake(str(work / name), data, mode="append")
    else:
        from pyiceberg.catalog.sql import SqlCatalog
        cat = SqlCatalog("default", uri=f"sqlite:///{work}/{name}.db", warehouse=f"file://{work}/{name}-wh")
        cat.create_namespace_if_not_exists("bench")
        table = cat.create_table(("bench", "append"), schema=schema)
        write = table.append
    data = None if from_json else lake_types.rows_to_table([orjson.loads(v) for v in images], schema, "bench.t")
    t0 = time.monotonic()
    if from_json:
        data = lake_types.rows_to_table([orjson.loads(v) for v in images], schema, "bench.t")
    write(data)
    return rows / (time.monotonic() - t0)


def _update_stream(rows: int, updates: int, tx_rows: int, seed: int = 18):
    from cdc.bench.apply_stream import COLS, bench_row
    from streaming.testing import StreamBuilder

    b = StreamBuilder(source="bench")
    b.schema("bench.t", COLS, ["id"])
    for i in range(0, rows, 10_000):
        b.tx(*[("c", "bench.t", None, bench_row(j)) for j in range(i, min(rows, i + 10_000))])
    base = len(b.items)
    rng, version = random.Random(seed), {}
    done = 0
    while done < updates:
        ops = []
        for _ in range(min(tx_rows, updates - done)):
            k = rng.randrange(rows)
            v = version.get(k, 0)
            version[k] = v + 1
            ops.append(("u", "bench.t", bench_row(k, v), bench_row(k, v + 1)))
        b.tx(*ops)
        done += len(ops)
    return b, base


def _spark_rate(args, work: Path, kind: str, builder, last_seq: int) -> dict[str, Any]:
    from cdc.config.loader import parse_config
    from cdc.config.models import TargetConfig
    from cdc.dev.broker import Broker
    from streaming.apply import job
    from streaming.targets import make_target
    from streaming.testing import produce

    broker = None
    try:
        if args.kafka:
            from cdc.bench.apply_stream import External
            bootstrap, admin = args.kafka, External(args.kafka)
        else:
            broker = Broker(log_dir=work).start()
            bootstrap, admin = broker.bootstrap, broker
        topic = "bench.bench.changes"
        admin.create_topic(topic)
        produce(bootstrap, topic, builder.encoded(), timeout=300)
        tcfg = _target_config(kind, work, "spark")
        cfg = parse_config({"kafka": {"bootstrap_servers": bootstrap, "topic_prefix": "bench"}, "targets": [tcfg],
                            "apply": [{"source": "bench", "target": "spark", "checkpoint_dir": str(work / "ck"),
                                       "max_records_per_batch": args.batch_records, "trigger_interval_s": 0.1}]})
        spark = job.build_session("local[2]", "cdc-bench-apply-lake")
        stop, streams = threading.Event(), []
        th = threading.Thread(target=job.run, args=(cfg,), kwargs={"spark": spark, "stop_event": stop,
                                                                   "streams_out": streams}, daemon=True)
        t0 = time.monotonic()
        th.start()
        reader = make_target(TargetConfig(**tcfg)).open()
        while True:
            try:
                point = reader.latest_point("bench")
            except Exception:  # noqa: BLE001 - the log is being created
                point = None
            if point and point["last_sequence"] >= last_seq:
                break
            if not th.is_alive() or time.monotonic() - t0 > 1800:
                raise RuntimeError("the apply job stopped or took over 30 minutes")
            time.sleep(0.2)
        t_end = time.monotonic()
        wait_until = time.monotonic() + 30
        while streams and sum(t[3] for t in streams[0].timings) < len(builder.items) and time.monotonic() < wait_until:
            time.sleep(0.05)
        stop.set()
        th.join(60)
        spark.stop()
        timings = list(streams[0].timings) if streams else []
        start = timings[0][0] if timings else t0
        steady = max(1e-9, (timings[-1][2] if timings else t_end) - start)
        return {"apply_rows_per_s": round(args.rows / steady), "startup_s": round(start - t0, 1),
                "batches": len(timings), "read_s": round(sum(r - a for a, r, _e, _n in timings), 1),
                "engine_s": round(sum(e - r for _a, r, e, _n in timings), 1)}
    finally:
        if broker is not None:
            broker.stop()


def run(args) -> dict[str, Any]:
    from cdc.bench.apply_stream import bench_stream

    kind = args.target
    work = Path(tempfile.mkdtemp(prefix=f"cdc-bench-apply-{kind}-"))
    try:
        _say(f"{kind}: building a stream of {args.rows} row changes")
        b = bench_stream(args.rows, args.tx_rows)
        last_seq = b.seq - 1
        append = _append_rate(kind, work, args.rows)
        _say(f"{kind}: library append of {args.rows} rows -> {append:,.0f} rows/s")
        append_json = _append_rate(kind, work, args.rows, from_json=True)
        _say(f"{kind}: library append of the same rows from their JSON images -> {append_json:,.0f} rows/s")
        engine, e = _engine_rate(kind, work, "engine", b, args.rows, args.batch_records)
        e.close()
        _say(f"{kind}: engine + target on in-memory batches -> {engine:,.0f} rows/s")
        ub, base = _update_stream(args.rows, args.update_rows, args.tx_rows)
        from cdc.config.models import ApplyConfig, TargetConfig
        from cdc.schema.table_map import TableMap
        from streaming.apply.engine import ApplyEngine
        from streaming.stream.records import Batch
        from streaming.targets import make_target

        recs = ub.as_records()
        ue = ApplyEngine("bench", make_target(TargetConfig(**_target_config(kind, work, "upd"))),
                         TableMap.from_config(ApplyConfig(source="bench", target="upd"))).start()
        ue.apply_arrow(Batch.from_records(recs[:base]).table, 0)  # the table to update (not timed)
        rest = _batches_from(recs[base:], args.batch_records)
        t0 = time.monotonic()
        for i, t in enumerate(rest):
            ue.apply_arrow(t, i + 1)
        update = args.update_rows / (time.monotonic() - t0)
        ue.close()
        _say(f"{kind}: update-heavy ({args.update_rows} updates of a {args.rows}-row table) -> {update:,.0f} rows/s")
        out = {"target": kind, "rows": args.rows, "engine_rows_per_s": round(engine),
               "append_rows_per_s": round(append), "ratio": round(engine / append, 3),
               "append_from_json_rows_per_s": round(append_json), "ratio_to_json_append": round(engine / append_json, 3),
               "update_rows": args.update_rows, "update_rows_per_s": round(update),
               "update_ratio": round(update / append, 3)}
        if not args.no_spark:
            _say(f"{kind}: the Spark apply job")
            spark = _spark_rate(args, work, kind, b, last_seq)
            out.update(spark)
            out["spark_ratio"] = round(spark["apply_rows_per_s"] / append, 3)
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _batches_from(recs: list, records_per_batch: int) -> list[Any]:
    """The records as Arrow micro-batches of about ``records_per_batch``, cut after an END (or SCHEMA) record."""
    from cdc.stream.envelope import END, SCHEMA
    from streaming.stream.records import Batch

    out, start, last_end = [], 0, 0
    for i, r in enumerate(recs):
        if r.kind in (END, SCHEMA):
            last_end = i + 1
        if i + 1 - start >= records_per_batch and last_end > start:
            out.append(Batch.from_records(recs[start:last_end]).table)
            start = last_end
    if start < len(recs):
        out.append(Batch.from_records(recs[start:]).table)
    return out
