"""Broker outages under a running daemon (#13 items 2 and 9), on the real tansu broker.

Each test runs the daemon in-process around a paced scripted source, stops the broker mid-stream
for longer than ``kafka.delivery_timeout_s`` and starts it again on the same port:

- persistent storage (the broker keeps what it acknowledged): /readyz turns false naming the
  source and "broker unreachable", the daemon restarts the source by itself (counted in
  cdc_source_reconnects_total) and the stream ends complete, exactly once, with both producer
  modes (idempotent: no duplicate run at all). The idempotent producer is safe here because the
  outage outlasts the delivery timeout: its queue is purged before tansu is back. A SHORT restart
  of a persistent tansu under an idempotent producer may lose the batch in flight (tansu answers
  DUPLICATE_SEQUENCE_NUMBER for a batch it never wrote; see cdc.publish.producer), which is why
  the broker-restart test (test_publisher_broker_restart.py) runs with ``kafka.idempotence: false``;
- memory storage (the broker comes back EMPTY): nothing is written behind the hole and the daemon
  stops loudly, naming the lost sequence range.
"""

from __future__ import annotations

import re
import time

import orjson
import pytest

from cdc.config.models import KafkaConfig
from cdc.dev.broker import Broker
from cdc.publish.recovery import read_records
from cdc.runtime.daemon import SourceSpec
from cdc.stream.envelope import changes_topic
from cdc.stream.serde import get_serdes
from tests.fixtures.daemon_thread import DaemonThread
from tests.fixtures.http import http_get
from tests.integration.scripted_source import ScriptedSource
from tests.integration.stream_check import read_stream

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

DELIVERY_TIMEOUT_S = 3.0
BIG_EVERY, BIG_ROWS = 50, 300
ROW_VALUE = re.compile(r"s\d+-\d+")  # the scripted rows' "v" values: never in a probe's answer


class _Run(DaemonThread):
    """The daemon in a thread, with its HTTP endpoints."""

    def __init__(self, broker, prefix: str, steps: int, idempotence: bool,
                 delivery_timeout_s: float = DELIVERY_TIMEOUT_S) -> None:
        kafka = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=prefix, idempotence=idempotence,
                            delivery_timeout_s=delivery_timeout_s)
        spec = SourceSpec("scripted", "scripted",
                          lambda ctx: ScriptedSource(steps, metrics=ctx.metrics, pace_s=0.004, big_every=BIG_EVERY,
                                                     big_rows=BIG_ROWS))
        super().__init__([spec], kafka)

    def wait_for(self, what: str, test, timeout: float = 40):
        return super().wait_for(what, test, timeout)

    def readyz(self) -> tuple[int, dict]:
        code, body = http_get(self.base + "/readyz")
        assert not ROW_VALUE.search(body.decode()), body
        return code, orjson.loads(body)

    def metric(self, name: str) -> float:
        return self.daemon.workers[0].metrics.registry.get_sample_value(name, {"source": "scripted"}) or 0.0

    def published(self) -> float:
        return self.metric("cdc_source_transactions_published_total")

    def finish(self, timeout: float = 120) -> int:
        self.thread.join(timeout)
        if self.thread.is_alive():
            self.daemon.request_stop()
            self.thread.join(30)
            raise AssertionError(f"the daemon did not finish within {timeout}s")
        return self.status[0]


def _check_exactly_once(stream, steps: int) -> None:
    """Every committed step once, in order, with all its rows (cut-off ones closed with ABORTED)."""
    script = ScriptedSource(steps, big_every=BIG_EVERY, big_rows=BIG_ROWS)
    assert [t for t, _, _ in stream.transactions] == [f"tx-{k}" for k in range(1, steps + 1) if not script.is_ddl(k)]
    for txid, records, end in stream.transactions:
        k = int(txid.split("-")[1])
        assert [r["after"]["id"] for r in records] == [k * 100000 + j for j in range(script.rows_of(k))]
        assert end["resume"] == {"step": k}
    ddl_steps = [s["resume"]["step"] for s in stream.schemas if s["ddl"] is not None]
    assert ddl_steps == sorted(set(ddl_steps)), "a DDL was published twice"


def _outage(run: _Run, broker, down_s: float) -> str:
    """Stop the broker mid-stream; return the /readyz reason seen while it was down."""
    run.wait_for("/readyz 200 and transactions published",
                 lambda: run.readyz()[0] == 200 and run.published() >= 20)
    broker.stop()
    t0 = time.monotonic()

    def unreachable() -> str | None:
        code, body = run.readyz()
        reason = str(body["reasons"].get("scripted"))
        return reason if code == 503 and "broker unreachable" in reason else None

    reason = run.wait_for("/readyz 503 naming the source and 'broker unreachable'", unreachable, timeout=20)
    run.wait_for("a restart of the source counted", lambda: run.metric("cdc_source_reconnects_total") >= 1,
                 timeout=DELIVERY_TIMEOUT_S + 20)
    time.sleep(max(0.0, down_s - (time.monotonic() - t0)))
    broker.start()
    return reason


@pytest.mark.parametrize("idempotence", [True, False], ids=["idempotent", "non-idempotent"])
def test_outage_longer_than_the_delivery_timeout_resumes_exactly_once(persistent_broker, topic_prefix,
                                                                      idempotence, caplog):
    broker = persistent_broker
    steps = 500
    run = _Run(broker, topic_prefix, steps, idempotence)
    reason = _outage(run, broker, down_s=DELIVERY_TIMEOUT_S + 3)
    assert reason.startswith("broker unreachable"), reason
    # back by itself: ready again, then the script runs to its end
    run.wait_for("/readyz 200 after the broker came back", lambda: run.readyz()[0] == 200, timeout=60)
    assert run.finish() == 0, run.daemon.failure
    restarts = run.metric("cdc_source_reconnects_total")
    assert restarts >= 1
    stream = read_stream(broker.bootstrap, changes_topic(topic_prefix, "scripted"))
    _check_exactly_once(stream, steps)
    print(f"outage idempotence={idempotence}: {restarts:.0f} restarts, {len(stream.aborted)} cut-off "
          f"transactions closed with ABORTED, {stream.duplicates} duplicate records, {stream.records} records; "
          f"/readyz said: {reason}")
    tansu_warning = [r for r in caplog.records if "looks like tansu" in r.getMessage()]
    if idempotence:
        assert stream.duplicates == 0
        assert tansu_warning  # the start warns that a persistent tansu wants kafka.idempotence: false
    else:
        assert not tansu_warning


@pytest.mark.parametrize("idempotence", [True, False], ids=["idempotent", "non-idempotent"])
def test_broker_back_empty_is_a_loud_stop_with_nothing_written_behind_the_hole(tmp_path, topic_prefix, idempotence):
    broker = Broker(log_dir=tmp_path / "broker").start()  # memory storage: restarts empty, on the same port
    try:
        run = _Run(broker, topic_prefix, 100_000, idempotence)
        _outage(run, broker, down_s=DELIVERY_TIMEOUT_S + 2)
        assert run.finish(timeout=90) == 2
        failure = run.daemon.failure
        acked = run.daemon.workers[0].acknowledged
        assert acked > 0
        assert "StreamCorrupt" in failure and f"sequence {acked} was acknowledged" in failure, failure
        assert "source scripted stopped" in failure
        topic = changes_topic(topic_prefix, "scripted")
        written = list(read_records(broker.bootstrap, topic, *get_serdes("json"), deadline_s=20))
        assert written == [], f"records written into the emptied topic: {written[:3]}"
        print(f"empty broker, idempotence={idempotence}: {failure}")
    finally:
        broker.stop()
