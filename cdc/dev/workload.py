"""A small concurrent OLTP write workload for tests, the demo and the benchmarks.

``create_schema(conn, db)`` creates four tables (``customers``, ``orders``,
``order_items`` with a composite key, ``events`` with assorted types);
``run_workload(conn_factory, db, seconds=.. | transactions=.., seed=..)``
runs ``threads`` writers, each on its own connection, doing inserts, updates,
deletes, primary-key updates, multi-table transactions and some rollbacks.

Guarantees that tests rely on:
- every COMMITTED transaction changes at least one row (updates always bump
  ``version``), so ``summary.committed`` equals the number of GTID
  transactions the workload adds to the binlog;
- rolled-back transactions leave nothing in the binlog;
- each writer only touches rows it created, so writers never deadlock on each
  other (a deadlock or lock timeout is still handled: rolled back, counted);
- the run is bounded: by ``seconds`` or by ``transactions`` (total), whichever
  is given (both: whichever comes first).
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable

TABLES = ("customers", "orders", "order_items", "events")

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS customers (
        id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL, email VARCHAR(128),
        balance DECIMAL(12,2) NOT NULL DEFAULT 0, version INT NOT NULL DEFAULT 0,
        updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))""",
    """CREATE TABLE IF NOT EXISTS orders (
        id BIGINT PRIMARY KEY, customer_id BIGINT NOT NULL, status VARCHAR(16) NOT NULL,
        amount DECIMAL(12,2) NOT NULL, note TEXT NULL, version INT NOT NULL DEFAULT 0,
        created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))""",
    """CREATE TABLE IF NOT EXISTS order_items (
        order_id BIGINT NOT NULL, line_no INT NOT NULL, sku VARCHAR(32) NOT NULL,
        qty INT NOT NULL, price DECIMAL(10,2) NOT NULL, PRIMARY KEY (order_id, line_no))""",
    """CREATE TABLE IF NOT EXISTS events (
        id BIGINT PRIMARY KEY, kind VARCHAR(16) NOT NULL, score DOUBLE NULL, day DATE NULL,
        data VARBINARY(64) NULL, flag TINYINT(1) NOT NULL DEFAULT 0, label VARCHAR(40) CHARACTER SET utf8mb4)""",
)

_RETRYABLE = {1205, 1213}  # lock wait timeout, deadlock
_LABELS = ("plain", "ünïcödé", "日本語", "emoji 🚀", "quote ' \" \\", "")


@dataclass
class WorkloadSummary:
    committed: int = 0
    rolled_back: int = 0
    retried: int = 0
    seconds: float = 0.0
    rows: Counter = field(default_factory=Counter)  # ("orders", "insert") -> n, committed only

    def as_dict(self) -> dict[str, Any]:
        return {"committed": self.committed, "rolled_back": self.rolled_back, "retried": self.retried,
                "seconds": round(self.seconds, 3),
                "rows": {f"{t}.{op}": n for (t, op), n in sorted(self.rows.items())}}


def create_schema(conn, db: str) -> None:
    """Create ``db`` (if missing) and the workload tables in it."""
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS `{db}`")
        for ddl in SCHEMA:
            cur.execute(ddl.replace("CREATE TABLE IF NOT EXISTS ", f"CREATE TABLE IF NOT EXISTS `{db}`."))


class _Writer:
    """One writer thread's state: its own connection, RNG and the keys it owns."""

    def __init__(self, conn, db: str, rng: random.Random, ids: Callable[[], int]) -> None:
        self.conn, self.rng, self.next_id = conn, rng, ids
        self.customers: list[int] = []
        self.orders: dict[int, int] = {}  # order id -> number of lines
        self._pending: list[Callable[[], None]] = []  # key bookkeeping, applied only on COMMIT
        with conn.cursor() as cur:
            cur.execute(f"USE `{db}`")

    def settle(self) -> None:
        """The transaction committed: its key changes become this writer's to touch."""
        for change in self._pending:
            change()
        self._pending.clear()

    def transaction(self) -> Counter:
        """Run one random transaction's statements (no COMMIT); return the row counts it made.

        Key bookkeeping is deferred to ``settle()`` so a rollback leaves it matching the database.
        """
        self._pending.clear()
        made: Counter = Counter()
        cur = self.conn.cursor()
        choice = self.rng.random()
        if not self.customers or choice < 0.15:
            cid = self.next_id()
            cur.execute("INSERT INTO customers (id, name, email, balance) VALUES (%s, %s, %s, %s)",
                        (cid, f"customer {cid}", f"c{cid}@example.com", Decimal(self.rng.randint(0, 10000)) / 100))
            made["customers", "insert"] += 1
            self._pending.append(lambda: self.customers.append(cid))
        elif choice < 0.50:  # new order: three tables in one transaction
            cid, oid = self.rng.choice(self.customers), self.next_id()
            lines = self.rng.randint(1, 3)
            amount = Decimal(self.rng.randint(100, 100000)) / 100
            cur.execute("INSERT INTO orders (id, customer_id, status, amount, note) VALUES (%s, %s, 'new', %s, %s)",
                        (oid, cid, amount, self.rng.choice([None, "gift", "rush " * 20])))
            cur.executemany("INSERT INTO order_items VALUES (%s, %s, %s, %s, %s)",
                            [(oid, n, f"SKU-{self.rng.randint(1, 999)}", self.rng.randint(1, 5),
                              Decimal(self.rng.randint(1, 9999)) / 100) for n in range(lines)])
            cur.execute("UPDATE customers SET balance = balance - %s, version = version + 1 WHERE id = %s",
                        (amount, cid))
            made["orders", "insert"] += 1
            made["order_items", "insert"] += lines
            made["customers", "update"] += 1
            self._pending.append(lambda: self.orders.__setitem__(oid, lines))
        elif choice < 0.70 and self.orders:
            oid = self.rng.choice(list(self.orders))
            cur.execute("UPDATE orders SET status = %s, version = version + 1 WHERE id = %s",
                        (self.rng.choice(["paid", "shipped", "cancelled"]), oid))
            made["orders", "update"] += 1
        elif choice < 0.80 and self.orders:
            oid = self.rng.choice(list(self.orders))
            lines = self.orders[oid]
            self._pending.append(lambda: self.orders.pop(oid))
            cur.execute("DELETE FROM order_items WHERE order_id = %s", (oid,))
            cur.execute("DELETE FROM orders WHERE id = %s", (oid,))
            made["order_items", "delete"] += lines
            made["orders", "delete"] += 1
        elif choice < 0.88:  # primary-key update
            old, new = self.rng.choice(self.customers), self.next_id()
            cur.execute("UPDATE customers SET id = %s, version = version + 1 WHERE id = %s", (new, old))
            cur.execute("UPDATE orders SET customer_id = %s, version = version + 1 WHERE customer_id = %s", (new, old))
            made["customers", "update"] += 1
            made["orders", "update"] += cur.rowcount
            self._pending.append(lambda: self.customers.__setitem__(self.customers.index(old), new))
        else:
            eid = self.next_id()
            cur.execute("INSERT INTO events VALUES (%s, %s, %s, %s, %s, %s, %s)",
                        (eid, self.rng.choice(["click", "view", "buy"]), self.rng.choice([None, self.rng.random()]),
                         self.rng.choice([None, "2024-02-29", "1999-12-31"]), self.rng.randbytes(8),
                         self.rng.randint(0, 1), self.rng.choice(_LABELS)))
            made["events", "insert"] += 1
        cur.close()
        return made


def run_workload(
    conn_factory: Callable[[], Any],
    db: str,
    seconds: float | None = None,
    transactions: int | None = None,
    seed: int = 0,
    threads: int = 4,
    rollback_ratio: float = 0.1,
    create: bool = True,
    on_progress: Callable[[], None] | None = None,
) -> WorkloadSummary:
    """Run the workload against ``db`` and return what it committed. See the module docstring.

    ``conn_factory()`` must return a new PyMySQL connection (e.g. ``MariaDB.connect``).
    ``on_progress()`` (optional) is called about twice a second from the calling thread.
    """
    if seconds is None and transactions is None:
        raise ValueError("run_workload needs seconds= or transactions=")
    if create:
        conn = conn_factory()
        create_schema(conn, db)
        conn.close()
    summary = WorkloadSummary()
    lock = threading.Lock()
    id_counter = iter(range(_id_base(conn_factory, db), 1 << 62))
    budget = [transactions if transactions is not None else 1 << 62]
    deadline = time.monotonic() + seconds if seconds is not None else float("inf")
    errors: list[BaseException] = []

    def next_id() -> int:
        with lock:
            return next(id_counter)

    def take_ticket() -> bool:
        with lock:
            if budget[0] <= 0 or time.monotonic() >= deadline:
                return False
            budget[0] -= 1
            return True

    def writer(index: int) -> None:
        conn = conn_factory()
        try:
            w = _Writer(conn, db, random.Random(seed * 1000 + index), next_id)
            while take_ticket():
                rollback = w.rng.random() < rollback_ratio
                while True:
                    conn.begin()
                    try:
                        made = w.transaction()
                        if rollback:
                            conn.rollback()
                        else:
                            conn.commit()
                        break
                    except Exception as exc:  # noqa: BLE001
                        conn.rollback()
                        if getattr(exc, "args", (None,))[0] not in _RETRYABLE:
                            raise
                        with lock:
                            summary.retried += 1
                if not rollback:
                    w.settle()
                with lock:
                    if rollback:
                        summary.rolled_back += 1
                    else:
                        summary.committed += 1
                        summary.rows.update(made)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            errors.append(exc)
        finally:
            conn.close()

    started = time.monotonic()
    pool = [threading.Thread(target=writer, args=(i,), name=f"workload-{i}", daemon=True) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        while t.is_alive():
            t.join(0.5)
            if on_progress is not None:
                on_progress()
    summary.seconds = time.monotonic() - started
    if errors:
        raise errors[0]
    return summary


def _id_base(conn_factory: Callable[[], Any], db: str) -> int:
    """First id to hand out: above every id already in the tables, so reruns on one db do not collide."""
    conn = conn_factory()
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT GREATEST(COALESCE((SELECT MAX(id) FROM `{db}`.customers), 0), "
                        f"COALESCE((SELECT MAX(id) FROM `{db}`.orders), 0), "
                        f"COALESCE((SELECT MAX(id) FROM `{db}`.events), 0))")
            return int(cur.fetchone()[0]) + 1
    finally:
        conn.close()


def table_fingerprints(conn, db: str) -> dict[str, tuple[int, int]]:
    """``{table: (row count, checksum)}`` for the workload tables, for source-vs-target comparisons.

    The checksum is MariaDB's ``CHECKSUM TABLE`` (engine-specific); to compare
    with another engine use ``cdc compare``.
    """
    out = {}
    with conn.cursor() as cur:
        for t in TABLES:
            cur.execute(f"SELECT COUNT(*) FROM `{db}`.`{t}`")
            count = cur.fetchone()[0]
            cur.execute(f"CHECKSUM TABLE `{db}`.`{t}`")
            out[t] = (count, int(cur.fetchone()[1] or 0))
    return out
