"""The whole capture pipeline (`cdc run` subprocess -> tansu) on a real MariaDB and a real MySQL 9.7, every test
once per flavour: exactly once and in commit order across kill -9 restarts; rollbacks never appear; a
1,000,000-row transaction streams in bounded memory; a clean failover under two writers, with a column DDL before
and after it, loses and duplicates nothing and the applied target compares EQUAL; an unclean failover to a
server lacking published transactions stops with the divergence error."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import duckdb
import pytest
import yaml

from cdc.cli import main as cdc_main
from cdc.config.loader import load_config
from cdc.errors import PublishError
from cdc.publish.recovery import read_records, read_tail
from cdc.stream.envelope import changes_topic
from cdc.stream.serde import get_serdes
from readers.mysql.position import GtidSet
from streaming.apply import job
from tests.e2e.mysql_daemon import Daemon, wait_for, write_config
from tests.fixtures.services import capture_login
from tests.integration.stream_check import read_stream

pytestmark = [pytest.mark.mysql, pytest.mark.kafka, pytest.mark.slow]


class Workload:
    """Two writers; each transaction inserts a unique id into ``log`` and touches ``acct``.
    Every 5th transaction is rolled back (ids < 0)."""

    def __init__(self, server, db: str, base: int = 0) -> None:
        self.server, self.db, self.base = server, db, base
        self.committed: set[int] = set()
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._run, args=(w,)) for w in range(2)]

    def _run(self, writer: int) -> None:
        try:
            conn = self.server.connect()
            n = 0
            with conn.cursor() as cur:
                while not self.stop.is_set():
                    n += 1
                    i = self.base + writer * 100_000 + n
                    rollback = n % 5 == 0
                    cur.execute("BEGIN")
                    cur.execute(f"INSERT INTO `{self.db}`.log (id, writer) VALUES (%s, %s)",
                                (-i if rollback else i, writer))
                    cur.execute(f"INSERT INTO `{self.db}`.acct (id, bal) VALUES (%s, 1) "
                                "ON DUPLICATE KEY UPDATE bal = bal + 1",
                                (n % 20,))
                    if rollback:
                        cur.execute("ROLLBACK")
                    else:
                        cur.execute("COMMIT")
                        self.committed.add(i)
                    time.sleep(0.003)
            conn.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(30)


def _stream(bootstrap: str, topic: str):
    """The stream so far, None while the topic does not exist yet."""
    try:
        return read_stream(bootstrap, topic)
    except PublishError:
        return None


def _started(bootstrap: str, topic: str) -> bool:
    s = _stream(bootstrap, topic)
    return bool(s and s.heartbeats)


def _has_all(bootstrap: str, topic: str, expected: set[int]) -> bool:
    s = _stream(bootstrap, topic)
    return s is not None and set(_log_ids(s)) >= expected


def _log_ids(stream) -> list[int]:
    return [r["after"]["id"] for _, rows, _ in stream.transactions for r in rows
            if r["source"]["table"] == "log" and r["op"] == "c"]


def _gtid_seq(txid: str) -> int:
    """The sequence number of a one-server GTID: MariaDB ``domain-server-seq``, MySQL ``uuid:N``."""
    return int(txid.rsplit(":", 1)[1]) if ":" in txid else int(txid.split("-")[2])


def test_exactly_once_in_commit_order_across_kill9_restarts(mysql_source, tmp_source_db, broker, topic_prefix,
                                                             tmp_path):
    db, server = tmp_source_db, mysql_source
    server.query(f"CREATE TABLE `{db}`.log (id INT PRIMARY KEY, writer INT)")
    server.query(f"CREATE TABLE `{db}`.acct (id INT PRIMARY KEY, bal INT)")
    cfg = write_config(tmp_path / "cdc.yaml", hosts=[server.address], tables=[f"{db}.*"],
                       bootstrap=broker.bootstrap, prefix=topic_prefix,
                       user=capture_login(server))
    topic = changes_topic(topic_prefix, "s1")
    daemon = Daemon(cfg, tmp_path / "daemon.log").start()
    try:
        wait_for(lambda: _started(broker.bootstrap, topic), 90, "the first heartbeat", daemon=daemon)
        rnd = random.Random(7)
        with Workload(server, db) as work:
            for _ in range(10):
                time.sleep(rnd.uniform(0.3, 1.5))
                daemon.kill9()
                daemon = Daemon(cfg, tmp_path / "daemon.log").start()
            time.sleep(1)
        assert not work.errors, work.errors
        expected = work.committed
        wait_for(lambda: _has_all(broker.bootstrap, topic, expected), 90,
                 f"all {len(expected)} transactions in the stream", daemon=daemon)
        assert daemon.stop() == 0, daemon.tail()
    finally:
        if daemon.alive():
            daemon.stop()
    stream = read_stream(broker.bootstrap, topic)
    ids = _log_ids(stream)
    dupes = [i for i, c in Counter(ids).items() if c > 1]
    assert not dupes, f"published twice: {dupes[:10]}"
    assert set(ids) == expected
    assert all(i > 0 for i in ids), "a rolled-back transaction appeared"
    seqs = [_gtid_seq(txid) for txid, _, _ in stream.transactions]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "transactions out of commit order"
    assert len(ids) > 100


# 1..1,000,000 on both flavours without MariaDB's seq_1_to_N engine or MySQL's recursion limit: six digits
MILLION = ("WITH d (n) AS (SELECT 0 UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 "
           "UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) "
           "SELECT 1 + a.n + 10 * b.n + 100 * c.n + 1000 * e.n + 10000 * f.n + 100000 * g.n AS n "
           "FROM d a, d b, d c, d e, d f, d g")


def test_million_row_transaction_in_bounded_memory(mysql_source, tmp_source_db, broker, topic_prefix, tmp_path):
    db, server = tmp_source_db, mysql_source
    server.query(f"CREATE TABLE `{db}`.big (id INT PRIMARY KEY, v INT)")
    cfg = write_config(tmp_path / "cdc.yaml", hosts=[server.address], tables=[f"{db}.*"],
                       bootstrap=broker.bootstrap, prefix=topic_prefix,
                       user=capture_login(server))
    topic = changes_topic(topic_prefix, "s1")
    daemon = Daemon(cfg, tmp_path / "daemon.log").start()
    ks, vs = get_serdes("json")
    peak = 0.0
    try:
        wait_for(lambda: _started(broker.bootstrap, topic), 90, "the first heartbeat", daemon=daemon)
        server.query(f"INSERT INTO `{db}`.big SELECT n, n % 97 FROM ({MILLION}) seq")
        goal = GtidSet.parse(server.gtid_binlog_pos())
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            assert daemon.alive(), daemon.tail()
            peak = max(peak, daemon.peak_rss_mb())
            resume = read_tail(broker.bootstrap, topic, ks, vs).resume
            if resume and GtidSet.parse(resume["gtid_set"]).issuperset(goal):
                break
            time.sleep(2)
        else:
            raise AssertionError(f"1M-row transaction not published in time\n{daemon.tail()}")
        peak = max(peak, daemon.peak_rss_mb())
        assert daemon.stop() == 0, daemon.tail()
    finally:
        if daemon.alive():
            daemon.stop()
    print(f"daemon peak RSS (VmHWM) for a 1,000,000-row transaction: {peak:.0f} MB")
    assert peak < 400, f"daemon peak RSS {peak:.0f} MB"
    ends = [v for _, _, v in read_records(broker.bootstrap, topic, ks, vs) if v.get("status") == "END"]
    assert [e["event_count"] for e in ends] == [1_000_000]


def _tables(server, db):
    server.query(f"CREATE DATABASE IF NOT EXISTS `{db}`")
    server.query(f"CREATE TABLE `{db}`.log (id INT PRIMARY KEY, writer INT)")
    server.query(f"CREATE TABLE `{db}`.acct (id INT PRIMARY KEY, bal INT)")


def _apply_config(cfg, tmp_path) -> None:
    """Add a DuckDB target ``duck`` and the apply of ``s1`` to it to the config at ``cfg``."""
    doc = yaml.safe_load(cfg.read_text())
    doc["targets"] = [{"name": "duck", "kind": "duckdb", "path": str(tmp_path / "target.duckdb")}]
    doc["apply"] = [{"source": "s1", "target": "duck", "checkpoint_dir": str(tmp_path / "ck-duck"),
                     "trigger_interval_s": 0.2}]
    cfg.write_text(yaml.safe_dump(doc))


def _in_duck(tmp_path, sid: int) -> bool:
    try:
        con = duckdb.connect(str(tmp_path / "target.duckdb"), read_only=True)
    except duckdb.Error:  # not created yet
        return False
    try:
        return bool(con.execute("SELECT 1 FROM sentinel WHERE id = ?", [sid]).fetchall())
    except duckdb.Error:  # the table is not there yet
        return False
    finally:
        con.close()


@pytest.mark.spark
def test_clean_failover_under_workload_with_column_ddl_exactly_once_and_compare_equal(source_pair, broker,
                                                                                       topic_prefix, tmp_path, spark,
                                                                                       capsys):
    """Two writers before and after a clean failover, each phase with an ADD COLUMN ... DEFAULT while they write;
    every committed transaction once in the stream, then applied to DuckDB, and `cdc compare` (reading the promoted
    server) reports every table EQUAL."""
    primary, replica = source_pair
    _tables(primary, "app")
    replica.wait_caught_up(primary)
    cfg = write_config(tmp_path / "cdc.yaml", hosts=[primary.address, replica.address], tables=["app.*"],
                       bootstrap=broker.bootstrap, prefix=topic_prefix, user=primary.capture_user)
    _apply_config(cfg, tmp_path)
    topic = changes_topic(topic_prefix, "s1")
    daemon = Daemon(cfg, tmp_path / "daemon.log").start()
    try:
        wait_for(lambda: _started(broker.bootstrap, topic), 90, "the first heartbeat", daemon=daemon)
        with Workload(primary, "app") as before:
            time.sleep(1)
            primary.query("ALTER TABLE app.log ADD COLUMN note VARCHAR(20) DEFAULT 'pre'")
            time.sleep(1)
        replica.wait_caught_up(primary)
        primary.stop()  # clean failover: the replica has everything, then becomes the primary
        replica.promote()
        with Workload(replica, "app", base=500_000) as after:
            time.sleep(1)
            replica.query("ALTER TABLE app.acct ADD COLUMN tier VARCHAR(10) NOT NULL DEFAULT 'std'")
            time.sleep(1)
        assert not before.errors and not after.errors, (before.errors, after.errors)
        replica.query("CREATE TABLE app.sentinel (id INT PRIMARY KEY)")
        replica.query("INSERT INTO app.sentinel VALUES (1)")  # commit order: applied after everything above
        expected = before.committed | after.committed
        wait_for(lambda: _has_all(broker.bootstrap, topic, expected), 120,
                 f"all {len(expected)} transactions after failover", daemon=daemon)
        wait_for(lambda: any(r["source"]["table"] == "sentinel" for _, rows, _ in
                             _stream(broker.bootstrap, topic).transactions for r in rows), 60,
                 "the sentinel in the stream", daemon=daemon)
        assert daemon.stop() == 0, daemon.tail()
    finally:
        if daemon.alive():
            daemon.stop()
    stream = read_stream(broker.bootstrap, topic)
    ids = _log_ids(stream)
    assert Counter(ids) == Counter(expected), "lost or duplicated across failover"
    assert "failover" in daemon.tail(200)
    assert len(before.committed) > 20 and len(after.committed) > 20
    for _ in range(4):  # bounded: the apply job to idleness until the sentinel is in the target
        job.run(load_config(cfg), spark=spark, until_idle_s=4.0)
        if _in_duck(tmp_path, 1):
            break
    else:
        raise AssertionError("the sentinel did not reach the DuckDB target")
    capsys.readouterr()
    code = cdc_main(["compare", "--config", str(cfg), "--source", "s1", "--target", "duck"])
    out = capsys.readouterr().out
    assert code == 0, f"exit {code}\n{out}"
    for table in ("log", "acct", "sentinel"):
        assert f"{table}: EQUAL" in out, out
    con = duckdb.connect(str(tmp_path / "target.duckdb"), read_only=True)
    try:  # the columns both DDLs added, in the target too
        assert [c[0] for c in con.execute("DESCRIBE log").fetchall()][:3] == ["id", "writer", "note"]
        assert [c[0] for c in con.execute("DESCRIBE acct").fetchall()][:3] == ["id", "bal", "tier"]
    finally:
        con.close()


def test_unclean_failover_missing_published_transactions_stops_with_divergence(source_pair, broker, topic_prefix,
                                                                                tmp_path):
    primary, replica = source_pair
    _tables(primary, "app")
    replica.wait_caught_up(primary)
    cfg = write_config(tmp_path / "cdc.yaml", hosts=[primary.address, replica.address], tables=["app.*"],
                       bootstrap=broker.bootstrap, prefix=topic_prefix, user=primary.capture_user)
    topic = changes_topic(topic_prefix, "s1")
    daemon = Daemon(cfg, tmp_path / "daemon.log").start()
    try:
        wait_for(lambda: _started(broker.bootstrap, topic), 90, "the first heartbeat", daemon=daemon)
        replica.query("STOP REPLICA")  # the replica misses everything from here on
        with Workload(primary, "app") as work:
            time.sleep(1.5)
        wait_for(lambda: _has_all(broker.bootstrap, topic, work.committed), 60, "the published transactions",
                 daemon=daemon)
        primary.kill()
        replica.promote()
        status = daemon.proc.wait(90)
    finally:
        if daemon.alive():
            daemon.stop()
    assert status != 0
    tail = daemon.tail(40).lower()
    assert "divergence" in tail and replica.address in tail, tail
    ids = _log_ids(read_stream(broker.bootstrap, topic))
    assert sorted(ids) == sorted(work.committed), "the stream must hold exactly what was published, nothing else"
