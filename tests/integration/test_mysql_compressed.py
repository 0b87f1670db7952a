"""MySqlSource on compressed binlogs: every committed row arrives, exactly once.

- MariaDB with ``log_bin_compress=ON``: ``log_bin_compress_min_len`` is small, so one transaction mixes
  compressed and plain rows events, and long statements are written as QUERY_COMPRESSED_EVENT. Rows over
  64 KB make multi-byte compressed lengths.
- MySQL 9.7 (the session server): the writing sessions set ``binlog_transaction_compression=ON``, so each of
  their transactions is one zstd TRANSACTION_PAYLOAD_EVENT; the DDL session does not (plain events mix in).
"""

from __future__ import annotations

import uuid

import pytest

from cdc.stream.events import SchemaChange
from readers.mysql.position import GtidSet
from tests.integration.mysql_helpers import collect, is_mysql, make_source, source_for, transactions

pytestmark = pytest.mark.mysql


def _binlog_event_types(db) -> set[str]:
    files = [r[0] for r in db.query("SHOW BINARY LOGS")]
    return {r[2] for f in files for r in db.query(f"SHOW BINLOG EVENTS IN '{f}'")}


@pytest.fixture(params=["mariadb", "mysql97"])
def compressed(request):
    """(server, database, source): a compressing MariaDB of its own with the documented grants, or the MySQL 9.7
    session server (a fresh database; the capture user of the documented MySQL 8 statements)."""
    if request.param == "mariadb":
        db = request.getfixturevalue("mariadb_compressed")
        assert db.query("SELECT @@log_bin_compress")[0][0] == 1
        db.query("CREATE DATABASE shop")
        yield db, "shop", make_source([db.address], ["shop.*"], user="cdczip", password="zip")
        return
    db = request.getfixturevalue("mysql97_primary")
    name = f"shop_{uuid.uuid4().hex[:8]}"
    db.query(f"CREATE DATABASE {name}")
    try:
        yield db, name, source_for(db, [f"{name}.*"])
    finally:
        db.query(f"DROP DATABASE IF EXISTS {name}")


def test_compressed_binlog_every_row_once(compressed):
    db, shop, src = compressed
    src.start(None)
    q = db.query
    q(f"CREATE TABLE {shop}.items (id INT PRIMARY KEY, tag VARCHAR(20), note LONGTEXT, qty INT) "
      "COMMENT='a statement long enough to be written compressed by log_bin_compress'")
    big = "x" * 70_000 + "end"  # > 64 KB: a 3-byte uncompressed length in the compression header
    conn = db.connect()
    expected: dict[int, tuple] = {}
    try:
        with conn.cursor() as cur:
            if is_mysql(db):
                cur.execute("SET SESSION binlog_transaction_compression = ON")
            for t in range(10):  # 10 transactions of 20 rows: short rows events (plain) and long ones
                cur.execute("BEGIN")
                cur.execute(f"INSERT INTO {shop}.items VALUES (%s, 'a', NULL, 1)", (t * 100,))  # one short row
                cur.executemany(f"INSERT INTO {shop}.items VALUES (%s, %s, %s, %s)",
                                [(t * 100 + i, f"t{i}", f"note {i} " * 5, i) for i in range(1, 20)])
                cur.execute("COMMIT")
            cur.execute(f"INSERT INTO {shop}.items VALUES (5000, 'big', %s, 0)", (big,))
            cur.execute("COMMIT")
            # the first row decides whether a rows event is compressed: short first rows stay plain
            cur.execute(f"UPDATE {shop}.items SET qty = qty + 100 WHERE id = 0")
            cur.execute(f"UPDATE {shop}.items SET qty = qty + 100 WHERE id BETWEEN 1 AND 299")
            cur.execute("COMMIT")
            cur.execute(f"DELETE FROM {shop}.items WHERE id = 800")
            cur.execute(f"DELETE FROM {shop}.items WHERE id > 800 AND id < 1000")
            cur.execute("COMMIT")
            cur.execute(f"SELECT id, tag, note, qty FROM {shop}.items")
            expected = {r[0]: r for r in cur.fetchall()}
    finally:
        conn.close()
    end = GtidSet.parse(db.gtid_binlog_pos())
    try:
        events = collect(src, lambda evs: src.state.issuperset(end), timeout=60)
    finally:
        src.close()

    kinds = _binlog_event_types(db)
    if is_mysql(db):  # the server really wrote them (SHOW BINLOG EVENTS lists the payload's inner events too)
        assert {"Transaction_payload", "Write_rows", "Update_rows", "Delete_rows"} <= kinds, kinds
    else:
        assert {"Write_rows_compressed_v1", "Update_rows_compressed_v1", "Delete_rows_compressed_v1",
                "Query_compressed"} <= kinds, kinds  # the server really wrote them ...
        assert {"Write_rows_v1", "Update_rows_v1", "Delete_rows_v1"} <= kinds, kinds  # ... next to plain ones

    assert any(isinstance(e, SchemaChange) and e.table.table == "items" for e in events)
    txs = transactions(events)
    rows: dict[int, tuple] = {}
    seen: list[tuple[str, int]] = []
    for _, changes in txs:
        for ch in changes:
            image = ch.after if ch.op != "d" else ch.before
            seen.append((ch.op, image["id"]))
            if ch.op == "d":
                rows.pop(image["id"])
            else:
                rows[image["id"]] = (image["id"], image["tag"], image["note"], image["qty"])
    assert len(seen) == len(set(seen)), "a row change arrived twice"
    assert sum(1 for op, _ in seen if op == "c") == 201
    assert sum(1 for op, _ in seen if op == "u") == 60
    assert sum(1 for op, _ in seen if op == "d") == 40
    assert rows == expected
    assert rows[5000][2] == big
