"""The apply job when the network to its PostgreSQL target goes dark or is cut (real broker, Spark, PostgreSQL;
the target reached through tests/fixtures/net_proxy.py).

- blackhole mid-apply: within ``apply[].max_batch_s`` /readyz fails naming the batch and its sequence range;
  the call waits no longer than ``timeouts.reply_s``, the batch is rolled back and retried; once the path is
  back the job goes on by itself; then a connection reset mid-batch: the in-process retry resumes exactly;
  the target ends equal to the source, nothing applied twice;
- the same with the retries used up under `cdc apply`: ONE error line naming target, batch and sequence range
  (no driver or py4j traceback), exit 2, and a restart ends equal.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry

from cdc.config.loader import parse_config
from cdc.dev.ports import wait_until
from cdc.dev.procs import spawn, terminate
from streaming.apply import job, probes
from streaming.testing import StreamBuilder, produce
from tests.fixtures.net_proxy import TcpProxy

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

CDC = str(Path(sys.executable).with_name("cdc"))
ACCT = [("id", "int"), ("balance", "int")]
N_ACCT = 8


class Bank:
    """A stream of transfers between N_ACCT accounts, and the balances the source holds after it."""

    def __init__(self) -> None:
        self.b = StreamBuilder().schema("bank.acct", ACCT, ["id"])
        self.balance = dict.fromkeys(range(N_ACCT), 100)
        self.b.tx(*[("c", "bank.acct", None, {"id": i, "balance": 100}) for i in range(N_ACCT)])
        self.sent = 0  # records produced so far
        self.n = 0

    def transfers(self, count: int) -> None:
        for _ in range(count):
            a, c = self.n % N_ACCT, (self.n * 3 + 1) % N_ACCT
            self.n += 1
            if a == c:
                continue
            amt = 1 + self.n % 7
            changes = [("u", "bank.acct", {"id": a, "balance": self.balance[a]},
                        {"id": a, "balance": self.balance[a] - amt}),
                       ("u", "bank.acct", {"id": c, "balance": self.balance[c]},
                        {"id": c, "balance": self.balance[c] + amt})]
            self.balance[a] -= amt
            self.balance[c] += amt
            self.b.tx(*changes)

    def produce(self, broker, topic: str) -> tuple[int, int]:
        """Produce what is new; returns its (first, last) sequence."""
        recs = self.b.encoded()[self.sent:]
        first = self.b.seq - len(recs)
        produce(broker.bootstrap, topic, recs)
        self.sent += len(recs)
        return first, self.b.seq - 1

    def rows(self) -> list[tuple[int, int]]:
        return sorted(self.balance.items())


def _schema(postgres, prefix: str) -> str:
    schema = prefix.replace("-", "_")[:40]
    with postgres.connect() as c:
        c.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        c.commit()
    return schema


def _raw_config(broker, postgres, proxy: TcpProxy, prefix: str, schema: str, tmp_path, attempts: int) -> dict:
    dsn = postgres.dsn.replace(f":{postgres.port}/", f":{proxy.port}/")
    return {"kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": prefix},
            "targets": [{"name": "pg", "kind": "postgres", "dsn": dsn, "schema": schema,
                         "timeouts": {"connect_s": 2, "statement_s": 10, "reply_s": 3, "keepalive_idle_s": 5,
                                      "keepalive_interval_s": 1, "keepalive_count": 3}}],
            "apply": [{"source": "src", "target": "pg", "checkpoint_dir": str(tmp_path / "ck"),
                       "trigger_interval_s": 0.2, "max_records_per_batch": 400, "max_batch_s": 2,
                       "retry": {"attempts": attempts, "initial_backoff_s": 0.3, "max_backoff_s": 1}}]}


def _target(postgres, schema: str) -> tuple[list[tuple], int | None]:
    with postgres.connect() as c:
        try:
            rows = c.execute(f'SELECT id, balance FROM "{schema}".acct ORDER BY id').fetchall()
            last = c.execute(f'SELECT last_sequence FROM "{schema}".cdc_progress').fetchone()
        except Exception:  # noqa: BLE001 - not created yet
            return [], None
    return [tuple(r) for r in rows], None if last is None else last[0]


def _retries(registry: CollectorRegistry) -> float:
    return sum(s.value for f in registry.collect() if f.name == "cdc_apply_retries"
               for s in f.samples if s.name == "cdc_apply_retries_total")


class Running:
    """``job.run`` in a thread (the shared SparkSession), its streams visible to the test."""

    def __init__(self, config, spark, registry: CollectorRegistry) -> None:
        self.streams: list = []
        self.stop = threading.Event()
        self.errors: list[BaseException] = []

        def body() -> None:
            try:
                job.run(config, spark=spark, stop_event=self.stop, metrics_registry=registry,
                        streams_out=self.streams)
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                self.errors.append(exc)

        self.thread = threading.Thread(target=body, daemon=True, name="apply")
        self.thread.start()

    def alive(self) -> str | None:
        return None if self.thread.is_alive() else f"the apply job ended: {self.errors}"

    def end(self) -> None:
        self.stop.set()
        self.thread.join(60)
        assert not self.thread.is_alive()


@pytest.mark.slow
def test_a_dark_or_cut_network_to_the_target_is_retried_and_the_target_ends_equal(
        spark, broker, postgres, topic_prefix, tmp_path):
    proxy = TcpProxy(postgres.port)
    topic = f"{topic_prefix}.src.changes"
    broker.create_topic(topic)
    bank, schema, registry = Bank(), _schema(postgres, topic_prefix), CollectorRegistry()
    bank.transfers(20)
    _, first_end = bank.produce(broker, topic)
    cfg = parse_config(_raw_config(broker, postgres, proxy, topic_prefix, schema, tmp_path, attempts=100))
    run = Running(cfg, spark, registry)
    try:
        wait_until(lambda: _target(postgres, schema)[1] == first_end, 120, "the first transfers applied",
                   interval=0.3, alive=run.alive)

        # (b) the path to PostgreSQL goes dark mid-apply
        proxy.pause()
        bank.transfers(30)
        first, dark_end = bank.produce(broker, topic)
        wait_until(lambda: "running for" in probes.readiness(run.streams).get("src->pg", ""), 60,
                   "/readyz failing, naming the batch", interval=0.2, alive=run.alive)
        reason = probes.readiness(run.streams)["src->pg"]
        assert f"(sequences {first}.." in reason and "over apply max_batch_s 2s" in reason, reason
        assert reason.startswith(f"batch {run.streams[0].batch_id} ")
        # a call waits at most reply_s: the batch is rolled back and retried while the path is dark
        wait_until(lambda: _retries(registry) >= 2, 60, "retries while the path is dark", interval=0.2,
                   alive=run.alive)
        reason = probes.readiness(run.streams)["src->pg"]
        assert "retrying after" in reason
        print(f"\n/readyz reason while dark: {reason}")  # shown with pytest -s (docs/apply-faults.md quotes it)
        assert _target(postgres, schema)[1] == first_end  # nothing of the batch is there
        proxy.resume()
        wait_until(lambda: _target(postgres, schema)[1] == dark_end, 120, "the job goes on once the path is back",
                   interval=0.3, alive=run.alive)
        wait_until(lambda: not probes.readiness(run.streams), 30, "/readyz green again", interval=0.2,
                   alive=run.alive)

        # (c) the connection is reset mid-batch
        retried, applied = _retries(registry), run.streams[0].batches
        proxy.slow(0.05)  # every round trip takes a while: a batch is long enough to be cut
        bank.transfers(300)
        _, last = bank.produce(broker, topic)

        def applying() -> bool:
            s = run.streams[0]
            return s.batches == applied and s.batch_started is not None and s.batch_span != "?"
        wait_until(applying, 60, "a batch being applied", interval=0.01, alive=run.alive)
        time.sleep(0.2)  # into its statements
        assert proxy.cut() >= 1
        proxy.slow(0)
        wait_until(lambda: _target(postgres, schema)[1] == last, 120, "the job resumes after the reset",
                   interval=0.3, alive=run.alive)
        assert _retries(registry) > retried
    finally:
        proxy.resume()
        run.end()
        proxy.close()
    assert not run.errors, run.errors
    assert _target(postgres, schema) == (bank.rows(), bank.b.seq - 1)  # each transfer once, none lost


@pytest.mark.slow
def test_retries_used_up_end_cdc_apply_with_one_named_error_and_a_restart_ends_equal(
        spark, broker, postgres, topic_prefix, tmp_path):
    proxy = TcpProxy(postgres.port)
    topic = f"{topic_prefix}.src.changes"
    broker.create_topic(topic)
    bank, schema = Bank(), _schema(postgres, topic_prefix)
    bank.transfers(10)
    _, first_end = bank.produce(broker, topic)
    raw = _raw_config(broker, postgres, proxy, topic_prefix, schema, tmp_path, attempts=2)
    path = tmp_path / "apply.yaml"
    path.write_text(yaml.safe_dump(raw))
    log = tmp_path / "apply.log"
    proc = spawn([CDC, "apply", "--config", str(path), "--master", "local[2]", "--metrics-port", "0"], log,
                 env=dict(os.environ, CDC_PROGRESS="off", PYTHONUNBUFFERED="1"))
    try:
        def died() -> str | None:
            return None if proc.poll() is None else f"cdc apply exited {proc.returncode}: {log.read_text()[-3000:]}"
        wait_until(lambda: _target(postgres, schema)[1] == first_end, 180, "the first transfers applied",
                   interval=0.3, alive=died)
        proxy.pause()
        bank.transfers(10)
        first, _ = bank.produce(broker, topic)
        assert proc.wait(timeout=120) == 2, log.read_text()[-3000:]
    finally:
        terminate(proc)
        proxy.resume()
    text = log.read_text(errors="replace")
    errors = [ln for ln in text.splitlines() if "error" in ln.lower() and "retry" not in ln.lower()
              and "attempt" not in ln.lower() or "could not apply batch" in ln]
    named = [ln for ln in errors if "could not apply batch" in ln]
    assert len(named) == 1, [ln[:300] for ln in text.splitlines() if "ERROR" in ln or "rror:" in ln]
    assert named[0].startswith("cdc apply: error: target 'pg' could not apply batch ")
    assert f"(sequences {first}.." in named[0] and "in 2 attempt(s)" in named[0]
    assert "Traceback" not in text and "py4j" not in text.lower(), [ln[:300] for ln in text.splitlines()
                                                                     if "ERROR" in ln or "Traceback" in ln]
    assert _target(postgres, schema)[1] == first_end  # nothing of the failed batch
    # the path is back: a restart (in-process here) resumes from the progress row and ends equal
    cfg = parse_config(raw)
    assert job.run(cfg, spark=spark, until_idle_s=3) == 0
    proxy.close()
    assert _target(postgres, schema) == (bank.rows(), bank.b.seq - 1)
