"""Column DDL through the whole pipeline: MariaDB or MySQL 9.7 -> `cdc run` -> broker -> Spark apply -> PostgreSQL,
the source's server (a MariaDB or MySQL target), DuckDB and a Parquet changelog, while a writer keeps changing the
table before, between and after the statements.

One pipeline run takes every column DDL kind the apply follows (ADD COLUMN with a constant default, NOT NULL
DEFAULT, FIRST/AFTER, NOT NULL without a default; RENAME COLUMN and CHANGE; integer, DECIMAL, FLOAT->DOUBLE,
DATE->DATETIME, TEXT->MEDIUMTEXT, VARBINARY widening; VARCHAR and integer narrowings whose values fit; NULL <-> NOT NULL; default changes; DROP
COLUMN; an index), then `cdc compare` must say EQUAL on every SQL target, and the Parquet changelog's
current state (the last row per key) equals the source, its files before the DDL as written. Then an expression default
whose per-row values the stream does not carry (MariaDB: DEFAULT (uuid()); MySQL refuses a nondeterministic one in
ADD COLUMN while it writes a binlog, so there DEFAULT (concat('u-', id))): every target stops at its sequence naming
the way back, which is then taken (`cdc schema evolve`, `cdc compare --repair`) and ends EQUAL too.
"""

from __future__ import annotations

import datetime
import threading
import time

import pyarrow.parquet as pq
import pymysql
import pytest

from cdc.cli import main as cdc_main
from cdc.dev.mysql import MySQL
from streaming.apply import job
from streaming.errors import UnsupportedDdl
from tests.e2e.apply_pipeline import Pipeline

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

TARGETS = ("pg", "my", "duck")
FOLLOWED = [
    "ALTER TABLE {t} ADD COLUMN tier VARCHAR(10) DEFAULT 'std'",
    "ALTER TABLE {t} ADD COLUMN flag TINYINT NOT NULL DEFAULT 1 AFTER id",
    "ALTER TABLE {t} ADD COLUMN since DATE NOT NULL DEFAULT '2020-01-02' FIRST",
    "ALTER TABLE {t} ADD COLUMN n INT NOT NULL",  # existing rows: the implicit 0
    "ALTER TABLE {t} ALTER COLUMN n SET DEFAULT 5",
    "ALTER TABLE {t} RENAME COLUMN name TO label",
    "ALTER TABLE {t} CHANGE note remark VARCHAR(30)",
    "ALTER TABLE {t} MODIFY qty BIGINT",
    "ALTER TABLE {t} MODIFY price DECIMAL(12,3) NOT NULL",
    "ALTER TABLE {t} MODIFY f DOUBLE",
    "ALTER TABLE {t} MODIFY d DATETIME",
    "ALTER TABLE {t} ALTER COLUMN tier SET DEFAULT 'gold'",
    "ALTER TABLE {t} MODIFY big VARCHAR(20)",  # narrower; every value fits
    "ALTER TABLE {t} MODIFY memo MEDIUMTEXT, MODIFY bin VARBINARY(16)",
    "ALTER TABLE {t} MODIFY qty INT",  # narrower again; every value fits
    "ALTER TABLE {t} MODIFY flag TINYINT NULL DEFAULT 1",
    "ALTER TABLE {t} DROP COLUMN f",
    "CREATE INDEX acct_qty ON {t} (qty)",
    "ALTER TABLE {t} ALTER COLUMN tier DROP DEFAULT",  # last: MySQL then refuses the writer's INSERT (no default)
]


INSERT = "INSERT INTO acct (id, price, qty, big) VALUES (%s, 1.5, 1, 'w')"


def _writer(mariadb, db: str, stop: threading.Event, counts: dict[str, int], insert: str = INSERT) -> None:
    """Until ``stop``: small transactions on columns no DDL renames (a statement refused while a DDL is half
    through, e.g. an INSERT between ADD n NOT NULL and its default, is rolled back and counted); ``insert``
    adds a row by id."""
    c, i = mariadb.connect(db, autocommit=False), 1000
    try:
        while not stop.is_set():
            try:
                with c.cursor() as cur:
                    cur.execute("UPDATE acct SET price = price + 1, qty = qty + 1 WHERE id = %s", (i % 40 + 1,))
                    cur.execute(insert, (i,))
                    if i % 3 == 0:
                        cur.execute("DELETE FROM acct WHERE id = %s", (i - 2,))
                c.commit()
                counts["ok"] += 1
            except pymysql.err.MySQLError:
                c.rollback()
                counts["refused"] += 1
            i += 1
            time.sleep(0.02)
    finally:
        c.close()


def _compare_equal(p: Pipeline, capsys, db: str) -> None:
    for name in TARGETS:
        code = cdc_main(["compare", "--config", str(p.config_path), "--source", "src", "--target", name,
                         "--tables", f"{db}.acct"])
        out = capsys.readouterr().out
        assert code == 0 and "acct: EQUAL" in out, f"{name}: exit {code}\n{out}"


def _target_columns(p: Pipeline, target: str) -> set[str]:
    where = "" if target == "duck" else f"table_schema = '{p.tag}' AND "
    q = f"SELECT column_name FROM information_schema.columns WHERE {where}table_name = 'acct'"
    return {r[0] for r in p.target_query(target, q)}


def test_column_ddl_under_writes_reaches_every_target(tmp_path, mysql_source, broker, postgres, topic_prefix,
                                                       tmp_source_db, spark, capsys):
    db, server = tmp_source_db, mysql_source
    p = Pipeline(tmp_path, server, broker, postgres, topic_prefix, db, targets=(*TARGETS, "pq")).start()
    try:
        server.query(f"CREATE TABLE `{db}`.acct (id INT PRIMARY KEY, name VARCHAR(20), qty INT, "
                              f"price DECIMAL(8,2), note VARCHAR(10), d DATE, f FLOAT, big VARCHAR(40), memo TEXT, "
                              f"bin VARBINARY(8))")
        server.query(f"INSERT INTO `{db}`.acct VALUES " + ", ".join(
            f"({i}, 'n{i}', {i}, {i}.25, 'note{i}', '2024-01-{i % 28 + 1:02d}', {i}.5, 'b{i}', 'memo {i}', "
            f"UNHEX('0102{i:02d}'))" for i in range(1, 41)))
        thread, stop_apply, errors = p.apply_in_thread(spark)
        stop, counts = threading.Event(), {"ok": 0, "refused": 0}
        writer = threading.Thread(target=_writer, args=(server, db, stop, counts), daemon=True)
        writer.start()
        try:
            time.sleep(1.0)
            for ddl in FOLLOWED:
                server.query(ddl.format(t=f"`{db}`.acct"))
                time.sleep(0.3)  # the writer changes the table between the statements
            time.sleep(1.0)
        finally:
            stop.set()
            writer.join(30)
        assert counts["ok"] > 50, counts
        # every row once more in the final shape: the Parquet changelog keeps stored rows as written, so its
        # current state equals the source's once each row was written after the last DDL
        server.query(f"UPDATE `{db}`.acct SET qty = qty + 1")
        sid = p.sentinel()
        try:  # (DuckDB's file cannot be read from here while the apply holds it open)
            p.wait_sentinel(sid, ["pg", "my"], timeout=240, errors=errors)
        finally:
            stop_apply.set()
            thread.join(120)
        assert not errors, errors
        p.apply_until(spark, sid, idle_s=2.0)
        p.assert_equal(["acct"])  # the SQL targets and the changelog's current state (pq)
        _compare_equal(p, capsys, db)
        first = pq.read_table(sorted((tmp_path / "parquet" / "acct").glob("*.parquet"))[0]).column_names
        assert "name" in first and "tier" not in first, first  # a file written before the DDL stays as written
        want = {"since", "id", "flag", "label", "qty", "price", "remark", "d", "big", "tier", "n", "memo", "bin"}
        for t in TARGETS:
            assert _target_columns(p, t) == want, t
        # existing rows hold the source's values of the added columns, never NULL
        assert p.target_query("pg", "SELECT tier, flag, since, n FROM {t}acct WHERE id = 1") == [
            ("std", 1, datetime.date(2020, 1, 2), 0)]

        # ---- an expression default: a named stop on every target, then the way back ----------------------
        expr = "concat('u-', id)" if isinstance(server, MySQL) else "uuid()"  # MySQL: error 1674 for uuid()
        server.query(f"ALTER TABLE `{db}`.acct ADD COLUMN u VARCHAR(36) DEFAULT ({expr})")
        # (tier names its value: after DROP DEFAULT a MySQL column has no default at all, NULL or not)
        server.query(f"INSERT INTO `{db}`.acct (id, price, qty, big, tier) VALUES (9999, 2, 2, 'after', 'x')")
        sid = p.sentinel()
        with pytest.raises(UnsupportedDdl) as info:
            job.run(p.config, spark=spark, until_idle_s=4)
        err = info.value
        assert err.table == f"{db}.acct" and expr.split("(")[0] in str(err).lower() and "--repair" in str(err), str(err)
        for t in TARGETS:  # each stopped before the DDL, with everything before it applied
            assert p.progress(t)[0] <= err.sequence - 1
            assert cdc_main(["schema", "evolve", "--config", str(p.config_path), "--source", "src", "--target", t,
                             "--table", f"{db}.acct", "--sequence", str(err.sequence)]) == 0
        capsys.readouterr()
        p.apply_until(spark, sid, idle_s=2.0)  # the column is added (NULL in the rows that existed)
        p.stop()  # a repair is published while the daemon is stopped (one writer per stream)
        code = cdc_main(["compare", "--config", str(p.config_path), "--source", "src", "--target", "pg",
                         "--tables", f"{db}.acct", "--repair"])
        out = capsys.readouterr().out
        assert code == 1, out  # differences found (the rows that existed: u NULL) and published
        p.daemon.start()
        sid = p.sentinel()
        p.apply_until(spark, sid, idle_s=2.0)
        _compare_equal(p, capsys, db)
    finally:
        p.stop()
