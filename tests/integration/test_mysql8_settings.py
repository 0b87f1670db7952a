"""On a real MariaDB: the binlog-status statement chosen per server, and `cdc check` on a compressed binlog
(log_bin_compress=ON is decoded: reported as an ok line, not refused)."""

from __future__ import annotations

import pytest

from readers.mysql import check
from readers.mysql.connection import binlog_status, open_connection

pytestmark = pytest.mark.mysql


def test_binlog_status_is_where_the_server_writes(mariadb_primary):
    conn = open_connection(mariadb_primary.address, "cdc", "cdc")
    try:
        with conn.cursor() as cur:
            at = binlog_status(cur)
    finally:
        conn.close()
    file, pos = mariadb_primary.query("SHOW MASTER STATUS")[0][:2]
    assert at is not None and at[0] == file and at[1] <= int(pos)  # our own SELECTs write nothing


def test_check_reports_log_bin_compress_as_decoded(mariadb_primary, tmp_path):
    from cdc.config.loader import load_config

    cfg = tmp_path / "cdc.yaml"
    cfg.write_text(f"sources: [{{name: s, kind: mysql, hosts: ['{mariadb_primary.address}'], user: cdc, password: cdc,"
                   f" tables: [mysql.*]}}]\nkafka: {{bootstrap_servers: '127.0.0.1:1'}}\n")
    mariadb_primary.query("SET GLOBAL log_bin_compress=ON")
    try:
        problems, notes = check.inspect_host(mariadb_primary.address, "cdc", "cdc", candidate=True)
        lines = [c for c in check.checks(load_config(cfg).sources[0], "sources[0]")  # this source's `cdc check` lines
                 if c.check == f"source s: host {mariadb_primary.address}"]
        check.refuse_unsafe(mariadb_primary.address, load_config(cfg).sources[0])  # `cdc run` starts
    finally:
        mariadb_primary.query("SET GLOBAL log_bin_compress=OFF")
    assert problems == []
    assert [n for n in notes if n.startswith("log_bin_compress=ON") and "decoded" in n]
    assert all(c.ok for c in lines) and any("log_bin_compress=ON" in c.detail for c in lines)
    assert check.inspect_host(mariadb_primary.address, "cdc", "cdc", candidate=True) == ([], [])
