"""Sources fail alone: a source whose server is down is restarted with backoff for as long as it takes,
/readyz names it meanwhile, and the daemon's other source keeps streaming; once the server is up, the
source streams too, from its checkpoint."""

from __future__ import annotations

import itertools
import shutil
import threading

import pytest
from prometheus_client import CollectorRegistry

from cdc.config.models import KafkaConfig
from cdc.dev.mariadb import MariaDB
from cdc.dev.ports import free_port, wait_until
from cdc.runtime.daemon import Daemon, SourceSpec
from readers.mysql.config import MySqlSourceConfig
from readers.mysql.reader import MySqlSource
from tests.fixtures.http import http_get

pytestmark = [pytest.mark.mysql, pytest.mark.kafka]

_ids = itertools.count(7500)


def _wait(test, timeout: float, what: str):
    return wait_until(test, timeout, what, interval=0.2)


def test_an_unreachable_source_waits_alone_and_comes_back(tmp_path, mariadb_primary, tmp_mysql_db, broker,
                                                          topic_prefix):
    late = MariaDB(tmp_path / "late", server_id=next(_ids), name="primary", port=free_port())
    good = MySqlSourceConfig(name="good", hosts=[mariadb_primary.address], user="cdc", password="cdc",
                             tables=[f"{tmp_mysql_db}.*"], heartbeat_interval_s=0.3, reconnect_backoff_s=0.1)
    down = MySqlSourceConfig(name="down", hosts=[late.address], user="cdc", password="cdc", tables=["shop.*"],
                             heartbeat_interval_s=0.3, reconnect_backoff_s=0.1, reconnect_attempts=1,
                             connect_timeout_s=1)
    specs = [SourceSpec(c.name, "mysql", lambda ctx, c=c: MySqlSource(c, ctx), heartbeat_interval_s=0.3)
             for c in (good, down)]
    daemon = Daemon(specs, KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=topic_prefix),
                    CollectorRegistry(), metrics_port=0)
    base = f"http://127.0.0.1:{daemon.health.port}"
    status: list[int] = []
    runner = threading.Thread(target=lambda: status.append(daemon.run()), daemon=True)
    runner.start()
    try:
        good_w, down_w = daemon.workers
        _wait(lambda: good_w.publisher is not None and good_w.publisher.acked_sequence > 3, 60,
              "the reachable source publishing")

        def unready():
            got = http_get(base + "/readyz")
            return got if b"source unreachable" in got[1] else None
        code, body = _wait(unready, 60, "/readyz naming the unreachable source")
        assert code == 503 and b'"down"' in body and b'"good"' not in body, body
        _wait(lambda: down_w.restarts >= 3, 30, "the unreachable source restarted with backoff")
        acked = good_w.publisher.acked_sequence
        _wait(lambda: good_w.publisher.acked_sequence > acked + 2, 10, "the other source streaming on")
        assert runner.is_alive() and down_w.error is None
        late.start()
        late.query("CREATE DATABASE shop")
        _wait(lambda: down_w.publisher is not None and down_w.publisher.acked_sequence > 2 and down_w.waiting is None,
              90, "the source streaming once its server is up")
        _wait(lambda: http_get(base + "/readyz")[0] == 200, 30, "/readyz ready for both")
    finally:
        daemon.request_stop()
        runner.join(60)
        late.stop()
        shutil.rmtree(tmp_path / "late", ignore_errors=True)
    assert status == [0], daemon.failure
