"""A newcomer's first pipeline on the embedded defaults (in-memory tansu, PostgreSQL, local Spark), from a MariaDB
and from a MySQL 9.7 source (as its documented capture user):

- a clean start of `cdc run` and `cdc apply` prints no WARNING: not at start, not while idle, not on SIGTERM
  (a warning on every start teaches operators to ignore warnings);
- the default `snapshot: initial` brings the rows written before the start;
- an empty source table gets its target table (the snapshot publishes its definition), so `cdc compare`
  finds source and target equal instead of a missing table."""

from __future__ import annotations

import signal
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from cdc.cli import main as cdc_main
from cdc.dev.procs import spawn
from tests.e2e.mysql_daemon import Daemon, wait_for
from tests.fixtures.services import capture_login

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

CDC = str(Path(sys.executable).with_name("cdc"))


def warnings_in(text: str) -> list[str]:
    return [line for line in text.splitlines() if "WARNING" in line or " WARN " in line or "Traceback" in line]


def test_clean_start_run_and_apply_print_no_warning(tmp_path, mysql_source, tmp_source_db, broker, postgres,
                                                     topic_prefix, capsys):
    db, schema, server = tmp_source_db, "q" + uuid.uuid4().hex[:10], mysql_source
    user, password = capture_login(server)
    server.query(f"CREATE TABLE `{db}`.orders (id INT PRIMARY KEY, note VARCHAR(20))")
    server.query(f"INSERT INTO `{db}`.orders VALUES (1, 'before')")
    server.query(f"CREATE TABLE `{db}`.refunds (id INT PRIMARY KEY, amount DECIMAL(10,2))")  # no rows
    with postgres.connect() as c:
        c.execute(f"CREATE SCHEMA {schema}")
        c.commit()
    config = tmp_path / "cdc.yaml"
    config.write_text(yaml.safe_dump({
        "sources": [{"name": "shop", "kind": "mysql", "hosts": [server.address], "user": user,
                     "password": password, "tables": [f"{db}.*"], "server_id": 800_000 + uuid.uuid4().int % 100_000}],
        "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": topic_prefix},
        "targets": [{"name": "pg", "kind": "postgres", "dsn": postgres.dsn, "schema": schema}],
        "apply": [{"source": "shop", "target": "pg", "checkpoint_dir": str(tmp_path / "ckpt")}],
        "metrics": {"port": 0, "apply_port": 0}}))
    daemon = Daemon(config, tmp_path / "run.log").start()
    apply_log = tmp_path / "apply.log"
    apply = None
    try:
        wait_for(lambda: "streaming from" in daemon.tail(), 60, "the reader to stream", daemon=daemon)
        server.query(f"INSERT INTO `{db}`.orders VALUES (2, 'after')")
        apply = spawn([CDC, "apply", "--config", str(config), "--master", "local[2]"], apply_log)

        def rows():
            try:
                with postgres.connect() as c:
                    return c.execute(f"SELECT count(*) FROM {schema}.orders").fetchone()[0] == 2
            except Exception:  # noqa: BLE001 - the table is created by the first batch
                return False
        wait_for(rows, 240, "both rows in the target", interval=1.0)
        apply.send_signal(signal.SIGTERM)
        assert apply.wait(120) == 0, apply_log.read_text()[-3000:]
        with postgres.connect() as c:
            assert c.execute(f"SELECT count(*) FROM {schema}.refunds").fetchone()[0] == 0
        capsys.readouterr()
        code = cdc_main(["compare", "--config", str(config), "--source", "shop", "--target", "pg"])
        out = capsys.readouterr().out
        assert code == 0 and "refunds: EQUAL" in out and "orders: EQUAL" in out, out
    finally:
        if apply is not None and apply.poll() is None:
            apply.kill()
            apply.wait(30)
        assert daemon.stop() == 0, daemon.tail()
        with postgres.connect() as c:
            c.execute(f"DROP SCHEMA {schema} CASCADE")
            c.commit()
    assert not warnings_in(daemon.log.read_text()), daemon.log.read_text()
    assert not warnings_in(apply_log.read_text()), apply_log.read_text()
