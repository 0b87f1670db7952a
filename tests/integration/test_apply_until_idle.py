"""``cdc apply --until-idle`` stops only when the stream holds no complete transaction left to apply
(real tansu behind a proxy that slows its Fetch responses, Spark, PostgreSQL).

With Fetch answered slower than the planner's short poll, the planner sees an empty topic and plans
nothing, so the job is quiet although complete transactions sit in the topic: the job must not take
that for idle. Once the broker answers promptly again, it applies them and stops by itself."""

from __future__ import annotations

import struct
import threading
import time

import pytest

from streaming.apply import job
from streaming.apply.idle import first_unapplied
from streaming.testing import StreamBuilder, produce
from tests.fixtures.net_proxy import frames
from tests.fixtures.spark import pg_apply_config
from tests.integration.kafka_proxy import FETCH, FetchBlackhole, ProxiedBroker

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

FETCH_DELAY_S = 1.0  # well above the planner's short poll (streaming.stream.batches.IDLE_POLL_S)
IDLE_S = 2.0


class SlowFetch(FetchBlackhole):
    """While ``slow`` is set, every Fetch response reaches the client FETCH_DELAY_S late."""

    def __init__(self, upstream_port: int) -> None:
        super().__init__(upstream_port)
        self.slow = threading.Event()
        self.delayed = 0

    def forward(self, chunks, direction: str, state: dict):
        """Fetch responses held FETCH_DELAY_S while ``slow`` is set (tests/fixtures/net_proxy.py's hook)."""
        fetches: set[int] = state.setdefault("slow_fetches", set())
        for frame in frames(chunks):
            if direction == "request":
                api_key, _version, corr = struct.unpack(">hhi", frame[4:12])
                if api_key == FETCH:
                    fetches.add(corr)
            else:
                corr = struct.unpack(">i", frame[4:8])[0]
                if corr in fetches:
                    fetches.discard(corr)
                    if self.slow.is_set():
                        self.delayed += 1
                        time.sleep(FETCH_DELAY_S)
            yield frame


@pytest.fixture
def slow_broker(tmp_path):
    b = ProxiedBroker(log_dir=tmp_path / "tansu")
    b.proxy.close()
    b.proxy = SlowFetch(b.port)
    b.start()
    yield b
    b.stop()


def _rows(postgres, schema: str) -> dict[int, str]:
    with postgres.connect() as c:
        has = c.execute("SELECT to_regclass(%s)", [f'"{schema}".orders']).fetchone()[0]
        return dict(c.execute(f'SELECT id, name FROM "{schema}".orders').fetchall()) if has else {}


def test_until_idle_waits_for_transactions_the_planner_has_not_seen(spark, slow_broker, postgres, topic_prefix,
                                                                    tmp_path):
    b = StreamBuilder().schema("shop.orders", [("id", "int"), ("name", "varchar(20)")], ["id"])
    for i in range(5):
        b.tx(("c", "shop.orders", None, {"id": i, "name": f"n{i}"}))
    b.heartbeat()
    topic = f"{topic_prefix}.src.changes"
    slow_broker.create_topic(topic)
    produce(slow_broker.bootstrap, topic, b.encoded())
    schema = "until_idle_" + topic_prefix[-8:]
    cfg = pg_apply_config(slow_broker, postgres, topic_prefix, schema, tmp_path / "ck")

    slow_broker.proxy.slow.set()
    outcome: dict = {}

    def apply() -> None:
        try:
            outcome["exit"] = job.run(cfg, until_idle_s=IDLE_S, spark=spark)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertions below
            outcome["error"] = exc

    runner = threading.Thread(target=apply, name="apply-until-idle", daemon=True)
    t0 = time.monotonic()
    runner.start()
    try:
        # well past the idle time after Spark's start-up: the job is quiet, the topic is not applied
        runner.join(IDLE_S + 25)
        assert runner.is_alive(), (f"--until-idle exited {outcome} after {time.monotonic() - t0:.0f} s with "
                                   f"{len(_rows(postgres, schema))} of 5 transactions applied")
        assert slow_broker.proxy.delayed > 0
    finally:
        slow_broker.proxy.slow.clear()
        runner.join(180)
    assert not runner.is_alive() and outcome.get("exit") == 0, outcome
    assert _rows(postgres, schema) == {i: f"n{i}" for i in range(5)}


def test_first_unapplied_finds_the_first_complete_transaction_and_ignores_an_open_tail(slow_broker, topic_prefix):
    b = StreamBuilder().schema("db.t", [("id", "int")], ["id"])
    b.heartbeat()
    b.tx(("c", "db.t", None, {"id": 1}))
    b.heartbeat()
    topic = f"{topic_prefix}.changes"
    slow_broker.create_topic(topic)
    enc = b.encoded()
    produce(slow_broker.bootstrap, topic, enc)
    ends = [i + 1 for i, (_k, v) in enumerate(enc) if b'"status":"END"' in v]
    slow_broker.proxy.slow.set()  # a slow fetch is not the end of the topic
    try:
        assert first_unapplied(slow_broker.bootstrap, topic, "json", {}) == (0, 1)  # the SCHEMA record
        assert first_unapplied(slow_broker.bootstrap, topic, "json", {0: ends[0] - 3}) == (0, ends[0])
        assert first_unapplied(slow_broker.bootstrap, topic, "json", {0: ends[0]}) is None  # a heartbeat only
        # a transaction still open at the tail (its END not written yet) is not work to wait for
        b.tx(("c", "db.t", None, {"id": 2}))
        more = b.encoded()[len(enc):]
        produce(slow_broker.bootstrap, topic, more[:-1])
        assert first_unapplied(slow_broker.bootstrap, topic, "json", {0: ends[0]}) is None
        produce(slow_broker.bootstrap, topic, more[-1:])
        assert first_unapplied(slow_broker.bootstrap, topic, "json", {0: ends[0]}) == (0, len(enc) + 3)
    finally:
        slow_broker.proxy.slow.clear()
