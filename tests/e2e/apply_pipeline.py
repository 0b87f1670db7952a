"""The whole pipeline for the apply e2e tests: MariaDB or MySQL 9.7 -> `cdc run` -> broker -> Spark apply -> targets.

``Pipeline`` prepares one source database, fresh target schemas (PostgreSQL
schema, MariaDB database, DuckDB file), writes the cdc.yaml, starts the real
daemon, and offers: run the apply job in-process (shared SparkSession) or as
a `cdc apply` child process, wait for a sentinel row to reach a target
(everything committed before it is then applied: commit order), and compare
source and target row for row.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import duckdb

from cdc.config.loader import load_config
from cdc.stream.envelope import changes_topic
from streaming.apply import job
from tests.fixtures.ops import DaemonProcess
from tests.fixtures.services import documented_target_grant


def norm(v: Any) -> Any:
    if isinstance(v, decimal.Decimal):
        return format(v.normalize(), "f") if v == v.to_integral() else format(v, "f")
    if isinstance(v, (dt.datetime, dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, memoryview):
        return bytes(v)
    if isinstance(v, bool):
        return int(v)
    return v


def _same_stream_value(source: Any, stream: Any) -> bool:
    """Whether a value read from the source (PyMySQL) is the one the stream carried (DECIMAL and temporal values
    as text, binary as bytes or base64 text)."""
    if source is None or stream is None:
        return source is None and stream is None
    if isinstance(source, decimal.Decimal):
        return decimal.Decimal(str(stream)) == source
    if isinstance(source, (dt.datetime, dt.date)):
        return str(stream).replace(" ", "T") == source.isoformat()
    if isinstance(source, (bytes, bytearray)):
        return stream == bytes(source) or stream == base64.b64encode(source).decode()
    if isinstance(source, float):
        return abs(float(stream) - source) <= 1e-6 * max(1.0, abs(source))
    return stream == source


def ledger_writer(mariadb, db: str, stop: threading.Event, pause_s: float) -> None:
    """Until ``stop``: one transaction every ``pause_s`` inserting the SAME row twice into the keyless
    table ``ledger (k INT, v VARCHAR(10))``: a replayed batch would show as a third copy."""
    c, i = mariadb.connect(db, autocommit=False), 0
    try:
        while not stop.is_set():
            with c.cursor() as cur:
                cur.executemany("INSERT INTO ledger VALUES (%s, %s)", [(i, "x"), (i, "x")])
            c.commit()
            i += 1
            time.sleep(pause_s)
    finally:
        c.close()


class Pipeline:
    def __init__(self, tmp: Path, mariadb, broker, postgres, prefix: str, db: str, targets=("pg", "my", "duck"),
                 kafka: dict[str, Any] | None = None, source_options: dict[str, Any] | None = None,
                 target_options: dict[str, dict[str, Any]] | None = None, mysql_login: str = "cdc:cdc"):
        """``source_options`` / ``target_options[name]``: merged into the source's / that target's config
        (TLS settings); ``mysql_login`` (user:password): the MySQL target DSN's."""
        self.tmp, self.mariadb, self.postgres, self.broker, self.db = tmp, mariadb, postgres, broker, db
        self.tag = "t" + uuid.uuid4().hex[:10]
        capture = getattr(mariadb, "capture_user", None)  # a MySQL 9.7 source: its documented capture user
        if capture:
            source_options = {"user": capture[0], "password": capture[1], **(source_options or {})}
        tcfg = []
        if "pg" in targets:
            with postgres.connect() as c:
                c.execute(f"CREATE SCHEMA {self.tag}")
                c.commit()
            tcfg.append({"name": "pg", "kind": "postgres", "dsn": postgres.dsn, "schema": self.tag})
        if "my" in targets:
            mariadb.query(f"CREATE DATABASE {self.tag}")
            if capture and mysql_login == "cdc:cdc":  # MySQL 9.7: a target user with docs/setup.md's grant only
                mariadb.query("CREATE USER IF NOT EXISTS 'cdc_apply'@'%' IDENTIFIED BY 'apply-pw'")
                documented_target_grant(mariadb, self.tag, "cdc_apply")
                mysql_login = "cdc_apply:apply-pw"
            tcfg.append({"name": "my", "kind": "mysql",
                         "dsn": f"mysql://{mysql_login}@{mariadb.host}:{mariadb.port}/{self.tag}"})
        if "duck" in targets:
            tcfg.append({"name": "duck", "kind": "duckdb", "path": str(tmp / "target.duckdb")})
        if "delta" in targets:  # a Delta table per source table (streaming/targets/delta.py): see delta_rows
            tcfg.append({"name": "delta", "kind": "delta", "path": str(tmp / "delta")})
        if "pq" in targets:  # a Parquet changelog (streaming/targets/parquet.py): no SQL, see has_sentinel
            tcfg.append({"name": "pq", "kind": "parquet", "path": str(tmp / "parquet")})
        tcfg = [{**t, **(target_options or {}).get(t["name"], {})} for t in tcfg]
        self.targets = [t["name"] for t in tcfg]
        broker.create_topic(changes_topic(prefix, "src"))
        self.daemon = DaemonProcess(
            tmp, source="src", mariadb_hosts=[mariadb.address], tables=[f"{db}.*"], bootstrap=broker.bootstrap,
            topic_prefix=prefix, source_options=source_options, extra={
                "kafka": kafka or {},  # more kafka: keys (kafka.client for a TLS broker)
                "targets": tcfg,
                "apply": [{"source": "src", "target": t["name"], "checkpoint_dir": str(tmp / f"ck-{t['name']}"),
                           "trigger_interval_s": 0.2} for t in tcfg]})
        self.config_path = self.daemon.config_path
        self.config = load_config(self.config_path)

    def start(self) -> Pipeline:
        self.daemon.start()
        return self

    def stop(self) -> None:
        self.daemon.stop()

    # ---- the apply job -----------------------------------------------------------------
    def apply_in_thread(self, spark) -> tuple[threading.Thread, threading.Event, list]:
        stop, errors = threading.Event(), []

        def body():
            try:
                job.run(self.config, spark=spark, stop_event=stop)
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)
        t = threading.Thread(target=body, daemon=True, name="apply")
        t.start()
        return t, stop, errors

    def apply_until(self, spark, sid: int, rounds: int = 4, idle_s: float = 4.0) -> None:
        """Run the apply job to idleness until the sentinel is in every target (bounded rounds)."""
        for _ in range(rounds):
            job.run(self.config, spark=spark, until_idle_s=idle_s)
            if all(self.has_sentinel(t, sid) for t in self.targets):
                return
        raise AssertionError(f"sentinel {sid} not in every target after {rounds} runs\n{self.daemon.log_tail(2000)}")

    # ---- sentinel and comparison --------------------------------------------------------
    def sentinel(self) -> int:
        """Commit a row to the source's sentinel table; it lands after everything before it."""
        self.mariadb.query(f"CREATE TABLE IF NOT EXISTS `{self.db}`.sentinel (id INT PRIMARY KEY, at DATETIME(6))")
        sid = int(time.time() * 1000) % 2_000_000_000
        self.mariadb.query(f"INSERT INTO `{self.db}`.sentinel VALUES ({sid}, NOW(6))")
        return sid

    def target_query(self, target: str, sql_tmpl: str) -> list[tuple]:
        if target == "pg":
            with self.postgres.connect() as c:
                return c.execute(sql_tmpl.format(t=f"{self.tag}.")).fetchall()
        if target == "my":
            return self.mariadb.query(sql_tmpl.format(t=f"`{self.tag}`."))
        con = duckdb.connect(str(self.tmp / "target.duckdb"), read_only=True)
        try:
            return con.execute(sql_tmpl.format(t="")).fetchall()
        finally:
            con.close()

    def delta_rows(self, table: str, cols: list[str]) -> list[tuple]:
        import polars as pl

        return [tuple(norm(v) for v in r) for r in pl.read_delta(str(self.tmp / "delta" / table)).select(cols).iter_rows()]

    def has_sentinel(self, target: str, sid: int) -> bool:
        if target == "delta":
            try:
                return (sid,) in self.delta_rows("sentinel", ["id"])
            except Exception:  # noqa: BLE001 - table not there yet
                return False
        if target == "pq":
            import pyarrow.parquet as pq

            files = sorted((self.tmp / "parquet" / "sentinel").glob("*.parquet"))
            return any(sid in pq.read_table(f).column("id").to_pylist() for f in files)
        try:
            return bool(self.target_query(target, "SELECT 1 FROM {t}sentinel WHERE id = %d" % sid))
        except Exception:  # noqa: BLE001 - table not there yet
            return False

    def has_table(self, target: str, table: str) -> bool:
        try:
            self.target_query(target, "SELECT 1 FROM {t}%s WHERE 1 = 0" % table)
            return True
        except Exception:  # noqa: BLE001
            return False

    def wait_sentinel(self, sid: int, targets: list[str], timeout: float, errors: list | None = None) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if errors:
                raise errors[0]
            if all(self.has_sentinel(t, sid) for t in targets):
                return
            time.sleep(0.5)
        raise AssertionError(f"sentinel {sid} did not reach {targets} within {timeout}s\n{self.daemon.log_tail(2000)}")

    def source_rows(self, table: str) -> tuple[list[str], list[tuple]]:
        cols = [r[0] for r in self.mariadb.query(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
            "ORDER BY ordinal_position", (self.db, table))]
        rows = self.mariadb.query(f"SELECT * FROM `{self.db}`.`{table}`")
        return cols, sorted(tuple(norm(v) for v in r) for r in rows)

    def parquet_state(self, table: str, key: str = "id") -> dict[Any, dict[str, Any]]:
        """The current state of the Parquet changelog of ``table``: files in name order, rows in file order, the
        last upsert or delete per ``key``; each row as its file wrote it (the columns of its batch)."""
        import pyarrow.parquet as pq

        state: dict[Any, dict[str, Any]] = {}
        for f in sorted((self.tmp / "parquet" / table).glob("*.parquet")):
            for r in pq.read_table(f).to_pylist():
                op = r.pop("_op")
                r.pop("_batch"), r.pop("_last_sequence")
                if op == "u":
                    state[r[key]] = r
                elif op == "d":
                    state.pop(r[key], None)
                elif op == "t":
                    state.clear()
        return state

    def assert_parquet_equal(self, table: str, key: str = "id") -> None:
        """The changelog's current state equals the source: same keys, each row with the source's columns and
        values (stream values: DECIMAL and temporal values as text)."""
        cols = [r[0] for r in self.mariadb.query(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
            "ORDER BY ordinal_position", (self.db, table))]
        want = {r[cols.index(key)]: dict(zip(cols, r)) for r in self.mariadb.query(f"SELECT * FROM `{self.db}`.`{table}`")}
        got = self.parquet_state(table, key)
        assert sorted(got) == sorted(want), f"pq.{table}: keys {sorted(set(got) ^ set(want))[:5]} differ"
        for k, row in want.items():
            assert list(got[k]) == cols, f"pq.{table} key {k}: columns {list(got[k])} vs source {cols}"
            bad = [(c, v, got[k][c]) for c, v in row.items() if not _same_stream_value(v, got[k][c])]
            assert not bad, f"pq.{table} key {k}: (column, source, changelog) {bad}"

    def assert_equal(self, tables: list[str], targets: list[str] | None = None) -> dict[str, int]:
        counts = {}
        for table in tables:
            cols, want = self.source_rows(table)
            for target in targets or self.targets:
                if target == "pq":
                    self.assert_parquet_equal(table)
                    continue
                if target == "delta":
                    got = sorted(self.delta_rows(table, cols), key=repr)
                    assert got == sorted(want, key=repr), f"delta.{table}: {len(got)} rows vs source {len(want)}"
                    continue
                q = {"pg": '"{c}"', "my": "`{c}`", "duck": '"{c}"'}[target]
                sel = ", ".join(q.format(c=c) for c in cols)
                got = sorted(tuple(norm(v) for v in r) for r in self.target_query(target, f"SELECT {sel} FROM {{t}}{table}"))
                assert got == want, f"{target}.{table}: {len(got)} rows vs source {len(want)}; first diff " \
                    f"{next(((a, b) for a, b in zip(got, want) if a != b), None)}"
            counts[table] = len(want)
        return counts

    def progress(self, target: str) -> tuple[int, int]:
        return self.target_query(target, "SELECT last_sequence, batch_id FROM {t}cdc_progress WHERE source = 'src'")[0]
