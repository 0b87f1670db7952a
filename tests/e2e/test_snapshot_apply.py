"""Initial snapshot + streaming under concurrent writes, through the whole pipeline:
MariaDB or MySQL 9.7 (``mysql_source``) -> `cdc run` (snapshot: initial) -> broker -> Spark apply -> PostgreSQL,
then `cdc compare` proves the target equals the source."""

from __future__ import annotations

import time

import pytest
import yaml

from cdc.compare.endpoints import Endpoint, from_dsn
from cdc.compare.table_diff import TableCompare
from cdc.config.loader import load_config
from tests.e2e.apply_pipeline import Pipeline
from tests.e2e.test_snapshot import ROWS, Writer, load

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]


def test_snapshot_then_streaming_lands_equal_in_targets(tmp_path, mysql_source, broker, postgres, topic_prefix,
                                                         tmp_source_db, spark):
    load(mysql_source, tmp_source_db)
    p = Pipeline(tmp_path, mysql_source, broker, postgres, topic_prefix, tmp_source_db, targets=("pg",))
    cfg = yaml.safe_load(p.config_path.read_text())
    cfg["sources"][0].update(snapshot="initial", snapshot_chunk_rows=500)
    p.config_path.write_text(yaml.safe_dump(cfg))
    p.config = load_config(p.config_path)
    writer = Writer(mysql_source, tmp_source_db, pause=0.01)  # ~100 single-row transactions a second
    writer.start()
    p.start()
    thread, stop, errors = p.apply_in_thread(spark)
    try:
        time.sleep(2)  # snapshot and streaming both run while the writer keeps going
        writer.stop.set()
        writer.join(10)
        sid = p.sentinel()
        p.wait_sentinel(sid, p.targets, timeout=240, errors=errors)
    finally:
        writer.stop.set()
        stop.set()
        thread.join(60)
        p.stop()
    assert not errors, errors
    assert writer.count > 20
    counts = p.assert_equal(["t"])
    assert counts["t"] > ROWS // 2
    src = from_dsn("src", f"mysql://root@127.0.0.1:{mysql_source.port}/{tmp_source_db}")
    pg = Endpoint("pg", "postgres", {"dsn": postgres.dsn}, p.tag)
    report = TableCompare(src, f"{tmp_source_db}.t", pg, f"{p.tag}.t").run()
    assert report.equal, report.render()
