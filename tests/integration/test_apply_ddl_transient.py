"""A busy target during a schema change is not a stop (real PostgreSQL target, the engine and its retry loop).

A report session holds a table lock on the target (an open transaction that
read the table) while an ``ALTER TABLE ... ADD COLUMN`` arrives, and the
target's lock_timeout is short: the DDL fails with 55P03. That is transient,
like a batch's lock timeout: the batch (its rows and the DDL) is rolled back
whole and retried until the lock is gone, then the column and the rows after it
are applied, once.
"""

from __future__ import annotations

import threading

import pytest
from prometheus_client import CollectorRegistry

from cdc.config.models import ApplyConfig, ApplyRetry, TargetConfig, TargetTimeouts
from cdc.dev.ports import wait_until
from cdc.metrics import ApplyMetrics
from cdc.schema.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.apply.retry import apply_with_retry
from streaming.targets import make_target
from streaming.testing import StreamBuilder

pytestmark = [pytest.mark.postgres]


def _retries(registry: CollectorRegistry) -> float:
    return registry.get_sample_value("cdc_apply_retries_total",
                                     {"source": "src", "target": "pg", "cause": "LockNotAvailable"}) or 0


def test_a_lock_timeout_during_a_target_ddl_is_retried_and_the_ddl_applies(postgres, topic_prefix):
    schema = topic_prefix.replace("-", "_")[:40]
    with postgres.connect() as c:
        c.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        c.commit()
    cfg = TargetConfig(name="pg", kind="postgres", dsn=postgres.dsn, schema=schema,
                       timeouts=TargetTimeouts(lock_s=0.3, statement_s=30))
    registry = CollectorRegistry()
    engine = ApplyEngine("src", make_target(cfg), TableMap.from_config(ApplyConfig(source="src", target="pg")),
                         ApplyMetrics("src", "pg", registry)).start()
    opening = StreamBuilder().schema("shop.item", [("id", "int"), ("name", "varchar(20)")], ["id"])
    opening.tx(*[("c", "shop.item", None, {"id": i, "name": f"n{i}"}) for i in (1, 2)])
    engine.apply_records(opening.as_records(), 0)

    change = StreamBuilder(start_sequence=opening.seq)
    change.schemas = dict(opening.schemas)
    change.schema("shop.item", [("id", "int"), ("name", "varchar(20)"), ("qty", "int")], ["id"],
                  ddl="ALTER TABLE item ADD COLUMN qty INT")
    change.tx(("c", "shop.item", None, {"id": 3, "name": "n3", "qty": 5}),
              ("u", "shop.item", {"id": 1, "name": "n1", "qty": None}, {"id": 1, "name": "n1", "qty": 9}))
    records = change.as_records(len(opening.items))
    span = f"{records[0].sequence}..{records[-1].sequence}"

    report = postgres.connect(autocommit=False)  # a report's open transaction holds ACCESS SHARE on the table
    report.execute(f'SELECT count(*) FROM "{schema}".item').fetchall()
    out: dict = {}

    def apply() -> None:
        try:
            out["result"] = apply_with_retry(engine, lambda: engine.apply_records(records, 1), 1, span,
                                             ApplyRetry(attempts=40, initial_backoff_s=0.1, max_backoff_s=0.5))
        except BaseException as exc:  # noqa: BLE001 - asserted below
            out["error"] = exc

    worker = threading.Thread(target=apply, daemon=True)
    try:
        worker.start()
        wait_until(lambda: _retries(registry) >= 2 or not worker.is_alive(), 60,
                   "the batch with the DDL retried while the table lock is held", interval=0.1)
        assert worker.is_alive(), out.get("error")  # not stopped: still retrying
        with postgres.connect() as c:  # nothing of the batch in part: no column, no row, the old progress
            cols = [r[0] for r in c.execute("SELECT column_name FROM information_schema.columns WHERE "
                                            f"table_schema = '{schema}' AND table_name = 'item'").fetchall()]
            assert sorted(cols) == ["id", "name"]
            assert c.execute(f'SELECT last_sequence FROM "{schema}".cdc_progress').fetchone()[0] == opening.seq - 1
    finally:
        report.rollback()  # the report ends: the lock is released
        report.close()
        worker.join(60)
    assert not worker.is_alive() and "error" not in out, out.get("error")
    with postgres.connect() as c:
        rows = [tuple(r) for r in c.execute(f'SELECT id, name, qty FROM "{schema}".item ORDER BY id').fetchall()]
        last = c.execute(f'SELECT last_sequence FROM "{schema}".cdc_progress').fetchone()[0]
    assert rows == [(1, "n1", 9), (2, "n2", None), (3, "n3", 5)]
    assert last == change.seq - 1
    engine.close()
