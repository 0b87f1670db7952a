"""`cdc apply` on a Spark standalone cluster (a master and two 1-core workers on loopback, from the installed
pyspark): MariaDB or MySQL 9.7 -> `cdc run` -> broker -> `cdc apply --master spark://...` -> PostgreSQL and a Delta lake
target while writers run; kill -9 of one worker (its executor and Python workers with it) mid-run: the other
carries on and the worker comes back; then kill -9 of an executor JVM while its log shows a task running: the
task is retried on a new executor. Both targets end equal to the source (`cdc compare` EQUAL on PostgreSQL,
row for row on both) with nothing applied twice (a keyless ledger table shows a replayed batch as extra
copies). The recipe is the one of docs/spark-cluster.md."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cdc.dev.procs import spawn, tail
from cdc.dev.workload import TABLES, run_workload
from tests.e2e.apply_pipeline import Pipeline, ledger_writer
from tests.fixtures.spark_cluster import cluster_env, spark_cluster  # noqa: F401 - the fixture

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

CDC = str(Path(sys.executable).with_name("cdc"))


def _wait(cond, timeout: float, what: str, log: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert proc.poll() is None, f"cdc apply exited {proc.returncode} while waiting for {what}\n{tail(log, 60)}"
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting for {what}\n{tail(log, 60)}"
        time.sleep(0.5)


def test_apply_on_a_standalone_cluster_survives_a_worker_kill(tmp_path, spark_cluster, mysql_source,  # noqa: F811
                                                               broker, postgres, topic_prefix, tmp_source_db):
    cluster = spark_cluster
    t0 = time.monotonic()
    p = Pipeline(tmp_path, mysql_source, broker, postgres, topic_prefix, tmp_source_db, targets=("pg", "delta")).start()
    db = tmp_source_db
    apply = None
    log = tmp_path / "apply.log"
    try:
        mysql_source.query(f"CREATE TABLE `{db}`.ledger (k INT, v VARCHAR(10))")  # keyless
        stop = threading.Event()
        writers = [threading.Thread(target=ledger_writer, args=(mysql_source, db, stop, 0.05), daemon=True),
                   threading.Thread(target=run_workload, args=(lambda: mysql_source.connect(db), db),
                                    kwargs={"seconds": 30, "threads": 1, "seed": 5}, daemon=True)]
        for w in writers:
            w.start()

        def progress() -> int:
            try:
                return p.progress("pg")[0]
            except Exception:  # noqa: BLE001 - no batch committed yet
                return -1

        # the recipe of docs/spark-cluster.md: the driver on loopback too (SPARK_LOCAL_IP)
        env = dict(cluster_env(cluster.workdir), PYTHONUNBUFFERED="1")
        apply = spawn([CDC, "apply", "--config", str(p.config_path), "--master", cluster.url, "--metrics-port", "0"],
                      log, env=env)

        def app() -> dict:
            apps = cluster.state().get("activeapps", [])
            return apps[0] if apps else {}

        _wait(lambda: progress() > 0, 240, "a first applied batch", log, apply)
        _wait(lambda: app().get("cores") == 2, 60, "executors on both workers", log, apply)

        before = progress()
        cluster.kill_worker(0)
        _wait(lambda: progress() > before + 50, 120, "progress on the remaining worker", log, apply)
        assert cluster.alive_workers() == 1
        assert "Lost executor" in log.read_text(errors="replace"), "the driver did not see the executor go"
        cluster.start_worker(0)
        _wait(lambda: app().get("cores") == 2, 120, "executors on both workers again", log, apply)

        def lost() -> int:
            return log.read_text(errors="replace").count("Lost executor")

        before_exec, lost_before = progress(), lost()
        task = cluster.kill_executor_mid_task(1, timeout=120)
        _wait(lambda: lost() > lost_before, 60, "the driver to see the killed executor go", log, apply)
        _wait(lambda: progress() > before_exec + 50, 120, "progress after the executor kill", log, apply)
        after_kill = progress()

        stop.set()
        for w in writers:
            w.join(120)
        sid = p.sentinel()
        _wait(lambda: p.has_sentinel("pg", sid) and p.has_sentinel("delta", sid), 180, f"sentinel {sid} in both targets",
              log, apply)
        os.killpg(apply.pid, signal.SIGTERM)  # first SIGTERM: stop after the batch in flight
        assert apply.wait(90) == 0, tail(log, 60)

        compare = subprocess.run([CDC, "compare", "--config", str(p.config_path), "--source", "src", "--target", "pg"],
                                 capture_output=True, text=True, timeout=180, env=env, check=False)
        assert compare.returncode == 0 and "EQUAL" in compare.stdout, compare.stdout + compare.stderr
        counts = p.assert_equal(list(TABLES) + ["ledger"])  # both targets, row for row; keyless ledger: no 2nd copy
        assert counts["ledger"] > 100 and progress() > after_kill > before
        print(f"cluster e2e: {counts}, progress {before} -> {after_kill} -> {progress()}, "
              f"executor killed in: {task.strip()[-80:]}, {time.monotonic() - t0:.0f} s")
    finally:
        if apply is not None and apply.poll() is None:
            os.killpg(apply.pid, signal.SIGKILL)
            apply.wait(30)
        p.stop()
        for i, w in enumerate(cluster.workers):  # leave the session's cluster whole for the next test
            if w is None or w.poll() is not None:
                cluster.start_worker(i)
