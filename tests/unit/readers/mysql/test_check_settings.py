"""The source-settings rule (readers.mysql.check.evaluate) on what MySQL 8.0/8.4 and MariaDB servers report,
and the binlog-status statement per server version. No MySQL server runs here: the variables below are the
names and values those servers answer to SHOW GLOBAL VARIABLES (the MariaDB ones are also checked live in
tests/integration/test_mysql8_settings.py)."""

from __future__ import annotations

import pytest

from readers.mysql.check import HostSettings, evaluate
from readers.mysql.connection import binlog_status_statement, server_version

GOOD_MYSQL = {"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL",
              "gtid_mode": "ON", "enforce_gtid_consistency": "ON", "log_replica_updates": "ON",
              "binlog_transaction_compression": "OFF", "binlog_row_value_options": "",
              "show_gipk_in_create_table_and_information_schema": "ON"}
GOOD_MARIADB = {"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL",
                "gtid_strict_mode": "ON", "log_slave_updates": "ON", "log_bin_compress": "OFF"}
GRANTS = "GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `cdc`@`%`"


def run(version: str, **changes: str):
    base = GOOD_MARIADB if "mariadb" in version.lower() else GOOD_MYSQL
    return evaluate(HostSettings(version, {**base, **changes}, GRANTS.upper()), "h:3306", "cdc", candidate=True)


@pytest.mark.parametrize("version", ["8.0.36", "8.4.2", "9.1.0", "10.11.6-MariaDB-log", "11.4.2-MariaDB"])
def test_a_well_configured_server_passes(version):
    assert run(version) == ([], [])


def test_partial_json_is_refused_with_its_fix():
    problems, _ = run("8.4.2", binlog_row_value_options="PARTIAL_JSON")
    (p,) = problems
    assert (p.setting, p.found) == ("binlog_row_value_options", "PARTIAL_JSON")
    assert "SET GLOBAL binlog_row_value_options=''" in p.fix and "PARTIAL_UPDATE_ROWS_EVENT" in p.fix


@pytest.mark.parametrize("version, name", [("8.0.36", "binlog_transaction_compression"),
                                           ("10.6.16-MariaDB", "log_bin_compress")])
def test_compression_is_decoded_and_reported_not_refused(version, name):
    problems, notes = run(version, **{name: "ON"})
    assert problems == [] and len(notes) == 1 and notes[0].startswith(f"{name}=ON") and "decoded" in notes[0]


def test_hidden_generated_invisible_primary_keys_are_refused():
    (p,) = run("8.0.36", show_gipk_in_create_table_and_information_schema="OFF")[0]
    assert "SET GLOBAL show_gipk_in_create_table_and_information_schema=ON" in p.fix and "my_row_id" in p.fix


def test_the_older_checks_still_name_each_setting():
    problems, _ = run("8.4.2", binlog_format="MIXED", gtid_mode="OFF", log_replica_updates="OFF")
    assert {p.setting for p in problems} == {"binlog_format", "gtid_mode", "log_replica_updates"}


@pytest.mark.parametrize("version, statement", [
    ("8.4.2", "SHOW BINARY LOG STATUS"), ("8.2.0", "SHOW BINARY LOG STATUS"), ("9.1.0-commercial", "SHOW BINARY LOG STATUS"),
    ("8.0.36-28", "SHOW MASTER STATUS"), ("5.7.44-log", "SHOW MASTER STATUS"),
    ("10.11.6-MariaDB-log", "SHOW MASTER STATUS"), ("11.4.2-MariaDB", "SHOW MASTER STATUS"),
    ("5.5.5-10.6.16-MariaDB", "SHOW MASTER STATUS"),
])
def test_binlog_status_statement_per_server(version, statement):
    assert binlog_status_statement(version) == statement


def test_server_version_parses_what_servers_say():
    assert server_version("8.0.36-28") == (8, 0, 36)
    assert server_version("5.5.5-10.6.16-MariaDB") == (10, 6, 16)
    assert server_version("garbage") == (0, 0, 0)
