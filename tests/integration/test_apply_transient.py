"""A busy target is not bad data (real PostgreSQL and MariaDB targets, the apply engine and its retry loop).

A report session holds a row lock on the target while a transfer arrives, the
target's lock_timeout is short and a dead-letter table is configured: the
batch is rolled back whole and retried until the lock is gone; nothing goes to
the dead-letter table and the balances end equal to the source's. With the
retries used up, the stop names target, batch and sequence range, and blames
no row.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from cdc.config.models import ApplyConfig, ApplyRetry, TargetConfig, TargetTimeouts
from cdc.dev.ports import wait_until
from cdc.metrics import ApplyMetrics
from cdc.schema.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.apply.retry import apply_with_retry
from streaming.errors import BadRecord, TargetUnavailable
from streaming.targets import make_target
from streaming.testing import StreamBuilder

pytestmark = [pytest.mark.postgres, pytest.mark.mysql]

ACCT = [("id", "int"), ("balance", "int")]


class Db:
    """One target database: the engine's target on it, a second session, and what the target holds."""

    def __init__(self, kind: str, request) -> None:
        self.kind = kind
        timeouts = TargetTimeouts(lock_s=0.3 if kind == "pg" else 1, statement_s=30)
        if kind == "pg":
            self.server = request.getfixturevalue("postgres")
            self.schema = request.getfixturevalue("topic_prefix").replace("-", "_")[:40]
            with self.server.connect() as c:
                c.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
                c.commit()
            self.config = {"name": "pg", "kind": "postgres", "dsn": self.server.dsn, "schema": self.schema,
                           "timeouts": timeouts}
            self.cause = "LockNotAvailable"  # SQLSTATE 55P03, lock_timeout
        else:
            self.server = request.getfixturevalue("mariadb_primary")
            self.schema = request.getfixturevalue("tmp_mysql_db")
            self.config = {"name": "pg", "kind": "mysql", "schema": self.schema, "timeouts": timeouts,
                           "dsn": f"mysql://cdc:cdc@{self.server.host}:{self.server.port}/{self.schema}"}
            self.cause = "OperationalError"  # 1205 lock wait timeout

    def engine(self, registry: CollectorRegistry, dead_letter: str | None) -> ApplyEngine:
        cfg = TargetConfig(**self.config, dead_letter_table=dead_letter)
        return ApplyEngine("src", make_target(cfg), TableMap.from_config(ApplyConfig(source="src", target="pg")),
                           ApplyMetrics("src", "pg", registry)).start()

    def session(self) -> Any:
        """A report session holding a row lock on account 2 (SELECT ... FOR UPDATE), until rolled back."""
        if self.kind == "pg":
            c = self.server.connect(autocommit=False)
            c.execute(f'SELECT * FROM "{self.schema}".acct WHERE id = 2 FOR UPDATE').fetchall()
            return c
        c = self.server.connect(self.schema, autocommit=False)
        with c.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute("SELECT * FROM acct WHERE id = 2 FOR UPDATE")
            cur.fetchall()
        return c

    def query(self, sql: str) -> list[tuple]:
        if self.kind == "pg":
            with self.server.connect() as c:
                return [tuple(r) for r in c.execute(sql.replace("{s}", f'"{self.schema}"')).fetchall()]
        return [tuple(r) for r in self.server.query(sql.replace("{s}", f"`{self.schema}`"))]

    def state(self) -> tuple[list[tuple], int | None, bool]:
        rows = self.query("SELECT id, balance FROM {s}.acct ORDER BY id")
        prog = self.query("SELECT last_sequence FROM {s}.cdc_progress")
        dead = self.query("SELECT count(*) FROM information_schema.tables WHERE table_schema = "
                          f"'{self.schema}' AND table_name = 'cdc_dead'")[0][0]
        if dead:
            dead = self.query("SELECT count(*) FROM {s}.cdc_dead")[0][0]
        return rows, prog[0][0] if prog else None, bool(dead)


@pytest.fixture(params=["pg", "my"])
def db(request) -> Db:
    return Db(request.param, request)


def _span(records) -> str:
    seqs = [r.sequence for r in records if r.sequence is not None]
    return f"{min(seqs)}..{max(seqs)}"


def _opening() -> StreamBuilder:
    b = StreamBuilder().schema("bank.acct", ACCT, ["id"])
    return b.tx(*[("c", "bank.acct", None, {"id": i, "balance": 100}) for i in (1, 2, 3)])


def _transfer(after: StreamBuilder) -> StreamBuilder:
    """Move 50 from account 1 to account 2 (one source transaction), then 10 from 3 to 1."""
    b = StreamBuilder(start_sequence=after.seq)
    b.schemas = dict(after.schemas)
    b.tx(("u", "bank.acct", {"id": 1, "balance": 100}, {"id": 1, "balance": 50}),
         ("u", "bank.acct", {"id": 2, "balance": 100}, {"id": 2, "balance": 150}))
    b.tx(("u", "bank.acct", {"id": 3, "balance": 100}, {"id": 3, "balance": 90}),
         ("u", "bank.acct", {"id": 1, "balance": 50}, {"id": 1, "balance": 60}))
    return b


def _retries(registry: CollectorRegistry, cause: str) -> float:
    return registry.get_sample_value("cdc_apply_retries_total", {"source": "src", "target": "pg", "cause": cause}) or 0


def test_a_row_lock_on_the_target_is_retried_never_dead_lettered(db):
    registry = CollectorRegistry()
    engine = db.engine(registry, dead_letter="cdc_dead")
    opening = _opening()
    engine.apply_records(opening.as_records(), 0)
    transfer = _transfer(opening)
    records = transfer.as_records(len(opening.items))
    report = db.session()  # a report session holds a row lock on account 2
    out: dict = {}

    def apply() -> None:
        try:
            out["result"] = apply_with_retry(engine, lambda: engine.apply_records(records, 1), 1, _span(records),
                                             ApplyRetry(attempts=40, initial_backoff_s=0.1, max_backoff_s=0.5))
        except BaseException as exc:  # noqa: BLE001 - asserted below
            out["error"] = exc

    worker = threading.Thread(target=apply, daemon=True)
    try:
        worker.start()
        wait_until(lambda: _retries(registry, db.cause) >= 2 or not worker.is_alive(), 60,
                   "the batch retried while the row lock is held", interval=0.1)
        rows, last, dead = db.state()
        assert rows == [(1, 100), (2, 100), (3, 100)] and last == opening.seq - 1 and not dead  # nothing in part
    finally:
        report.rollback()  # the report ends: the lock is released
        report.close()
        worker.join(60)
    assert not worker.is_alive() and "error" not in out, out.get("error")
    assert out["result"].dead_letters == 0 and out["result"].transactions == 2
    rows, last, dead = db.state()
    assert rows == [(1, 60), (2, 150), (3, 90)] and sum(b for _, b in rows) == 300  # equal to the source
    assert last == transfer.seq - 1 and not dead
    engine.close()


def test_retries_used_up_stop_naming_target_batch_and_range_and_blame_no_row(db):
    registry = CollectorRegistry()
    engine = db.engine(registry, dead_letter=None)
    opening = _opening()
    engine.apply_records(opening.as_records(), 0)
    transfer = _transfer(opening)
    records = transfer.as_records(len(opening.items))
    report = db.session()
    try:
        with pytest.raises(TargetUnavailable) as err:
            apply_with_retry(engine, lambda: engine.apply_records(records, 1), 1, _span(records),
                             ApplyRetry(attempts=3, initial_backoff_s=0.05, max_backoff_s=0.1))
    finally:
        report.rollback()
        report.close()
    assert not isinstance(err.value, BadRecord)
    text = str(err.value)
    assert f"target 'pg' could not apply batch 1 (sequences {_span(records)}) in 3 attempt(s)" in text, text
    assert "lock" in text.lower()
    assert err.value.cause == db.cause and _retries(registry, db.cause) == 2
    rows, last, _ = db.state()
    assert rows == [(1, 100), (2, 100), (3, 100)] and last == opening.seq - 1
    # the lock is gone: the same batch (a restart) applies whole
    assert engine.apply_records(records, 1).transactions == 2
    assert db.state()[:2] == ([(1, 60), (2, 150), (3, 90)], transfer.seq - 1)
    engine.close()
