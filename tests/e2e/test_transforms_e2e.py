"""Issue #38's proof on real services, for a MariaDB and a MySQL 9.7 source (``mysql_source``). A table with
recognisable PII in a hashed, an excluded, a truncated and an encrypted column, and a table with a row filter and
computed columns, go through `cdc run` (per-table Debezium topics on) into the broker and ONE `cdc apply` (one
Spark session) into two targets, PostgreSQL and Delta, through a kill -9 of the daemon and one of the apply.
Then: no record of any topic of the prefix (raw key, value and header bytes), no row of the dead-letter table
and no value or log entry of the Delta tables holds a clear value; both targets hold the shaped values (the
filtered table: only its rows, with the computed columns); `cdc compare` says EQUAL on both PostgreSQL tables
(it has no Delta hook: the Delta tables are checked row for row against the source, shaped); `cdc decrypt`
gives back a clear value.

The target table is created beforehand with a CHECK that refuses a few rows, so the dead-letter table holds
shaped rows to scan; those rows are then deleted at the source (a no-op delete on the target)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from cdc.transforms.masks import decrypt, hash_mask, read_encryption_key, read_hash_key
from tests.e2e.apply_pipeline import Pipeline, norm
from tests.e2e.test_apply_kill import _apply, _errors
from tests.integration.stream_check import topic_records

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

CDC = str(Path(sys.executable).with_name("cdc"))
N = 240
CLEAR = [b"PII-SECRET-", b"EXCLUDED-NOTE-", b"TRUNCNAME-", b"SSN-CLEAR-"]  # no shaped record may hold these
REFUSED = 13  # rows with id % 50 == REFUSED break the target's CHECK: dead letters


def _row(i: int, v: int = 0) -> tuple:
    return (i, f"PII-SECRET-{i}-{v}@example.com", f"EXCLUDED-NOTE-{i}-{v}", f"TRUNCNAME-{i}-{v}",
            f"SSN-CLEAR-{i:05d}")


def _writer(mariadb, db: str, done: threading.Event, half: threading.Event) -> None:
    """Transactions of 6 inserts, then updates and deletes of earlier rows; ``half`` set midway."""
    c = mariadb.connect(db, autocommit=False)
    try:
        for start in range(1, N + 1, 6):
            with c.cursor() as cur:
                cur.executemany("INSERT INTO people VALUES (%s,%s,%s,%s,%s)", [_row(i) for i in range(start, start + 6)])
                if start > 30:
                    k = start - 30
                    cur.execute("UPDATE people SET email=%s, notes=%s, name=%s WHERE id=%s", _row(k, 1)[1:4] + (k,))
                    if k % 9 == 0:
                        cur.execute("DELETE FROM people WHERE id=%s", (k + 1,))
            c.commit()
            with c.cursor() as cur:  # orders: a 'us' one alone is a transaction the filter empties
                cur.execute("INSERT INTO orders VALUES (%s, %s, %s)", (start, ("eu", "us")[start % 4 == 1],
                                                                       f"{start}.{start % 100:02d}"))
                if start > 12 and start % 3 == 0:  # moves an earlier order across the filter (out or in)
                    cur.execute("UPDATE orders SET region = IF(region = 'eu', 'us', 'eu') WHERE id = %s", (start - 12,))
            c.commit()
            if start > N // 2:
                half.set()
            time.sleep(0.05)
    finally:
        c.close()
        done.set()


def _delta_values(root: Path) -> list[str]:
    """Every value of every Delta table under ``root`` as text, and the text of every log entry (its stats)."""
    import polars as pl

    out = []
    for table in sorted(d for d in root.iterdir() if (d / "_delta_log").is_dir()):
        frame = pl.read_delta(str(table))
        out += [str(v) for col in frame.columns for v in frame[col].to_list()]
        out += [f.read_text() for f in sorted((table / "_delta_log").glob("*.json"))]
    return out


def test_shaped_pipeline_through_kill9_leaks_nothing_and_compares_equal(
        tmp_path, mysql_source, broker, postgres, topic_prefix, tmp_source_db):
    db, src = tmp_source_db, mysql_source
    (tmp_path / "hash.key").write_bytes(b"an-e2e-hash-key-of-32-bytes-long")
    (tmp_path / "aes.key").write_text(os.urandom(32).hex())
    src.query(f"CREATE TABLE `{db}`.people (id INT PRIMARY KEY, email VARCHAR(80), notes TEXT, "
                          "name VARCHAR(40), ssn CHAR(16)) DEFAULT CHARSET=utf8mb4")
    src.query(f"CREATE TABLE `{db}`.orders (id INT PRIMARY KEY, region VARCHAR(4), amount DECIMAL(8,2))")
    transforms = {"hash_key_file": str(tmp_path / "hash.key"), "encryption_key_file": str(tmp_path / "aes.key"),
                  "tables": [{"match": f"{db}.people", "exclude": ["notes"],
                              "columns": {"email": {"mask": "hash"}, "name": {"mask": "truncate", "length": 3},
                                          "ssn": {"mask": "encrypt"}}},
                             {"match": f"{db}.orders", "filter": "region = 'eu'",
                              "computed": {"tax": {"expr": "amount * 0.2", "type": "decimal(10,2)"},
                                           "label": {"expr": "CONCAT(UPPER(region), '#', id)", "type": "varchar(20)"}}}]}
    p = Pipeline(tmp_path, src, broker, postgres, topic_prefix, db, targets=("pg", "delta"),
                 kafka={"per_table_topics": True}, source_options={"transforms": transforms},
                 target_options={"pg": {"dead_letter_table": "dead_letters"}})
    with postgres.connect() as c:  # the CHECK refuses some rows: the dead-letter table gets shaped rows
        c.execute(f"CREATE TABLE {p.tag}.people (id integer PRIMARY KEY, email varchar(64), name varchar(3), "
                  f"ssn text, CHECK (id % 50 <> {REFUSED}))")
        c.commit()
    p.start()
    apply = None
    try:
        done, half = threading.Event(), threading.Event()
        w = threading.Thread(target=_writer, args=(src, db, done, half), daemon=True)
        w.start()
        log = tmp_path / "apply-0.log"
        apply = _apply(p, log)
        assert half.wait(60), "the writer did not reach half way"
        p.daemon.proc.send_signal(signal.SIGKILL)  # the daemon dies mid-stream, the writer goes on
        p.daemon.proc.wait(10)
        p.daemon.start()
        def progress() -> int:
            try:
                return p.progress("pg")[0]
            except Exception:  # noqa: BLE001 - no batch committed yet
                return -1

        deadline = time.monotonic() + 300  # Spark starts slowly on a loaded machine
        while progress() <= 0:
            assert apply.poll() is None, _errors(log)
            assert time.monotonic() < deadline, "apply committed nothing in 300 s\n" + log.read_text()[-3000:]
            time.sleep(0.3)
        os.killpg(apply.pid, signal.SIGKILL)  # the apply dies after a committed batch
        apply.wait(30)
        assert done.wait(120)
        w.join(10)
        refused = [r[0] for r in src.query(f"SELECT id FROM `{db}`.people WHERE id % 50 = {REFUSED}")]
        assert refused, "no row for the dead-letter table"
        # the refused rows leave the source too (their deletes are no-ops on the target): compare can be EQUAL
        src.query(f"DELETE FROM `{db}`.people WHERE id % 50 = {REFUSED}")
        sid = p.sentinel()
        for attempt in range(2):
            log = tmp_path / f"apply-final-{attempt}.log"
            assert _apply(p, log, "--until-idle", "4").wait(400) == 0, _errors(log)
            if p.has_sentinel("pg", sid) and p.has_sentinel("delta", sid):
                break
        assert p.has_sentinel("pg", sid) and p.has_sentinel("delta", sid), p.daemon.log_tail(2000)

        # 1. no clear value in any record of any topic, nor in the dead-letter table
        topics = topic_records(broker.bootstrap, topic_prefix)
        assert any(name.endswith(".people") for name in topics), sorted(topics)  # the per-table topic is there
        assert sum(len(v) for v in topics.values()) > N
        for name, records in topics.items():
            for rec in records:
                leaked = [m for m in CLEAR if m in rec]
                assert not leaked, f"topic {name}: a record holds {leaked}: {rec[:300]!r}"
        with postgres.connect() as c:
            dead = [str(r) for r in c.execute(f"SELECT * FROM {p.tag}.dead_letters").fetchall()]
        assert len(dead) >= len(refused), dead[:3]
        assert any(f"{refused[0]}" in d for d in dead)
        for d in dead:
            assert not [m for m in CLEAR if m.decode() in d], f"dead letter holds a clear value: {d[:300]}"
        delta = _delta_values(tmp_path / "delta")
        assert len(delta) > N
        for v in delta:
            assert not [m for m in CLEAR if m.decode() in v], f"a Delta value or log entry holds a clear value: {v[:300]}"

        # 2. the target holds the shaped values
        hkey, akey = read_hash_key(str(tmp_path / "hash.key")), read_encryption_key(str(tmp_path / "aes.key"))
        want = {r[0]: r for r in src.query(f"SELECT id, email, name, ssn FROM `{db}`.people")}
        with postgres.connect() as c:
            got = {r[0]: r for r in c.execute(f"SELECT id, email, name, ssn FROM {p.tag}.people").fetchall()}
            cols = [r[0] for r in c.execute("SELECT column_name FROM information_schema.columns WHERE "
                                            "table_schema = %s AND table_name = 'people'", (p.tag,)).fetchall()]
        assert "notes" not in cols
        assert sorted(got) == sorted(want)
        h = hash_mask(hkey)
        for k, (_, email, name, ssn) in got.items():
            assert email == h(want[k][1]) and name == want[k][2][:3] and decrypt(ssn, akey) == want[k][3], k

        # the Delta target: the same shaped rows, without the excluded column (no CHECK there: the rows the
        # PostgreSQL target refused came and went with their source deletes)
        import polars as pl

        assert "notes" not in pl.read_delta(str(tmp_path / "delta" / "people")).columns
        lake = {r[0]: r for r in p.delta_rows("people", ["id", "email", "name", "ssn"])}
        assert sorted(lake) == sorted(want)
        for k, (_, email, name, ssn) in lake.items():
            assert email == h(want[k][1]) and name == want[k][2][:3] and decrypt(ssn, akey) == want[k][3], k

        # the filtered table: only 'eu' orders, with the computed columns
        with postgres.connect() as c:
            orders = {r[0]: r[1:] for r in c.execute(f"SELECT id, region, tax, label FROM {p.tag}.orders").fetchall()}
        eu = {r[0]: r[1] for r in src.query(f"SELECT id, amount FROM `{db}`.orders WHERE region = 'eu'")}
        assert sorted(orders) == sorted(eu) and len(eu) > 5
        shaped = {k: ("eu", (eu[k] * Decimal("0.2")).quantize(Decimal("0.01"), ROUND_HALF_UP), f"EU#{k}") for k in eu}
        assert all(orders[k] == shaped[k] for k in eu), orders
        lake_orders = {r[0]: r[1:] for r in p.delta_rows("orders", ["id", "region", "tax", "label"])}
        assert lake_orders == {k: tuple(norm(v) for v in row) for k, row in shaped.items()}, lake_orders

        # 3. `cdc compare` EQUAL
        cmp = subprocess.run([CDC, "compare", "--config", str(p.config_path), "--source", "src", "--target", "pg",
                              "--tables", f"{db}.people", f"{db}.orders"], check=False, capture_output=True, text=True, timeout=120)
        assert cmp.returncode == 0, cmp.stdout + cmp.stderr
        assert "2 of 2 tables equal" in cmp.stdout, cmp.stdout

        # 4. a key holder gets a clear value back
        some = next(iter(got.values()))
        out = subprocess.run([CDC, "decrypt", "--key-file", str(tmp_path / "aes.key"), some[3]],
                             check=False, capture_output=True, text=True, timeout=30)
        assert out.returncode == 0 and out.stdout.strip() == want[some[0]][3], out.stderr
    finally:
        if apply is not None and apply.poll() is None:
            os.killpg(apply.pid, signal.SIGKILL)
            apply.wait(30)
        p.stop()
