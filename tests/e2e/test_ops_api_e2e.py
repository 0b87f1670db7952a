"""The operations API driving a real `cdc run` (subprocess) on MariaDB or MySQL 9.7 and the broker, and nothing else:
pause (no record written while paused, writer transactions pile up on the source), a daemon restart
that stays paused, resume, and every source row in the stream exactly once; each action is an
operations record in the stream (who, what, when), and the library consumer passes over them."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections import Counter

import pytest
import yaml

from cdc.consumer.stream_consumer import ChangeStreamConsumer
from cdc.consumer.transactions import Transaction
from cdc.stream.envelope import changes_topic
from tests.e2e.mysql_daemon import Daemon, wait_for, write_config
from tests.fixtures.services import capture_login
from tests.integration.stream_check import read_stream

pytestmark = [pytest.mark.mysql, pytest.mark.kafka, pytest.mark.slow]

TOKEN = "e2e-operator-token-0123456789"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}/api/v1"

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())
        except OSError:
            return 0, {}

    def state(self, name: str = "s1") -> str | None:
        status, body = self.call("GET", f"/sources/{name}")
        return body.get("state") if status == 200 else None


def _insert(server, db: str, ids: range) -> None:
    conn = server.connect()
    with conn.cursor() as cur:
        for i in ids:  # one transaction each
            cur.execute(f"INSERT INTO `{db}`.t VALUES (%s, %s)", (i, i % 7))
            cur.execute("COMMIT")
    conn.close()


def _rows(stream) -> Counter:
    return Counter(r["after"]["id"] for _, rows, _ in stream.transactions for r in rows if r["after"])


def _operations(stream) -> list[dict]:
    return [hb["resume"]["operation"] for hb in stream.heartbeats if (hb.get("resume") or {}).get("operation")]


def test_pause_survives_a_restart_resume_delivers_everything_once(mysql_source, tmp_source_db, broker,
                                                                  topic_prefix, tmp_path):
    db, src = tmp_source_db, mysql_source  # MariaDB or MySQL 9.7 (its documented capture user)
    src.query(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v INT)")
    cfg = write_config(tmp_path / "cdc.yaml", hosts=[src.address], tables=[f"{db}.*"],
                       bootstrap=broker.bootstrap, prefix=topic_prefix,
                       user=capture_login(mysql_source))
    port = _free_port()
    (tmp_path / "op.token").write_text(TOKEN)
    doc = yaml.safe_load(cfg.read_text())
    doc["api"] = {"enabled": True, "port": port,
                  "tokens": [{"name": "alice", "file": str(tmp_path / "op.token"), "role": "operator"}]}
    cfg.write_text(yaml.safe_dump(doc))
    topic = changes_topic(topic_prefix, "s1")
    api = Api(port)
    daemon = Daemon(cfg, tmp_path / "daemon.log").start()
    try:
        wait_for(lambda: api.state() == "streaming", 90, "the source streaming (API)", daemon=daemon)
        _insert(src, db, range(1, 51))
        wait_for(lambda: len(_rows(read_stream(broker.bootstrap, topic))) == 50, 90, "rows 1..50", daemon=daemon)

        status, paused = api.call("POST", "/sources/s1/pause", {"reason": "e2e maintenance"})
        assert status == 200 and paused["operation"]["action"] == "pause", paused
        wait_for(lambda: api.state() == "paused", 60, "the source paused", daemon=daemon)
        again = api.call("POST", "/sources/s1/pause")
        assert again[0] == 200 and again[1]["did"].startswith("nothing"), again
        at_pause = read_stream(broker.bootstrap, topic)
        assert _operations(at_pause)[-1]["actor"] == "alice"
        _insert(src, db, range(51, 101))  # pile up on the source while paused
        time.sleep(3)
        assert read_stream(broker.bootstrap, topic).records == at_pause.records  # nothing written while paused

        assert daemon.stop() == 0
        daemon = Daemon(cfg, tmp_path / "daemon.log").start()
        wait_for(lambda: api.state() == "paused", 90, "the restarted daemon still paused", daemon=daemon)
        _insert(src, db, range(101, 121))
        time.sleep(3)
        still = read_stream(broker.bootstrap, topic)
        assert still.records == at_pause.records and len(_rows(still)) == 50

        status, resumed = api.call("POST", "/sources/s1/resume", {"reason": "done"})
        assert status == 200 and resumed["operation"]["action"] == "resume", resumed
        assert api.call("POST", "/sources/s1/resume")[1]["did"] == "nothing: not paused"
        wait_for(lambda: api.state() == "streaming", 60, "the source streaming again", daemon=daemon)
        _insert(src, db, range(121, 131))
        wait_for(lambda: len(_rows(read_stream(broker.bootstrap, topic))) == 130, 90, "rows 1..130", daemon=daemon)
        status, body = api.call("GET", "/sources/s1")
        assert body["tail"]["sequence"] > 0 and body["position"]["gtid_set"]
    finally:
        daemon.stop()
    stream = read_stream(broker.bootstrap, topic)
    rows = _rows(stream)
    assert set(rows) == set(range(1, 131)) and max(rows.values()) == 1  # every row, exactly once
    ops = _operations(stream)
    assert [(o["action"], o["actor"]) for o in ops] == [("pause", "alice"), ("resume", "alice")]
    assert ops[0]["detail"] == {"reason": "e2e maintenance"} and ops[0]["at_ms"] <= ops[1]["at_ms"]

    # the library consumer passes over the operations records: every transaction, no stop
    consumer = ChangeStreamConsumer(broker.bootstrap, topic, start="beginning")
    try:
        got = Counter()
        for item in consumer.items(idle_s=5):
            if isinstance(item, Transaction):
                got.update(ch.after["id"] for ch in item.changes if ch.after)
    finally:
        consumer.close()
    assert got == rows
