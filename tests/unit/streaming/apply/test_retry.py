"""A batch that fails transiently is retried whole (streaming.apply.retry), against an embedded DuckDB target
whose other connection holds a conflicting write; and what /readyz says about a batch past its bound."""

from __future__ import annotations

import time
from types import SimpleNamespace

import duckdb
import pytest
from prometheus_client import CollectorRegistry

from cdc.config.models import ApplyConfig, ApplyRetry, TargetConfig
from cdc.metrics import ApplyMetrics
from cdc.schema.table_map import TableMap
from streaming.apply import probes
from streaming.apply.engine import ApplyEngine
from streaming.apply.retry import apply_with_retry, backoff_s
from streaming.errors import BadRecord, TargetRefused, TargetTransient, TargetUnavailable
from streaming.targets.duckdb.target import DuckDbTarget
from streaming.testing import StreamBuilder

NO_WAIT = ApplyRetry(attempts=3, initial_backoff_s=0, max_backoff_s=0)


def _setup(tmp_path):
    path = str(tmp_path / "t.duckdb")
    registry = CollectorRegistry()
    target = DuckDbTarget(TargetConfig(name="duck", kind="duckdb", path=path, dead_letter_table="cdc_dead"))
    engine = ApplyEngine("src", target, TableMap.from_config(ApplyConfig(source="src", target="duck")),
                         ApplyMetrics("src", "duck", registry)).start()
    b = StreamBuilder().schema("bank.acct", [("id", "int"), ("balance", "int")], ["id"])
    b.tx(("c", "bank.acct", None, {"id": 1, "balance": 100}), ("c", "bank.acct", None, {"id": 2, "balance": 100}))
    engine.apply_records(b.as_records(), 0)
    n = len(b.items)
    b.tx(("u", "bank.acct", {"id": 1, "balance": 100}, {"id": 1, "balance": 50}),
         ("u", "bank.acct", {"id": 2, "balance": 100}, {"id": 2, "balance": 150}))
    other = duckdb.connect(path)  # the same database: another writer of this process
    other.begin()
    other.execute("UPDATE acct SET balance = balance + 1 WHERE id = 2")  # holds a conflicting write
    return engine, registry, b, b.as_records()[n:], other


def _state(engine):
    rows = engine.target.execute("SELECT id, balance FROM acct ORDER BY id").fetchall()
    dead = engine.target.table_columns("cdc_dead") is not None
    return rows, engine.target.read_progress("src").last_sequence, dead


def test_a_write_conflict_is_retried_whole_and_lands_once(tmp_path):
    engine, registry, b, records, other = _setup(tmp_path)
    retried = []

    def on_retry(error, attempt):
        retried.append((error, attempt))
        assert _state(engine)[0] == [(1, 100), (2, 100)]  # rolled back whole: not account 1 alone
        other.rollback()  # the other writer gives up

    result = apply_with_retry(engine, lambda: engine.apply_records(records, 1), 1, "x..y", NO_WAIT,
                              on_retry=on_retry)
    assert result.transactions == 1 and result.dead_letters == 0
    assert _state(engine) == ([(1, 50), (2, 150)], b.seq - 1, False)
    [(error, attempt)] = retried
    assert isinstance(error, TargetTransient) and attempt == 1 and error.batch == 1 and error.target == "duck"
    assert registry.get_sample_value("cdc_apply_retries_total",
                                     {"source": "src", "target": "duck", "cause": "TransactionException"}) == 1


def test_used_up_retries_name_target_batch_and_range_never_a_bad_record(tmp_path):
    engine, _, b, records, other = _setup(tmp_path)
    with pytest.raises(TargetUnavailable) as err:
        apply_with_retry(engine, lambda: engine.apply_records(records, 1), 1, "9..12", NO_WAIT)
    assert not isinstance(err.value, BadRecord)
    assert str(err.value).startswith("target 'duck' could not apply batch 1 (sequences 9..12) in 3 attempt(s)")
    assert _state(engine) == ([(1, 100), (2, 100)], b.seq - len(records) - 1, False)
    other.rollback()


def test_backoff_doubles_up_to_its_bound():
    policy = ApplyRetry(attempts=9, initial_backoff_s=0.5, max_backoff_s=3)
    assert [backoff_s(policy, a) for a in range(1, 6)] == [0.5, 1, 2, 3, 3]


def test_readyz_names_a_batch_past_its_bound():
    query = SimpleNamespace(isActive=True, lastProgress=None)
    stream = SimpleNamespace(apply=ApplyConfig(source="src", target="pg", max_batch_s=60), failure=None,
                             query=query, batch_id=7, batch_span="101..250", retrying=None,
                             batch_started=time.monotonic() - 5)
    assert probes.readiness([stream]) == {"src->pg": "starting: first trigger not completed"}
    stream.batch_started -= 100  # running for 105 s, bound 60 s: named even before the first trigger completed
    stream.retrying = "OperationalError (attempt 2 of 10 failed)"
    reason = probes.readiness([stream])["src->pg"]
    assert reason.startswith("batch 7 (sequences 101..250) running for 10") and "over apply max_batch_s 60s" in reason
    assert reason.endswith("retrying after OperationalError (attempt 2 of 10 failed)")
    stream.batch_started = None  # the batch ended
    query.lastProgress = {}
    assert probes.readiness([stream]) == {}


def test_a_fatal_target_error_outside_any_row_is_a_named_refusal_not_retried(tmp_path):
    engine, registry, _, records, other = _setup(tmp_path)
    other.rollback()
    engine.target.execute("ALTER TABLE cdc_progress RENAME TO cdc_progress_gone")  # behind the job's back
    engine.target.commit()
    with pytest.raises(TargetRefused) as err:
        apply_with_retry(engine, lambda: engine.apply_records(records, 1), 1, "x..y", NO_WAIT)
    text = str(err.value)
    assert text.startswith(f"target 'duck' refused batch 1 (sequences {records[0].sequence}..") and "CatalogException" in text
    assert registry.get_sample_value("cdc_apply_retries_total", {"source": "src", "target": "duck",
                                                                 "cause": "CatalogException"}) is None
    assert engine.target.execute("SELECT id, balance FROM acct ORDER BY id").fetchall() == [(1, 100), (2, 100)]


def test_retry_and_timeouts_are_read_from_the_file_and_the_environment(tmp_path):
    from cdc.config.loader import load_config
    from cdc.errors import ConfigError

    path = tmp_path / "cdc.yaml"
    path.write_text("kafka: {bootstrap_servers: '127.0.0.1:1'}\n"
                    "targets: [{name: d, kind: duckdb, path: t.duckdb, timeouts: {lock_s: 2}}]\n"
                    "apply: [{source: s, target: d, retry: {attempts: 4}}]\n")
    cfg = load_config(path, {"CDC_TARGETS__0__TIMEOUTS__REPLY_S": "7", "CDC_APPLY__0__MAX_BATCH_S": "30"})
    t, a = cfg.targets[0].timeouts, cfg.apply[0]
    assert (t.lock_s, t.reply_bound_s, t.statement_s) == (2, 7, 300)
    assert (a.retry.attempts, a.retry.max_backoff_s, a.max_batch_s) == (4, 30, 30)
    with pytest.raises(ConfigError, match=r"key 'apply\[0\].retry.attempts' in env CDC_APPLY__0__RETRY__ATTEMPTS"):
        load_config(path, {"CDC_APPLY__0__RETRY__ATTEMPTS": "0"})
