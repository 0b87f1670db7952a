"""The source log is gone past the checkpoint: `PURGE BINARY LOGS` on a real MariaDB, and on a real MySQL 9.7, while
the daemon is down.

A fresh server of each flavour (its capture user made by the documented statements) -> `cdc run` -> broker -> Spark apply -> PostgreSQL. Rows are applied, the daemon stops,
inserts, updates and DELETES happen (one table loses every row), the binlogs holding them are purged,
more writes follow. Restarted with ``snapshot: never`` the daemon stops, naming the checkpoint, the
oldest binlog left, the missing range (MariaDB: ``domain D seq A..B``; MySQL: the purged GTIDs past
the checkpoint) and the way out; with ``snapshot: when_needed`` it re-snapshots (each table
replaced), continues streaming, counts it in ``cdc_source_resnapshots_total``, and after the apply the
target equals the source, the deleted rows gone."""

from __future__ import annotations

import os
import subprocess
import time

import pytest
import yaml

from readers.mysql.position import GtidSet
from tests.e2e.apply_pipeline import Pipeline
from tests.fixtures.ops import CDC, read_stream, value
from tests.integration.mysql_helpers import is_mysql

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

TABLES = ["orders", "lines", "emptied", "keyless"]


def test_purged_binlog_names_the_gap_and_when_needed_resnapshots(tmp_path, source_alone, broker, postgres,
                                                                  topic_prefix, spark):
    m, db = source_alone, "shop"
    q = m.query
    q(f"CREATE DATABASE {db}")
    p = Pipeline(tmp_path, m, broker, postgres, topic_prefix, db, targets=("pg",)).start()
    q(f"CREATE TABLE {db}.orders (id INT PRIMARY KEY, v VARCHAR(20))")
    q(f"CREATE TABLE {db}.`lines` (id INT, n INT, qty INT, PRIMARY KEY (id, n))")
    q(f"CREATE TABLE {db}.emptied (id INT PRIMARY KEY)")
    q(f"CREATE TABLE {db}.keyless (k INT, v VARCHAR(10))")
    q(f"INSERT INTO {db}.orders VALUES " + ", ".join(f"({i}, 'v{i}')" for i in range(1, 201)))
    q(f"INSERT INTO {db}.`lines` VALUES " + ", ".join(f"({i}, {n}, {n})" for i in range(1, 51) for n in (1, 2)))
    q(f"INSERT INTO {db}.emptied VALUES (1), (2), (3)")
    q(f"INSERT INTO {db}.keyless VALUES (1, 'a'), (1, 'a'), (2, 'b')")
    p.apply_until(spark, p.sentinel())
    p.assert_equal(TABLES)
    p.stop()
    records = read_stream(broker.bootstrap, f"{topic_prefix}.src.changes")
    checkpoint = next(r["resume"]["gtid_set"] for r in reversed(records) if r.get("resume"))

    # the daemon is down: inserts, updates, deletes; then the binlogs holding them are purged
    q(f"INSERT INTO {db}.orders VALUES " + ", ".join(f"({i}, 'late{i}')" for i in range(201, 231)))
    q(f"UPDATE {db}.orders SET v = 'upd' WHERE id <= 40")
    q(f"DELETE FROM {db}.orders WHERE id BETWEEN 100 AND 149")
    q(f"DELETE FROM {db}.`lines` WHERE n = 2")
    q(f"DELETE FROM {db}.emptied")
    q(f"DELETE FROM {db}.keyless WHERE k = 1")
    q("FLUSH BINARY LOGS")
    newest = q("SHOW BINARY LOGS")[-1][0]
    deadline = time.monotonic() + 30  # a log still needed for crash recovery (binlog checkpoint) stays a moment
    while True:
        q(f"PURGE BINARY LOGS TO '{newest}'")
        left = [r[0] for r in q("SHOW BINARY LOGS")]
        if left == [newest] or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert left == [newest], (left, q("SHOW WARNINGS"))
    q(f"INSERT INTO {db}.orders VALUES (500, 'after purge')")
    q(f"DELETE FROM {db}.orders WHERE id = 1")

    # snapshot: never -> a loud stop naming the checkpoint, the oldest binlog and the way out
    env = dict(os.environ, CDC_PROGRESS="off")
    run = subprocess.run([CDC, "run", "--config", str(p.config_path)], capture_output=True, text=True, timeout=120,
                         env=env, cwd=tmp_path, check=False)
    out = run.stdout + run.stderr
    assert run.returncode != 0, out[-3000:]
    assert "binlog purged past the checkpoint" in out, out[-3000:]
    assert f"the checkpoint is {checkpoint}" in out and newest in out, out[-3000:]
    assert "snapshot: when_needed" in out and "cdc stream reset" in out, out[-3000:]
    if is_mysql(m):  # the missing range: what was purged past the checkpoint
        gone = GtidSet.parse(q("SELECT @@GLOBAL.gtid_purged")[0][0]) - GtidSet.parse(checkpoint)
        assert gone, "nothing past the checkpoint was purged"
        gap = f"GTIDs {gone}"
    else:
        gap = "domain 0 seq"
    assert gap in out, (gap, out[-3000:])

    # snapshot: when_needed -> re-snapshot, streaming continues, target equals source
    cfg = yaml.safe_load(p.config_path.read_text())
    cfg["sources"][0]["snapshot"] = "when_needed"
    cfg["sources"][0]["snapshot_chunk_rows"] = 64  # several chunks per table
    p.config_path.write_text(yaml.safe_dump(cfg))
    p.start()
    try:
        q(f"UPDATE {db}.orders SET v = 'streamed' WHERE id = 2")
        q(f"DELETE FROM {db}.orders WHERE id = 3")
        p.apply_until(spark, p.sentinel())
        counts = p.assert_equal(TABLES)
        assert value(p.daemon.scrape(), "cdc_source_resnapshots_total", source="src") == 1
    finally:
        p.stop()
    assert counts == {"orders": 200 - 50 + 30 + 1 - 1 - 1, "lines": 50, "emptied": 0, "keyless": 1}
    after = read_stream(broker.bootstrap, f"{topic_prefix}.src.changes")[len(records):]
    truncates = [r["source"]["table"] for r in after if r.get("op") == "t"]
    assert sorted(truncates) == sorted(["orders", "lines", "emptied", "keyless", "sentinel"])
