"""Initial and incremental snapshots under concurrent writes, on a real MariaDB and on MySQL 9.7
(``mysql_source``; MySQL: the capture user of the documented MySQL 8 statements), and the broker.

Checked against the change stream itself (replayed in sequence order as a
consumer would: r/c/u upsert the after image, d deletes), not through the
Spark apply job.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest
import yaml

from cdc.config.models import KafkaConfig
from cdc.contract import SourceContext
from cdc.metrics import SourceMetrics
from cdc.publish.publisher import Publisher
from cdc.stream.events import Change, Commit, Heartbeat, expand
from readers.mysql.config import MySqlSourceConfig
from readers.mysql.reader import MySqlSource
from tests.fixtures.services import capture_login
from tests.integration.stream_check import read_stream

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka]

ROWS = 3000


def make_source(primary, tables, **kw) -> MySqlSource:
    user, password = capture_login(primary)
    cfg = MySqlSourceConfig(name="snap", hosts=[primary.address], user=user, password=password, tables=tables,
                            heartbeat_interval_s=0.3, **kw)
    return MySqlSource(cfg, SourceContext(metrics=SourceMetrics("snap")))


class Writer(threading.Thread):
    """Random inserts/updates/deletes (or only ``v = v + 1`` updates) until stopped."""

    def __init__(self, primary, db, updates_only=False, pause=0.0):
        super().__init__(daemon=True)
        self.conn = primary.connect(db)
        self.updates_only, self.pause, self.stop, self.count = updates_only, pause, threading.Event(), 0
        self.rng = random.Random(7)

    def run(self):
        with self.conn.cursor() as cur:
            while not self.stop.is_set():
                k = self.rng.randint(1, ROWS + 200)
                r = self.rng.random()
                if self.updates_only or r < 0.6:
                    cur.execute("UPDATE t SET v = v + 1 WHERE id = %s", (k,))
                elif r < 0.8:
                    cur.execute("INSERT IGNORE INTO t VALUES (%s, 0, 'new')", (k,))
                else:
                    cur.execute("DELETE FROM t WHERE id = %s", (k,))
                self.count += 1
                if self.pause:
                    self.stop.wait(self.pause)
        self.conn.close()


def load(primary, db):
    conn = primary.connect(db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, note VARCHAR(20))")
        cur.executemany("INSERT INTO t VALUES (%s, 0, %s)", [(i, f"n{i}") for i in range(1, ROWS + 1)])
    conn.close()


def source_rows(primary, db) -> dict:
    return {r[0]: {"id": r[0], "v": r[1], "note": r[2]} for r in primary.query(f"SELECT id, v, note FROM {db}.t")}


def pump(src, until, publisher=None, timeout=90) -> list:
    """Feed events (to ``publisher`` if given) until ``until(events)`` at a checkpoint; bounded.

    One events() iterator per source, kept across calls, as the daemon does."""
    if not hasattr(src, "_test_iter"):
        src._test_iter = expand(src.events())
    out, deadline = [], time.monotonic() + timeout
    for ev in src._test_iter:
        out.append(ev)
        if publisher is not None:
            publisher.publish(ev)
        if isinstance(ev, (Commit, Heartbeat)) and until(out):
            break
        assert time.monotonic() < deadline, f"timed out with {len(out)} events"
    return out


def caught_up(src, primary):
    target = primary.gtid_binlog_pos()
    return lambda evs: str(src.state) == target or all(p in str(src.state).split(",") for p in target.split(","))


def test_initial_snapshot_then_streaming_under_concurrent_writes(mysql_source, tmp_source_db, broker,
                                                                   topic_prefix):
    load(mysql_source, tmp_source_db)
    writer = Writer(mysql_source, tmp_source_db)
    writer.start()
    time.sleep(0.3)
    src = make_source(mysql_source, [f"{tmp_source_db}.t"], snapshot="initial", snapshot_chunk_rows=400)
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=topic_prefix)
    pub = Publisher("snap", "mysql", kafka, SourceMetrics("snap"))
    assert pub.recover() is None
    try:
        src.start(None)
        pump(src, lambda evs: any(isinstance(e, Heartbeat) and "snapshot" not in (e.resume or {})
                                           and e.resume.get("gtid_set") is not None for e in evs), pub)
        time.sleep(1.0)  # streaming while writes continue
        writer.stop.set()
        writer.join(10)
        pump(src, caught_up(src, mysql_source), pub)
        pub.flush()
    finally:
        writer.stop.set()
        src.close()
        pub.close()
    assert writer.count > 100
    stream = read_stream(broker.bootstrap, f"{topic_prefix}.snap.changes")
    table: dict = {}
    ops = []
    for _, rows, _ in stream.transactions:
        for rec in rows:
            ops.append(rec["op"])
            key = rec["after"]["id"] if rec["after"] else rec["before"]["id"]
            if rec["op"] == "d":
                table.pop(key, None)
            else:
                table[key] = rec["after"]
    first_stream = next(i for i, op in enumerate(ops) if op != "r")
    assert set(ops[:first_stream]) == {"r"} and "r" not in ops[first_stream:]  # snapshot before streaming
    assert first_stream > ROWS // 2  # the snapshot carried the rows that existed at its start
    assert table == source_rows(mysql_source, tmp_source_db)


def test_incremental_snapshot_never_goes_back_in_time(mysql_source, tmp_source_db, tmp_path: Path):
    from cdc.runtime.snapshot_cmd import main as snapshot_main

    load(mysql_source, tmp_source_db)
    login = capture_login(mysql_source)
    mysql_source.query("CREATE DATABASE IF NOT EXISTS ops")  # where the documented grant lets cdc write
    signal = f"ops.cdc_signal_{tmp_source_db[-6:]}"
    src = make_source(mysql_source, [f"{tmp_source_db}.t"], signal_table=signal, snapshot_chunk_rows=250)
    src.start(None)
    writer = Writer(mysql_source, tmp_source_db, updates_only=True)
    writer.start()
    cfg = tmp_path / "cdc.yaml"
    cfg.write_text(yaml.safe_dump({"kafka": {"bootstrap_servers": "127.0.0.1:1"}, "sources": [
        {"name": "snap", "kind": "mysql", "hosts": [mysql_source.address],
         "user": login[0], "password": login[1],
         "tables": [f"{tmp_source_db}.t"], "signal_table": signal}]}))
    try:
        time.sleep(0.3)

        class Args:
            config, source, table = str(cfg), "snap", [f"{tmp_source_db}.t"]
        assert snapshot_main(Args) == 0
        started = []

        def done(evs):
            if src.resume_state().get("incremental"):
                started.append(True)
            return bool(started) and not src.resume_state().get("incremental")
        events = pump(src, done)
        writer.stop.set()
        writer.join(10)
        events += pump(src, caught_up(src, mysql_source))
    finally:
        writer.stop.set()
        src.close()
        mysql_source.query(f"DROP TABLE IF EXISTS {signal}")
    changes = [e for e in events if isinstance(e, Change) and e.table.table == "t"]
    snapshot_rows = [c for c in changes if c.op == "r"]
    assert len(snapshot_rows) > ROWS // 2 and writer.count > 100
    latest: dict = {}
    for c in changes:  # the target's view after each record: v never decreases for any key
        v = c.after["v"]
        assert v >= latest.get(c.after["id"], -1), f"row {c.after['id']} went back from {latest[c.after['id']]} to {v}"
        latest[c.after["id"]] = v
    assert {k: r["v"] for k, r in source_rows(mysql_source, tmp_source_db).items()} == latest


def test_initial_snapshot_resumes_at_the_next_chunk(mysql_source, tmp_source_db):
    load(mysql_source, tmp_source_db)
    src = make_source(mysql_source, [f"{tmp_source_db}.t"], snapshot="initial", snapshot_chunk_rows=500)
    src.start(None)
    first = pump(src, lambda evs: sum(isinstance(e, Commit) for e in evs) == 2)  # two chunks reach the stream
    src.close()
    resume = [e for e in first if isinstance(e, Commit)][-1].resume
    assert resume["snapshot"]["after"] == [1000] and resume["gtid_set"]
    src = make_source(mysql_source, [f"{tmp_source_db}.t"], snapshot="initial", snapshot_chunk_rows=500)
    src.start(resume)
    rest = pump(src, lambda evs: isinstance(evs[-1], Heartbeat) and "snapshot" not in (evs[-1].resume or {}))
    src.close()
    keys = [c.after["id"] for c in first + rest if isinstance(c, Change) and c.op == "r"]
    assert keys == list(range(1, ROWS + 1))  # every row once, in key order, across the restart
    assert rest[-1].resume == {"gtid_set": resume["gtid_set"]}  # streaming starts at the snapshot's state
