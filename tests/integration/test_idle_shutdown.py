"""Heartbeat settings on the real daemon (real MariaDB and broker): shutdown never waits for a
heartbeat, and heartbeats can be turned off without the source looking unready."""

from __future__ import annotations

import time

import pytest

from cdc.stream.envelope import changes_topic
from tests.fixtures.ops import DaemonProcess, read_stream, total, wait_for

pytestmark = [pytest.mark.mysql, pytest.mark.kafka]

SOURCE = "shop"


def _daemon(tmp_path, mariadb_primary, broker, topic_prefix, db, heartbeat_s) -> DaemonProcess:
    mariadb_primary.query(f"CREATE TABLE {db}.orders (id INT PRIMARY KEY, note VARCHAR(20))")
    return DaemonProcess(tmp_path, source=SOURCE, mariadb_hosts=[mariadb_primary.address], tables=[f"{db}.*"],
                         bootstrap=broker.bootstrap, topic_prefix=topic_prefix,
                         source_options={"heartbeat_interval_s": heartbeat_s})


def _one_transaction(daemon: DaemonProcess, mariadb_primary, broker, topic_prefix: str, db: str) -> None:
    """Insert a row and wait until its transaction is in the stream (the broker has it: the daemon's own
    acknowledgement metrics move at its next event, which with a long heartbeat interval is a while)."""
    mariadb_primary.query(f"INSERT INTO {db}.orders VALUES (1, 'one')")
    topic = changes_topic(topic_prefix, SOURCE)
    wait_for(lambda: "END" in [r.get("status") for r in read_stream(broker.bootstrap, topic, quiet_s=0.5)], 30,
             "the insert's transaction in the stream", daemon)


def test_sigterm_while_idle_with_a_30s_heartbeat_exits_at_once(mariadb_primary, broker, topic_prefix,
                                                               tmp_mysql_db, tmp_path):
    daemon = _daemon(tmp_path, mariadb_primary, broker, topic_prefix, tmp_mysql_db, 30)
    try:
        daemon.start()
        _one_transaction(daemon, mariadb_primary, broker, topic_prefix, tmp_mysql_db)
        time.sleep(2.0)  # idle: the reader waits in the binlog read, 28 s before its next heartbeat
        t0 = time.monotonic()
        daemon.signal()
        code = daemon.wait_exit(timeout=30)
        took = time.monotonic() - t0
    finally:
        daemon.stop()
    assert code == 0, daemon.log_tail()
    assert took < 3.0, f"SIGTERM while idle took {took:.1f}s to exit (heartbeat interval 30 s)"
    records = read_stream(broker.bootstrap, changes_topic(topic_prefix, SOURCE))
    assert [r.get("status") for r in records if r.get("status") in ("BEGIN", "END")] == ["BEGIN", "END"]


def test_heartbeats_off_write_none_and_the_source_stays_ready(mariadb_primary, broker, topic_prefix,
                                                              tmp_mysql_db, tmp_path):
    daemon = _daemon(tmp_path, mariadb_primary, broker, topic_prefix, tmp_mysql_db, 0)
    try:
        daemon.start()
        _one_transaction(daemon, mariadb_primary, broker, topic_prefix, tmp_mysql_db)
        time.sleep(6.0)  # longer than READY_FACTOR x the old 1 s default: readiness must not need heartbeats
        ready = daemon.http("/readyz")
        beats = total(daemon.scrape(), "cdc_source_heartbeats_total", source=SOURCE)
        t0 = time.monotonic()
        daemon.signal()
        code = daemon.wait_exit(timeout=30)
        took = time.monotonic() - t0
    finally:
        daemon.stop()
    assert ready[0] == 200, ready
    assert beats == 0 and code == 0 and took < 3.0, (beats, code, took, daemon.log_tail())
    records = read_stream(broker.bootstrap, changes_topic(topic_prefix, SOURCE))
    assert not [r for r in records if r.get("status") == "HEARTBEAT"]
    assert [r.get("status") for r in records if r.get("status") in ("BEGIN", "END")] == ["BEGIN", "END"]
