"""librdkafka's own lines go through Python logging (logging.json), rate-limited: the daemon against an
unreachable broker for ~10 s writes only JSON lines, and few of them (librdkafka alone would print a
``Connect ... failed: Connection refused`` line every ~50 ms per client)."""

from __future__ import annotations

import json
import os
import time

import pytest

from cdc.dev.ports import free_port
from cdc.dev.procs import spawn
from tests.fixtures.ops import CDC, DaemonProcess

pytestmark = [pytest.mark.mysql, pytest.mark.kafka]


def test_the_daemon_facing_an_unreachable_broker_logs_few_lines_all_json(tmp_path, mariadb_primary, tmp_mysql_db,
                                                                          topic_prefix):
    nobody = f"127.0.0.1:{free_port()}"  # nothing listens there
    d = DaemonProcess(tmp_path, source="src", mariadb_hosts=[mariadb_primary.address], tables=[f"{tmp_mysql_db}.*"],
                      bootstrap=nobody, topic_prefix=topic_prefix)  # logging.json: true
    d.proc = spawn([CDC, "run", "--config", str(d.config_path)], d.log,
                   env=dict(os.environ, CDC_PROGRESS="off", PYTHONUNBUFFERED="1"), cwd=tmp_path)
    try:
        time.sleep(10)
        assert d.proc.poll() is None, d.log_tail()  # it keeps trying: the broker may come back
    finally:
        d.stop()
    lines = [ln for ln in d.log.read_text(errors="replace").splitlines() if ln.strip()]
    not_json = [ln for ln in lines if not ln.startswith("{")]
    assert not not_json, f"{len(not_json)} lines that are not JSON, e.g. {not_json[:3]}"
    docs = [json.loads(ln) for ln in lines]
    assert len(docs) < 60, f"{len(docs)} lines in 10 s:\n" + "\n".join(ln[:200] for ln in lines[-20:])
    kafka = [doc for doc in docs if doc["logger"] == "cdc.kafka"]
    assert kafka and any("Connection refused" in doc["msg"] for doc in kafka), docs[:10]
    assert any(nobody in doc["msg"] for doc in docs if doc["logger"] != "cdc.kafka")  # our own error names it
