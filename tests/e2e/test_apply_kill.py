"""Kill the Spark driver (`cdc apply`, its JVM and workers: the whole process group) at random
moments, five times, while the source keeps writing; restart; the targets end equal to the
source with nothing applied twice (a keyless ledger table would show a duplicate; the progress
row never goes back and ends at the stream's last record)."""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from cdc.dev.procs import spawn
from cdc.dev.workload import TABLES, run_workload
from cdc.envelope import changes_topic
from tests.e2e.apply_pipeline import Pipeline
from tests.fixtures.ops import read_stream

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

CDC = str(Path(sys.executable).with_name("cdc"))


def _apply(p: Pipeline, log: Path, *extra: str):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return spawn([CDC, "apply", "--config", str(p.config_path), "--master", "local[2]", "--metrics-port", "0",
                  *extra], log, env=env)


def test_kill_the_driver_five_times(tmp_path, mariadb_primary, broker, postgres, topic_prefix, tmp_mysql_db):
    p = Pipeline(tmp_path, mariadb_primary, broker, postgres, topic_prefix, tmp_mysql_db, targets=("pg", "my")).start()
    db, rng = tmp_mysql_db, random.Random(11)
    try:
        mariadb_primary.query(f"CREATE TABLE `{db}`.ledger (k INT, v VARCHAR(10))")  # keyless
        stop = threading.Event()

        def ledger():
            c, i = mariadb_primary.connect(db), 0
            try:
                while not stop.is_set():
                    with c.cursor() as cur:
                        cur.executemany("INSERT INTO ledger VALUES (%s, %s)", [(i, "x"), (i, "x")])
                    c.commit()
                    i += 1
                    time.sleep(0.02)
            finally:
                c.close()

        conn = lambda: mariadb_primary.connect(db)  # noqa: E731
        writers = [threading.Thread(target=ledger, daemon=True),
                   threading.Thread(target=run_workload, args=(conn, db), daemon=True,
                                    kwargs={"seconds": 50, "threads": 2, "seed": 3})]
        for w in writers:
            w.start()
        seen_progress = []
        for i in range(5):
            proc = _apply(p, tmp_path / f"apply-{i}.log")
            time.sleep(rng.uniform(8, 22))  # Spark start-up takes ~10 s here: some kills land before, most after
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
            try:
                seen_progress.append(p.progress("pg")[0])
            except Exception:  # noqa: BLE001 - no batch committed yet
                seen_progress.append(-1)
        stop.set()
        for w in writers:
            w.join(120)
        sid = p.sentinel()
        for attempt in range(3):
            proc = _apply(p, tmp_path / f"apply-final-{attempt}.log", "--until-idle", "4")
            assert proc.wait(400) == 0, (tmp_path / f"apply-final-{attempt}.log").read_text()[-3000:]
            if all(p.has_sentinel(t, sid) for t in ("pg", "my")):
                break
        assert seen_progress == sorted(seen_progress), seen_progress
        assert max(seen_progress) > 0, f"no kill landed after a committed batch: {seen_progress}"
        counts = p.assert_equal(list(TABLES) + ["ledger"])
        assert counts["ledger"] > 100
        stream = read_stream(broker.bootstrap, changes_topic(topic_prefix, "src"))
        last = max(r["sequence"] for r in stream)
        for t in ("pg", "my"):
            assert p.progress(t)[0] <= last
            applied = p.progress(t)[0]
            tail = [r for r in stream if r["sequence"] > applied]
            assert all(r.get("status") == "HEARTBEAT" for r in tail), f"{t} stops before {tail[:2]}"
    finally:
        p.stop()
