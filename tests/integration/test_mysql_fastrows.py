"""The lean row decoder yields exactly what the library's own decoder yields, on MariaDB and MySQL 9.7."""

from __future__ import annotations

import pytest
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from readers.mysql.binlog import fastrows
from tests.fixtures.services import capture_login
from tests.integration.mysql_helpers import is_mysql

pytestmark = pytest.mark.mysql


def _rows(server, db, start):
    user, password = capture_login(server)
    stream = BinLogStreamReader(
        connection_settings={"host": server.host, "port": server.port, "user": user, "passwd": password},
        server_id=880001, blocking=False, auto_position=start, is_mariadb=not is_mysql(server),
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent], only_schemas=[db], enable_logging=False)
    try:
        return [r for ev in stream for r in ev.rows]
    finally:
        stream.close()


def test_fast_rows_equal_library_rows(mysql_source, tmp_source_db):
    db = tmp_source_db
    start = mysql_source.gtid_binlog_pos()
    mysql_source.query(
        f"CREATE TABLE `{db}`.t (id BIGINT UNSIGNED PRIMARY KEY, a TINYINT, b SMALLINT UNSIGNED, c INT, "
        "d MEDIUMINT, f FLOAT, g DOUBLE, s VARCHAR(300), ch CHAR(3), l VARCHAR(10) CHARACTER SET latin1, "
        "vb VARBINARY(5), dec1 DECIMAL(12,3), dt DATETIME(3), tx TEXT, e ENUM('x','y'), n INT NULL)")
    mysql_source.query(
        f"INSERT INTO `{db}`.t VALUES (18446744073709551615, -128, 65535, -2147483648, -8388608, 1.5, -2.25,"
        " REPEAT('é', 300), 'ab', 'caf\u00e9', x'00ff', -123456789.123, '2024-05-06 07:08:09.123', 'long text',"
        " 'y', NULL), (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 7)")
    mysql_source.query(f"UPDATE `{db}`.t SET c = c + 1, s = 'short' WHERE id = 2")
    mysql_source.query(f"DELETE FROM `{db}`.t WHERE id = 2")
    fastrows.uninstall()
    try:
        slow = _rows(mysql_source, db, start)
    finally:
        fastrows.install()
    fastrows.install(native=False)  # the lean decoder alone (the native pass returns converted values)
    try:
        fast = _rows(mysql_source, db, start)
    finally:
        fastrows.install()
    assert len(slow) == 4
    assert fast == slow
