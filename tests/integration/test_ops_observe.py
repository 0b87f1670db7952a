"""What the operations API says a running source is doing, read from real readers in a running daemon:

- an Oracle source (LogMiner simulator) whose standby has not received the redo past ``head_limit``: the
  transactions begun before it and not committed are ``open_transactions`` (XID, start SCN, age, size),
  none of them in the stream; its lag in transactions is null with the reason;
- a MariaDB source reading its initial snapshot is ``snapshotting`` (table, tables done of total), then
  ``streaming`` with its lag in transactions (the binlog's GTID set minus the checkpoint) back to 0.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.request

import pytest
from prometheus_client import CollectorRegistry

from cdc.config.models import KafkaConfig
from cdc.dev.ports import wait_until
from cdc.ops.config import ApiConfig
from cdc.runtime.daemon import Daemon, SourceSpec
from cdc.stream.envelope import changes_topic
from readers.mysql import snapshot as mysql_snapshot
from readers.mysql.config import MySqlSourceConfig
from readers.mysql.reader import MySqlSource
from readers.oracle.config import OracleSourceConfig
from readers.oracle.reader import OracleSource
from readers.oracle.sim import simulator  # noqa: F401 - registers the simulator: DSN scheme ``simulator:``
from tests.integration.stream_check import read_stream

HEAD_LIMIT = 1_000_100  # the workload's SCNs run from 1_000_000 to past 1_000_200


def _source(port: int, name: str) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/sources/{name}", timeout=30) as resp:
        return json.loads(resp.read())


def _run(specs, broker, topic_prefix):
    daemon = Daemon(specs, KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=topic_prefix),
                    CollectorRegistry(), metrics_port=None, api=ApiConfig(enabled=True, port=0))
    status: list[int] = []
    runner = threading.Thread(target=lambda: status.append(daemon.run()), daemon=True)
    runner.start()
    return daemon, runner, status


@pytest.mark.oracle
@pytest.mark.kafka
@pytest.mark.parametrize("pipeline", ["rows", "columnar"])
def test_oracle_open_transactions_in_the_api(tmp_path, broker, topic_prefix, pipeline):
    options = f"seed=17,transactions=40,lanes=4,rows_min=2,rows_max=5,rollback_rate=0,head_limit={HEAD_LIMIT}"
    cfg = OracleSourceConfig(name="ora", dsn=f"simulator:{options}", tables=["APP.*"], dictionary_path=str(tmp_path),
                             heartbeat_interval_s=0.2, poll_interval_s=0.05, snapshot="never", pipeline=pipeline)
    spec = SourceSpec("ora", "oracle", lambda ctx: OracleSource(cfg, ctx), heartbeat_interval_s=0.2)
    daemon, runner, status = _run([spec], broker, topic_prefix)
    try:
        def held() -> dict | None:
            s = _source(daemon.api.port, "ora")
            return s if s["state"] == "streaming" and s["open_transactions"] and \
                s["position"]["low_watermark_scn"] <= HEAD_LIMIT and daemon.workers[0].source.caught_up() is False \
                and daemon.workers[0].source.dispatcher.mined_through >= HEAD_LIMIT else None

        s = wait_until(held, 60, "the reader mined up to the head limit with transactions open", interval=0.2)
        opened = s["open_transactions"]
        assert 1 <= len(opened) <= 4, opened  # at most one per lane
        for tx in opened:
            assert re.fullmatch(r"\d+\.\d+\.\d+", tx["xid"]) and 1_000_000 <= tx["start_scn"] <= HEAD_LIMIT, tx
            assert tx["age_s"] > 0 and tx["started_ms"] > 0, tx  # the simulator's clock: 2024
        assert any(tx["rows"] >= 1 and tx["bytes"] > 0 for tx in opened), opened  # one may have only its START yet
        assert [t["start_scn"] for t in opened] == sorted(t["start_scn"] for t in opened)
        assert min(t["start_scn"] for t in opened) == s["position"]["low_watermark_scn"]  # they hold the resume point
        assert s["lag_transactions"] is None and "LogMiner" in s["lag_transactions_why"]
        assert s["snapshot"] is None
    finally:
        daemon.request_stop()
        runner.join(60)
    assert status == [0], daemon.failure
    published = {txid for txid, _, _ in read_stream(broker.bootstrap, changes_topic(topic_prefix, "ora")).transactions}
    assert published and not published & {t["xid"] for t in opened}


@pytest.mark.mysql
@pytest.mark.kafka
def test_mariadb_initial_snapshot_is_snapshotting_then_streaming_with_no_lag(mariadb_primary, tmp_mysql_db, broker,
                                                                            topic_prefix, monkeypatch):
    db = tmp_mysql_db
    conn = mariadb_primary.connect(db)
    try:
        with conn.cursor() as cur:
            for t in ("a", "b", "c"):
                cur.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, v VARCHAR(20))")
                cur.executemany(f"INSERT INTO {t} VALUES (%s, %s)", [(i, f"v{i}") for i in range(40)])
    finally:
        conn.close()
    send = mysql_snapshot.TableReader.send

    def slow_send(self, after, limit):  # every chunk's query a little slow: the snapshot lasts seconds, not ms
        time.sleep(0.1)
        return send(self, after, limit)

    monkeypatch.setattr(mysql_snapshot.TableReader, "send", slow_send)
    cfg = MySqlSourceConfig(name="m", hosts=[mariadb_primary.address], user="cdc", password="cdc",
                            tables=[f"{db}.*"], snapshot="initial", snapshot_chunk_rows=5, heartbeat_interval_s=0.3)
    spec = SourceSpec("m", "mysql", lambda ctx: MySqlSource(cfg, ctx), heartbeat_interval_s=0.3)
    daemon, runner, status = _run([spec], broker, topic_prefix)
    seen = []
    try:
        def snapshotting() -> dict | None:
            s = _source(daemon.api.port, "m")
            seen.append(s["state"])
            return s if s["state"] == "snapshotting" and s["snapshot"]["table"] == f"{db}.b" else None

        s = wait_until(snapshotting, 60, "the source snapshotting its second table", interval=0.05)
        snap = s["snapshot"]
        assert (snap["kind"], snap["tables_done"], snap["tables_total"], snap["resync"]) == ("initial", 1, 3, False)
        assert s["open_transactions"] is None  # the binlog holds committed transactions only
        wait_until(lambda: _source(daemon.api.port, "m")["state"] == "streaming", 60, "the snapshot over")
        mariadb_primary.query(f"INSERT INTO {db}.a VALUES (1000, 'after')")
        s = wait_until(lambda: (s := _source(daemon.api.port, "m"))["lag_transactions"] == 0 and s, 60,
                       "every server transaction published (lag in transactions 0)", interval=0.5)
        assert s["lag_transactions_why"] is None and s["snapshot"] is None
    finally:
        daemon.request_stop()
        runner.join(60)
    assert status == [0], daemon.failure
    assert "streaming" not in seen[:seen.index("snapshotting")], [k for i, k in enumerate(seen) if i == 0 or seen[i - 1] != k]  # snapshotting is told apart from streaming
