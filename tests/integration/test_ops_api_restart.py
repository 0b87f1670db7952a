"""The operations API restarts a failed source (a MariaDB source that gave up while its server was down):
the state says failed and the way back, POST restart starts it from the stream's tail once the server is
up, the restart is an operations record in the stream, and the other source never stopped."""

from __future__ import annotations

import itertools
import json
import shutil
import threading
import urllib.request

import pytest
from prometheus_client import CollectorRegistry

from cdc.config.models import KafkaConfig
from cdc.dev.mariadb import MariaDB
from cdc.dev.ports import free_port, wait_until
from cdc.ops.config import ApiConfig
from cdc.runtime.daemon import Daemon, SourceSpec
from cdc.stream.envelope import changes_topic
from readers.mysql.config import MySqlSourceConfig
from readers.mysql.reader import MySqlSource
from tests.integration.stream_check import read_stream

pytestmark = [pytest.mark.mysql, pytest.mark.kafka]

_ids = itertools.count(7600)


def _call(port: int, method: str, path: str) -> tuple[int, dict]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1{path}", method=method,
                                 data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_failed_source_restarted_through_the_api(tmp_path, mariadb_primary, tmp_mysql_db, broker, topic_prefix):
    late = MariaDB(tmp_path / "late", server_id=next(_ids), name="primary", port=free_port())
    good = MySqlSourceConfig(name="good", hosts=[mariadb_primary.address], user="cdc", password="cdc",
                             tables=[f"{tmp_mysql_db}.*"], heartbeat_interval_s=0.3, reconnect_backoff_s=0.1)
    down = MySqlSourceConfig(name="down", hosts=[late.address], user="cdc", password="cdc", tables=["shop.*"],
                             heartbeat_interval_s=0.3, reconnect_backoff_s=0.1, reconnect_attempts=1,
                             connect_timeout_s=1)
    specs = [SourceSpec(c.name, "mysql", lambda ctx, c=c: MySqlSource(c, ctx), heartbeat_interval_s=0.3)
             for c in (good, down)]
    daemon = Daemon(specs, KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=topic_prefix),
                    CollectorRegistry(), metrics_port=None, source_restart_limit=1,
                    api=ApiConfig(enabled=True, port=0))
    port = daemon.api.port
    status: list[int] = []
    runner = threading.Thread(target=lambda: status.append(daemon.run()), daemon=True)
    runner.start()
    try:
        failed = wait_until(lambda: (s := _call(port, "GET", "/sources/down")[1])["state"] == "failed" and s,
                            60, "the unreachable source failed (source_restart_limit 1)", interval=0.2)
        assert failed["why"] == "NoPrimaryFound" and failed["way_back"][-1].startswith(
            "POST /api/v1/sources/down/restart"), failed
        assert _call(port, "GET", "/sources/good")[1]["state"] == "streaming"
        late.start()
        late.query("CREATE DATABASE shop")
        code, done = _call(port, "POST", "/sources/down/restart")
        assert code == 200 and done["operation"]["action"] == "restart" and done["operation"]["actor"] == "loopback"
        assert done["operation"]["detail"]["after"] == "NoPrimaryFound"
        wait_until(lambda: _call(port, "GET", "/sources/down")[1]["state"] == "streaming", 60,
                   "the restarted source streaming", interval=0.2)
        again = _call(port, "POST", "/sources/down/restart")[1]
        assert again["did"].startswith("nothing: the source runs") and again["operation"] is None
        wait_until(lambda: daemon.workers[1].publisher.acked_sequence > 2, 30, "the restarted source publishing")
    finally:
        daemon.request_stop()
        runner.join(60)
        late.stop()
        shutil.rmtree(tmp_path / "late", ignore_errors=True)
    assert status == [0], daemon.failure
    ops = [hb["resume"]["operation"] for hb in read_stream(broker.bootstrap, changes_topic(topic_prefix, "down")).heartbeats
           if (hb.get("resume") or {}).get("operation")]
    assert [(o["action"], o["actor"]) for o in ops] == [("restart", "loopback")]
