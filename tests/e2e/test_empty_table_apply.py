"""An empty source table reaches the target: the initial snapshot publishes its definition, the apply creates
the target table from it, and `cdc compare` finds the source and the target equal (not "table missing")."""

from __future__ import annotations

import pytest

from cdc.cli import main as cdc_main
from tests.e2e.apply_pipeline import Pipeline

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]


def test_empty_table_gets_its_target_table(tmp_path, mariadb_primary, broker, postgres, topic_prefix, tmp_mysql_db,
                                           spark, capsys):
    db = tmp_mysql_db
    mariadb_primary.query(f"CREATE TABLE `{db}`.orders (id INT PRIMARY KEY, note VARCHAR(20))")
    mariadb_primary.query(f"INSERT INTO `{db}`.orders VALUES (1, 'one')")
    mariadb_primary.query(f"CREATE TABLE `{db}`.refunds (id INT PRIMARY KEY, amount DECIMAL(10,2))")  # no rows
    p = Pipeline(tmp_path, mariadb_primary, broker, postgres, topic_prefix, db, targets=("pg",),
                 source_options={"snapshot": "initial"}).start()
    try:
        p.apply_until(spark, p.sentinel())
        assert p.target_query("pg", "SELECT count(*) FROM {t}refunds") == [(0,)]
        assert p.target_query("pg", "SELECT id, note FROM {t}orders") == [(1, "one")]
        capsys.readouterr()
        code = cdc_main(["compare", "--config", str(p.config_path), "--source", "src", "--target", "pg"])
        out = capsys.readouterr().out
        assert code == 0 and "refunds: EQUAL" in out, out
    finally:
        p.stop()
