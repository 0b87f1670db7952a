"""Pure helpers of cdc.dev: cross-engine fingerprints, workload arguments, pid checks, config contract."""

from __future__ import annotations

import os
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from cdc.dev.demo import _fingerprint
from cdc.dev.stack import DevStack, pid_alive
from cdc.dev.workload import run_workload


def test_fingerprint_ignores_row_order_and_engine_representations():
    mysql_rows = [(1, Decimal("10.50"), b"\x01", datetime(2024, 2, 29, 1, 2, 3), 1),
                  (2, None, None, None, 0)]
    duck_rows = [(2, None, None, None, False),
                 (1, Decimal("10.5"), bytearray(b"\x01"), datetime(2024, 2, 29, 1, 2, 3), True)]
    assert _fingerprint(mysql_rows) == _fingerprint(duck_rows)
    assert _fingerprint(mysql_rows)[0] == 2
    assert _fingerprint([(1, date(2024, 1, 1))]) != _fingerprint([(1, date(2024, 1, 2))])


def test_run_workload_needs_a_bound():
    with pytest.raises(ValueError, match="seconds= or transactions="):
        run_workload(lambda: None, "db")


def test_pid_alive_checks_the_executable():
    me = os.getpid()
    exe = Path(f"/proc/{me}/cmdline").read_bytes().split(b"\0")[0].decode()
    assert pid_alive(me, exe)
    assert not pid_alive(me, "/usr/sbin/mariadbd")  # a recycled pid running something else
    assert not pid_alive(None)


def test_dev_config_is_valid_for_the_config_contract(tmp_path):
    from cdc.config.loader import parse_config

    stack = DevStack(tmp_path)  # nothing started: ports are chosen, the config can be rendered
    cfg = parse_config(stack.config())
    assert cfg.sources[0].kind == "mysql" and len(cfg.sources[0].hosts) == 2
    assert {t.kind for t in cfg.targets} == {"duckdb", "postgres"}


def test_only_names_the_services_started_and_no_config_is_written_without_all(tmp_path):
    stack = DevStack(tmp_path, only=["broker"])
    assert list(stack.services) == ["broker"] and not stack.full
    assert list(DevStack(tmp_path, only=["mariadb", "postgres"]).services) == [
        "mariadb-primary", "mariadb-replica", "postgres"]
    assert DevStack(tmp_path, only=["mariadb", "broker", "postgres"]).full
    with pytest.raises(ValueError, match="unknown dev service kafka: choose among mariadb, broker, postgres"):
        DevStack(tmp_path, only=["kafka"])


def test_dev_up_takes_only(tmp_path):
    from cdc.cli import build_parser

    args = build_parser(["dev"]).parse_args(["dev", "up", "--only", "broker", "--only", "postgres"])
    assert args.only == ["broker", "postgres"]
    with pytest.raises(SystemExit):
        build_parser(["dev"]).parse_args(["dev", "up", "--only", "kafka"])
