"""The outbox router of an Oracle source in the daemon (`cdc run`), through a kill -9 and a restart.

No Oracle server runs here: the source is the LogMiner simulator, whose redo reaches the standby two SCNs per
poll (``head_step``: the whole redo over a few seconds, polled every 50 ms by the test), so the daemon is
mid-stream when it is killed. Table T0 plays the outbox table as in tests/integration/test_oracle_outbox.py
(AMOUNT the aggregate type, ID the event id and key, NAME the payload).
Afterwards each outbox topic holds each event of the model once, in commit order."""

from __future__ import annotations

import pytest
import yaml

from tests.e2e.mysql_daemon import Daemon, wait_for
from tests.integration.test_outbox_router import _topic
from tests.unit.readers.oracle.helpers import expected

pytestmark = [pytest.mark.oracle, pytest.mark.kafka, pytest.mark.slow]

OPTS = ("seed=47,transactions=300,lanes=4,threads=2,log_scns=60,rows_max=6,rollback_rate=0.1,"
        "partial_rollback_rate=0.2,csf_rate=0.05,tables=3,head_step=2")


def test_oracle_outbox_topics_hold_each_event_once_in_order_through_kill9(tmp_path, broker, topic_prefix):
    events = [(scn, xid, n, after) for scn, xid, rows in expected(OPTS)
              for n, after in enumerate(a for op, _, table, _, a in rows if op == "c" and table == "T0")]
    types = sorted({e[3]["AMOUNT"] for e in events})
    config = tmp_path / "cdc.yaml"
    config.write_text(yaml.safe_dump({
        "sources": [{"name": "ora", "kind": "oracle", "dsn": f"simulator:{OPTS}", "tables": ["APP.*"],
                     "dictionary_path": str(tmp_path), "heartbeat_interval_s": 0.3, "poll_interval_s": 0.05,
                     "scn_range_size": 40, "outbox": {
                         "table": "app.t0", "topic": "{prefix}.outbox.{aggregatetype}",
                         "columns": {"id": "ID", "aggregatetype": "AMOUNT", "aggregateid": "ID", "type": "NAME",
                                     "payload": "NAME"}}}],
        "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": topic_prefix},
        "metrics": {"port": 0}, "drain_timeout_s": 20}))
    topics = {t: f"{topic_prefix}.outbox.{t}" for t in types}
    want = {t: [e for e in events if e[3]["AMOUNT"] == t] for t in types}

    def routed() -> int:
        return _routed(broker.bootstrap, list(topics.values()))

    daemon = Daemon(config, tmp_path / "first.log").start()
    try:
        wait_for(lambda: routed() >= len(events) // 3, 120, "a third of the events routed", interval=0.05,
                 daemon=daemon)
        assert routed() < len(events), "the first run routed everything before the kill: nothing to prove"
        daemon.kill9()
        daemon = Daemon(config, tmp_path / "second.log").start()
        wait_for(lambda: all(len(_topic(broker.bootstrap, topics[t])) >= len(want[t]) for t in types), 300,
                 "every outbox event routed", interval=2, daemon=daemon)
        assert daemon.stop() == 0, daemon.tail()
    finally:
        if daemon.alive():
            daemon.kill9()
    for t in types:
        got = _topic(broker.bootstrap, topics[t])
        assert [h["cdc.event"].decode() for _, _, h in got] == [f"{scn}:{xid}#{n}" for scn, xid, n, _ in want[t]], \
            f"aggregate type {t}: not each event once, in commit order"
        assert [(k, v) for k, v, _ in got] == [(r["ID"].encode(), r["NAME"].encode()) for *_, r in want[t]]
        seqs = [int(h["cdc.sequence"]) for _, _, h in got]
        assert seqs == sorted(set(seqs))


def _routed(bootstrap: str, names: list[str]) -> int:
    """Records in the outbox topics that exist now, by their watermarks (quick; tansu's may lag a batch)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "outbox-count", "log_level": 3})
    try:
        have = c.list_topics(timeout=10).topics
        total = 0
        for name in names:
            if name in have:
                low, high = c.get_watermark_offsets(TopicPartition(name, 0), timeout=10, cached=False)
                total += high - low
        return total
    finally:
        c.close()
