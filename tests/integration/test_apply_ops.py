"""The apply job as an operator sees it (real broker, Spark, PostgreSQL): its log lines and its
/metrics, /healthz, /readyz, while it runs and after the target refused a batch."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from cdc.config.loader import parse_config
from cdc.dev.ports import HOST, free_port, wait_until
from cdc.dev.procs import spawn, terminate
from cdc.metrics import process_registry
from streaming.apply import job
from streaming.apply.apply_cmd import serve
from streaming.errors import BadRecord
from streaming.testing import StreamBuilder, produce
from tests.fixtures.http import http_get

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

CDC = str(Path(sys.executable).with_name("cdc"))
COLS = [("id", "int"), ("name", "varchar(40)")]
SECRET = "s3cret-row-value"


def _stream(n_tx: int) -> StreamBuilder:
    b = StreamBuilder().schema("shop.orders", COLS, ["id"])
    for i in range(n_tx):
        b.tx(("c", "shop.orders", None, {"id": i, "name": f"n{i}"}))
    return b.heartbeat()


def _schema(postgres, prefix: str) -> str:
    schema = prefix.replace("-", "_")[:40]
    with postgres.connect() as c:
        c.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        c.commit()
    return schema


def _apply_config(broker, postgres, prefix: str, tmp_path, schema: str) -> dict:
    return {"kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": prefix},
            "logging": {"level": "INFO", "json": True},
            "targets": [{"name": "pg", "kind": "postgres", "dsn": postgres.dsn, "schema": schema}],
            "apply": [{"source": "src", "target": "pg", "checkpoint_dir": str(tmp_path / "ck"),
                       "trigger_interval_s": 0.2}]}


def _metric(body: bytes, name: str) -> float:
    return sum(s.value for f in text_string_to_metric_families(body.decode()) for s in f.samples if s.name == name)


@pytest.mark.slow
def test_cdc_apply_writes_only_json_lines_and_serves_its_probes(broker, postgres, topic_prefix, tmp_path):
    topic = f"{topic_prefix}.src.changes"
    broker.create_topic(topic)
    produce(broker.bootstrap, topic, _stream(20).encoded())
    schema = _schema(postgres, topic_prefix)
    cfg = tmp_path / "apply.yaml"
    cfg.write_text(yaml.safe_dump(_apply_config(broker, postgres, topic_prefix, tmp_path, schema)))
    port, log = free_port(), tmp_path / "apply.log"
    proc = spawn([CDC, "apply", "--config", str(cfg), "--master", "local[2]", "--metrics-port", str(port),
                  "--until-idle", "6"], log, env=dict(os.environ, CDC_PROGRESS="off", PYTHONUNBUFFERED="1"))
    base = f"http://{HOST}:{port}"
    try:
        def died() -> str | None:
            return None if proc.poll() is None else f"cdc apply exited {proc.returncode}: {log.read_text()[-3000:]}"

        wait_until(lambda: http_get(base + "/healthz")[0] == 200, 60, "apply /healthz", interval=0.2, alive=died)
        first_ready = http_get(base + "/readyz")
        wait_until(lambda: http_get(base + "/readyz")[0] == 200, 180, "apply /readyz", interval=0.3, alive=died)
        wait_until(lambda: _metric(http_get(base + "/metrics")[1], "cdc_apply_transactions_total") >= 20, 120,
                   "20 transactions applied (/metrics)", interval=0.5, alive=died)
        # the planner's view of the stream head reaches the driver: nothing seen is left outside a batch
        wait_until(lambda: b"cdc_apply_lag_records{" in http_get(base + "/metrics")[1]
                   and _metric(http_get(base + "/metrics")[1], "cdc_apply_lag_records") == 0, 60,
                   "cdc_apply_lag_records 0", interval=0.5, alive=died)
        code, metrics = http_get(base + "/metrics")
        assert code == 200 and _metric(metrics, "cdc_apply_batches_total") >= 1
        assert _metric(metrics, "cdc_apply_last_batch_timestamp_seconds") > time.time() - 300
        assert proc.wait(timeout=120) == 0, log.read_text()[-3000:]
    finally:
        terminate(proc)
    # before the first trigger it was not ready, and said why
    assert first_ready[0] in (200, 503) and (first_ready[0] == 200 or b"starting" in first_ready[1]
                                             or b"not active" in first_ready[1]), first_ready
    with postgres.connect() as c:
        assert c.execute(f'SELECT count(*) FROM "{schema}".orders').fetchone()[0] == 20
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    bad = []
    for ln in lines:
        try:
            doc = json.loads(ln)
        except ValueError:
            bad.append(ln)
            continue
        if not isinstance(doc, dict) or not {"ts", "level", "logger", "msg"} <= doc.keys():
            bad.append(ln)
    assert not bad, f"{len(bad)} of {len(lines)} lines are not JSON log lines, e.g. {bad[:5]}"
    loggers = {json.loads(ln)["logger"] for ln in lines}
    # a quiet healthy run: the JVM's start-up notice is no log line (any JVM line would be JSON above: log4j2's
    # JSON layout or the relay, tests/unit/streaming/apply/test_spark_logs.py)
    assert not any("incubator modules" in json.loads(ln)["msg"] for ln in lines), loggers
    assert "streaming.apply.job" in loggers, loggers


def test_readyz_says_which_batch_failed_without_row_values(spark, broker, postgres, topic_prefix, tmp_path):
    topic = f"{topic_prefix}.src.changes"
    broker.create_topic(topic)
    b = _stream(3)
    produce(broker.bootstrap, topic, b.encoded())
    schema = _schema(postgres, topic_prefix)
    cfg = parse_config(_apply_config(broker, postgres, topic_prefix, tmp_path, schema))
    streams: list[job.ApplyStream] = []
    registry = process_registry()
    server = serve(registry, streams, HOST, 0)
    base = f"http://{HOST}:{server.port}"
    stop, outcome = threading.Event(), {}

    def run() -> None:
        try:
            outcome["exit"] = job.run(cfg, stop_event=stop, spark=spark, metrics_registry=registry,
                                      streams_out=streams)
        except BaseException as exc:  # noqa: BLE001 - asserted below
            outcome["error"] = exc

    runner = threading.Thread(target=run, name="apply-probes", daemon=True)
    try:
        code, body = http_get(base + "/readyz")
        assert code == 503 and b"starting" in body, (code, body)  # no query yet
        runner.start()
        wait_until(lambda: http_get(base + "/readyz")[0] == 200, 180, "apply ready", interval=0.3,
                   alive=lambda: None if runner.is_alive() else f"apply ended: {outcome}")
        assert http_get(base + "/healthz")[0] == 200
        # the target refuses the next transaction's row (its value is what no probe may show)
        with postgres.connect() as c:
            c.execute(f"""ALTER TABLE "{schema}".orders ADD CONSTRAINT no_secret CHECK (name <> '{SECRET}')""")
            c.commit()
        n = len(b.items)
        b.tx(("c", "shop.orders", None, {"id": 99, "name": SECRET}))
        produce(broker.bootstrap, topic, b.encoded()[n:])
        wait_until(lambda: http_get(base + "/readyz")[0] == 503, 120, "apply not ready after the refused batch",
                   interval=0.3)
        runner.join(120)
        ready, alive = http_get(base + "/readyz"), http_get(base + "/healthz")
    finally:
        stop.set()
        runner.join(60)
        server.stop()
    assert isinstance(outcome.get("error"), BadRecord), outcome  # the job itself stops loudly, naming the row
    assert SECRET in str(outcome["error"])
    for code, body in (ready, alive):
        doc = orjson.loads(body)
        reason = doc["reasons"]["src->pg"]
        assert code == 503 and "BadRecord" in reason and "shop.orders" in reason and "sequence" in reason, doc
        assert SECRET not in body.decode(), body


@pytest.mark.slow
def test_cdc_apply_runs_under_spark_submit_with_the_shipped_log4j2(broker, postgres, topic_prefix, tmp_path):
    """The cluster recipe of docs/operations.md, on a local master: spark-submit starts the driver JVM, `cdc apply`
    takes spark-submit's master and the log4j2 file given by -D options."""
    import pyspark

    from streaming.apply.spark_logs import java_options

    topic = f"{topic_prefix}.src.changes"
    broker.create_topic(topic)
    produce(broker.bootstrap, topic, _stream(5).encoded())
    schema = _schema(postgres, topic_prefix)
    raw = _apply_config(broker, postgres, topic_prefix, tmp_path, schema)
    raw["logging"] = {"level": "INFO", "json": False}
    cfg = tmp_path / "apply.yaml"
    cfg.write_text(yaml.safe_dump(raw))
    # the documented launcher (spark-submit runs a file; cdc/cli.py itself would put cdc/ first on sys.path)
    launcher = tmp_path / "cdc_apply.py"
    launcher.write_text("import sys\nfrom cdc.cli import main\nsys.exit(main())\n")
    submit = str(Path(pyspark.__file__).parent / "bin" / "spark-submit")
    log = tmp_path / "submit.log"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP=HOST, CDC_PROGRESS="off", PYTHONUNBUFFERED="1")
    proc = spawn([submit, "--master", "local[2]", "--conf", f"spark.driver.extraJavaOptions={java_options('INFO')}",
                  "--conf", "spark.ui.enabled=false", str(launcher), "apply", "--config", str(cfg),
                  "--until-idle", "5", "--metrics-port", "0"], log, env=env)
    try:
        code = proc.wait(timeout=300)
    finally:
        terminate(proc)
    text = log.read_text(errors="replace")
    assert code == 0, text[-3000:]
    with postgres.connect() as c:
        assert c.execute(f'SELECT count(*) FROM "{schema}".orders').fetchone()[0] == 5
    assert "Using Spark's default log4j profile" not in text and "Setting default log level" not in text, text[:2000]
    assert "streaming.apply.job" in text  # the Python side logs as configured
