"""The whole capture pipeline (`cdc run` subprocess -> tansu) on a real MariaDB:
exactly once and in commit order across kill -9 restarts (on MariaDB and MySQL 9.7); rollbacks never appear;
a 1,000,000-row transaction streams in bounded memory."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import pytest

from cdc.errors import PublishError
from cdc.publish.recovery import read_records, read_tail
from cdc.stream.envelope import changes_topic
from cdc.stream.serde import get_serdes
from readers.mysql.position import GtidSet
from tests.e2e.mysql_daemon import Daemon, wait_for, write_config
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
                    cur.execute(f"INSERT INTO `{self.db}`.log VALUES (%s, %s)", (-i if rollback else i, writer))
                    cur.execute(f"INSERT INTO `{self.db}`.acct VALUES (%s, 1) ON DUPLICATE KEY UPDATE bal = bal + 1",
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
                       user=getattr(server, "capture_user", ("cdc", "cdc")))
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


def test_million_row_transaction_in_bounded_memory(mariadb_primary, tmp_mysql_db, broker, topic_prefix, tmp_path):
    db = tmp_mysql_db
    mariadb_primary.query(f"CREATE TABLE `{db}`.big (id INT PRIMARY KEY, v INT)")
    cfg = write_config(tmp_path / "cdc.yaml", hosts=[mariadb_primary.address], tables=[f"{db}.*"],
                       bootstrap=broker.bootstrap, prefix=topic_prefix)
    topic = changes_topic(topic_prefix, "s1")
    daemon = Daemon(cfg, tmp_path / "daemon.log").start()
    ks, vs = get_serdes("json")
    peak = 0.0
    try:
        wait_for(lambda: _started(broker.bootstrap, topic), 90, "the first heartbeat", daemon=daemon)
        mariadb_primary.query(f"INSERT INTO `{db}`.big SELECT seq, seq % 97 FROM `{db}`.seq_1_to_1000000")
        goal = GtidSet.parse(mariadb_primary.gtid_binlog_pos())
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


def test_clean_failover_under_workload_exactly_once(mariadb_pair, broker, topic_prefix, tmp_path):
    primary, replica = mariadb_pair
    _tables(primary, "app")
    replica.wait_caught_up(primary)
    cfg = write_config(tmp_path / "cdc.yaml", hosts=[primary.address, replica.address], tables=["app.*"],
                       bootstrap=broker.bootstrap, prefix=topic_prefix)
    topic = changes_topic(topic_prefix, "s1")
    daemon = Daemon(cfg, tmp_path / "daemon.log").start()
    try:
        wait_for(lambda: _started(broker.bootstrap, topic), 90, "the first heartbeat", daemon=daemon)
        with Workload(primary, "app") as before:
            time.sleep(2)
        replica.wait_caught_up(primary)
        primary.stop()  # clean failover: the replica has everything, then becomes the primary
        replica.promote()
        with Workload(replica, "app", base=500_000) as after:
            time.sleep(2)
        assert not before.errors and not after.errors, (before.errors, after.errors)
        expected = before.committed | after.committed
        wait_for(lambda: _has_all(broker.bootstrap, topic, expected), 120,
                 f"all {len(expected)} transactions after failover", daemon=daemon)
        assert daemon.stop() == 0, daemon.tail()
    finally:
        if daemon.alive():
            daemon.stop()
    ids = _log_ids(read_stream(broker.bootstrap, topic))
    assert Counter(ids) == Counter(expected), "lost or duplicated across failover"
    assert "failover" in daemon.tail(200)


def test_unclean_failover_missing_published_transactions_stops_with_divergence(mariadb_pair, broker, topic_prefix,
                                                                                tmp_path):
    primary, replica = mariadb_pair
    _tables(primary, "app")
    replica.wait_caught_up(primary)
    cfg = write_config(tmp_path / "cdc.yaml", hosts=[primary.address, replica.address], tables=["app.*"],
                       bootstrap=broker.bootstrap, prefix=topic_prefix)
    topic = changes_topic(topic_prefix, "s1")
    daemon = Daemon(cfg, tmp_path / "daemon.log").start()
    try:
        wait_for(lambda: _started(broker.bootstrap, topic), 90, "the first heartbeat", daemon=daemon)
        replica.query("STOP SLAVE")  # the replica misses everything from here on
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
