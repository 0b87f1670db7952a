"""Column DDL on the lake targets through the whole pipeline: MariaDB or MySQL 9.7 -> `cdc run` -> broker -> Spark
apply -> Delta and Iceberg, while a writer keeps changing the table before, between and after the statements.

One apply run takes ADD COLUMN ... DEFAULT 'std' (the rows that existed hold 'std' in the tables' current
version, never NULL), ADD ... NOT NULL DEFAULT, DROP COLUMN, RENAME COLUMN and the widenings INT -> BIGINT,
DECIMAL(12,2) -> DECIMAL(14,2), VARCHAR(10) -> VARCHAR(40); each lake table then equals the source row for
row and column for column. `cdc compare` reads SQL targets only, so the equality is the lake e2e's own: every
table read back (polars) against the source. Then a narrowing the source applied by truncating a stored value
in place (a non-strict session): both targets stop at its sequence naming column, key and value, with every
row before it applied and the table as it was.
"""

from __future__ import annotations

import threading
import time

import pytest

from streaming.apply import job
from streaming.errors import UnsupportedDdl
from tests.e2e.apply_pipeline import norm
from tests.e2e.test_lake_e2e import LakePipeline, read
from tests.e2e.test_schema_evolution_e2e import _writer

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark]

TARGETS = ("delta", "ice")
FOLLOWED = [
    "ALTER TABLE {t} ADD COLUMN tier VARCHAR(10) DEFAULT 'std'",
    "ALTER TABLE {t} ADD COLUMN flag TINYINT NOT NULL DEFAULT 1",
    "ALTER TABLE {t} DROP COLUMN note",
    "ALTER TABLE {t} RENAME COLUMN name TO label",
    "ALTER TABLE {t} MODIFY qty BIGINT",
    "ALTER TABLE {t} MODIFY price DECIMAL(14,2)",
    "ALTER TABLE {t} MODIFY label VARCHAR(40)",
]

INSERT = "INSERT INTO acct (id, price, qty) VALUES (%s, 1.5, 1)"  # columns no DDL of FOLLOWED drops or renames


def _source(p: LakePipeline) -> tuple[list[str], list[tuple]]:
    cols = [r[0] for r in p.mariadb.query(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = 'acct' "
        "ORDER BY ordinal_position", (p.db,))]
    return cols, sorted((tuple(norm(v) for v in r) for r in p.mariadb.query(f"SELECT * FROM `{p.db}`.acct")), key=repr)


def _lake(p: LakePipeline, name: str, cols: list[str]) -> tuple[list[str], list[tuple]]:
    t = p.target(name)
    try:
        df = read(t, "acct")
    finally:
        t.close()
    return df.columns, sorted((tuple(norm(v) for v in r) for r in df.select(cols).iter_rows()), key=repr)


def _wait_row(p: LakePipeline, table: str, key: int, errors: list, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not all(p.has_row(n, table, key) for n in TARGETS):
        assert not errors, errors
        assert time.monotonic() < deadline, f"row {key} of {table} not in every lake target in {timeout} s\n" \
                                            f"{p.daemon.log_tail(2000)}"
        time.sleep(0.5)


def test_column_ddl_under_writes_reaches_delta_and_iceberg(tmp_path, mysql_source, broker, topic_prefix,
                                                            tmp_source_db, spark):
    db, q = tmp_source_db, mysql_source.query
    p = LakePipeline(tmp_path, mysql_source, broker, topic_prefix, db)
    q(f"CREATE TABLE `{db}`.acct (id INT PRIMARY KEY, name VARCHAR(10), qty INT, price DECIMAL(12,2), "
      f"note VARCHAR(10))")
    q(f"INSERT INTO `{db}`.acct VALUES " + ", ".join(f"({i}, 'n{i}', {i}, {i}.25, 'note{i}')" for i in range(1, 41)))
    q(f"CREATE TABLE `{db}`.sentinel (id INT PRIMARY KEY)")
    p.daemon.start()
    stop_apply, errors = threading.Event(), []

    def apply_body():
        try:
            job.run(p.config, spark=spark, stop_event=stop_apply)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    apply = threading.Thread(target=apply_body, daemon=True, name="apply")
    try:
        apply.start()
        stop, counts = threading.Event(), {"ok": 0, "refused": 0}
        writer = threading.Thread(target=_writer, daemon=True,
                                  args=(mysql_source, db, stop, counts, INSERT))  # on columns no DDL drops
        writer.start()
        try:
            _wait_row(p, "acct", 40, errors, 180)  # the table reached both targets before the first DDL
            for ddl in FOLLOWED:
                q(ddl.format(t=f"`{db}`.acct"))
                time.sleep(0.5)  # the writer changes the table between the statements
            time.sleep(1.0)
        finally:
            stop.set()
            writer.join(30)
        assert counts["ok"] > 50, counts
        q(f"INSERT INTO `{db}`.sentinel VALUES (1)")
        try:
            _wait_row(p, "sentinel", 1, errors, 240)
        finally:
            stop_apply.set()
            apply.join(120)
        assert not errors, errors
        cols, want = _source(p)
        assert cols == ["id", "label", "qty", "price", "tier", "flag"]
        for name in TARGETS:
            lake_cols, got = _lake(p, name, cols)
            assert lake_cols == cols, name
            assert got == want, f"{name}: {len(got)} rows vs source {len(want)}; first diff " \
                                f"{next(((a, b) for a, b in zip(got, want, strict=False) if a != b), None)}"
            # the rows that existed before ADD ... DEFAULT hold the source's value, never NULL
            assert [r for r in got if r[0] <= 40 and (r[4] != "std" or r[5] != 1)] == [], name

        # ---- a narrowing the source applied by truncating a stored value: a named stop on both targets ----
        q(f"UPDATE `{db}`.acct SET label = 'a long label' WHERE id = 1")
        before = _source(p)[1]
        c = mysql_source.connect(db)
        try:
            with c.cursor() as cur:
                cur.execute("SET SESSION sql_mode = ''")  # the server truncates 'a long label' in place
                cur.execute("ALTER TABLE acct MODIFY label VARCHAR(5)")
        finally:
            c.close()
        assert q(f"SELECT label FROM `{db}`.acct WHERE id = 1") == [("a lon",)]
        q(f"INSERT INTO `{db}`.acct (id, label, qty, price) VALUES (99999, 'after', 1, 1)")
        stops = []
        for name in TARGETS:  # one target's apply per run: a job stops every stream at the first one's stop
            one = p.config.model_copy(update={"apply": [a for a in p.config.apply if a.target == name]})
            with pytest.raises(UnsupportedDdl) as info:
                job.run(one, spark=spark, until_idle_s=4)
            stops.append(info.value)
        err = stops[-1]
        assert {e.sequence for e in stops} == {err.sequence}, [str(e) for e in stops]
        assert err.table == f"{db}.acct" and err.fields["column"] == "label", str(err)
        assert err.fields["value"] == "a long label" and err.fields["key"] == {"id": 1}, str(err)
        assert "cdc schema skip" in str(err) and "VARCHAR(5)" in str(err), str(err)
        for name in TARGETS:  # each stopped before the DDL: every row before it, the table as it was
            point = p.point(name)
            assert point is not None and point["last_sequence"] == err.sequence - 1, (name, point)
            assert _lake(p, name, cols)[1] == before, name
    finally:
        stop_apply.set()
        apply.join(120)
        p.daemon.stop()
