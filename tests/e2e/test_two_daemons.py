"""Two daemons for one source (a rolling update, a stuck pod and its replacement): one writer at a time.

A bank-transfer workload runs while daemon A streams; daemon B starts with the SAME config. B fences A
through the broker (cdc/publish/lease.py): A stops with an error naming B, B takes over after A's
open transaction (closed with ABORTED, read again). Then B is replaced by C without overlap (SIGTERM
first). The stream must be valid as a consumer reads it (gapless sequences, no duplicate, every data
record inside its BEGIN/END with matching counts), every committed transfer in it exactly once, and
the balances it implies equal to the source's.
"""

from __future__ import annotations

import random
import threading
import time
from decimal import Decimal

import pytest
import yaml

from cdc.envelope import changes_topic
from readers.mysql.position import GtidSet
from tests.e2e.mysql_daemon import Daemon, wait_for
from tests.integration.stream_check import read_stream

pytestmark = [pytest.mark.mysql, pytest.mark.kafka, pytest.mark.slow]


class Transfers:
    """Transfers between 20 accounts until stopped; each a transaction of two updates."""

    def __init__(self, server, db: str) -> None:
        self.server, self.db, self.count = server, db, 0
        self.stop, self.errors = threading.Event(), []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        rng = random.Random(5)
        try:
            conn = self.server.connect(self.db, autocommit=False)
            with conn.cursor() as cur:
                while not self.stop.is_set():
                    a, b = rng.sample(range(20), 2)
                    amount = rng.randint(1, 50)
                    cur.execute("UPDATE accounts SET balance = balance - %s WHERE id = %s", (amount, a))
                    cur.execute("UPDATE accounts SET balance = balance + %s WHERE id = %s", (amount, b))
                    conn.commit()
                    self.count += 1
                    time.sleep(0.004)
            conn.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)


def _config(path, mariadb, db: str, broker, prefix: str):
    cfg = {"sources": [{"name": "bank", "kind": "mysql", "hosts": [mariadb.address], "user": "cdc", "password": "cdc",
                        "tables": [f"{db}.accounts"], "heartbeat_interval_s": 0.5, "reconnect_backoff_s": 0.2,
                        "snapshot": "never"}],
           "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": prefix},
           "metrics": {"port": 0}, "drain_timeout_s": 20}
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_a_second_daemon_fences_the_first_and_the_stream_stays_exact(tmp_path, mariadb_primary, tmp_mysql_db, broker,
                                                                    topic_prefix):
    db, my = tmp_mysql_db, mariadb_primary
    my.query(f"CREATE TABLE `{db}`.accounts (id INT PRIMARY KEY, balance DECIMAL(12,2) NOT NULL)")
    my.query(f"INSERT INTO `{db}`.accounts VALUES " + ", ".join(f"({i}, 1000.00)" for i in range(20)))
    config = _config(tmp_path / "cdc.yaml", my, db, broker, topic_prefix)  # ONE config for every daemon
    topic = changes_topic(topic_prefix, "bank")
    daemons = []
    try:
        a = Daemon(config, tmp_path / "a.log").start()
        daemons.append(a)
        wait_for(lambda: "streaming from" in (tmp_path / "a.log").read_text(), 60, "daemon A streaming")
        with Transfers(my, db) as work:
            mark = work.count
            wait_for(lambda: work.count > mark + 300, 60, "transfers while A streams")
            b = Daemon(config, tmp_path / "b.log").start()  # overlap: A is mid-stream
            daemons.append(b)
            wait_for(lambda: a.proc.poll() is not None, 30, "daemon A fenced")
            assert a.proc.returncode == 2, a.proc.returncode
            a_log = (tmp_path / "a.log").read_text()
            assert "took over the stream" in a_log and "WriterFenced" in a_log, a_log[-3000:]
            assert a_log.count("took over the stream") <= 2, "the error is repeated"  # daemon + CLI at most
            mark = work.count
            wait_for(lambda: work.count > mark + 200, 60, "transfers after the takeover")
            assert b.proc.poll() is None, (tmp_path / "b.log").read_text()[-3000:]
            assert b.stop() == 0  # no overlap: B drains, then C starts
            c = Daemon(config, tmp_path / "c.log").start()
            daemons.append(c)
            mark = work.count
            wait_for(lambda: work.count > mark + 100, 60, "transfers after the replacement")
        assert not work.errors, work.errors
        end = GtidSet.parse(my.gtid_binlog_pos())

        def caught_up():
            s = read_stream(broker.bootstrap, topic)
            ends = [r for _, _, r in s.transactions] + s.heartbeats
            return any(GtidSet.parse(r["resume"]["gtid_set"]).issuperset(end) for r in ends if r.get("resume"))
        wait_for(caught_up, 60, "daemon C caught up")
        assert c.stop() == 0
    finally:
        for d in daemons:
            if d.proc is not None and d.proc.poll() is None:
                d.stop()

    stream = read_stream(broker.bootstrap, topic)  # asserts gapless sequences and BEGIN/END structure
    assert stream.duplicates == 0, "two writers numbered the same sequences"
    ids = [txid for txid, _, _ in stream.transactions]
    assert len(ids) == len(set(ids)), "a transaction was published twice"
    assert len(ids) == work.count, (len(ids), work.count)
    balances = {i: Decimal("1000.00") for i in range(20)}
    for _, rows, _ in stream.transactions:
        for r in rows:
            balances[r["after"]["id"]] = Decimal(r["after"]["balance"])
    source = {i: Decimal(b) for i, b in my.query(f"SELECT id, balance FROM `{db}`.accounts")}
    assert balances == source
    assert sum(balances.values()) == Decimal("20000.00")
