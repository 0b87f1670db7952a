"""A snapshot chunk read by the C row decoder (readers/mysql/snapshot_rows.py) equals the same chunk read by
PyMySQL's cursor, value for value and type for type, on MariaDB and on MySQL 9.7: every column type, NULLs,
chunks spread over many socket reads, a row of more than 16 MB (continued packets), and the connection
still usable for the next query afterwards.

Fault injected: a decoder that converted one type differently from PyMySQL (or skipped the snapshot's
stream_value for it) would publish snapshot rows that differ from the rows the binlog streams later."""

from __future__ import annotations

import pytest

from cdc.stream.events import TableId
from readers.mysql import snapshot_rows
from readers.mysql.snapshot import TableReader
from tests.e2e import type_cases
from tests.integration.mysql_helpers import is_mysql

pytestmark = pytest.mark.mysql
native = pytest.importorskip("readers.mysql._snapshot_native")


def _read(server, db: str, table: str, after=None, limit: int = 100_000) -> list[dict]:
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION time_zone = '+00:00'")
        reader = TableReader(conn, TableId(db, table))
        rows = reader.chunk(after, limit)
        with conn.cursor() as cur:  # the connection is at a packet boundary: the next query works
            cur.execute("SELECT 42")
            assert cur.fetchone() == (42,)
        return rows
    finally:
        conn.close()


def _both(server, db: str, table: str, monkeypatch, **kw) -> tuple[list[dict], list[dict]]:
    fast = _read(server, db, table, **kw)
    with monkeypatch.context() as m:
        m.setattr(snapshot_rows, "_snapshot_native", None)
        slow = _read(server, db, table, **kw)
    return fast, slow


def _typed(rows: list[dict]) -> list[list]:
    return [[(k, type(v).__name__, v) for k, v in r.items()] for r in rows]


def test_every_type_reads_as_pymysql_reads_it(mysql_source, tmp_source_db, monkeypatch):
    """The type matrix of tests/e2e/type_cases.py (with VECTOR and the other MySQL-only types on MySQL 9.7)."""
    db, server = tmp_source_db, mysql_source
    conn = server.connect()
    try:
        type_cases.load(conn, db, mysql=is_mysql(server))
    finally:
        conn.close()
    fast, slow = _both(server, db, "types", monkeypatch)
    assert len(fast) == len(type_cases.ROWS) and _typed(fast) == _typed(slow)
    want = {r["id"]: r for r in fast}
    assert want[1]["b64"] == 2**64 - 1 and want[2]["tm"] == "-838:59:59" and want[4]["dte"] is None


def test_many_rows_over_many_reads_and_a_keyset_page(mysql_source, tmp_source_db, monkeypatch):
    db, q = tmp_source_db, mysql_source.query
    q(f"CREATE TABLE `{db}`.t (id BIGINT PRIMARY KEY, v INT, note VARCHAR(300), ts DATETIME(3))")
    q(f"CREATE TABLE `{db}`.d (d INT PRIMARY KEY)")
    q(f"INSERT INTO `{db}`.d VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)")
    i = "(1 + a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d)"
    q(f"INSERT INTO `{db}`.t SELECT {i}, IF({i} % 7 = 0, NULL, {i} * 3 - 30000), REPEAT(CHAR(97 + {i} % 26), "
      f"{i} % 300), IF({i} % 5 = 0, NULL, '2024-01-02 03:04:05.123') "
      f"FROM `{db}`.d a, `{db}`.d b, `{db}`.d c, `{db}`.d e, `{db}`.d f WHERE {i} <= 20000")
    fast, slow = _both(mysql_source, db, "t", monkeypatch)
    assert len(fast) == 20000 and _typed(fast) == _typed(slow)
    fast, slow = _both(mysql_source, db, "t", monkeypatch, after=[12345], limit=5000)
    assert [r["id"] for r in fast] == list(range(12346, 17346)) and _typed(fast) == _typed(slow)


def test_a_row_over_16_mb_reads_through_continued_packets(mysql97_primary, tmp_path, monkeypatch):
    """MySQL 9.7 (max_allowed_packet 64 MB by default): a row of 17 MB comes in two packets."""
    server, db = mysql97_primary, f"big_{tmp_path.name[-20:].lower()}".replace("-", "_")
    server.query(f"CREATE DATABASE `{db}`")
    try:
        server.query(f"CREATE TABLE `{db}`.b (id INT PRIMARY KEY, blob_ LONGBLOB, tail VARCHAR(10))")
        server.query(f"INSERT INTO `{db}`.b VALUES (1, 'a', 'x'), (2, REPEAT('z', 17000000), 'y'), (3, NULL, 'z')")
        fast, slow = _both(server, db, "b", monkeypatch)
        assert [(r["id"], len(r["blob_"] or ""), r["tail"]) for r in fast] == \
            [(1, 4, "x"), (2, 22666668, "y"), (3, 0, "z")]  # binary goes out as base64 text
        assert fast == slow
    finally:
        server.query(f"DROP DATABASE IF EXISTS `{db}`")


def test_a_chunk_read_ahead_and_not_needed_is_dropped_off_the_socket(mysql_source, tmp_source_db):
    """A stop after the next chunk's query went out: its rows are read off before the connection's next query,
    and dropping them after the connection closed is quiet."""
    db, q = tmp_source_db, mysql_source.query
    q(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(200))")
    q(f"INSERT INTO `{db}`.t VALUES " + ", ".join(f"({i}, REPEAT('v', 200))" for i in range(1, 3001)))
    conn = mysql_source.connect()
    try:
        reader = TableReader(conn, TableId(db, "t"))
        first = reader.send(None, 1000)
        assert [r["id"] for r in first.rows(reader.shape)] == list(range(1, 1001))
        reader.send([1000], 1000).drop()
        assert [r["id"] for r in reader.chunk([2000], 5)] == [2001, 2002, 2003, 2004, 2005]
        ahead = reader.send([2005], 1000)
    finally:
        conn.close()
    ahead.drop()
    assert not ahead.result
