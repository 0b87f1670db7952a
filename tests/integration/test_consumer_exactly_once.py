"""Exactly-once across kill -9 of a consuming process, on both Kafka clients.

A random workload (inserts, updates, deletes over 60 keys, 1-6 rows per
transaction, some ABORTED, duplicate runs appended by 'producer retries') goes
to the broker in two halves. tests/integration/consumer_child.py applies it to a
SQLite file with its position in the same database transaction; the test kills
it with SIGKILL 10 times at random moments and restarts it. At the end the
table equals the fold of the committed transactions, and the log of applied
row changes holds every committed change exactly once.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from streaming.testing import StreamBuilder, produce

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
KILLS = 10


def _workload(rng: random.Random, n_tx: int) -> tuple[StreamBuilder, dict[int, str], list[int]]:
    sb = StreamBuilder()
    sb.schema("d.t", [("id", "int"), ("v", "varchar")], ["id"])
    state: dict[int, str] = {}
    committed_rows: list[int] = []
    for i in range(n_tx):
        after = dict(state)
        changes = []
        for j in range(rng.randint(1, 6)):
            k = rng.randrange(60)
            v = f"{i}.{j}"
            if k not in after:
                changes.append(("c", "d.t", None, {"id": k, "v": v}))
                after[k] = v
            elif rng.random() < 0.3:
                changes.append(("d", "d.t", {"id": k, "v": after.pop(k)}, None))
            else:
                changes.append(("u", "d.t", {"id": k, "v": after[k]}, {"id": k, "v": v}))
                after[k] = v
        abort = rng.random() < 0.05
        first = sb.seq + 1  # the BEGIN takes sb.seq
        sb.tx(*changes, abort=abort)
        if not abort:
            state = after
            committed_rows.extend(range(first, first + len(changes)))
    return sb, state, committed_rows


def _with_duplicate_runs(rng: random.Random, enc: list) -> list:
    out, i = [], 0
    while i < len(enc):
        step = rng.randint(50, 300)
        out.extend(enc[i:i + step])
        if rng.random() < 0.5:
            back = rng.randint(1, 40)
            out.extend(enc[max(0, i + step - back):i + step])  # a retried batch written again
        i += step
    return out


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_exactly_once_across_ten_kill_9_of_the_consumer(broker, topic_prefix, tmp_path, client):
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    sb, expected, committed_rows = _workload(rng, 1200)
    enc = _with_duplicate_runs(rng, sb.encoded())
    topic = f"{topic_prefix}.src.changes"
    broker.create_topic(topic)
    half = len(enc) // 2
    produce(broker.bootstrap, topic, enc[:half])
    last = max(v["sequence"] for _, v in sb.items if v.get("status") == "END")
    db_path, log_path = tmp_path / "target.sqlite", tmp_path / "child.log"
    argv = [sys.executable, "-m", "tests.integration.consumer_child", broker.bootstrap, topic, client,
            str(db_path), f"{topic_prefix}-g", str(last), "2"]  # 2 ms per row: ~9 s of applying in all
    kills, deadline = 0, time.monotonic() + 50
    with open(log_path, "ab") as log:
        while True:
            assert time.monotonic() < deadline, f"seed {seed}: no end within 50 s after {kills} kills"
            proc = subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=log)
            if kills < KILLS:
                try:
                    rc = proc.wait(rng.uniform(0.6, 1.6))  # imports take ~0.4 s: kills land while applying
                except subprocess.TimeoutExpired:
                    os.kill(proc.pid, signal.SIGKILL)
                    rc = proc.wait(10)
                    kills += 1
                    if kills == KILLS // 2:
                        produce(broker.bootstrap, topic, enc[half:])
                    continue
                pytest.fail(f"seed {seed}: the consumer exited {rc} before kill {kills + 1}: "
                            f"{log_path.read_text()[-2000:]}")
            rc = proc.wait(max(1.0, deadline - time.monotonic()))
            assert rc == 0, f"seed {seed}: consumer exited {rc}: {log_path.read_text()[-2000:]}"
            break
    db = sqlite3.connect(db_path)
    rows = dict(db.execute("SELECT id, v FROM rows"))
    applied = [s for (s,) in db.execute("SELECT sequence FROM applied ORDER BY rowid")]
    assert kills == KILLS
    assert len(applied) == len(set(applied)), f"seed {seed}: a row change was applied twice"
    assert applied == committed_rows, f"seed {seed}: applied changes differ from the committed ones"
    assert rows == expected, f"seed {seed}: target differs from the source state"
    [(pos,)] = db.execute("SELECT pos FROM position")
    assert pos.startswith(f"{last}@")
