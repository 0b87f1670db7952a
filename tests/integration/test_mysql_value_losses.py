"""Values the binlog path used to lose arrive exactly, and equal to the snapshot path (issue #14).

Faults injected, on real MariaDB and MySQL 9.7, written once and read by both the binlog reader and a snapshot:
BINARY(n) values ending in zero bytes (the binlog stores them without the padding: the user saw
15 bytes of a BINARY(16), and ``unhex('00')`` as empty), YEAR 0000 (the library adds 1900 to the
stored byte: the user saw 1900), the empty SET (the library flags it as NULL), and zero dates
(DATE '0000-00-00', '2024-00-10', DATETIME and TIMESTAMP zero: the binlog gives None, PyMySQL the
text '0000-00-00': the user saw NULL from the stream and '0000-00-00' from a snapshot).
"""

from __future__ import annotations

import base64

import pytest

from cdc.stream.events import Change, TableId
from readers.mysql.position import GtidSet
from readers.mysql.snapshot import TableReader
from tests.integration.mysql_helpers import collect, source_for, transactions

pytestmark = pytest.mark.mysql

COLUMNS = ("id INT PRIMARY KEY, b16 BINARY(16), b1 BINARY(1), b3 BINARY(3), y YEAR, s SET('a','b'), d DATE, "
           "dt DATETIME(3), ts TIMESTAMP NULL")
ROWS = [
    ("(1, unhex('000102030405060708090a0b0c0d7400'), unhex('00'), x'61', 0, '', '0000-00-00', "
    "'0000-00-00 00:00:00', '0000-00-00 00:00:00')"),
    "(2, unhex('ff'), x'ff', x'000000', 1901, 'a,b', '2024-00-10', '2024-01-00 10:00:00', '1970-01-01 00:00:01')",
    "(3, NULL, NULL, NULL, 2155, NULL, '1000-01-01', '9999-12-31 23:59:59.999', '2038-01-19 03:14:07')",
]


def test_binary_padding_year_0000_empty_set_and_zero_dates(mysql_source, tmp_source_db):
    db, q = tmp_source_db, mysql_source.query
    q(f"CREATE TABLE `{db}`.l ({COLUMNS})")
    src = source_for(mysql_source, [f"{db}.*"])
    src.start(None)
    try:
        conn = mysql_source.connect()
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_mode = '', time_zone = '+00:00'")
            cur.execute(f"INSERT INTO `{db}`.l VALUES " + ", ".join(ROWS))
        conn.commit()
        conn.close()
        end = GtidSet.parse(mysql_source.gtid_binlog_pos())
        events = collect(src, lambda evs: src.state.issuperset(end), timeout=20)
    finally:
        src.close()
    streamed = {ch.after["id"]: ch.after for _, rows in transactions(events) for ch in rows
                if isinstance(ch, Change) and ch.table.table == "l"}
    conn = mysql_source.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION time_zone = '+00:00'")
        snap = {r["id"]: r for r in TableReader(conn, TableId(db, "l")).chunk(None, 100)}
    finally:
        conn.close()
    b = lambda text: base64.b64encode(bytes.fromhex(text)).decode()
    want = {
        1: {"id": 1, "b16": b("000102030405060708090a0b0c0d7400"), "b1": b("00"), "b3": b("610000"), "y": 0,
            "s": "", "d": None, "dt": None, "ts": None},
        2: {"id": 2, "b16": b("ff" + "00" * 15), "b1": b("ff"), "b3": b("000000"), "y": 1901, "s": "a,b",
            "d": None, "dt": None, "ts": "1970-01-01T00:00:01Z"},
        3: {"id": 3, "b16": None, "b1": None, "b3": None, "y": 2155, "s": None, "d": "1000-01-01",
            "dt": "9999-12-31T23:59:59.999000", "ts": "2038-01-19T03:14:07Z"},
    }
    assert streamed == want, f"binlog path: {streamed}"
    assert snap == want, f"snapshot path: {snap}"
