"""TRUNCATE TABLE through the whole pipeline: MariaDB or MySQL 9.7 (``mysql_source``) -> `cdc run` -> broker
-> Spark apply -> PostgreSQL.

Rows, a TRUNCATE, more rows: the stream holds the TRUNCATE as its own transaction (BEGIN, one
``op: "t"`` record with no row image and no key, END with the GTID state) and the target ends equal
to the source, the TRUNCATE applied inside the batch's target transaction."""

from __future__ import annotations

import pytest

from cdc.stream.envelope import changes_topic
from tests.e2e.apply_pipeline import Pipeline
from tests.fixtures.ops import read_stream

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]


def test_truncate_empties_the_target_then_later_rows_land(tmp_path, mysql_source, broker, postgres, topic_prefix,
                                                           tmp_source_db, spark):
    db, q = tmp_source_db, mysql_source.query
    p = Pipeline(tmp_path, mysql_source, broker, postgres, topic_prefix, db, targets=("pg",)).start()
    try:
        q(f"CREATE TABLE `{db}`.items (id INT PRIMARY KEY, v VARCHAR(10))")
        q(f"CREATE TABLE `{db}`.kept (id INT PRIMARY KEY)")
        q(f"INSERT INTO `{db}`.kept VALUES (1), (2)")
        q(f"INSERT INTO `{db}`.items VALUES " + ", ".join(f"({i}, 'old')" for i in range(50)))
        p.apply_until(spark, p.sentinel())  # round 1: the rows are in the target
        assert p.target_query("pg", "SELECT count(*) FROM {t}items")[0][0] == 50
        # round 2: in one batch, an update, the TRUNCATE and new rows (two with ids the truncate freed)
        q(f"UPDATE `{db}`.items SET v = 'upd' WHERE id < 10")
        q(f"TRUNCATE TABLE `{db}`.items")
        q(f"INSERT INTO `{db}`.items VALUES (1, 'new'), (2, 'new'), (100, 'new')")
        p.apply_until(spark, p.sentinel())
        counts = p.assert_equal(["items", "kept"])
        assert counts == {"items": 3, "kept": 2}
        # round 3: a TRUNCATE as the last thing applied leaves the target table empty
        q(f"TRUNCATE `{db}`.items")
        p.apply_until(spark, p.sentinel())
        assert p.assert_equal(["items", "kept"]) == {"items": 0, "kept": 2}
    finally:
        p.stop()
    records = read_stream(broker.bootstrap, changes_topic(topic_prefix, "src"))
    truncs = [i for i, r in enumerate(records) if r.get("op") == "t"]
    assert len(truncs) == 2
    for i in truncs:
        begin, t, end = records[i - 1], records[i], records[i + 1]
        assert begin["status"] == "BEGIN" and end["status"] == "END" and begin["id"] == end["id"] == t["source"]["gtid"]
        assert t["before"] is None and t["after"] is None and t["source"]["table"] == "items"
        assert end["event_count"] == 1 and end["resume"]["gtid_set"]
