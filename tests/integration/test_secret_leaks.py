"""No secret ever shows: the failure paths run with a recognisable password, and ALL output is searched.

Covered: config errors (a bad value next to the password, the password from an environment
variable, an unreadable password_file, two passwords for one login), connection failures
(MariaDB refusing the password in `cdc run` and `cdc check`, PostgreSQL refusing a target's
password in `cdc compare` and `cdc check`, Kafka unreachable), a daemon running for a few seconds against real
MariaDB and the broker at logging level DEBUG (its whole log, /metrics, /healthz, /readyz, and the
command lines of it and its children), and the loaded Config's repr, str and JSON dump.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml

from cdc.config.loader import load_config
from cdc.dev.ports import HOST, free_port
from cdc.dev.procs import spawn, terminate
from tests.fixtures.ops import DaemonProcess, total

pytestmark = [pytest.mark.mysql, pytest.mark.kafka, pytest.mark.postgres]

LEAK = "Leak-Me-7f3a9#*!"
FORMS = (LEAK, quote(LEAK, safe=""), LEAK.replace("#", "\\#"))  # as written, percent-encoded, escaped
CDC = str(Path(sys.executable).with_name("cdc"))


def assert_no_leak(text: str, where: str) -> None:
    for form in FORMS:
        assert form not in text, f"the password ({form!r}) shows in {where}:\n{text[-3000:]}"


@pytest.fixture
def leak_user(mariadb_primary):
    """A MariaDB account whose password is LEAK (replication rights, as the cdc user)."""
    for host in ("%", "localhost"):
        mariadb_primary.query(f"CREATE USER IF NOT EXISTS 'leak'@'{host}' IDENTIFIED BY '{LEAK}'")
        mariadb_primary.query(f"GRANT ALL PRIVILEGES ON *.* TO 'leak'@'{host}'")
    yield "leak"
    for host in ("%", "localhost"):
        mariadb_primary.query(f"DROP USER IF EXISTS 'leak'@'{host}'")


def write_config(tmp_path: Path, source: dict, *, bootstrap: str = "127.0.0.1:9", prefix: str = "leak",
                 extra: dict | None = None) -> Path:
    cfg = {"sources": [{"name": "src", "kind": "mysql", "tables": ["test.*"], "connect_timeout_s": 3,
                        "reconnect_attempts": 1, "reconnect_backoff_s": 0.2, **source}],
           "kafka": {"bootstrap_servers": bootstrap, "topic_prefix": prefix},
           "metrics": {"host": HOST, "port": free_port()},
           "logging": {"level": "DEBUG", "json": False},
           "spill_dir": str(tmp_path / "spill"), **(extra or {})}
    path = tmp_path / "cdc.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def run_cdc(args: list[str], env: dict[str, str] | None = None, timeout: float = 90) -> tuple[int, str]:
    """(exit code, stdout + stderr) of a `cdc` command that must end by itself."""
    p = subprocess.run([CDC, *args], capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, "CDC_PROGRESS": "off", **(env or {})})
    return p.returncode, p.stdout + p.stderr


def run_daemon_for(config: Path, tmp_path: Path, seconds: float, env: dict[str, str] | None = None,
                   until: str | None = None) -> str:
    """The output of `cdc run` over at most ``seconds`` (less once ``until`` shows in it), then SIGTERM."""
    log = tmp_path / "daemon.log"
    proc = spawn([CDC, "run", "--config", str(config)], log, env={**os.environ, "CDC_PROGRESS": "off", **(env or {})})
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and proc.poll() is None:
            if until and log.exists() and until in log.read_text(errors="replace"):
                break
            time.sleep(0.3)
    finally:
        terminate(proc, timeout=20)
    return log.read_text(errors="replace")


@pytest.mark.parametrize("case", ["bad_value_next_to_it", "password_not_text", "from_env", "unreadable_file",
                                  "two_passwords", "target_dsn"])
def test_config_errors_never_show_the_password(tmp_path, case):
    env: dict[str, str] = {}
    source = {"hosts": ["127.0.0.1:3306"], "user": "cdc", "password": LEAK}
    extra = None
    if case == "bad_value_next_to_it":
        source["server_id"], key = -1, "sources[0].server_id"
    elif case == "password_not_text":  # the rejected value itself is the secret
        source["password"], key = [LEAK], "sources[0].password"
    elif case == "from_env":
        source = {"hosts": ["127.0.0.1:3306"], "user": "cdc", "heartbeat_interval_s": "often"}
        env, key = {"CDC_SOURCES__0__PASSWORD": LEAK}, "sources[0].heartbeat_interval_s"
    elif case == "unreadable_file":
        source = {"hosts": ["127.0.0.1:3306"], "user": "cdc", "password_file": str(tmp_path)}  # a directory
        extra = {"targets": [{"name": "pg", "kind": "postgres", "dsn": f"postgresql://cdc:{quote(LEAK, safe='')}@h/db"}]}
        key = "sources[0].password_file"
    elif case == "two_passwords":
        (tmp_path / "pw").write_text(LEAK + "\n")
        source["password_file"], key = str(tmp_path / "pw"), "sources[0].password_file"
    else:  # a DSN holding the password, in a target whose other value is wrong
        extra = {"targets": [{"name": "pg", "kind": "postgres", "schema": ["not", "a", "name"],
                              "dsn": f"postgresql://cdc:{quote(LEAK, safe='')}@h/db"}]}
        key = "targets[0].schema"
    config = write_config(tmp_path, source, extra=extra)
    for command in (["run", "--config", str(config)], ["check", "--config", str(config)]):
        rc, out = run_cdc(command, env)
        assert rc != 0 and key in out, f"`cdc {command[0]}` exited {rc} without naming {key}:\n{out}"
        assert_no_leak(out, f"`cdc {command[0]}` ({case})")


def test_mariadb_refusing_the_password_in_check_and_run_never_shows_it(tmp_path, mariadb_primary, broker,
                                                                       topic_prefix):
    config = write_config(tmp_path, {"hosts": [mariadb_primary.address], "user": "cdc", "password": LEAK},
                          bootstrap=broker.bootstrap, prefix=topic_prefix)
    rc, out = run_cdc(["check", "--config", str(config)])
    assert rc != 0 and "Access denied" in out, out
    assert_no_leak(out, "`cdc check` with a wrong password")
    out = run_daemon_for(config, tmp_path, 40, until="Access denied")
    assert "Access denied" in out, out[-3000:]
    assert_no_leak(out, "`cdc run` with a wrong password (DEBUG log)")


def test_postgres_refusing_a_target_password_never_shows_it(tmp_path, mariadb_primary, postgres, tmp_mysql_db,
                                                            leak_user):
    mariadb_primary.query(f"CREATE TABLE {tmp_mysql_db}.t (id INT PRIMARY KEY)")
    config = write_config(tmp_path, {"hosts": [mariadb_primary.address], "user": leak_user, "password": LEAK,
                                     "tables": [f"{tmp_mysql_db}.*"]},
                          extra={"targets": [{"name": "pg", "kind": "postgres", "password": LEAK,
                                              "dsn": f"postgresql://cdc@{postgres.host}:{postgres.port}/cdc"}]})
    rc, out = run_cdc(["compare", "--config", str(config), "--source", "src", "--target", "pg",
                       "--tables", f"{tmp_mysql_db}.t=public.t"])
    assert rc != 0 and "password authentication failed" in out, out
    assert_no_leak(out, "`cdc compare` against a target refusing the password")
    rc, out = run_cdc(["check", "--config", str(config)])  # checks the targets too, through the apply's connect
    assert rc != 0 and "password authentication failed" in out, out
    assert_no_leak(out, "`cdc check` of a target refusing the password")


def test_kafka_unreachable_never_shows_the_password(tmp_path, mariadb_primary, leak_user):
    (tmp_path / "pw").write_text(LEAK)
    config = write_config(tmp_path, {"hosts": [mariadb_primary.address], "user": leak_user, "password": None,
                                     "password_file": str(tmp_path / "pw")}, bootstrap=f"{HOST}:{free_port()}")
    out = run_daemon_for(config, tmp_path, 15)
    assert "unreachable" in out, out[-3000:]
    assert_no_leak(out, "`cdc run` with Kafka unreachable (DEBUG log)")


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


@pytest.mark.slow
def test_a_running_daemon_never_shows_the_password(tmp_path, monkeypatch, mariadb_primary, broker, topic_prefix,
                                                   tmp_mysql_db, leak_user):
    """The password given by environment variable; DEBUG logs; rows captured and published."""
    monkeypatch.setenv("CDC_SOURCES__0__PASSWORD", LEAK)
    mariadb_primary.query(f"CREATE TABLE {tmp_mysql_db}.t (id INT PRIMARY KEY, v VARCHAR(20))")
    daemon = DaemonProcess(tmp_path, source="src", mariadb_hosts=[mariadb_primary.address],
                           tables=[f"{tmp_mysql_db}.*"], bootstrap=broker.bootstrap, topic_prefix=topic_prefix,
                           source_options={"user": leak_user, "password": None},
                           extra={"logging": {"level": "DEBUG", "json": True}})
    config = load_config(daemon.config_path)
    assert config.sources[0].password.get_secret_value() == LEAK
    assert_no_leak(repr(config) + str(config) + config.model_dump_json(), "the loaded Config")
    daemon.start()
    try:
        for i in range(20):
            mariadb_primary.query(f"INSERT INTO {tmp_mysql_db}.t VALUES ({i}, 'row {i}')")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and \
                total(daemon.scrape(), "cdc_source_transactions_published_total", source="src") < 20:
            time.sleep(0.5)
        assert total(daemon.scrape(), "cdc_source_transactions_published_total", source="src") >= 20
        time.sleep(3)  # a few seconds of steady running (heartbeats, metrics updates)
        bodies = {path: daemon.http(path) for path in ("/metrics", "/healthz", "/readyz")}
        assert bodies["/readyz"][0] == 200 and b"cdc_" in bodies["/metrics"][1]
        for path, (_, body) in bodies.items():
            assert_no_leak(body.decode(errors="replace"), path)
        pids = _descendants(daemon.proc.pid)
        for pid in pids:
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue  # exited meanwhile
            assert_no_leak(cmdline, f"the command line of pid {pid}")
    finally:
        daemon.stop()
    log = daemon.log_tail(10_000_000)
    assert "streaming from" in log and '"level":"INFO"' in log, log[-3000:]  # the root logger is at DEBUG
    assert_no_leak(log, "the daemon's DEBUG log")
