"""`cdc run` on a real MariaDB and a real MySQL 9.7 (each as its capture user) and the broker: one session writes a captured table with
binlog_row_image=MINIMAL. The daemon stops that source with an error naming the table, the GTID,
the binlog position and the setting; the stream holds every transaction before it and nothing of it."""

from __future__ import annotations

import re

import pytest

from cdc.stream.envelope import changes_topic
from tests.fixtures.ops import DaemonProcess, read_stream
from tests.fixtures.services import capture_login
from tests.integration.mysql_helpers import gtid_since

pytestmark = [pytest.mark.mysql, pytest.mark.kafka, pytest.mark.slow]


def test_minimal_row_image_stops_the_daemon_with_a_named_position(tmp_path, mysql_source, broker, topic_prefix,
                                                                  tmp_source_db):
    db, server, q = tmp_source_db, mysql_source, mysql_source.query
    user, password = capture_login(server)
    q(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(10), n INT)")
    topic = changes_topic(topic_prefix, "src")
    broker.create_topic(topic)
    daemon = DaemonProcess(tmp_path, source="src", mariadb_hosts=[server.address], tables=[f"{db}.*"],
                           bootstrap=broker.bootstrap, topic_prefix=topic_prefix,
                           source_options={"user": user, "password": password}).start()
    try:
        q(f"INSERT INTO `{db}`.t VALUES (1, 'a', 1), (2, 'b', 2)")
        before = server.gtid_binlog_pos()
        conn = server.connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SET SESSION binlog_row_image = 'MINIMAL'")
                cur.execute(f"UPDATE `{db}`.t SET n = 10 WHERE id = 1")
        finally:
            conn.close()
        bad = gtid_since(server, before)  # MariaDB domain-server-seq, MySQL uuid:n
        rc = daemon.wait_exit(60)
    finally:
        if daemon.proc is not None and daemon.proc.poll() is None:
            daemon.stop()
    log = daemon.log_tail(20_000)
    assert rc == 2, log
    assert "PartialRowImage" in log or "partial row image" in log, log
    assert f"{db}.t" in log and bad in log and "binlog_row_image=FULL" in log
    assert re.search(rf"at [^ ]+:\d+ gtid {bad}", log), "the error does not name the binlog position"
    records = read_stream(broker.bootstrap, topic)
    data = [r for r in records if r.get("op")]
    assert [(r["op"], r["after"]["id"]) for r in data] == [("c", 1), ("c", 2)]
    assert not [r for r in records if r.get("id") == bad], "a record of the refused transaction was published"
