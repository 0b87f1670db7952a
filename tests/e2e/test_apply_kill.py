"""Kill the Spark driver (`cdc apply`, its JVM and workers: the whole process group) at random
moments, five times, while the source keeps writing; restart; the targets end equal to the
source with nothing applied twice (a keyless ledger table would show a duplicate; the progress
row never goes back and ends at the stream's last record). On each source flavour (``mysql_source``)."""

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
from cdc.stream.envelope import changes_topic
from tests.e2e.apply_pipeline import Pipeline, ledger_writer

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

CDC = str(Path(sys.executable).with_name("cdc"))


def _errors(log: Path) -> str:
    """The ERROR lines of an apply log, each cut to its first lines (a JVM stack is hundreds of lines)."""
    lines = [ln for ln in log.read_text().splitlines() if '"ERROR"' in ln or "Error" in ln]
    return "\n".join(ln.replace("\\n", "\n")[:1500] for ln in lines[-5:]) or log.read_text()[-3000:]


def _apply(p: Pipeline, log: Path, *extra: str):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return spawn([CDC, "apply", "--config", str(p.config_path), "--master", "local[2]", "--metrics-port", "0",
                  *extra], log, env=env)


def test_kill_the_driver_five_times(tmp_path, mysql_source, broker, postgres, topic_prefix, tmp_source_db):
    p = Pipeline(tmp_path, mysql_source, broker, postgres, topic_prefix, tmp_source_db, targets=("pg", "my")).start()
    db, rng = tmp_source_db, random.Random(11)
    try:
        mysql_source.query(f"CREATE TABLE `{db}`.ledger (k INT, v VARCHAR(10))")  # keyless
        stop = threading.Event()

        conn = lambda: mysql_source.connect(db)
        writers = [threading.Thread(target=ledger_writer, args=(mysql_source, db, stop, 0.02), daemon=True),
                   threading.Thread(target=run_workload, args=(conn, db), daemon=True,
                                    kwargs={"seconds": 50, "threads": 2, "seed": 3})]
        for w in writers:
            w.start()
        seen_progress = []
        def progress() -> int:
            try:
                return p.progress("pg")[0]
            except Exception:  # noqa: BLE001 - no batch committed yet
                return -1

        for i in range(5):
            log = tmp_path / f"apply-{i}.log"
            proc = _apply(p, log)
            if i == 0:  # the first kill lands during start-up
                time.sleep(rng.uniform(2, 8))
            else:  # the others once this run has committed something, a random moment later
                before, deadline = progress(), time.monotonic() + 180
                while progress() == before:
                    assert proc.poll() is None, _errors(log)
                    assert time.monotonic() < deadline, "apply made no progress in 180 s\n" + log.read_text()[-3000:]
                    time.sleep(0.2)
                time.sleep(rng.uniform(0, 3))
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
            seen_progress.append(progress())
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
        stream = _tail(broker.bootstrap, changes_topic(topic_prefix, "src"), 3000)
        for t in ("pg", "my"):
            applied = p.progress(t)[0]
            assert applied <= stream[-1]["sequence"]
            after = [r for r in stream if r["sequence"] > applied]
            assert all(r.get("status") == "HEARTBEAT" for r in after), f"{t} stops before {after[:2]}"
            assert any(r["sequence"] == applied for r in stream)
    finally:
        p.stop()


def _tail(bootstrap: str, topic: str, n: int) -> list[dict]:
    """The last ``n`` records of the topic (read to the true end: the high watermark is not trusted)."""
    import orjson

    from streaming.stream.batches import BoundaryScanner

    scanner = BoundaryScanner(bootstrap, topic, "json")
    try:
        end = scanner.true_end(0)
    finally:
        scanner.close()
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"tail-{time.time_ns()}", "enable.auto.commit": False,
                  "log_level": 3})
    try:
        c.assign([TopicPartition(topic, 0, max(0, end - n))])
        out, deadline = [], time.monotonic() + 60
        while (not out or out[-1][0] < end - 1) and time.monotonic() < deadline:
            out += [(m.offset(), orjson.loads(m.value())) for m in c.consume(1000, 1.0) if m.error() is None]
        return [v for _, v in out]
    finally:
        c.close()
