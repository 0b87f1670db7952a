"""Issue #38's outbox router on real services: a writer on MariaDB or MySQL 9.7 (``mysql_source``; MySQL: the
documented capture user) inserts outbox events of 3 aggregate types in transactions interleaved with another
table's rows (and updates and deletes of outbox rows, which are not events) while `cdc run` publishes them; the
daemon is killed with -9 midway and started again. Then each outbox topic holds each event exactly once, in
source-transaction order, keyed by the aggregate id, with the payload as its value."""

from __future__ import annotations

import threading
import time

import orjson
import pytest
import yaml

from tests.e2e.mysql_daemon import Daemon, wait_for, write_config
from tests.fixtures.services import capture_login
from tests.integration.test_outbox_router import _topic

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka]

TYPES = ("order", "customer", "invoice")
TXS = 150


def _events(k: int) -> list[tuple]:
    """Transaction k's outbox rows: 1 to 3 events, types rotating."""
    return [(f"e-{k}-{j}", TYPES[(k + j) % 3], f"{TYPES[(k + j) % 3]}-{k % 7}", "Created",
             orjson.dumps({"k": k, "j": j, "text": "é"}).decode()) for j in range(1 + k % 3)]


def _writer(db, name: str, half: threading.Event, done: threading.Event) -> None:
    c = db.connect(name, autocommit=False)
    try:
        for k in range(1, TXS + 1):
            with c.cursor() as cur:
                cur.execute("INSERT INTO orders VALUES (%s, %s)", (k, k))
                for e in _events(k):
                    cur.execute("INSERT INTO outbox VALUES (%s, %s, %s, %s, %s)", e)
                    cur.execute("UPDATE orders SET v = v + 1 WHERE id = %s", (k,))
                if k % 10 == 0:  # the application cleaning its outbox: not events
                    cur.execute("UPDATE outbox SET type = 'Seen' WHERE id = %s", (f"e-{k - 5}-0",))
                    cur.execute("DELETE FROM outbox WHERE id = %s", (f"e-{k - 9}-0",))
            c.commit()
            if k == TXS // 2:
                half.set()
            time.sleep(0.02)
    finally:
        c.close()
        done.set()


def test_outbox_topics_hold_each_event_once_in_order_through_kill9(tmp_path, mysql_source, broker,
                                                                  topic_prefix, tmp_source_db):
    db = tmp_source_db
    mysql_source.query(f"CREATE TABLE `{db}`.outbox (id VARCHAR(36) PRIMARY KEY, aggregatetype VARCHAR(64), "
                          "aggregateid VARCHAR(64), type VARCHAR(64), payload LONGTEXT)")
    mysql_source.query(f"CREATE TABLE `{db}`.orders (id INT PRIMARY KEY, v INT)")
    cfg = write_config(tmp_path / "cdc.yaml", hosts=[mysql_source.address], tables=[f"{db}.*"],
                       bootstrap=broker.bootstrap, prefix=topic_prefix,
                       user=capture_login(mysql_source))
    doc = yaml.safe_load(cfg.read_text())
    doc["sources"][0]["outbox"] = {"table": f"{db}.outbox", "topic": "{prefix}.outbox.{aggregatetype}"}
    cfg.write_text(yaml.safe_dump(doc))
    daemon = Daemon(cfg, tmp_path / "daemon.log").start()
    half, done = threading.Event(), threading.Event()
    try:
        wait_for(lambda: "recovered" in daemon.tail(200), 60, "the daemon's start", daemon=daemon)
        w = threading.Thread(target=_writer, args=(mysql_source, db, half, done), daemon=True)
        w.start()
        assert half.wait(60)
        time.sleep(0.3)
        daemon.kill9()  # midway: transactions in flight, some outbox records may have landed without their END
        daemon = Daemon(cfg, tmp_path / "daemon2.log").start()
        assert done.wait(120)
        w.join(10)
        want = {t: [e for k in range(1, TXS + 1) for e in _events(k) if e[1] == t] for t in TYPES}
        topics = {t: f"{topic_prefix}.outbox.{t}" for t in TYPES}
        try:
            wait_for(lambda: all(len(_topic(broker.bootstrap, topics[t])) >= len(want[t]) for t in TYPES), 90,
                     "every outbox event routed", interval=2)
        except AssertionError as exc:
            missing = {t: sorted({e[0] for e in want[t]} - {h["id"].decode() for _, _, h in
                                                             _topic(broker.bootstrap, topics[t])}) for t in TYPES}
            first = (tmp_path / "daemon.log").read_text(errors="replace")[-4000:]
            raise AssertionError(f"{exc}; missing {missing}\n--- the first daemon ---\n{first}\n"
                                 f"--- the second daemon ---\n{daemon.stacks()}") from None
        assert daemon.stop() == 0, daemon.tail()
    finally:
        if daemon.alive():
            daemon.kill9()
    for t in TYPES:
        got = _topic(broker.bootstrap, topics[t])
        ids = [h["id"].decode() for _, _, h in got]
        assert ids == [e[0] for e in want[t]], f"{t}: not each event exactly once in source order"
        assert [k.decode() for k, _, _ in got] == [e[2] for e in want[t]]
        assert [v for _, v, _ in got] == [e[4].encode() for e in want[t]]
        assert all(h["type"] == b"Created" for _, _, h in got)
        seqs = [int(h["cdc.sequence"]) for _, _, h in got]
        assert seqs == sorted(set(seqs))
