"""A compressed binlog through `cdc run` -> broker -> `cdc apply` -> PostgreSQL, on each source flavour.

- MariaDB with ``log_bin_compress=ON``: ``log_bin_compress_min_len`` is small, so the binlog mixes compressed and
  plain rows and query events within transactions, and a row over 64 KB makes a multi-byte compressed length.
- MySQL 9.7 (the session server, its documented capture user): most writing transactions come from a session with
  ``binlog_transaction_compression=ON`` (each one zstd TRANSACTION_PAYLOAD_EVENT, the 70 KB row's too), every
  fifth from a session without it (plain events between the payloads).

Every committed row must land exactly once: `cdc compare` EQUAL, and a keyless table shows any duplicate as an
extra copy.
"""

from __future__ import annotations

import uuid

import pytest

from cdc.cli import main as cdc_main
from cdc.dev.mysql import MySQL
from tests.e2e.apply_pipeline import Pipeline

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]


@pytest.fixture(params=["mariadb", "mysql97"])
def compressed_source(request):
    """(server, database, source_options): a compressing MariaDB of its own captured as its ``cdczip`` user (the
    documented grants), or the MySQL 9.7 session server with a fresh database (Pipeline captures it as its
    documented capture user; compression is a session setting there)."""
    if request.param == "mariadb":
        db = request.getfixturevalue("mariadb_compressed")
        db.query("CREATE DATABASE shop")
        yield db, "shop", {"user": "cdczip", "password": "zip"}
        return
    db = request.getfixturevalue("mysql97_primary")
    name = f"shop_{uuid.uuid4().hex[:8]}"
    db.query(f"CREATE DATABASE {name}")
    try:
        yield db, name, None
    finally:
        db.query(f"DROP DATABASE IF EXISTS {name}")


def _event_kinds_since(my, first: str) -> set[str]:
    """The event types of the binlog files from ``first`` on (the session server's older files hold other tests'
    events)."""
    files = [r[0] for r in my.query("SHOW BINARY LOGS")]
    return {r[2] for f in files[files.index(first):] for r in my.query(f"SHOW BINLOG EVENTS IN '{f}'")}


def test_compressed_binlog_lands_equal_in_postgres(tmp_path, compressed_source, broker, postgres, topic_prefix,
                                                   spark, capsys):
    my, db, login = compressed_source
    mysql = isinstance(my, MySQL)
    first = my.query("SHOW BINARY LOGS")[-1][0]
    p = Pipeline(tmp_path, my, broker, postgres, topic_prefix, db, targets=("pg",), source_options=login).start()
    try:
        my.query(f"CREATE TABLE {db}.items (id INT PRIMARY KEY, tag VARCHAR(20), note LONGTEXT, qty INT)")
        my.query(f"CREATE TABLE {db}.ledger (k INT, v VARCHAR(40))")  # keyless: a duplicate is a third copy
        zipped, plain = my.connect(db, autocommit=False), my.connect(db, autocommit=False)
        try:
            if mysql:
                with zipped.cursor() as cur:
                    cur.execute("SET SESSION binlog_transaction_compression = ON")
            for t in range(50):  # 50 transactions of 20 rows, each with a short (plain on MariaDB) first event
                conn = plain if mysql and t % 5 == 4 else zipped
                with conn.cursor() as cur:
                    cur.execute("INSERT INTO items VALUES (%s, 'a', NULL, 1)", (t * 100,))
                    cur.executemany("INSERT INTO items VALUES (%s, %s, %s, %s)",
                                    [(t * 100 + i, f"t{i}", f"note {i} " * 6, i) for i in range(1, 20)])
                    cur.executemany("INSERT INTO ledger VALUES (%s, %s)", [(t, "same row twice, long enough")] * 2)
                conn.commit()
            with zipped.cursor() as cur:
                cur.execute("INSERT INTO items VALUES (9000, 'big', %s, 0)", ("y" * 70_000 + "end",))
                zipped.commit()
                cur.execute("UPDATE items SET qty = qty + 100, note = CONCAT(note, '!') WHERE id BETWEEN 1 AND 999")
                cur.execute("UPDATE items SET qty = 0 WHERE id = 0")
                zipped.commit()
                cur.execute("DELETE FROM items WHERE id BETWEEN 1001 AND 1999")
                cur.execute("DELETE FROM ledger WHERE k = 7 LIMIT 1")
                zipped.commit()
        finally:
            zipped.close()
            plain.close()
        kinds = _event_kinds_since(my, first)
        want = {"Transaction_payload", "Write_rows"} if mysql else {
            "Write_rows_compressed_v1", "Update_rows_compressed_v1", "Delete_rows_compressed_v1", "Query_compressed",
            "Write_rows_v1"}
        assert want <= kinds, kinds
        sid = p.sentinel()
        p.apply_until(spark, sid)
    finally:
        p.stop()
    counts = p.assert_equal(["items", "ledger"])
    assert counts == {"items": 50 * 20 + 1 - (19 + 9 * 20), "ledger": 99}
    for table in ("items", "ledger"):
        code = cdc_main(["compare", "--config", str(p.config_path), "--source", "src", "--target", "pg",
                         "--tables", f"{db}.{table}"])
        out = capsys.readouterr().out
        assert code == 0 and f"{table}: EQUAL" in out, f"exit {code}\n{out}"
