"""`cdc check` against real MariaDB and MySQL 9.7 (``mysql_source``), the tansu broker and PostgreSQL: all pass, then each failure named with its fix."""

from __future__ import annotations

import argparse
import json
import uuid

import pytest
import yaml

from cdc.checks import main
from cdc.dev.ports import free_port
from cdc.stream.envelope import changes_topic
from tests.fixtures.services import capture_login, documented_target_grant
from tests.integration.mysql_helpers import is_mysql

pytestmark = [pytest.mark.mysql, pytest.mark.kafka, pytest.mark.postgres]


@pytest.fixture
def pg_schema(postgres):
    schema = "chk_" + uuid.uuid4().hex[:8]
    with postgres.connect() as c:
        c.execute(f"CREATE SCHEMA {schema}")
        c.commit()
    yield schema
    with postgres.connect() as c:
        c.execute(f"DROP SCHEMA {schema} CASCADE")
        c.commit()


def run_check(tmp_path, capsys, cfg: dict) -> tuple[int, dict[str, dict]]:
    path = tmp_path / "cdc.yaml"
    path.write_text(yaml.safe_dump(cfg))
    code = main(argparse.Namespace(config=str(path), source=None, json=True))
    found = json.loads(capsys.readouterr().out)
    return code, {c["check"]: c for c in found}


def config(server, db, broker, prefix, postgres, schema, tables=None) -> dict:
    """``server``'s source as its capture user (MySQL 9.7: the documented one), a PostgreSQL target."""
    user, password = capture_login(server)
    return {"sources": [{"name": "shop", "kind": "mysql", "hosts": [server.address], "user": user,
                         "password": password, "tables": tables or [f"{db}.order_*"]}],
            "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": prefix},
            "targets": [{"name": "pg", "kind": "postgres", "dsn": postgres.dsn, "schema": schema}]}


def _target_login(server, db: str) -> str:
    """``user:password`` of a MySQL target and shadow source on ``db``: on MySQL 9.7 an account with exactly
    docs/setup.md's target grant, on MariaDB the server's cdc account."""
    if not is_mysql(server):
        return "cdc:cdc"
    user = "cdc_apply_" + uuid.uuid4().hex[:6]
    server.query(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'apply-pw'")
    documented_target_grant(server, db, user)
    return f"{user}:apply-pw"


def test_all_pass_then_each_failure_names_its_fix(tmp_path, capsys, mysql_source, tmp_source_db, broker, topic_prefix,
                                                  postgres, pg_schema):
    db = tmp_source_db
    mysql_source.query(f"CREATE TABLE `{db}`.order_items (id INT PRIMARY KEY)")
    mysql_source.query(f"CREATE TABLE `{db}`.orders (id INT PRIMARY KEY)")
    cfg = config(mysql_source, db, broker, topic_prefix, postgres, pg_schema)
    login = _target_login(mysql_source, db)
    cfg["targets"] += [{"name": "my", "kind": "mysql", "dsn": f"mysql://{login}@{mysql_source.address}/{db}"},
                       {"name": "duck", "kind": "duckdb", "path": str(tmp_path / "t.duckdb")}]
    cfg["sources"].append({"name": "legacy", "kind": "shadow", "dsn": f"mysql://{login}@{mysql_source.address}/{db}",
                           "tables": [f"{db}.order*"]})

    code, checks = run_check(tmp_path, capsys, cfg)
    assert code == 0, [c for c in checks.values() if not c["ok"]]
    assert checks["target my: write"]["ok"] and checks["target duck: write"]["ok"]
    assert checks[f"source legacy: tables {db}.order*"]["detail"] == f"matches {db}.order_items, {db}.orders"
    cfg["sources"].pop()
    assert not mysql_source.query(f"SHOW TABLES FROM `{db}` LIKE '\\_cdc\\_check%'")  # scratch table gone
    cfg["targets"] = cfg["targets"][:1]
    assert checks[f"source shop: tables {db}.order_*"]["detail"] == f"matches {db}.order_items"
    assert checks[f"source shop: host {mysql_source.address}"]["ok"]
    assert checks[f"kafka {broker.bootstrap}"]["detail"].startswith("reachable")
    assert "does not exist yet" in checks[f"kafka topic {changes_topic(topic_prefix, 'shop')}"]["detail"]
    assert checks["target pg: write"]["ok"]

    # a database that does not exist, and a pattern of an existing database that matches nothing
    cfg["sources"][0]["tables"] = ["nodb_xyz.*", f"{db}.invoice*"]
    code, checks = run_check(tmp_path, capsys, cfg)
    assert code == 1
    missing_db, no_table = checks["source shop: tables nodb_xyz.*"], checks[f"source shop: tables {db}.invoice*"]
    assert not missing_db["ok"] and "no database matches 'nodb_xyz'" in missing_db["detail"]
    assert db in missing_db["detail"] and "sources[0].tables" in missing_db["fix"]
    assert not no_table["ok"] and f"{db} has {db}.order_items, {db}.orders" in no_table["detail"]

    # the changes topic with 3 partitions
    cfg["sources"][0]["tables"] = [f"{db}.*"]
    broker.create_topic(changes_topic(topic_prefix, "shop"), partitions=3)
    code, checks = run_check(tmp_path, capsys, cfg)
    part = checks[f"kafka topic {changes_topic(topic_prefix, 'shop')}"]
    assert code == 1 and not part["ok"] and "has 3 partitions" in part["detail"]
    assert "cdc stream reset --config <file> --source shop --yes" in part["fix"]

    # Kafka unreachable
    cfg["kafka"]["bootstrap_servers"] = f"127.0.0.1:{free_port()}"
    cfg["kafka"]["topic_prefix"] = topic_prefix + "x"
    code, checks = run_check(tmp_path, capsys, cfg)
    kafka = checks[f"kafka {cfg['kafka']['bootstrap_servers']}"]
    assert code == 1 and not kafka["ok"] and "unreachable" in kafka["detail"]
    assert "kafka.bootstrap_servers" in kafka["fix"]


def test_target_user_without_write_permission_gets_the_grant(tmp_path, capsys, mysql_source, tmp_source_db, broker,
                                                              topic_prefix, postgres, pg_schema):
    mysql_source.query(f"CREATE TABLE `{tmp_source_db}`.order_x (id INT PRIMARY KEY)")
    role = "ro_" + uuid.uuid4().hex[:6]
    with postgres.connect() as c:
        c.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'ro'")
        c.commit()
    try:
        cfg = config(mysql_source, tmp_source_db, broker, topic_prefix, postgres, pg_schema)
        cfg["targets"][0]["dsn"] = f"postgresql://{role}:ro@{postgres.address}/cdc"
        code, checks = run_check(tmp_path, capsys, cfg)
        write = checks["target pg: write"]
        assert code == 1 and checks["target pg"]["ok"] and not write["ok"]
        assert "permission denied" in write["detail"]
        assert write["fix"] == f"GRANT USAGE, CREATE ON SCHEMA {pg_schema} TO {role};"
        with postgres.connect() as c:  # the fix works
            c.execute(write["fix"])
            c.commit()
        code, checks = run_check(tmp_path, capsys, cfg)
        assert checks["target pg: write"]["ok"], checks["target pg: write"]
    finally:
        with postgres.connect() as c:
            c.execute(f"DROP OWNED BY {role}")
            c.execute(f"DROP ROLE {role}")
            c.commit()
