"""Snapshot progress on real MariaDB and MySQL 9.7 (``mysql_source``; MySQL: the documented capture user), the
broker and the daemon: the initial snapshot logs
progress lines, and `cdc snapshot status` (output piped) reports per table what the stream holds."""

from __future__ import annotations

import collections
import os
import re
import subprocess

import pytest

from cdc.stream.envelope import changes_topic
from tests.fixtures.ops import CDC, DaemonProcess, read_stream, total, wait_for
from tests.fixtures.services import capture_login
from tests.integration.mysql_helpers import fill

pytestmark = [pytest.mark.mysql, pytest.mark.kafka, pytest.mark.slow]

ROWS_A, ROWS_B = 200_000, 1_000
ANSI = re.compile(r"\x1b\[")


def test_status_of_a_snapshot_stopped_halfway_counts_what_the_stream_holds(mysql_source, broker, topic_prefix,
                                                                            tmp_source_db, tmp_path):
    db, q = tmp_source_db, mysql_source.query
    for t, n in (("a", ROWS_A), ("b", ROWS_B)):
        q(f"CREATE TABLE `{db}`.{t} (id INT PRIMARY KEY, v VARCHAR(20))")
        fill(mysql_source, f"`{db}`.{t}", n, "seq, CONCAT('v', seq)")
    daemon = DaemonProcess(tmp_path, source="shop", mariadb_hosts=[mysql_source.address], tables=[f"{db}.*"],
                           bootstrap=broker.bootstrap, topic_prefix=topic_prefix,
                           source_options={"snapshot": "initial", "snapshot_chunk_rows": 200, **_login(mysql_source)})
    try:
        daemon.start(ready_timeout=None)  # ready only once the snapshot is done: stop it before that
        wait_for(lambda: total(_scrape(daemon), "cdc_source_records_published_total") >= 5_000, 60,
                 "the first snapshot chunks published", daemon)
        daemon.signal()  # drains at the next chunk boundary: the stream's tail is halfway through table a
        assert daemon.wait_exit(60) == 0, daemon.log_tail()
    finally:
        daemon.stop()
    records = read_stream(broker.bootstrap, changes_topic(topic_prefix, "shop"), timeout=120)
    published = collections.Counter(r["source"]["table"] for r in records if r.get("op") == "r")
    assert 0 < published["a"] < ROWS_A and published["b"] == 0, published

    env = {k: v for k, v in os.environ.items() if k != "CDC_PROGRESS"}
    done = subprocess.run([CDC, "snapshot", "status", "--config", str(daemon.config_path), "--source", "shop",
                           "--interval", "0"], capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "\r" not in out + done.stderr and not ANSI.search(out + done.stderr)
    assert out.splitlines()[0] == "source shop: initial snapshot", out
    rows = {line.split()[0]: line.split()[1:4] for line in out.splitlines()[3:] if not line.startswith("-")}
    pct_a = f"{100.0 * published['a'] / ROWS_A:.1f}%"
    assert rows[f"{db}.a"] == [str(published["a"]), str(ROWS_A), pct_a], out
    assert rows[f"{db}.b"] == ["0", str(ROWS_B), "0.0%"], out
    assert rows["all"][:2] == ["tables", str(published["a"])], out

    logged = [d.get("msg", "") for d in daemon.log_lines()]
    progress = [m for m in logged if m.startswith("source shop: snapshot rows")]  # "(total estimated)": the
    # total comes from information_schema's estimate unless the tables are small enough to count
    assert progress and re.match(rf"source shop: snapshot rows( \(total estimated\))?: {published['a']}/",
                                 progress[-1]), logged[-20:]
    assert re.search(r"\(\d+\.\d%\)", progress[-1]), progress


def _login(server) -> dict:
    """The user the daemon captures as: MySQL 9.7's documented capture user, else cdc/cdc."""
    user, password = capture_login(server)
    return {"user": user, "password": password}


def _scrape(daemon: DaemonProcess) -> dict:
    """/metrics, or nothing while the daemon does not answer yet."""
    try:
        return daemon.scrape()
    except OSError:
        return {}


def test_a_requested_snapshot_logs_rows_read_of_each_table(mysql_source, broker, topic_prefix, tmp_source_db,
                                                           tmp_path):
    db, q = tmp_source_db, mysql_source.query
    q(f"CREATE TABLE `{db}`.c (id INT PRIMARY KEY, v VARCHAR(20))")
    fill(mysql_source, f"`{db}`.c", ROWS_B, "seq, CONCAT('v', seq)")
    q("CREATE DATABASE IF NOT EXISTS ops")  # where the documented grant lets the capture user write
    daemon = DaemonProcess(tmp_path, source="shop", mariadb_hosts=[mysql_source.address], tables=[f"{db}.c"],
                           bootstrap=broker.bootstrap, topic_prefix=topic_prefix,
                           source_options={"signal_table": f"ops.cdc_signal_{db[-6:]}", "snapshot_chunk_rows": 100,
                                           **_login(mysql_source)})
    try:
        daemon.start()
        env = {k: v for k, v in os.environ.items() if k != "CDC_PROGRESS"}
        asked = subprocess.run([CDC, "snapshot", "--config", str(daemon.config_path), "--source", "shop", "--table",
                                f"{db}.c"], capture_output=True, text=True, timeout=60, env=env, check=False)
        assert asked.returncode == 0, asked.stderr

        def lines() -> list[str]:
            return [m for m in (d.get("msg", "") for d in daemon.log_lines())
                    if m.startswith(f"source shop: incremental snapshot of {db}.c rows read: ")]

        wait_for(lambda: any(m.startswith(f"source shop: incremental snapshot of {db}.c rows read: {ROWS_B}/")
                             for m in lines()), 60, "the snapshot's last progress line", daemon)
    finally:
        daemon.stop()
    assert re.search(r"\(\d+\.\d%\)", lines()[-1]), lines()
