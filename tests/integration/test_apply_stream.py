"""The Spark apply job on a hand-built change stream: real broker, Spark, PostgreSQL, DuckDB."""

from __future__ import annotations

import duckdb
import pytest

from cdc.config.loader import parse_config
from streaming.apply import job
from streaming.testing import StreamBuilder, produce

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

COLS = [("id", "int"), ("name", "varchar(20)"), ("amount", "decimal(10,2)")]


def _config(broker, postgres, prefix, tmp_path, pg_schema, **apply_extra):
    with postgres.connect() as c:
        c.execute(f'CREATE SCHEMA IF NOT EXISTS "{pg_schema}"')
        c.commit()
    return parse_config({
        "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": prefix},
        "targets": [{"name": "pg", "kind": "postgres", "dsn": postgres.dsn, "schema": pg_schema},
                    {"name": "duck", "kind": "duckdb", "path": str(tmp_path / "t.duckdb")}],
        "apply": [{"source": "src", "target": t, "checkpoint_dir": str(tmp_path / f"ck-{t}"),
                   "trigger_interval_s": 0.2, **apply_extra} for t in ("pg", "duck")],
    })


def _stream(n_tx: int) -> tuple[StreamBuilder, dict]:
    b = StreamBuilder()
    b.schema("shop.orders", COLS, ["id"]).schema("shop.log", [("msg", "varchar(10)")], [])
    model: dict[int, tuple] = {}
    for i in range(n_tx):
        row = {"id": i, "name": f"n{i}", "amount": f"{i}.25"}
        ops = [("c", "shop.orders", None, row), ("c", "shop.log", None, {"msg": "hi"})]
        if i % 3 == 2:  # update + key update of an earlier row, in the same transaction
            old = {"id": i - 1, "name": f"n{i - 1}", "amount": f"{i - 1}.25"}
            new = {**old, "name": "upd"}
            moved = {**new, "id": 1000 + i}
            ops += [("u", "shop.orders", old, new), ("u", "shop.orders", new, moved)]
        b.tx(*ops)
        model[i] = row
        if i % 3 == 2:
            del model[i - 1]
            model[1000 + i] = moved
        if i % 5 == 4:
            b.tx(("d", "shop.orders", row, None), abort=True)  # aborted: must not apply
        if i % 7 == 6:
            b.heartbeat()
    return b, model


def _pg_rows(postgres, schema):
    with postgres.connect() as c:
        rows = c.execute(f'SELECT id, name, amount::text FROM "{schema}".orders ORDER BY id').fetchall()
        logs = c.execute(f'SELECT count(*) FROM "{schema}".log').fetchone()[0]
        prog = c.execute(f'SELECT last_sequence, batch_id FROM "{schema}".cdc_progress').fetchone()
    return rows, logs, prog


def test_stream_lands_in_postgres_and_duckdb_with_small_batches(spark, broker, postgres, topic_prefix, tmp_path):
    b, model = _stream(40)
    topic = f"{topic_prefix}.src.changes"
    broker.create_topic(topic)
    produce(broker.bootstrap, topic, b.encoded())
    schema = topic_prefix.replace("-", "_")[:40]
    cfg = _config(broker, postgres, topic_prefix, tmp_path, schema, max_records_per_batch=25)
    assert job.run(cfg, until_idle_s=3, spark=spark) == 0
    expected = [(k, v["name"], v["amount"]) for k, v in sorted(model.items())]
    rows, logs, prog = _pg_rows(postgres, schema)
    assert rows == expected and logs == 40
    assert prog[0] == b.seq - 1 and prog[1] >= 5  # several micro-batches (admission control)
    con = duckdb.connect(str(tmp_path / "t.duckdb"), read_only=True)
    drows = con.execute("SELECT id, name, amount::varchar FROM orders ORDER BY id").fetchall()
    con.close()
    assert drows == expected

    # more transactions after a restart: the job resumes from its checkpoint, applies only the new ones
    b2 = StreamBuilder(start_sequence=b.seq)
    b2.schemas = b.schemas
    b2.tx(("d", "shop.orders", {"id": 0, "name": "n0", "amount": "0.25"}, None))
    produce(broker.bootstrap, topic, b2.encoded())
    assert job.run(cfg, until_idle_s=3, spark=spark) == 0
    rows, logs, prog = _pg_rows(postgres, schema)
    assert rows == expected[1:] and logs == 40 and prog[0] == b2.seq - 1


def test_the_driver_jvm_and_the_python_workers_of_a_local_job(spark):
    """build_session's driver JVM runs with the client compiler only (job.DRIVER_JIT), and a local job's Python
    workers run the launcher of streaming.apply.worker_python: pyspark imported from the installed package, not
    from pyspark.zip (which would compile it from source in every worker)."""
    import os
    from pathlib import Path

    args = list(spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert job.DRIVER_JIT in args, args
    assert Path(os.environ["PYSPARK_PYTHON"]).parent.name.startswith("cdc-pyworker-")

    def where(_):
        import sys

        import pyspark
        yield (pyspark.__file__, [p for p in sys.path if p.endswith(".zip") and "pyspark" in p])

    import pyspark

    (imported, zips), = spark.sparkContext.parallelize([0], 1).mapPartitions(where).collect()
    assert zips == [], zips  # neither pyspark.zip nor py4j's zip on the worker's path
    assert Path(imported).resolve() == Path(pyspark.__file__).resolve(), imported  # the installed package
