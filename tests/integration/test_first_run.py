"""A newcomer's first run on real MariaDB and tansu: the capture user created by the documented statements
(docs/snippets/mariadb-user.sql, included in the quickstart) passes `cdc check` and `cdc run` streams; a user
lacking one of them, a wrong password, an unsafe server setting and a wrong port are each named once with the fix.
The documented-user, missing-privilege, wrong-password and unsafe-setting tests run on both flavours (on MySQL 9.7
the user docs/setup.md's MySQL 8 statements make)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from cdc.dev.ports import free_port
from cdc.stream.envelope import changes_topic
from tests.e2e.mysql_daemon import Daemon, wait_for
from tests.fixtures.services import documented_capture_user
from tests.integration.stream_check import read_stream

pytestmark = [pytest.mark.mysql, pytest.mark.kafka]

CDC = str(Path(sys.executable).with_name("cdc"))
DOCUMENTED = Path(__file__).resolve().parents[2] / "docs" / "snippets" / "mariadb-user.sql"


@pytest.fixture
def documented_user(mysql_source):
    """(user, password) made by the documented statements verbatim: on MariaDB docs/snippets/mariadb-user.sql with
    only its name and password changed; on MySQL 9.7 the session server's ``capture_user`` (docs/setup.md)."""
    if hasattr(mysql_source, "capture_user"):
        yield mysql_source.capture_user
        return
    name = "doc_" + uuid.uuid4().hex[:8]
    for stmt in DOCUMENTED.read_text().split(";"):
        if stmt.strip():
            mysql_source.query(stmt.replace("'cdc'", f"'{name}'").replace("change-me", "pw"))
    yield name, "pw"
    mysql_source.query(f"DROP USER IF EXISTS '{name}'@'%'")


def write(tmp_path: Path, mariadb, user: str, tables: list[str], broker, prefix: str, hosts=None,
          password: str = "pw") -> Path:
    cfg = {"sources": [{"name": "shop", "kind": "mysql", "hosts": hosts or [mariadb.address], "user": user,
                        "password": password, "tables": tables, "reconnect_attempts": 1, "reconnect_backoff_s": 0.1,
                        "server_id": 700_000 + uuid.uuid4().int % 100_000}],
           "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": prefix},
           "metrics": {"port": 0}, "drain_timeout_s": 20}
    path = tmp_path / "cdc.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def cdc(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([CDC, *args], check=False, capture_output=True, text=True, timeout=timeout)


def test_documented_grant_passes_check_and_streams(tmp_path, mysql_source, tmp_source_db, documented_user, broker,
                                                    topic_prefix):
    db, server = tmp_source_db, mysql_source
    server.query(f"CREATE TABLE `{db}`.orders (id INT PRIMARY KEY, note VARCHAR(20))")
    server.query(f"INSERT INTO `{db}`.orders VALUES (1, 'before start')")
    user, password = documented_user
    config = write(tmp_path, server, user, [f"{db}.*"], broker, topic_prefix, password=password)

    check = cdc("check", "--config", str(config), "--json")
    assert check.returncode == 0, check.stdout + check.stderr
    found = {c["check"]: c for c in json.loads(check.stdout)}
    assert found[f"source shop: host {server.address}"]["ok"]

    daemon = Daemon(config, tmp_path / "daemon.log").start()
    topic = changes_topic(topic_prefix, "shop")
    try:
        wait_for(lambda: "streaming from" in daemon.tail(), 60, "the reader to stream", daemon=daemon)
        server.query(f"INSERT INTO `{db}`.orders VALUES (2, 'after start')")

        def rows():
            try:
                return [(r["op"], r["after"]["id"]) for _, tx, _ in read_stream(broker.bootstrap, topic).transactions
                        for r in tx]
            except Exception:  # noqa: BLE001 - the topic may not exist yet
                return []
        # the default `snapshot: initial` brings the row written before the start, then the stream flows
        got = wait_for(lambda: (r := rows()) and ("c", 2) in r and r, 60, "the snapshot row and the insert",
                       daemon=daemon)
        assert ("r", 1) in got
        # the docs' log line that says the snapshot is out (docs/quickstart.md, docs/operations.md)
        assert re.search(r"source shop: snapshot done: 1 rows of 1 tables in [\d.]+s; the binlog follows from \S",
                         daemon.tail()), daemon.tail()
        assert daemon.alive()
    finally:
        assert daemon.stop() == 0, daemon.tail()


# per flavour: what the user is granted, the one privilege then missing, how `cdc run` names it. MariaDB: SLAVE
# MONITOR (enough before 10.5.9), met at run time. MySQL 9.7: REPLICATION SLAVE, which the binlog dump and SHOW
# BINLOG EVENTS (a DDL's statement at its position, readers/mysql/definitions.py) need: named once for both, by the
# start check
WITHOUT_ONE = {"mariadb": ("REPLICATION SLAVE, BINLOG MONITOR, SELECT", "SLAVE MONITOR",
                           "lacks the SLAVE MONITOR privilege"),
               "mysql97": ("REPLICATION CLIENT, SELECT", "REPLICATION SLAVE",
                           "privilege REPLICATION SLAVE is not granted")}


def test_missing_privilege_is_named_with_its_grant(tmp_path, mysql_source, tmp_source_db, broker, topic_prefix,
                                                   request):
    """The documented grant without one privilege: `cdc check` fails naming it and the GRANT, and `cdc run` stops
    with the same, printed once; the printed GRANT makes the check pass."""
    server = mysql_source
    granted, missing, said = WITHOUT_ONE[request.node.callspec.params["mysql_source"]]
    user = "nomon_" + uuid.uuid4().hex[:8]
    server.query(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'")
    server.query(f"GRANT {granted} ON *.* TO '{user}'@'%'")
    try:
        db = tmp_source_db
        server.query(f"CREATE TABLE `{db}`.orders (id INT PRIMARY KEY)")
        config = write(tmp_path, server, user, [f"{db}.*"], broker, topic_prefix)
        check = cdc("check", "--config", str(config), "--json")
        assert check.returncode == 1, check.stdout + check.stderr
        failed = [c for c in json.loads(check.stdout) if not c["ok"]]
        assert [c["check"] for c in failed] == [f"source shop: host {server.address}"], failed
        assert f"privilege {missing} is not granted" in failed[0]["detail"], failed
        assert failed[0]["detail"].count(missing) == 1, failed  # one line per privilege
        assert failed[0]["fix"] == f"GRANT {missing} ON *.* TO '{user}'@'%';"

        run = cdc("run", "--config", str(config), timeout=90)
        assert run.returncode == 2, run.stderr
        err = run.stderr
        assert said in err and f"GRANT {missing} ON *.* TO '{user}'@'%'" in err, err
        assert err.count(said) == 1, err  # one error, printed once
        assert "no writable primary" not in err

        server.query(f"GRANT {missing} ON *.* TO '{user}'@'%'")  # the printed fix makes the check pass
        assert cdc("check", "--config", str(config), "--json").returncode == 0
    finally:
        server.query(f"DROP USER IF EXISTS '{user}'@'%'")


def test_wrong_port_says_what_happened_to_the_host(tmp_path, mariadb_primary, tmp_mysql_db, broker, topic_prefix):
    port = free_port()
    config = write(tmp_path, mariadb_primary, "cdc", [f"{tmp_mysql_db}.*"], broker, topic_prefix,
                   hosts=[f"127.0.0.1:{port}"])
    text = yaml.safe_load(config.read_text())
    text["sources"][0]["password"] = "cdc"
    # an unreachable source is restarted with backoff for as long as it takes (sources fail alone); one
    # restart here, so that the daemon ends and its output can be read
    text["source_restart_limit"] = 1
    config.write_text(yaml.safe_dump(text))
    run = cdc("run", "--config", str(config), timeout=90)
    assert run.returncode == 2, run.stderr
    err = run.stderr
    assert f"127.0.0.1:{port}" in err and "Connection refused" in err, err
    assert "fix: check the host:port in `hosts`" in err, err
    assert "no writable primary" not in err, err
    # once in the restart warning, once in the final error: the CLI does not repeat it
    assert err.count("Connection refused") == 2, err


def test_pattern_matching_nothing_is_named_at_start(tmp_path, mariadb_primary, tmp_mysql_db, broker, topic_prefix):
    db = tmp_mysql_db
    mariadb_primary.query(f"CREATE TABLE `{db}`.orders (id INT PRIMARY KEY)")
    config = write(tmp_path, mariadb_primary, "cdc", [f"{db}.orders", f"{db}.order_itmes"], broker, topic_prefix)
    text = yaml.safe_load(config.read_text())
    text["sources"][0]["password"] = "cdc"
    config.write_text(yaml.safe_dump(text))
    daemon = Daemon(config, tmp_path / "daemon.log").start()
    try:
        wait_for(lambda: "streaming from" in daemon.tail(), 60, "the reader to stream", daemon=daemon)
        warnings = [line for line in daemon.tail(200).splitlines() if "matches no table" in line]
        assert len(warnings) == 1, daemon.tail()
        assert "WARNING" in warnings[0] and f"'{db}.order_itmes'" in warnings[0] and f"{db}.orders" in warnings[0]
    finally:
        assert daemon.stop() == 0, daemon.tail()


def test_check_on_a_wrong_kafka_port_answers_at_once_and_quietly(tmp_path):
    port = free_port()
    config = tmp_path / "cdc.yaml"
    config.write_text(yaml.safe_dump({"kafka": {"bootstrap_servers": f"127.0.0.1:{port}"}}))
    started = time.monotonic()
    check = cdc("check", "--config", str(config), timeout=60)
    took = time.monotonic() - started
    assert check.returncode == 1, check.stdout + check.stderr
    lines = check.stdout.splitlines()
    assert lines[-1] == "0 ok, 1 failed", check.stdout
    assert f"127.0.0.1:{port}: Connection refused" in check.stdout
    assert "rdkafka" not in check.stderr, check.stderr  # no client log line after the summary
    assert took < 10, took  # the client's own timeout alone is 10 s; a refused port answers at once


@pytest.mark.postgres
def test_apply_finds_a_missing_target_database_before_spark(tmp_path, postgres, broker, topic_prefix):
    dsn = postgres.dsn.rsplit("/", 1)[0] + "/no_such_db"
    config = tmp_path / "cdc.yaml"
    config.write_text(yaml.safe_dump({
        "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": topic_prefix},
        "targets": [{"name": "pg", "kind": "postgres", "dsn": dsn, "schema": "public"}],
        "apply": [{"source": "shop", "target": "pg", "checkpoint_dir": str(tmp_path / "ckpt")}],
        "metrics": {"port": 0}}))
    run = cdc("apply", "--config", str(config), timeout=120)
    assert run.returncode == 2, run.stderr
    assert "target pg: cannot connect" in run.stderr and "no_such_db" in run.stderr, run.stderr
    assert "fix: check targets[pg]" in run.stderr, run.stderr
    assert not (tmp_path / "ckpt").exists()  # no streaming query was ever planned
    assert not any(w in run.stderr for w in ("SparkContext", "log4j", "py4j", "WARN")), run.stderr  # no JVM started
    assert run.stderr.count("no_such_db") == 1, run.stderr


@pytest.fixture(params=["mariadb", "mysql97"])
def alone_with_user(request):
    """A FRESH primary of each flavour (its settings are changed) and the capture user the docs make there: on
    MariaDB docs/snippets/mariadb-user.sql, on MySQL 9.7 docs/setup.md's MySQL 8 statements."""
    server = request.getfixturevalue(f"{request.param}_alone")
    return server, documented_capture_user(server, "cdc_first", "first-pw")


def test_unsafe_setting_is_printed_once(tmp_path, alone_with_user, broker, topic_prefix):
    server, (user, password) = alone_with_user
    server.query("CREATE TABLE test.orders (id INT PRIMARY KEY)")
    server.query("SET GLOBAL binlog_format=STATEMENT")
    config = write(tmp_path, server, user, ["test.*"], broker, topic_prefix, password=password)
    check = cdc("check", "--config", str(config), "--json")
    assert check.returncode == 1, check.stdout + check.stderr
    failed = [c for c in json.loads(check.stdout) if not c["ok"]]
    assert [(c["check"], c["detail"]) for c in failed] == \
        [(f"source shop: host {server.address}", "binlog_format is STATEMENT")], failed
    assert "SET GLOBAL binlog_format=ROW" in failed[0]["fix"], failed
    run = cdc("run", "--config", str(config), timeout=90)
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("binlog_format is STATEMENT") == 1, run.stderr  # not in a trailer, not in the summary
    assert "fix: SET GLOBAL binlog_format=ROW" in run.stderr


def test_wrong_password_is_named_once_with_the_fix(tmp_path, mysql_source, tmp_source_db, documented_user, broker,
                                                   topic_prefix):
    server, (user, _) = mysql_source, documented_user
    config = write(tmp_path, server, user, [f"{tmp_source_db}.*"], broker, topic_prefix, password="not-the-password")
    check = cdc("check", "--config", str(config), "--json")
    assert check.returncode == 1, check.stdout + check.stderr
    failed = [c for c in json.loads(check.stdout) if not c["ok"]]
    assert failed[0]["check"] == f"source shop: host {server.address}", failed
    assert f"{server.address} rejected user '{user}': Access denied" in failed[0]["detail"], failed
    run = cdc("run", "--config", str(config), timeout=90)
    assert run.returncode == 2, run.stderr
    said = f"{server.address} rejected user '{user}': Access denied"
    assert run.stderr.count(said) == 1, run.stderr
    assert "fix: check the source's `user` and its password" in run.stderr, run.stderr
    assert "not-the-password" not in run.stderr + check.stdout
