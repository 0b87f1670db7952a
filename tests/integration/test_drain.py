"""SIGTERM drains the real daemon within its budget; nothing is published twice.

First SIGTERM while a workload runs: the daemon finishes the transaction in
hand, flushes, exits 0 within ``drain_timeout_s``. A second start picks up
exactly after the last END. Reading the stream afterwards, every source
transaction appears once, whole. A second signal during a long drain exits at
once (128 + SIGTERM); the next start closes the cut-off transaction with
ABORTED and publishes it again whole, so a consumer still sees it once.
"""

from __future__ import annotations

import signal
import threading
import time

import pytest

from cdc.stream.envelope import changes_topic
from tests.fixtures.ops import DaemonProcess, read_stream, total, value, wait_for

pytestmark = [pytest.mark.mysql, pytest.mark.kafka]

SOURCE = "shop"
DRAIN_BUDGET_S = 10.0


def transactions(records: list[dict]) -> tuple[list[str], dict[str, list[dict]], list[str]]:
    """Replay the stream as a consumer does: (END ids in order, rows by committed txid, ABORTED ids)."""
    ended, rows, aborted = [], {}, []
    open_id, pending = None, []
    for r in records:
        status = r.get("status")
        if status == "BEGIN":
            assert open_id is None, f"BEGIN {r['id']} inside open transaction {open_id}"
            open_id, pending = r["id"], []
        elif status == "END":
            assert r["id"] == open_id, f"END {r['id']} does not close {open_id}"
            ended.append(r["id"])
            rows[r["id"]] = pending
            open_id = None
        elif status == "ABORTED":
            aborted.append(r["id"])
            open_id, pending = None, []
        elif "op" in r:
            assert open_id is not None, "data record outside a transaction"
            pending.append(r)
    assert open_id is None, f"stream ends inside transaction {open_id}"
    return ended, rows, aborted


def make_daemon(tmp_path, name, mariadb_primary, broker, topic_prefix, db):
    workdir = tmp_path / name
    workdir.mkdir()
    return DaemonProcess(workdir, source=SOURCE, mariadb_hosts=[mariadb_primary.address], tables=[f"{db}.*"],
                         bootstrap=broker.bootstrap, topic_prefix=topic_prefix,
                         extra={"drain_timeout_s": DRAIN_BUDGET_S})


def test_sigterm_drains_within_budget_and_restart_publishes_nothing_twice(
        mariadb_primary, broker, topic_prefix, tmp_mysql_db, tmp_path):
    db = tmp_mysql_db
    mariadb_primary.query(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, tx INT, k INT)")
    stop = threading.Event()
    committed: list[int] = []

    def workload() -> None:  # 3-row transactions until told to stop (bounded)
        conn = mariadb_primary.connect(db, autocommit=False)
        try:
            with conn.cursor() as cur:
                for tx in range(2000):
                    if stop.is_set():
                        break
                    for k in range(3):
                        cur.execute("INSERT INTO t VALUES (%s, %s, %s)", (tx * 3 + k, tx, k))
                    conn.commit()
                    committed.append(tx)
                    time.sleep(0.005)
        finally:
            conn.close()

    first = make_daemon(tmp_path, "first", mariadb_primary, broker, topic_prefix, db).start()
    writer = threading.Thread(target=workload, name="workload")
    try:
        writer.start()
        wait_for(lambda: total(first.scrape(), "cdc_source_transactions_published_total") >= 20, 30,
                 "first transactions published", first)
        t0 = time.monotonic()
        first.signal(signal.SIGTERM)
        rc = first.wait_exit(DRAIN_BUDGET_S + 5)
        drained_in = time.monotonic() - t0
        assert rc == 0, f"exit status {rc}; log:\n{first.log_tail()}"
        assert drained_in < DRAIN_BUDGET_S, f"drain took {drained_in:.1f}s (budget {DRAIN_BUDGET_S}s)"
        time.sleep(0.3)  # the workload goes on while no daemon runs
    finally:
        stop.set()
        writer.join(30)
        first.stop()
    assert committed, "workload committed nothing"

    second = make_daemon(tmp_path, "second", mariadb_primary, broker, topic_prefix, db).start()
    try:
        last_gtid = int(mariadb_primary.gtid_binlog_pos().split("-")[-1])
        wait_for(lambda: (value(second.scrape(), "cdc_source_last_gtid_sequence", source=SOURCE) or 0) >= last_gtid,
                 60, "second run caught up with the primary", second)
        second.signal(signal.SIGTERM)
        assert second.wait_exit(DRAIN_BUDGET_S + 5) == 0, second.log_tail()
    finally:
        second.stop()

    records = read_stream(broker.bootstrap, changes_topic(topic_prefix, SOURCE))
    seqs = [r["sequence"] for r in records]
    assert seqs == sorted(set(seqs)), "sequence not strictly increasing"
    ended, rows, aborted = transactions(records)
    assert not aborted, f"a drained stop left cut-off transactions: {aborted}"
    assert len(ended) == len(set(ended)), "a transaction was published twice"
    ids = sorted(r["after"]["id"] for tx_rows in rows.values() for r in tx_rows)
    assert ids == list(range(3 * len(committed))), "rows lost or duplicated"
    for txid, tx_rows in rows.items():  # whole transactions: 3 rows of one workload tx each
        assert len({r["after"]["tx"] for r in tx_rows}) == 1 and len(tx_rows) == 3, txid
    # structured logs: the drain line names the source and its position
    drained = [d for d in first.log_lines() if "transaction boundary" in d.get("msg", "") and d.get("source")]
    assert drained and drained[-1]["source"] == SOURCE and drained[-1]["position"], first.log_tail()


def test_second_signal_exits_at_once_and_restart_closes_the_cut(
        mariadb_primary, broker, topic_prefix, tmp_mysql_db, tmp_path):
    db = tmp_mysql_db
    mariadb_primary.query(f"CREATE TABLE {db}.big (id INT PRIMARY KEY, pad VARCHAR(100))")
    first = make_daemon(tmp_path, "first", mariadb_primary, broker, topic_prefix, db).start()
    n = 20_000
    try:
        conn = mariadb_primary.connect(db, autocommit=False)
        with conn.cursor() as cur:  # one big transaction: the drain must wait for its END
            cur.executemany("INSERT INTO big VALUES (%s, REPEAT('x', 100))", [(i,) for i in range(n)])
        conn.commit()
        conn.close()
        wait_for(lambda: total(first.scrape(), "cdc_source_events_read_total", source=SOURCE) > 0, 30,
                 "big transaction being read", first)
        first.signal(signal.SIGTERM)
        time.sleep(0.05)
        t0 = time.monotonic()
        first.signal(signal.SIGTERM)
        rc = first.wait_exit(5)
        assert time.monotonic() - t0 < 2.0, "second signal did not exit at once"
    finally:
        first.stop()
    if rc == 0:
        pytest.fail("the daemon finished draining a 20k-row transaction within 50 ms; make the test "
                    "transaction bigger so the second signal lands during the drain")
    assert rc == 128 + signal.SIGTERM, f"exit status {rc}; log:\n{first.log_tail()}"

    second = make_daemon(tmp_path, "second", mariadb_primary, broker, topic_prefix, db).start()
    try:
        wait_for(lambda: total(second.scrape(), "cdc_source_transactions_published_total", source=SOURCE) >= 1,
                 60, "big transaction published after restart", second)
        second.signal(signal.SIGTERM)
        assert second.wait_exit(DRAIN_BUDGET_S + 5) == 0, second.log_tail()
    finally:
        second.stop()
    records = read_stream(broker.bootstrap, changes_topic(topic_prefix, SOURCE))
    ended, rows, _aborted = transactions(records)
    big = [tx for tx, tx_rows in rows.items() if tx_rows and tx_rows[0]["source"]["table"] == "big"]
    assert len(big) == 1, f"the big transaction ended {len(big)} times"
    assert sorted(r["after"]["id"] for r in rows[big[0]]) == list(range(n))
    assert len(ended) == len(set(ended))
