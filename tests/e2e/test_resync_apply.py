"""A per-table resync of a drifted target while everything streams: `cdc snapshot --table db.t --resync`.

MariaDB or MySQL 9.7 (``mysql_source``) -> `cdc run` -> broker -> Spark apply -> PostgreSQL. The target of ``t``
drifts every way a target drifts (rows deleted on the source without a binlog, rows deleted, added and changed on
the target by hand), a writer keeps changing ``t`` and another writer keeps filling ``other``; the resync runs, and
`cdc compare` then finds both tables EQUAL. The daemon is killed (kill -9) in the middle of the resync and
restarted: the resync resumes from its state and ends EQUAL.
"""

from __future__ import annotations

import signal
import threading

import pytest

from cdc.cli import main as cdc_main
from cdc.dev.ports import wait_until
from tests.e2e.apply_pipeline import Pipeline
from tests.e2e.test_snapshot import Writer, load

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]


class OtherWriter(threading.Thread):
    """Inserts into ``other`` until stopped: the table that streams on, untouched by the resync."""

    def __init__(self, primary, db):
        super().__init__(daemon=True)
        self.conn, self.stop, self.count = primary.connect(db), threading.Event(), 0

    def run(self):
        with self.conn.cursor() as cur:
            while not self.stop.is_set():
                cur.execute("INSERT INTO other (v) VALUES (%s)", (self.count,))
                self.count += 1
                self.stop.wait(0.005)
        self.conn.close()


def _pipeline(tmp_path, mysql_source, broker, postgres, topic_prefix, db, chunk_rows: int) -> Pipeline:
    load(mysql_source, db)
    mysql_source.query(f"CREATE TABLE `{db}`.other (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
    mysql_source.query("CREATE DATABASE IF NOT EXISTS ops")  # where the documented grant lets the capture user write
    return Pipeline(tmp_path, mysql_source, broker, postgres, topic_prefix, db, targets=("pg",),
                    source_options={"signal_table": f"ops.cdc_signal_{db[-6:]}", "snapshot": "initial",
                                    "snapshot_chunk_rows": chunk_rows})


def _drift(p: Pipeline, errors: list) -> None:
    """Rows the target kept although the source deleted them (extra rows inside the key range), and rows
    deleted, added (below, inside and above the source's keys) and changed on the target by hand. The source
    deletes are logged and applied first, then put back on the target by hand: the same drift as a delete
    with ``sql_log_bin = 0`` at the source, without breaking the replicas of the shared server."""
    p.mariadb.query(f"DELETE FROM `{p.db}`.t WHERE id BETWEEN 1500 AND 1519")
    p.wait_sentinel(p.sentinel(), p.targets, timeout=120, errors=errors)
    with p.postgres.connect() as c:
        # ON CONFLICT: the writer may have put one of those keys back on the source meanwhile (its random
        # INSERT IGNORE), and the target then rightly holds it
        c.execute(f"INSERT INTO {p.tag}.t (id, v, note) SELECT i, 7, 'extra' FROM generate_series(1500, 1519) i "
                  "ON CONFLICT (id) DO NOTHING")
        c.execute(f"UPDATE {p.tag}.t SET note = 'drift' WHERE id BETWEEN 1600 AND 1609")
        c.commit()
    with p.postgres.connect() as c:
        c.execute(f"DELETE FROM {p.tag}.t WHERE id BETWEEN 200 AND 249")
        c.execute(f"INSERT INTO {p.tag}.t (id, v, note) SELECT i, 7, 'extra' FROM generate_series(-5, -1) i")
        c.execute(f"INSERT INTO {p.tag}.t (id, v, note) SELECT i, 7, 'extra' FROM generate_series(5000, 5029) i")
        c.execute(f"UPDATE {p.tag}.t SET v = -1 WHERE id BETWEEN 300 AND 339")
        c.commit()


def _compare_equal(p: Pipeline, capsys) -> str:
    capsys.readouterr()
    rc = cdc_main(["compare", "--config", str(p.config_path), "--source", "src", "--target", "pg",
                   "--tables", f"{p.db}.t", f"{p.db}.other"])
    out = capsys.readouterr().out
    assert rc == 0 and out.count("EQUAL") >= 2, out
    return out


def _resync_done(p: Pipeline) -> bool:
    return f"resync of {p.db}.t done" in p.daemon.log_tail(10 ** 7)


def _run(p: Pipeline, spark, capsys, restart_mid_resync: bool) -> None:
    p.start()
    thread, stop, errors = p.apply_in_thread(spark)
    writer, other = Writer(p.mariadb, p.db, pause=0.005), OtherWriter(p.mariadb, p.db)
    try:
        writer.start()
        other.start()
        sid = p.sentinel()
        p.wait_sentinel(sid, p.targets, timeout=240, errors=errors)  # the initial snapshot is in the target
        _drift(p, errors)
        before = other.count
        assert cdc_main(["snapshot", "--config", str(p.config_path), "--source", "src", "--table", f"{p.db}.t",
                         "--resync"]) == 0
        if restart_mid_resync:
            wait_until(lambda: f"resync of {p.db}.t requested" in p.daemon.log_tail(10 ** 7), 60,
                       "the daemon takes the resync request", interval=0.05)
            p.daemon.signal(signal.SIGKILL)
            p.daemon.wait_exit(20)
            assert not _resync_done(p), "the resync ended before the kill: the restart tested nothing"
            p.daemon.start()
        wait_until(lambda: _resync_done(p), 300, "resync done", interval=0.5,
                   alive=lambda: p.daemon._died() or (repr(errors[0]) if errors else None))
        assert other.count > before  # `other` kept being written (and streamed, compared below)
        writer.stop.set()
        other.stop.set()
        writer.join(10)
        other.join(10)
        sid = p.sentinel()
        p.wait_sentinel(sid, p.targets, timeout=240, errors=errors)
    finally:
        writer.stop.set()
        other.stop.set()
        stop.set()
        thread.join(60)
        p.stop()
    assert not errors, errors
    assert writer.count > 50
    _compare_equal(p, capsys)
    p.assert_equal(["t", "other"])
    with p.postgres.connect() as c:
        assert c.execute(f"SELECT count(*) FROM {p.tag}.t WHERE note = 'extra'").fetchone()[0] == 0


def test_resync_makes_a_drifted_target_equal_through_a_daemon_kill(tmp_path, mysql_source, broker, postgres,
                                                                   topic_prefix, tmp_source_db, spark, capsys):
    """The drifted table comes back equal while `other` streams on, and the daemon's kill -9 in the middle of the
    resync (small chunks, so it is mid-way) resumes it from its state: one run covers the plain case too."""
    p = _pipeline(tmp_path, mysql_source, broker, postgres, topic_prefix, tmp_source_db, chunk_rows=20)
    try:
        _run(p, spark, capsys, restart_mid_resync=True)
    finally:
        mysql_source.query(f"DROP TABLE IF EXISTS ops.cdc_signal_{tmp_source_db[-6:]}")
