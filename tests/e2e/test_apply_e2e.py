"""Whole pipeline on real services, on each source flavour (``mysql_source``: MariaDB, MySQL 9.7): a workload ->
`cdc run` -> tansu -> Spark -> PostgreSQL, MySQL/MariaDB (the source server), DuckDB."""

from __future__ import annotations

import random
import threading
import time
from decimal import Decimal

import pytest

from cdc.dev.workload import TABLES, run_workload
from tests.e2e.apply_pipeline import Pipeline

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]


@pytest.fixture
def pipeline(tmp_path, mysql_source, broker, postgres, topic_prefix, tmp_source_db):
    p = Pipeline(tmp_path, mysql_source, broker, postgres, topic_prefix, tmp_source_db).start()
    yield p
    p.stop()


def test_random_workload_lands_row_for_row_in_three_targets(pipeline, spark, mysql_source, tmp_source_db):
    conn = lambda: mysql_source.connect(tmp_source_db)
    summary = run_workload(conn, tmp_source_db, transactions=300, threads=4, seed=7)
    assert summary.committed > 200 and summary.rows[("customers", "update")] > 0
    # a keyless table too: duplicates rows, deletes one copy
    mysql_source.query(f"CREATE TABLE `{tmp_source_db}`.tags (tag VARCHAR(10), n INT)")
    for _ in range(3):
        mysql_source.query(f"INSERT INTO `{tmp_source_db}`.tags VALUES ('a', 1), ('a', 1), ('b', 2)")
    mysql_source.query(f"DELETE FROM `{tmp_source_db}`.tags WHERE tag = 'a' LIMIT 1")
    mysql_source.query(f"ALTER TABLE `{tmp_source_db}`.tags ADD COLUMN note VARCHAR(20)")  # followed
    mysql_source.query(f"INSERT INTO `{tmp_source_db}`.tags VALUES ('c', 3, 'after ddl')")
    sid = pipeline.sentinel()
    pipeline.apply_until(spark, sid)
    counts = pipeline.assert_equal(list(TABLES) + ["tags"])
    assert counts["orders"] > 0 and counts["tags"] == 9
    seqs = {t: pipeline.progress(t)[0] for t in pipeline.targets}  # targets may differ by trailing heartbeats
    assert min(seqs.values()) > summary.committed, seqs


def test_bank_transfers_never_show_a_wrong_total(tmp_path, mysql_source, broker, postgres, topic_prefix,
                                                 tmp_source_db, spark):
    p = Pipeline(tmp_path, mysql_source, broker, postgres, topic_prefix, tmp_source_db, targets=("pg", "my")).start()
    db, n, total = tmp_source_db, 20, Decimal("20000.00")
    try:
        mysql_source.query(f"CREATE TABLE `{db}`.accounts (id INT PRIMARY KEY, balance DECIMAL(12,2) NOT NULL)")
        mysql_source.query(f"INSERT INTO `{db}`.accounts VALUES " + ", ".join(f"({i}, 1000.00)" for i in range(n)))
        thread, stop, errors = p.apply_in_thread(spark)
        seen, bad, done = [], [], threading.Event()

        def reader():
            while not done.is_set():
                for t in ("pg", "my"):
                    try:
                        rows = p.target_query(t, "SELECT count(*), sum(balance) FROM {t}accounts")
                    except Exception:  # noqa: BLE001 - not created yet
                        continue
                    cnt, s = rows[0]
                    if cnt:
                        seen.append(s)
                        if cnt != n or Decimal(s) != total:
                            bad.append((t, cnt, s))
                time.sleep(0.02)

        def transfers(seed):
            rng, c = random.Random(seed), mysql_source.connect(db, autocommit=False)  # ONE source txn per transfer
            try:
                for _ in range(100):
                    a, b = rng.sample(range(n), 2)
                    amt = Decimal(rng.randint(1, 5000)) / 100
                    with c.cursor() as cur:
                        # lock both rows first, in key order (no deadlock); key updates are covered by the
                        # workload test
                        cur.execute("SELECT id FROM accounts WHERE id IN (%s, %s) ORDER BY id FOR UPDATE", (a, b))
                        ok = cur.rowcount == 2
                        ok = ok and cur.execute("UPDATE accounts SET balance = balance - %s WHERE id = %s", (amt, a)) == 1
                        ok = ok and cur.execute("UPDATE accounts SET balance = balance + %s WHERE id = %s", (amt, b)) == 1
                    c.commit() if ok else c.rollback()
                    time.sleep(rng.random() * 0.05)
            finally:
                c.close()

        deadline = time.monotonic() + 180  # transfers start once the target holds the accounts
        while not all(p.has_table(t, "accounts") for t in ("pg", "my")):
            assert time.monotonic() < deadline and not errors, errors or "accounts never reached the targets"
            time.sleep(0.5)
        r = threading.Thread(target=reader, daemon=True)
        r.start()
        writers = [threading.Thread(target=transfers, args=(s,)) for s in range(4)]
        for w in writers:
            w.start()
        for w in writers:
            w.join(120)
        sid = p.sentinel()
        try:
            p.wait_sentinel(sid, ["pg", "my"], timeout=180, errors=errors)
        finally:
            done.set()
            r.join(10)
            stop.set()
            thread.join(60)
        assert not errors, errors
        source_total = mysql_source.query(f"SELECT sum(balance) FROM `{db}`.accounts")[0][0]
        assert source_total == total, f"the source itself broke the invariant: {source_total}"
        assert not bad, f"a reader saw a wrong total: {bad[:5]}"
        assert len(seen) > 20
        p.assert_equal(["accounts"])
    finally:
        p.stop()
