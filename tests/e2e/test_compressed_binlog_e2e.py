"""A MariaDB source with ``log_bin_compress=ON`` through `cdc run` -> broker -> `cdc apply` -> PostgreSQL.

``log_bin_compress_min_len`` is small, so the binlog mixes compressed and plain rows and query events
within transactions, and a row over 64 KB makes a multi-byte compressed length. Every committed row
must land exactly once: `cdc compare` EQUAL, and a keyless table shows any duplicate as an extra copy.
"""

from __future__ import annotations

import pytest

from cdc.cli import main as cdc_main
from tests.e2e.apply_pipeline import Pipeline

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

def test_compressed_binlog_lands_equal_in_postgres(tmp_path, mariadb_compressed, broker, postgres, topic_prefix,
                                                   spark, capsys):
    my, db = mariadb_compressed, "shop"
    my.query(f"CREATE DATABASE {db}")
    p = Pipeline(tmp_path, my, broker, postgres, topic_prefix, db, targets=("pg",),
                 source_options={"user": "cdczip", "password": "zip"}).start()  # the documented grants
    try:
        my.query(f"CREATE TABLE {db}.items (id INT PRIMARY KEY, tag VARCHAR(20), note LONGTEXT, qty INT)")
        my.query(f"CREATE TABLE {db}.ledger (k INT, v VARCHAR(40))")  # keyless: a duplicate is a third copy
        conn = my.connect(db, autocommit=False)
        try:
            with conn.cursor() as cur:
                for t in range(50):  # 50 transactions of 20 rows, each with a short (plain) first event
                    cur.execute("INSERT INTO items VALUES (%s, 'a', NULL, 1)", (t * 100,))
                    cur.executemany("INSERT INTO items VALUES (%s, %s, %s, %s)",
                                    [(t * 100 + i, f"t{i}", f"note {i} " * 6, i) for i in range(1, 20)])
                    cur.executemany("INSERT INTO ledger VALUES (%s, %s)", [(t, "same row twice, long enough")] * 2)
                    conn.commit()
                cur.execute("INSERT INTO items VALUES (9000, 'big', %s, 0)", ("y" * 70_000 + "end",))
                conn.commit()
                cur.execute("UPDATE items SET qty = qty + 100, note = CONCAT(note, '!') WHERE id BETWEEN 1 AND 999")
                cur.execute("UPDATE items SET qty = 0 WHERE id = 0")
                conn.commit()
                cur.execute("DELETE FROM items WHERE id BETWEEN 1001 AND 1999")
                cur.execute("DELETE FROM ledger WHERE k = 7 LIMIT 1")
                conn.commit()
        finally:
            conn.close()
        kinds = {r[2] for f in my.query("SHOW BINARY LOGS") for r in my.query(f"SHOW BINLOG EVENTS IN '{f[0]}'")}
        assert {"Write_rows_compressed_v1", "Update_rows_compressed_v1", "Delete_rows_compressed_v1",
                "Query_compressed", "Write_rows_v1"} <= kinds, kinds
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
