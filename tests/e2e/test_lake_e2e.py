"""Lake targets on the whole pipeline: MariaDB or MySQL 9.7 (``mysql_source``; MySQL: the documented capture user)
-> `cdc run` -> tansu -> `cdc apply` (Spark) -> Delta and Iceberg.

While the source runs a random workload (inserts, updates, deletes, key updates, multi-table transactions),
a keyless ledger (a duplicate would show), money transfers between two tables (ONE source transaction
each), a TRUNCATE and an ADD COLUMN, the `cdc apply` driver (JVM, Python workers: its whole process group)
is SIGKILLed three times and restarted. Meanwhile a reader keeps reading both transfer tables as of the
latest consistent point (`latest_point`, Delta version / Iceberg snapshot id per table): the total never
moves, so it never sees half of a source transaction. At the end every table, read back with polars,
equals the source row for row, and the consistent point never went back.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from cdc.config.loader import load_config
from cdc.dev.procs import spawn
from cdc.dev.workload import TABLES, run_workload
from cdc.stream.envelope import changes_topic
from streaming.targets import make_target
from tests.e2e.apply_pipeline import ledger_writer, norm
from tests.fixtures.ops import DaemonProcess
from tests.fixtures.services import capture_login

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark]

CDC = str(Path(sys.executable).with_name("cdc"))
N_ACCT, START = 10, Decimal("1000.00")


def read(target, table: str, version=None) -> pl.DataFrame:
    if target.dialect == "delta":
        return pl.read_delta(target.uri(table), version=version)
    t = target.catalog.load_table((target.namespace, table))
    return pl.scan_iceberg(t, snapshot_id=version, reader_override="pyiceberg").collect()


class LakePipeline:
    def __init__(self, tmp: Path, mariadb, broker, prefix: str, db: str) -> None:
        self.tmp, self.mariadb, self.db = tmp, mariadb, db
        targets = [{"name": "delta", "kind": "delta", "path": str(tmp / "delta")},
                   {"name": "ice", "kind": "iceberg", "catalog_uri": f"sqlite:///{tmp}/catalog.db",
                    "warehouse": str(tmp / "warehouse")}]
        broker.create_topic(changes_topic(prefix, "src"))
        self.daemon = DaemonProcess(tmp, source="src", mariadb_hosts=[mariadb.address], tables=[f"{db}.*"],
                                    bootstrap=broker.bootstrap, topic_prefix=prefix,
                                    source_options=dict(zip(("user", "password"), capture_login(mariadb))),
                                    extra={
                                        "targets": targets,
                                        "apply": [{"source": "src", "target": t["name"], "trigger_interval_s": 0.3,
                                                   "checkpoint_dir": str(tmp / f"ck-{t['name']}")} for t in targets]})
        self.config = load_config(self.daemon.config_path)

    def target(self, name: str):
        return make_target(self.config.target(name)).open()

    def apply(self, log: Path, *extra: str):
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        return spawn([CDC, "apply", "--config", str(self.daemon.config_path), "--master", "local[2]",
                      "--metrics-port", "0", *extra], log, env=env)

    def point(self, name: str) -> dict | None:
        t = self.target(name)
        try:
            return t.latest_point()
        except Exception:  # noqa: BLE001 - nothing applied yet
            return None
        finally:
            t.close()

    def has_row(self, name: str, table: str, key: int) -> bool:
        t = self.target(name)
        try:
            return key in read(t, table)["id"].to_list()
        except Exception:  # noqa: BLE001 - not created yet
            return False
        finally:
            t.close()

    def assert_equal(self, name: str, tables: list[str]) -> dict[str, int]:
        t, counts = self.target(name), {}
        for table in tables:
            cols = [r[0] for r in self.mariadb.query(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
                "ORDER BY ordinal_position", (self.db, table))]
            want = sorted((tuple(norm(v) for v in r) for r in self.mariadb.query(f"SELECT * FROM `{self.db}`.`{table}`")),
                          key=repr)
            got = sorted((tuple(norm(v) for v in r) for r in read(t, table).select(cols).iter_rows()), key=repr)
            assert got == want, f"{name}.{table}: {len(got)} rows vs source {len(want)}; first diff " \
                                f"{next(((a, b) for a, b in zip(got, want) if a != b), None)}"
            counts[table] = len(want)
        t.close()
        return counts


def test_lake_targets_through_three_driver_kills(tmp_path, mysql_source, broker, topic_prefix, tmp_source_db):
    p = LakePipeline(tmp_path, mysql_source, broker, topic_prefix, tmp_source_db)
    db, rng, q = tmp_source_db, random.Random(18), mysql_source.query
    q(f"CREATE TABLE `{db}`.ledger (k INT, v VARCHAR(10))")  # keyless: a replayed batch would duplicate rows
    q(f"CREATE TABLE `{db}`.acct_a (id INT PRIMARY KEY, balance DECIMAL(12,2) NOT NULL)")
    q(f"CREATE TABLE `{db}`.acct_b (id INT PRIMARY KEY, balance DECIMAL(12,2) NOT NULL)")
    q(f"CREATE TABLE `{db}`.scratch (id INT PRIMARY KEY, v VARCHAR(10))")
    for t in ("acct_a", "acct_b"):
        q(f"INSERT INTO `{db}`.{t} VALUES " + ", ".join(f"({i}, {START})" for i in range(N_ACCT)))
    q(f"INSERT INTO `{db}`.scratch VALUES (1, 'a'), (2, 'b')")
    p.daemon.start()
    stop, bad, checked, points = threading.Event(), [], [0], {"delta": [], "ice": []}

    def transfers():
        r, c, n = random.Random(7), mysql_source.connect(db, autocommit=False), 0
        try:
            while not stop.is_set():
                a, b = r.randrange(N_ACCT), r.randrange(N_ACCT)
                amt = Decimal(r.randint(1, 5000)) / 100
                with c.cursor() as cur:  # ONE source transaction touching both tables
                    cur.execute("UPDATE acct_a SET balance = balance - %s WHERE id = %s", (amt, a))
                    cur.execute("UPDATE acct_b SET balance = balance + %s WHERE id = %s", (amt, b))
                    if n % 7 == 3:  # a key update inside the transfer: the row moves, the total stays
                        cur.execute("UPDATE acct_b SET id = id + 1000 WHERE id = %s", (b,))
                        cur.execute("UPDATE acct_b SET id = id - 1000 WHERE id = %s", (b + 1000,))
                c.commit()
                n += 1
                if n == 40:
                    q(f"ALTER TABLE `{db}`.acct_b ADD COLUMN note VARCHAR(20)")  # followed by both targets
                    q(f"UPDATE `{db}`.acct_b SET note = 'after ddl' WHERE id = 0")
                if n == 60:
                    q(f"TRUNCATE TABLE `{db}`.scratch")
                    q(f"INSERT INTO `{db}`.scratch VALUES (3, 'c')")
                time.sleep(0.02)
        finally:
            c.close()

    def reader():  # reads both transfer tables as of each target's latest consistent point
        while not stop.is_set():
            for name in ("delta", "ice"):
                t = p.target(name)
                try:
                    point = t.latest_point()
                    if not point or not {"acct_a", "acct_b"} <= set(point["tables"]):
                        continue
                    points[name].append(point["last_sequence"])
                    # the accounts' first rows predate the stream: an account is in the lake once a transfer
                    # touched it (both sides in one transaction), so the lake's total is START per account held
                    balances = [Decimal(str(v)) for tb in ("acct_a", "acct_b")
                                for v in read(t, tb, point["tables"][tb])["balance"].to_list()]
                    total = sum(balances)
                    checked[0] += 1
                    if total != len(balances) * START:
                        bad.append((name, point["last_sequence"], total))
                finally:
                    t.close()
            time.sleep(0.2)

    conn = lambda: mysql_source.connect(db)
    threads = [threading.Thread(target=ledger_writer, args=(mysql_source, db, stop, 0.03), daemon=True)]
    threads += [threading.Thread(target=f, daemon=True) for f in (transfers, reader)]
    threads.append(threading.Thread(target=run_workload, args=(conn, db), daemon=True,
                                    kwargs={"seconds": 25, "threads": 2, "seed": 18}))
    try:
        for t in threads:
            t.start()
        seen = []
        for i in range(3):
            log = tmp_path / f"apply-{i}.log"
            proc = p.apply(log)
            before, deadline = (p.point("delta") or {}).get("last_sequence", -1), time.monotonic() + 180
            while (p.point("delta") or {}).get("last_sequence", -1) == before:  # kill once this run committed
                assert proc.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, "apply made no progress in 180 s\n" + log.read_text()[-3000:]
                time.sleep(0.3)
            time.sleep(rng.uniform(0.2, 3))
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
            seen.append((p.point("delta") or {}).get("last_sequence", -1))
        stop.set()
        for t in threads:
            t.join(120)
        sid = int(time.time()) % 1_000_000
        q(f"INSERT INTO `{db}`.scratch VALUES ({sid}, 'end')")
        for attempt in range(3):
            log = tmp_path / f"apply-final-{attempt}.log"
            assert p.apply(log, "--until-idle", "4").wait(400) == 0, log.read_text()[-3000:]
            if all(p.has_row(n, "scratch", sid) for n in ("delta", "ice")):
                break
        assert seen == sorted(seen) and seen[0] > 0, seen
        assert not bad, f"a consistent point showed half a transfer: {bad[:3]}"
        assert checked[0] > 5, "the reader never read a consistent point"
        for name in ("delta", "ice"):
            assert points[name] == sorted(points[name]), f"{name}: the consistent point went back"
            counts = p.assert_equal(name, list(TABLES) + ["ledger", "acct_a", "acct_b", "scratch"])
            assert counts["ledger"] > 100 and counts["orders"] > 0 and counts["scratch"] == 2
    finally:
        stop.set()
        p.daemon.stop()
