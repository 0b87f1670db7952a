"""A target schema the user made, with foreign keys and unique keys, through the whole pipeline (#36 §1).

A MariaDB or MySQL 9.7 source (``mysql_source``) -> `cdc run` -> broker -> `cdc apply` (Spark, a child process) ->
PostgreSQL whose tables exist before the apply, made with PostgreSQL's own DDL: customers (unique e-mail), orders
-> customers, items -> orders (DEFERRABLE) with a unique (order_id, position) (DEFERRABLE), categories ->
categories (a self-reference, not deferrable). The source has the same keys (InnoDB checks each row), so its
transactions are what applications write: an order's items deleted before the order, an order inserted before its
items, a customer deleted with everything of theirs, a category re-parented under a new node and the old node
deleted, two customers' e-mails exchanged through a temporary value, two items' positions exchanged, an item moved
to another order. About 300 transactions; the apply is killed with SIGKILL (its whole process group) after it
committed a batch, while the writer goes on, and restarted. Then: `cdc compare` EQUAL on every table, nothing
dead-lettered, the progress row at the stream's last change.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from cdc.cli import main as cdc_main
from cdc.dev.ports import wait_until
from cdc.dev.procs import spawn, terminate
from cdc.stream.envelope import changes_topic
from tests.e2e.apply_pipeline import Pipeline
from tests.fixtures.ops import read_stream

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

CDC = str(Path(sys.executable).with_name("cdc"))
TABLES = ("customers", "orders", "items", "categories")
TRANSACTIONS = 300
KILL_AFTER = 150  # the writer waits here until the first apply committed a batch, then goes on during the kill
# Spark's start-up dominates the run: about 20 s per `cdc apply` on an idle host, 90-120 s at a load of 15-20 on
# two cores (measured); the waits on it are bounded at 240 s.

SOURCE_DDL = [
    "CREATE TABLE customers (id BIGINT PRIMARY KEY, email VARCHAR(60) NOT NULL UNIQUE, name VARCHAR(40))",
    ("CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id BIGINT NOT NULL, note VARCHAR(40), "
     "FOREIGN KEY (customer_id) REFERENCES customers (id))"),
    ("CREATE TABLE items (id BIGINT PRIMARY KEY, order_id BIGINT NOT NULL, `position` INT NOT NULL, sku VARCHAR(20), "
     "UNIQUE (order_id, `position`), FOREIGN KEY (order_id) REFERENCES orders (id))"),
    ("CREATE TABLE categories (id BIGINT PRIMARY KEY, parent_id BIGINT, name VARCHAR(40), "
     "FOREIGN KEY (parent_id) REFERENCES categories (id))"),
]


def _target_ddl(schema: str) -> list[str]:
    """The user's own PostgreSQL schema: some constraints DEFERRABLE (checked at the commit once the apply defers
    them), the others immediate (the apply's write order, or its stream-order retry, must satisfy them)."""
    s = schema
    return [
        f"CREATE TABLE {s}.customers (id bigint PRIMARY KEY, email varchar(60) NOT NULL UNIQUE, name varchar(40))",
        (f"CREATE TABLE {s}.orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL, note varchar(40), "
         f"FOREIGN KEY (customer_id) REFERENCES {s}.customers (id))"),
        (f'CREATE TABLE {s}.items (id bigint PRIMARY KEY, order_id bigint NOT NULL, "position" int NOT NULL, '
         f'sku varchar(20), UNIQUE (order_id, "position") DEFERRABLE, '
         f"FOREIGN KEY (order_id) REFERENCES {s}.orders (id) DEFERRABLE INITIALLY IMMEDIATE)"),
        (f"CREATE TABLE {s}.categories (id bigint PRIMARY KEY, parent_id bigint, name varchar(40), "
         f"FOREIGN KEY (parent_id) REFERENCES {s}.categories (id))"),
    ]


class ShopWriter(threading.Thread):
    """One connection, one transaction at a time, choosing among the shapes above from its model of the source
    (exact: it is the only writer). Waits at ``KILL_AFTER`` transactions until ``go`` is set (bounded)."""

    def __init__(self, mariadb, db: str, go: threading.Event, seed: int = 36) -> None:
        super().__init__(daemon=True, name="shop-writer")
        self.mariadb, self.db, self.go, self.rng = mariadb, db, go, random.Random(seed)
        self.count, self.kinds, self.error = 0, {}, None
        self.stop = threading.Event()
        self.customers: dict[int, str] = {}  # id -> email
        self.orders: dict[int, int] = {}  # id -> customer
        self.items: dict[int, tuple[int, int]] = {}  # id -> (order, position)
        self.categories: dict[int, int | None] = {}  # id -> parent
        self._next = 1

    def _id(self) -> int:
        self._next += 1
        return self._next

    def run(self) -> None:
        conn = self.mariadb.connect(self.db, autocommit=False)
        try:
            with conn.cursor() as cur:
                self.cur = cur
                self._seed()
                conn.commit()
                self.count = 1
                while self.count < TRANSACTIONS and not self.stop.is_set():
                    if self.count == KILL_AFTER and not self.go.wait(180):
                        raise AssertionError("the first apply committed no batch within 180 s")
                    kind = self._one()
                    conn.commit()
                    self.kinds[kind] = self.kinds.get(kind, 0) + 1
                    self.count += 1
                    time.sleep(0.005 if self.count < KILL_AFTER else 0.04)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc
        finally:
            conn.close()

    # ---- statements, each keeping the model ---------------------------------------------------
    def _x(self, sql: str, *args) -> None:
        self.cur.execute(sql, args)

    def _customer(self) -> int:
        cid = self._id()
        self.customers[cid] = f"c{cid}@shop"
        self._x("INSERT INTO customers VALUES (%s, %s, %s)", cid, self.customers[cid], f"name {cid}")
        return cid

    def _order(self, cid: int, n_items: int) -> int:
        oid = self._id()
        self.orders[oid] = cid
        self._x("INSERT INTO orders VALUES (%s, %s, %s)", oid, cid, f"note {oid}")
        for pos in range(1, n_items + 1):
            iid = self._id()
            self.items[iid] = (oid, pos)
            self._x("INSERT INTO items VALUES (%s, %s, %s, %s)", iid, oid, pos, f"sku{iid}")
        return oid

    def _delete_order(self, oid: int) -> None:
        for iid in [i for i, (o, _) in self.items.items() if o == oid]:
            del self.items[iid]
            self._x("DELETE FROM items WHERE id = %s", iid)
        del self.orders[oid]
        self._x("DELETE FROM orders WHERE id = %s", oid)

    def _category(self, parent: int | None) -> int:
        kid = self._id()
        self.categories[kid] = parent
        self._x("INSERT INTO categories VALUES (%s, %s, %s)", kid, parent, f"cat {kid}")
        return kid

    def _seed(self) -> None:
        root = self._category(None)
        for _ in range(3):
            mid = self._category(root)
            for _ in range(2):
                self._category(mid)
        for _ in range(6):
            self._order(self._customer(), 2)

    # ---- one transaction ---------------------------------------------------------------------
    def _one(self) -> str:
        r = self.rng
        kinds = ["new_order"] * 4 + ["delete_order", "delete_customer", "swap_emails", "reorder", "reparent", "branch",
                                     "move_item", "reuse_email", "touch_child_then_parent"]
        kind = r.choice(kinds)
        if kind == "delete_order" and self.orders:
            self._delete_order(r.choice(sorted(self.orders)))
        elif kind == "delete_customer" and len(self.customers) > 3:
            cid = r.choice(sorted(self.customers))
            for oid in [o for o, c in self.orders.items() if c == cid]:
                self._delete_order(oid)
            del self.customers[cid]
            self._x("DELETE FROM customers WHERE id = %s", cid)
        elif kind == "swap_emails" and len(self.customers) >= 2:
            a, b = r.sample(sorted(self.customers), 2)
            ea, eb = self.customers[a], self.customers[b]
            self._x("UPDATE customers SET email = %s WHERE id = %s", f"tmp{self._id()}@shop", a)
            self._x("UPDATE customers SET email = %s WHERE id = %s", ea, b)
            self._x("UPDATE customers SET email = %s WHERE id = %s", eb, a)
            self.customers[a], self.customers[b] = eb, ea
        elif kind == "reorder" and (full := [o for o in self.orders if self._positions(o) >= 2]):
            oid = r.choice(sorted(full))
            (x, px), (y, py) = r.sample(sorted((i, p) for i, (o, p) in self.items.items() if o == oid), 2)
            self._x("UPDATE items SET `position` = -1 WHERE id = %s", x)
            self._x("UPDATE items SET `position` = %s WHERE id = %s", px, y)
            self._x("UPDATE items SET `position` = %s WHERE id = %s", py, x)
            self.items[x], self.items[y] = (oid, py), (oid, px)
        elif kind == "reparent" and (mids := [k for k, p in self.categories.items()
                                             if p is not None and any(q == k for q in self.categories.values())]):
            # a new node under the old one's parent, the old node's children moved under it, the old node deleted
            old = r.choice(sorted(mids))
            new = self._category(self.categories[old])
            for child in [k for k, p in self.categories.items() if p == old]:
                self.categories[child] = new
                self._x("UPDATE categories SET parent_id = %s WHERE id = %s", new, child)
            del self.categories[old]
            self._x("DELETE FROM categories WHERE id = %s", old)
        elif kind == "branch":  # a node and its child in one transaction, under any existing node
            self._category(self._category(r.choice(sorted(self.categories))))
        elif kind == "move_item" and len(self.orders) >= 2 and self.items:
            iid = r.choice(sorted(self.items))
            to = r.choice(sorted(o for o in self.orders if o != self.items[iid][0]))
            pos = self._positions(to) + 100 + iid  # free in the new order
            self.items[iid] = (to, pos)
            self._x("UPDATE items SET order_id = %s, `position` = %s WHERE id = %s", to, pos, iid)
        elif kind == "reuse_email" and len(self.customers) > 3:
            # a customer leaves (children first) and a new one signs up with the same e-mail
            cid = r.choice(sorted(self.customers))
            email = self.customers[cid]
            for oid in [o for o, c in self.orders.items() if c == cid]:
                self._delete_order(oid)
            del self.customers[cid]
            self._x("DELETE FROM customers WHERE id = %s", cid)
            new = self._id()
            self.customers[new] = email
            self._x("INSERT INTO customers VALUES (%s, %s, %s)", new, email, f"name {new}")
            self._order(new, 1)
        elif kind == "touch_child_then_parent" and self.items:
            iid = r.choice(sorted(self.items))
            oid = self.items[iid][0]
            self._x("UPDATE items SET sku = %s WHERE id = %s", f"sku{iid}-{self.count}", iid)
            self._x("UPDATE orders SET note = %s WHERE id = %s", f"note {oid}-{self.count}", oid)
            self._x("UPDATE customers SET name = %s WHERE id = %s", f"name {self.count}", self.orders[oid])
        else:
            kind = "new_order"
            cid = self._customer() if r.random() < 0.4 or not self.customers else r.choice(sorted(self.customers))
            self._order(cid, r.randint(1, 3))
        return kind

    def _positions(self, oid: int) -> int:
        return sum(1 for o, _ in self.items.values() if o == oid)


def _apply(p: Pipeline, log: Path):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return spawn([CDC, "apply", "--config", str(p.config_path), "--master", "local[2]", "--metrics-port", "0"],
                 log, env=env)


def _kill9(proc) -> None:
    if proc is not None and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def test_user_schema_with_foreign_and_unique_keys_applies_whole_through_a_kill(
        tmp_path, mysql_source, broker, postgres, topic_prefix, tmp_source_db, capsys):
    db = tmp_source_db
    started = time.monotonic()
    conn = mysql_source.connect(db)
    try:
        with conn.cursor() as cur:
            for sql in SOURCE_DDL:  # before the daemon: the stream has no CREATE TABLE, the target keeps its own
                cur.execute(sql)
    finally:
        conn.close()
    p = Pipeline(tmp_path, mysql_source, broker, postgres, topic_prefix, db, targets=("pg",),
                 target_options={"pg": {"dead_letter_table": "cdc_dead"}})
    with postgres.connect() as c:
        for sql in _target_ddl(p.tag):
            c.execute(sql)
        c.commit()
    p.start()

    def progress() -> int:
        try:
            return p.progress("pg")[0]
        except Exception:  # noqa: BLE001 - no batch committed yet
            return -1

    go = threading.Event()
    writer = ShopWriter(mysql_source, db, go)
    first = second = None
    try:
        first = _apply(p, tmp_path / "apply-1.log")
        writer.start()
        wait_until(lambda: progress() > 0, 240, "the first apply's first committed batch",
                   interval=0.2, alive=lambda: None if first.poll() is None else
                   "apply exited:\n" + (tmp_path / "apply-1.log").read_text()[-3000:])
        committed = progress()
        go.set()  # the second half of the writer runs while the apply is killed and restarted
        wait_until(lambda: progress() > committed, 60, "a batch of the second half committed", interval=0.1,
                   alive=lambda: writer.error and repr(writer.error))
        time.sleep(random.Random(7).uniform(0, 0.5))  # inside the next batch or between two
        _kill9(first)
        at_kill, written_at_kill = progress(), writer.count
        second = _apply(p, tmp_path / "apply-2.log")
        writer.join(120)
        assert not writer.is_alive(), "the writer did not finish in 120 s"
        assert writer.error is None, writer.error
        sid = p.sentinel()
        wait_until(lambda: p.has_sentinel("pg", sid), 240, "the sentinel in the target after the restart",
                   interval=0.3, alive=lambda: None if second.poll() is None else
                   "apply exited:\n" + (tmp_path / "apply-2.log").read_text()[-3000:])
        terminate(second, 30)
    finally:
        writer.stop.set()
        go.set()
        _kill9(first)
        _kill9(second)
        p.stop()
    drained = time.monotonic() - started
    assert written_at_kill < TRANSACTIONS, f"the kill landed after the writer's last transaction ({writer.count})"
    assert set(writer.kinds) >= {"new_order", "delete_order", "delete_customer", "swap_emails", "reorder",
                                 "reparent", "branch", "move_item", "reuse_email"}, writer.kinds

    capsys.readouterr()
    rc = cdc_main(["compare", "--config", str(p.config_path), "--source", "src", "--target", "pg",
                   "--tables", *[f"{db}.{t}" for t in TABLES]])
    out = capsys.readouterr().out
    assert rc == 0 and all(f"{t}: EQUAL" in out for t in TABLES), f"exit {rc}\n{out}"
    counts = p.assert_equal(list(TABLES))
    assert all(counts[t] > 0 for t in TABLES), counts

    assert not p.has_table("pg", "cdc_dead") or p.target_query("pg", "SELECT count(*) FROM {t}cdc_dead") == [(0,)], \
        p.target_query("pg", "SELECT sequence, source_table, error FROM {t}cdc_dead LIMIT 3")
    stream = read_stream(broker.bootstrap, changes_topic(topic_prefix, "src"))
    applied = p.progress("pg")[0]
    assert 0 < at_kill < applied, (at_kill, applied)
    assert any(r["sequence"] == applied for r in stream), applied
    after = [r for r in stream if r["sequence"] > applied]
    assert all(r.get("status") == "HEARTBEAT" for r in after), f"the progress row stops before {after[:2]}"
    print(f"written {writer.count} transactions {writer.kinds}; killed at sequence {at_kill} after "
          f"{written_at_kill}; drained in {drained:.1f}s; rows {counts}")
