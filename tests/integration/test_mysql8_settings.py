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


def test_check_reports_log_bin_compress_as_decoded(mariadb_primary):
    mariadb_primary.query("SET GLOBAL log_bin_compress=ON")
    try:
        problems, notes = check.inspect_host(mariadb_primary.address, "cdc", "cdc", candidate=True)
    finally:
        mariadb_primary.query("SET GLOBAL log_bin_compress=OFF")
    assert problems == []
    assert [n for n in notes if n.startswith("log_bin_compress=ON") and "decoded" in n]
    assert check.inspect_host(mariadb_primary.address, "cdc", "cdc", candidate=True) == ([], [])
