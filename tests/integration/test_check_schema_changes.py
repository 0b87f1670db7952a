"""`cdc check` shows each apply stream's behaviour at a DDL (docs/schema-evolution.md), and a wrong one is a
config error naming the key."""

from __future__ import annotations

import pytest

from cdc.errors import ConfigError
from tests.integration.test_check import config, run_check

pytestmark = [pytest.mark.mysql, pytest.mark.kafka, pytest.mark.postgres]


def test_check_shows_the_schema_change_behaviour(tmp_path, capsys, mysql_source, tmp_source_db, broker,
                                                 topic_prefix, postgres):
    db = tmp_source_db
    mysql_source.query(f"CREATE TABLE `{db}`.order_items (id INT PRIMARY KEY)")
    cfg = config(mysql_source, db, broker, topic_prefix, postgres, None)
    cfg["targets"][0].pop("schema")
    cfg["apply"] = [{"source": "shop", "target": "pg"}]
    code, checks = run_check(tmp_path, capsys, cfg)
    assert code == 0, [c for c in checks.values() if not c["ok"]]
    assert checks["apply shop -> pg: schema changes"]["detail"] == "evolve"  # the default
    cfg["apply"] = [{"source": "shop", "target": "pg",
                     "schema_changes": {"behavior": "exception", "tables": {f"{db}.audit_*": "ignore"}}}]
    code, checks = run_check(tmp_path, capsys, cfg)
    assert checks["apply shop -> pg: schema changes"]["detail"] == f"exception ({db}.audit_*: ignore)"

    cfg["apply"] = [{"source": "shop", "target": "pg", "schema_changes": {"behavior": "try-evolve"}}]
    with pytest.raises(ConfigError, match="schema_changes"):
        run_check(tmp_path, capsys, cfg)
