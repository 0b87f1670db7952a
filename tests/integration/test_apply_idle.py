"""An idle change stream (heartbeats only) against the apply job (real broker, Spark, PostgreSQL).

Every progress-row write is a DELETE + INSERT in the target transaction
(streaming.targets.base.write_progress), so PostgreSQL's own counter of
inserted tuples for ``cdc_progress`` (``pg_stat_user_tables.n_tup_ins``,
flushed when the apply job's connection closes) counts the target commits;
the control run with ``freshness_interval_s: 0`` shows that the count moves
with every applied heartbeat.
"""

from __future__ import annotations

import math
import threading
import time

import orjson
import pytest

from streaming.apply import job
from streaming.testing import StreamBuilder, produce
from tests.fixtures.spark import pg_apply_config

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]


def _idle_run(spark, broker, postgres, prefix: str, tmp_path, schema: str, freshness_s: float,
              idle_s: float, each: bool = False) -> tuple[int, int, int]:
    """One transaction, then a heartbeat every second for ``idle_s`` (``each``: the next one only once the
    last is applied): (progress-row writes, last applied sequence, last heartbeat sequence produced)."""
    b = StreamBuilder().schema("shop.orders", [("id", "int"), ("name", "varchar(20)")], ["id"])
    b.tx(("c", "shop.orders", None, {"id": 1, "name": "one"}))
    topic = f"{prefix}.src.changes"
    broker.create_topic(topic)
    produce(broker.bootstrap, topic, b.encoded())
    cfg = pg_apply_config(broker, postgres, prefix, schema, tmp_path / f"ck-{schema}",
                          freshness_interval_s=freshness_s)
    stop, outcome = threading.Event(), {}

    def apply() -> None:
        try:
            outcome["exit"] = job.run(cfg, stop_event=stop, spark=spark)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            outcome["error"] = exc

    runner = threading.Thread(target=apply, name="apply-idle", daemon=True)
    runner.start()
    try:
        deadline = time.monotonic() + 180
        while _progress(postgres, schema) is None:  # the transaction is applied: the idle period starts now
            assert runner.is_alive() and time.monotonic() < deadline, f"apply did not start: {outcome}"
            time.sleep(0.2)
        end = time.monotonic() + idle_s
        for _ in range(int(idle_s)):  # one heartbeat a second (or, with ``each``, one per applied heartbeat)
            if not each and time.monotonic() >= end:
                break
            n = len(b.items)
            b.heartbeat()
            produce(broker.bootstrap, topic, b.encoded()[n:])
            time.sleep(1.0)
            while each and (_progress(postgres, schema) or 0) < b.seq - 1:  # a busy host: batches slower than 1 s
                assert runner.is_alive() and time.monotonic() < end + 120, f"heartbeat not applied: {outcome}"
                time.sleep(0.2)
    finally:
        stop.set()
        runner.join(120)
    assert not runner.is_alive() and outcome.get("exit") == 0, outcome
    return _writes(postgres, schema), _progress(postgres, schema), b.seq - 1


def _progress(postgres, schema: str) -> int | None:
    with postgres.connect() as c:
        has = c.execute("SELECT to_regclass(%s)", [f'"{schema}".cdc_progress']).fetchone()[0]
        row = c.execute(f'SELECT last_sequence FROM "{schema}".cdc_progress').fetchone() if has else None
    return None if row is None else row[0]


def _writes(postgres, schema: str) -> int:
    """Progress rows inserted, as PostgreSQL counted them (the job's backend has exited: stats flushed)."""
    deadline = time.monotonic() + 15
    last = -1
    while time.monotonic() < deadline:  # the exiting backend's stats arrive within a moment
        with postgres.connect() as c:
            n = c.execute("SELECT n_tup_ins FROM pg_stat_user_tables WHERE schemaname = %s AND relname = 'cdc_progress'",
                          [schema]).fetchone()[0]
        if n == last:
            return n
        last = n
        time.sleep(1.0)
    return last


@pytest.mark.slow
def test_an_idle_stream_commits_at_most_once_per_freshness_interval(spark, broker, postgres, topic_prefix,
                                                                     tmp_path):
    freshness, idle = 20.0, 60.0
    t0 = time.monotonic()
    writes, applied, produced = _idle_run(spark, broker, postgres, topic_prefix, tmp_path,
                                          "idle_" + topic_prefix[-8:], freshness, idle)
    # the first transaction's commit, then at most one heartbeat commit per freshness interval
    limit = 1 + math.ceil(idle / freshness) + 1
    assert 2 <= writes <= limit, f"{writes} target commits in {idle:.0f} s idle (limit {limit})"
    # the progress row still shows freshness: it moved on to the heartbeats, held back at most one interval
    # (plus what arrived while that batch ran on a loaded machine)
    assert applied >= 5 and produced - applied <= freshness + 10, (applied, produced, writes)

    # control: without the interval every heartbeat is a target commit, and the counter sees them
    control_idle = 8.0
    writes0, _, _ = _idle_run(spark, broker, postgres, topic_prefix + "-c", tmp_path,
                                             "idle0_" + topic_prefix[-8:], 0.0, control_idle, each=True)
    assert writes0 >= 5, f"control: only {writes0} commits for {control_idle:.0f} heartbeats"
    print(orjson.dumps({"idle_s": idle, "freshness_s": freshness, "target_commits": writes,
                        "control_commits_8s_no_interval": writes0, "seconds": round(time.monotonic() - t0, 1)}))
