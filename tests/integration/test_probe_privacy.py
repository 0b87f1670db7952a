"""/healthz and /readyz carry no row values (#15), on real MariaDB and the broker through the daemon.

A MariaDB source stops on a row whose record is above the broker's size limit (RecordTooLarge: its
message quotes the row's key). A second, scripted source is stalled inside a transaction, so the
daemon drains for a while after the failure and its endpoints keep answering: /readyz names the
failed source, the error class, the table and the stream position, and neither the key nor the
value; the log line of the failure has the full error and the position.
"""

from __future__ import annotations

import threading
import time

import pytest
from prometheus_client import CollectorRegistry

from cdc.config.models import KafkaConfig
from cdc.runtime.daemon import Daemon, SourceSpec
from readers.mysql.config import MySqlSourceConfig
from readers.mysql.reader import MySqlSource
from tests.fixtures.http import http_get
from tests.integration.scripted_source import ScriptedSource

pytestmark = [pytest.mark.mysql, pytest.mark.kafka, pytest.mark.slow]

KEY = "KEY-4711-PRIVATE"
VALUE = "VALUE-0815-PRIVATE"
LIMIT = 64 * 1024
STALL_S = 30.0  # the scripted source sits inside a transaction this long: the daemon drains meanwhile


def test_a_failed_source_shows_class_table_and_position_never_the_row(mariadb_primary, broker, topic_prefix,
                                                                       tmp_mysql_db, caplog):
    db, q = tmp_mysql_db, mariadb_primary.query
    q(f"CREATE TABLE `{db}`.accounts (id VARCHAR(40) PRIMARY KEY, note LONGTEXT)")
    shop = MySqlSourceConfig(name="shop", hosts=[mariadb_primary.address], user="cdc", password="cdc",
                             tables=[f"{db}.*"], heartbeat_interval_s=0.5, reconnect_backoff_s=0.2)
    specs = [SourceSpec("shop", "mysql", lambda ctx: MySqlSource(shop, ctx), heartbeat_interval_s=0.5),
             SourceSpec("scripted", "scripted", lambda ctx: ScriptedSource(10, metrics=ctx.metrics, stall_step=2,
                                                                           stall_s=STALL_S))]
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=topic_prefix)
    daemon = Daemon(specs, kafka, CollectorRegistry(), metrics_port=0, drain_timeout_s=STALL_S + 20,
                    producer_config={"message.max.bytes": LIMIT, "batch.size": LIMIT})
    base = f"http://127.0.0.1:{daemon.health.port}"
    status: list[int] = []
    runner = threading.Thread(target=lambda: status.append(daemon.run()), daemon=True)
    with caplog.at_level("INFO"):
        runner.start()
        shop_worker = daemon.workers[0]
        _wait(lambda: shop_worker.publisher is not None and shop_worker.publisher.acked_sequence, 60,
              "the MariaDB source publishing (heartbeats acknowledged)")
        q(f"INSERT INTO `{db}`.accounts VALUES ('ok-1', 'fine')")
        _wait(lambda: shop_worker.publisher.last_resume is not None and "gtid" in str(shop_worker.last_resume), 30,
              "the first transaction acknowledged")
        q(f"INSERT INTO `{db}`.accounts VALUES ('{KEY}', REPEAT('{VALUE}', 10000))")  # ~180 kB > LIMIT

        def failed() -> tuple[int, bytes] | None:
            got = http_get(base + "/readyz")
            return got if b'"shop":"failed' in got[1] else None

        code, ready = _wait(failed, 60, "/readyz reporting the failed source")
        alive = http_get(base + "/healthz")
        resume = shop_worker.last_resume
        runner.join(STALL_S + 40)
    assert not runner.is_alive() and status == [2], (status, daemon.failure)
    assert code == 503 and alive == (200, b"ok\n")
    for body in (ready, alive[1]):
        assert KEY.encode() not in body and VALUE.encode() not in body, body
    text = ready.decode()
    print(f"/readyz while the source is failed: {text}")
    assert "failed: RecordTooLarge (table " in text and f"{db}.accounts" in text, text
    assert f"stream position {resume}" in text and "gtid" in str(resume), text
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("source failed at position")]
    assert len(logged) == 1 and KEY in logged[0] and str(resume) in logged[0], logged
    assert KEY in daemon.failure  # the exit message (to the log) keeps the whole error


def _wait(test, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = test()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"{what}: not seen within {timeout}s")
