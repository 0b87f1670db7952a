"""What the daemon-side network-fault tests share: a bank of 20 accounts on the real MariaDB, the daemon
in-process around one MySQL source (so the test reads its metrics and /readyz), and the exactness check
of the stream against the source."""

from __future__ import annotations

import re
from decimal import Decimal

import orjson

from cdc.config.models import KafkaConfig
from cdc.errors import PublishError
from cdc.publish.recovery import read_tail
from cdc.runtime.daemon import SourceSpec
from cdc.stream.envelope import changes_topic
from cdc.stream.serde import get_serdes
from readers.mysql.config import MySqlSourceConfig
from readers.mysql.position import GtidSet
from readers.mysql.reader import MySqlSource
from tests.fixtures.daemon_thread import DaemonThread
from tests.fixtures.http import http_get
from tests.integration.stream_check import read_stream

SOURCE = "bank"
HEARTBEAT_S = 0.5


def make_bank(mariadb, db: str) -> None:
    mariadb.query(f"CREATE TABLE `{db}`.accounts (id INT PRIMARY KEY, balance DECIMAL(12,2) NOT NULL)")
    mariadb.query(f"INSERT INTO `{db}`.accounts VALUES " + ", ".join(f"({i}, 1000.00)" for i in range(20)))


class Run(DaemonThread):
    """The daemon in a thread streaming ``db.accounts`` from ``host`` to ``kafka``, with its HTTP endpoints."""

    def __init__(self, host: str, db: str, kafka: KafkaConfig, **source: object) -> None:
        """``source``: more source settings (``user``/``password``: cdc/cdc unless given)."""
        source = {"user": "cdc", "password": "cdc", **source}
        cfg = MySqlSourceConfig(name=SOURCE, hosts=[host], tables=[f"{db}.accounts"],
                                heartbeat_interval_s=HEARTBEAT_S, reconnect_backoff_s=0.2, snapshot="never",
                                connect_timeout_s=1, **source)
        spec = SourceSpec(SOURCE, "mysql", lambda ctx: MySqlSource(cfg, ctx), heartbeat_interval_s=HEARTBEAT_S)
        self.kafka = kafka
        self.topic = changes_topic(kafka.topic_prefix, SOURCE)
        super().__init__([spec], kafka, drain_timeout_s=20)

    def readyz(self) -> tuple[int, dict]:
        code, body = http_get(self.base + "/readyz")
        return code, orjson.loads(body)

    def not_ready_reason(self) -> str | None:
        code, body = self.readyz()
        return str(body["reasons"][SOURCE]) if code == 503 and SOURCE in body["reasons"] else None

    def metric(self, name: str) -> float:
        return self.daemon.workers[0].metrics.registry.get_sample_value(name, {"source": SOURCE}) or 0.0

    def reconnects(self) -> float:
        return self.metric("cdc_source_reconnects_total")

    def published(self) -> float:
        return self.metric("cdc_source_transactions_published_total")

    def publishing(self, more: int = 20, timeout: float = 30) -> None:
        """Wait until ``more`` further transactions are acknowledged by the broker."""
        mark = self.published()
        self.wait_for(f"{more} more transactions published", lambda: self.published() >= mark + more, timeout)

    def caught_up(self, gtid_end: str) -> bool:
        try:
            tail = read_tail(self.kafka.bootstrap_servers, self.topic, *get_serdes("json"), deadline_s=10)
        except PublishError:
            return False
        return bool(tail.resume) and GtidSet.parse(tail.resume["gtid_set"]).issuperset(GtidSet.parse(gtid_end))

    def finish(self, work, mariadb) -> None:
        """The end of a fault test: the workload raised nothing, the stream holds everything the source
        committed, and the daemon stops cleanly (status 0)."""
        assert not work.errors, work.errors
        end = mariadb.gtid_binlog_pos()
        self.wait_for("the stream caught up with the source", lambda: self.caught_up(end), timeout=30)
        assert self.stop() == 0, self.daemon.failure

    def stop(self, timeout: float = 40) -> int:
        self.daemon.request_stop()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the daemon did not stop"
        return self.status[0]


def check_exact(bootstrap: str, topic: str, mariadb, db: str, committed: int):
    """Every committed transfer in the stream exactly once, in commit order, gapless sequences (read_stream
    asserts those and the BEGIN/END structure), and the balances it implies equal to the source's."""
    stream = read_stream(bootstrap, topic)
    ids = [txid for txid, _, _ in stream.transactions]
    assert len(ids) == len(set(ids)), "a transaction was published twice"
    assert len(ids) == committed, f"{len(ids)} transactions in the stream, {committed} committed"
    seqs = [int(re.split(r"[-:]", txid)[-1]) for txid in ids]  # MariaDB d-s-N, MySQL uuid:N
    assert seqs == sorted(seqs), "transactions out of commit order"
    assert all(len(rows) == 2 for _, rows, _ in stream.transactions), "a transfer without both of its rows"
    balances = {i: Decimal("1000.00") for i in range(20)}
    for _, rows, _ in stream.transactions:
        for r in rows:
            balances[r["after"]["id"]] = Decimal(r["after"]["balance"])
    source = {i: Decimal(b) for i, b in mariadb.query(f"SELECT id, balance FROM `{db}`.accounts")}
    assert balances == source
    return stream
