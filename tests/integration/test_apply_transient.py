"""A busy target is not bad data (real PostgreSQL, the apply engine and its retry loop).

A report session holds a row lock on the target while a transfer arrives, the
target's lock_timeout is short and a dead-letter table is configured: the
batch is rolled back whole and retried until the lock is gone; nothing goes to
the dead-letter table and the balances end equal to the source's. With the
retries used up, the stop names target, batch and sequence range, and blames
no row.
"""

from __future__ import annotations

import threading

import pytest
from prometheus_client import CollectorRegistry

from cdc.config import ApplyConfig, ApplyRetry, TargetConfig, TargetTimeouts
from cdc.dev.ports import wait_until
from cdc.metrics import ApplyMetrics
from cdc.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.apply.retry import apply_with_retry
from streaming.errors import BadRecord, TargetUnavailable
from streaming.targets.postgres import PostgresTarget
from streaming.testing import StreamBuilder

pytestmark = [pytest.mark.postgres]

ACCT = [("id", "int"), ("balance", "int")]


def _engine(postgres, schema: str, registry: CollectorRegistry, dead_letter: str | None) -> ApplyEngine:
    with postgres.connect() as c:
        c.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        c.commit()
    cfg = TargetConfig(name="pg", kind="postgres", dsn=postgres.dsn, schema=schema, dead_letter_table=dead_letter,
                       timeouts=TargetTimeouts(lock_s=0.3, statement_s=30))
    return ApplyEngine("src", PostgresTarget(cfg), TableMap.from_config(ApplyConfig(source="src", target="pg")),
                       ApplyMetrics("src", "pg", registry)).start()


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


def _target(postgres, schema: str) -> tuple[list[tuple], int | None, bool]:
    with postgres.connect() as c:
        rows = c.execute(f'SELECT id, balance FROM "{schema}".acct ORDER BY id').fetchall()
        prog = c.execute(f'SELECT last_sequence FROM "{schema}".cdc_progress').fetchone()
        dead = c.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = %s AND "
                         "table_name = 'cdc_dead'", [schema]).fetchone()[0]
        if dead:
            dead = c.execute(f'SELECT count(*) FROM "{schema}".cdc_dead').fetchone()[0]
    return rows, None if prog is None else prog[0], bool(dead)


def _retries(registry: CollectorRegistry, cause: str) -> float:
    return registry.get_sample_value("cdc_apply_retries_total", {"source": "src", "target": "pg", "cause": cause}) or 0


def test_a_row_lock_on_the_target_is_retried_never_dead_lettered(postgres, topic_prefix):
    schema = topic_prefix.replace("-", "_")[:40]
    registry = CollectorRegistry()
    engine = _engine(postgres, schema, registry, dead_letter="cdc_dead")
    opening = _opening()
    engine.apply_records(opening.as_records(), 0)
    transfer = _transfer(opening)
    records = transfer.as_records(len(opening.items))
    report = postgres.connect(autocommit=False)  # a report session: SELECT ... FOR UPDATE on account 2, held
    report.execute(f'SELECT * FROM "{schema}".acct WHERE id = 2 FOR UPDATE').fetchall()
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
        wait_until(lambda: _retries(registry, "LockNotAvailable") >= 2 or not worker.is_alive(), 60,
                   "the batch retried while the row lock is held", interval=0.1)
        rows, last, dead = _target(postgres, schema)
        assert rows == [(1, 100), (2, 100), (3, 100)] and last == opening.seq - 1 and not dead  # nothing in part
    finally:
        report.rollback()  # the report ends: the lock is released
        report.close()
        worker.join(60)
    assert not worker.is_alive() and "error" not in out, out.get("error")
    assert out["result"].dead_letters == 0 and out["result"].transactions == 2
    rows, last, dead = _target(postgres, schema)
    assert rows == [(1, 60), (2, 150), (3, 90)] and sum(b for _, b in rows) == 300  # equal to the source
    assert last == transfer.seq - 1 and not dead
    engine.close()


def test_retries_used_up_stop_naming_target_batch_and_range_and_blame_no_row(postgres, topic_prefix):
    schema = topic_prefix.replace("-", "_")[:40]
    registry = CollectorRegistry()
    engine = _engine(postgres, schema, registry, dead_letter=None)
    opening = _opening()
    engine.apply_records(opening.as_records(), 0)
    transfer = _transfer(opening)
    records = transfer.as_records(len(opening.items))
    report = postgres.connect(autocommit=False)
    report.execute(f'SELECT * FROM "{schema}".acct WHERE id = 2 FOR UPDATE').fetchall()
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
    assert "LockNotAvailable" in text or "lock" in text.lower()
    assert err.value.cause == "LockNotAvailable" and _retries(registry, "LockNotAvailable") == 2
    rows, last, _ = _target(postgres, schema)
    assert rows == [(1, 100), (2, 100), (3, 100)] and last == opening.seq - 1
    # the lock is gone: the same batch (a restart) applies whole
    assert engine.apply_records(records, 1).transactions == 2
    assert _target(postgres, schema)[:2] == ([(1, 60), (2, 150), (3, 90)], transfer.seq - 1)
    engine.close()
