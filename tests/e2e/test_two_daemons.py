"""Two daemons for one source (a rolling update, a stuck pod and its replacement): one writer at a time. Once on a
MariaDB source and once on a MySQL 9.7 source (as its documented capture user).

For minutes, a bank-transfer workload runs while five daemons with the SAME config take the source over in
turn: with overlap (a new daemon starts next to the running one: it fences it through the broker,
cdc/publish/lease.py; the older stops with an error naming the newer, whose ABORTED closes the older one's
open transaction, read again) and without (SIGTERM first, then the next one starts). The stream must be
valid as a consumer reads it (gapless sequences, no duplicate, the structure rules of cdc.stream.stream_structure,
the writer epochs: one per daemon, never decreasing), every committed transfer in it exactly once, and
every target it is applied to (PostgreSQL, DuckDB) equal to the source: `cdc compare` EQUAL, balances
summing to what they started with. ``CDC_TWO_DAEMONS_PHASE_S`` sets each daemon's share (default 20 s).
"""

from __future__ import annotations

import os
import random
import threading
import time
from decimal import Decimal

import duckdb
import pytest
import yaml

from cdc.cli import main as cdc_main
from cdc.config.loader import load_config
from cdc.stream.envelope import changes_topic
from readers.mysql.position import GtidSet
from streaming.apply import job
from tests.e2e.mysql_daemon import Daemon, wait_for
from tests.fixtures.services import capture_login
from tests.integration.stream_check import read_stream

pytestmark = [pytest.mark.mysql, pytest.mark.kafka, pytest.mark.slow]


class Transfers:
    """Transfers between 20 accounts until stopped; each a transaction of two updates."""

    def __init__(self, server, db: str, pause_s: float = 0.004) -> None:
        self.server, self.db, self.count, self.pause_s = server, db, 0, pause_s
        self.stop, self.errors = threading.Event(), []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        rng = random.Random(5)
        try:
            conn = self.server.connect(self.db, autocommit=False)
            with conn.cursor() as cur:
                while not self.stop.is_set():
                    a, b = rng.sample(range(20), 2)
                    amount = rng.randint(1, 50)
                    cur.execute("UPDATE accounts SET balance = balance - %s WHERE id = %s", (amount, a))
                    cur.execute("UPDATE accounts SET balance = balance + %s WHERE id = %s", (amount, b))
                    conn.commit()
                    self.count += 1
                    time.sleep(self.pause_s)
            conn.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)


PHASE_S = float(os.environ.get("CDC_TWO_DAEMONS_PHASE_S", "20"))  # each daemon's share of the workload


def _config(path, server, db: str, broker, prefix: str, postgres=None, schema: str | None = None):
    """One source ``bank`` on ``server`` as its capture user (cdc/cdc on the MariaDB session server); with
    ``postgres``: its targets ``pg`` (that schema) and ``duck``, and the first daemon's snapshot brings the table's
    rows to them."""
    user, password = capture_login(server)
    cfg = {"sources": [{"name": "bank", "kind": "mysql", "hosts": [server.address], "user": user, "password": password,
                        "tables": [f"{db}.accounts"], "heartbeat_interval_s": 0.5, "reconnect_backoff_s": 0.2,
                        "snapshot": "never" if postgres is None else "initial"}],
           "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": prefix},
           "metrics": {"port": 0}, "drain_timeout_s": 20}
    if postgres is not None:
        cfg["targets"] = [{"name": "pg", "kind": "postgres", "dsn": postgres.dsn, "schema": schema},
                          {"name": "duck", "kind": "duckdb", "path": str(path.parent / "target.duckdb")}]
        cfg["apply"] = [{"source": "bank", "target": t, "checkpoint_dir": str(path.parent / f"ck-{t}"),
                         "trigger_interval_s": 0.2} for t in ("pg", "duck")]
    path.write_text(yaml.safe_dump(cfg))
    return path


def _fenced(old: Daemon, log, by: str) -> None:
    """``old`` stopped because a newer daemon took the stream over: exit 2, the error once, naming the newer."""
    wait_for(lambda: old.proc.poll() is not None, 30, f"the older daemon fenced by {by}")
    text = log.read_text()
    assert old.proc.returncode == 2, (old.proc.returncode, text[-3000:])
    assert "took over the stream" in text and "WriterFenced" in text, text[-3000:]
    assert text.count("took over the stream") <= 2, "the error is repeated"  # daemon + CLI at most


@pytest.mark.spark
@pytest.mark.postgres
def test_daemons_handing_over_with_and_without_overlap_keep_the_stream_and_every_target_exact(
        tmp_path, mysql_source, tmp_source_db, broker, postgres, spark, topic_prefix, capsys):
    db, my = tmp_source_db, mysql_source
    my.query(f"CREATE TABLE `{db}`.accounts (id INT PRIMARY KEY, balance DECIMAL(12,2) NOT NULL)")
    my.query(f"INSERT INTO `{db}`.accounts VALUES " + ", ".join(f"({i}, 1000.00)" for i in range(20)))
    schema = "two" + topic_prefix.replace("-", "_").replace(".", "_")[-12:]
    with postgres.connect() as c:
        c.execute(f'CREATE SCHEMA "{schema}"')
        c.commit()
    config = _config(tmp_path / "cdc.yaml", my, db, broker, topic_prefix, postgres, schema)  # ONE for every daemon
    topic = changes_topic(topic_prefix, "bank")
    daemons: list[Daemon] = []
    handovers: list[str] = []
    t_start = time.monotonic()

    def start(name: str) -> Daemon:
        d = Daemon(config, tmp_path / f"{name}.log").start()
        daemons.append(d)
        return d

    stop_apply, apply_errors, streams = threading.Event(), [], []

    def apply() -> None:  # the targets follow the live stream through every handover
        try:
            job.run(load_config(config), spark=spark, stop_event=stop_apply, streams_out=streams)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            apply_errors.append(exc)
    applier = threading.Thread(target=apply, daemon=True, name="apply")
    try:
        current = start("a")
        wait_for(lambda: "streaming from" in (tmp_path / "a.log").read_text(), 60, "daemon A streaming")
        applier.start()
        with Transfers(my, db, pause_s=0.01) as work:
            for k, name in enumerate("bcde"):
                mark = work.count
                time.sleep(PHASE_S)
                assert current.proc.poll() is None, current.tail()
                assert work.count > mark + 100, "the workload stalled"
                if k % 2 == 0:  # overlap: the newer daemon starts next to the running one and fences it
                    newer = start(name)
                    _fenced(current, current.log, name)
                    handovers.append("overlap")
                else:  # sequential: the running one drains and stops, then the next one starts
                    assert current.stop() == 0, current.tail()
                    newer = start(name)
                    handovers.append("sequential")
                current = newer
            mark = work.count
            time.sleep(PHASE_S)
            assert work.count > mark + 100, "the workload stalled"
        assert not work.errors, work.errors
        end = GtidSet.parse(my.gtid_binlog_pos())

        def caught_up():
            s = read_stream(broker.bootstrap, topic)
            ends = [r for _, _, r in s.transactions] + s.heartbeats
            return any(GtidSet.parse(r["resume"]["gtid_set"]).issuperset(end) for r in ends if r.get("resume"))
        wait_for(caught_up, 90, "the last daemon caught up")
        assert current.stop() == 0
        streamed_s = time.monotonic() - t_start
        last_end = read_stream(broker.bootstrap, topic).transactions[-1][2]["sequence"]

        def applied() -> bool:  # every target's progress row at or past the last transaction's END
            assert not apply_errors, apply_errors
            done = [s.engine.progress.last_sequence if s.engine.progress else None for s in streams]
            return len(done) == 2 and all(d is not None and d >= last_end for d in done)
        t0 = time.monotonic()
        wait_for(applied, 180, "every target applied to the end of the stream")
        applied_s = time.monotonic() - t0
    finally:
        stop_apply.set()
        applier.join(120) if applier.is_alive() else None
        for d in daemons:
            if d.proc is not None and d.proc.poll() is None:
                d.stop()
    assert not applier.is_alive(), "the apply job did not stop"
    assert not apply_errors, apply_errors

    # the stream, as a consumer reads it: structure rules and writer epochs hold (read_stream raises otherwise)
    stream = read_stream(broker.bootstrap, topic)
    assert stream.duplicates == 0, "two writers numbered the same sequences"
    ids = [txid for txid, rows, _ in stream.transactions if all(r["op"] != "r" for r in rows)]  # not the snapshot
    assert len(ids) == len(set(ids)), "a transaction was published twice"
    assert len(ids) == work.count, (len(ids), work.count)
    epochs = stream.epochs
    assert all(e > 0 for e in epochs) and epochs == sorted(epochs), "writer epochs not monotonic"
    assert len(set(epochs)) == len(daemons), (sorted(set(epochs)), len(daemons))  # one epoch per daemon
    balances = {i: Decimal("1000.00") for i in range(20)}
    for _, rows, _ in stream.transactions:
        for r in rows:
            if r["after"] is not None:
                balances[r["after"]["id"]] = Decimal(r["after"]["balance"])
    source = {i: Decimal(b) for i, b in my.query(f"SELECT id, balance FROM `{db}`.accounts")}
    assert balances == source
    assert sum(balances.values()) == Decimal("20000.00")

    # every target (applied while the daemons handed over): equal to the source, balances summing as they began
    assert _balances_pg(postgres, schema) == source
    assert _balances_duck(tmp_path) == source
    assert sum(source.values()) == Decimal(20000)
    capsys.readouterr()
    for target in ("pg", "duck"):
        code = cdc_main(["compare", "--config", str(config), "--source", "bank", "--target", target])
        out = capsys.readouterr().out
        assert code == 0 and "accounts: EQUAL" in out, f"{target}: exit {code}\n{out}"
    with capsys.disabled():
        print(f"\ntwo daemons: {len(daemons)} daemons, handovers {handovers}, {len(ids)} transfers over "
              f"{streamed_s:.0f}s, {len(stream.aborted)} aborted by a takeover, epochs {sorted(set(epochs))}, "
              f"pg and duck equal to the source {applied_s:.0f}s after the last daemon caught up, compare EQUAL")


def _balances_pg(postgres, schema: str) -> dict[int, Decimal] | None:
    try:
        with postgres.connect() as c:
            return {i: Decimal(b) for i, b in c.execute(f'SELECT id, balance FROM "{schema}".accounts').fetchall()}
    except Exception:  # noqa: BLE001 - the table is not there yet
        return None


def _balances_duck(tmp_path) -> dict[int, Decimal] | None:
    try:
        con = duckdb.connect(str(tmp_path / "target.duckdb"), read_only=True)
    except Exception:  # noqa: BLE001 - not created yet, or the apply job holds it
        return None
    try:
        return {i: Decimal(b) for i, b in con.execute("SELECT id, balance FROM accounts").fetchall()}
    except Exception:  # noqa: BLE001 - the table is not there yet
        return None
    finally:
        con.close()
