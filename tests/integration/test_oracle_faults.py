"""Oracle reader (LogMiner simulator: no Oracle server runs here) through the real publisher into the
real broker, issue 13: a restart right after a DDL (the stream's tail is the DDL's SCHEMA record) and
right after a TRUNCATE publishes neither twice; a TRUNCATE is a transaction of one op 't' record."""

from __future__ import annotations

import pytest

from cdc.metrics import SourceMetrics
from cdc.stream.events import Commit, Heartbeat, SchemaChange, expand
from readers.oracle.sim.demo import make_source, pump
from tests.integration.stream_check import oracle_publisher, read_stream
from tests.unit.readers.oracle.helpers import expected

pytestmark = [pytest.mark.oracle, pytest.mark.kafka]

OPTS = "seed=31,transactions=40,lanes=4,threads=2,log_scns=30,truncate_at=9:22,ddl_at=13:30,rollback_rate=0.2"


def _publish_until(src, pub, stop) -> None:
    """Publish until ``stop(event)`` holds for a published event, flush, close: a clean stop right there."""
    src.start(pub.recover())
    try:
        for ev in expand(src.events()):  # a ChangeBatch as its Changes
            if isinstance(ev, Heartbeat):
                continue
            pub.publish(ev)
            if stop(ev):
                break
    finally:
        src.close()
    pub.flush()
    pub.close()


def test_restarts_right_after_a_ddl_and_a_truncate_publish_each_once(broker, topic_prefix, tmp_path):
    def mk():
        return make_source("ora", OPTS, str(tmp_path), SourceMetrics("ora"), sessions=2, scn_range_size=20)
    _publish_until(mk(), oracle_publisher(broker, topic_prefix), lambda ev: isinstance(ev, SchemaChange))
    seen_t = [False]

    def stop(ev):  # right after the first TRUNCATE's END
        seen_t[0] = seen_t[0] or getattr(ev, "op", None) == "t"
        return seen_t[0] and isinstance(ev, Commit)

    _publish_until(mk(), oracle_publisher(broker, topic_prefix), stop)
    pub = oracle_publisher(broker, topic_prefix)
    pump(mk(), pub, pub.recover())
    pub.close()

    stream = read_stream(broker.bootstrap, pub.topic)
    assert not stream.aborted
    got = [(end["position"]["commit_scn"], txid,
            [(r["op"], r["source"]["db"], r["source"]["table"], r["before"], r["after"]) for r in rows])
           for txid, rows, end in stream.transactions]
    assert got == expected(OPTS), "a transaction was lost or published twice across the restarts"
    ddls = [s["ddl"] for s in stream.schemas if s.get("ddl")]
    assert ddls == ['alter table "APP"."T1" modify ("NOTE" varchar2(4000));',
                    'alter table "APP"."T0" modify ("NOTE" varchar2(4000));']
    truncs = [rows for _, rows, _ in stream.transactions if rows[0]["op"] == "t"]
    assert len(truncs) == 2 and all(len(rows) == 1 and rows[0]["before"] is None for rows in truncs)


def test_unassembled_lob_rows_reach_the_dead_letter_topic(broker, topic_prefix, tmp_path):
    """The LOB of an existing row rewritten through its locator (no INSERT in the transaction) cannot be
    assembled; with ``kafka.dead_letter_topic`` each of its rows goes there, named and counted."""
    from cdc.config.models import KafkaConfig
    from cdc.contract import SourceContext
    from cdc.publish.publisher import Publisher
    from cdc.publish.recovery import read_records
    from cdc.stream.serde import get_serdes
    from readers.oracle.config import OracleSourceConfig
    from readers.oracle.reader import OracleSource
    from readers.oracle.sim import simulator

    opts = "seed=25,transactions=10,lanes=2,threads=1,lob_update_at=4"
    dlq = f"{topic_prefix}.dlq"
    metrics = SourceMetrics("ora")
    pub = Publisher("ora", "oracle", KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=topic_prefix,
                                                 dead_letter_topic=dlq), metrics)
    ctx = SourceContext(metrics, spill_dir=str(tmp_path / "spill"))
    ctx.dead_letter = pub.dead_letter
    src = OracleSource(OracleSourceConfig(name="ora", dsn="simulator:" + opts, tables=["APP.*"],
                                          dictionary_path=str(tmp_path), heartbeat_interval_s=0.1,
                                          poll_interval_s=0.02), ctx)
    pump(src, pub, pub.recover())
    pub.close()
    lob_tx = simulator.instance(opts).model.txn(4)
    letters = [v for _, _, v in read_records(broker.bootstrap, dlq, *get_serdes("json"))]
    assert [v["fields"]["operation"] for v in letters] == ["SEL_LOB_LOCATOR"] + ["LOB_WRITE"] * sum(
        1 for r in lob_tx.records if r[0] == 10) + ["LOB_TRIM"]
    assert letters[0]["fields"]["table"] == "APP.T1" and "did not insert" in letters[0]["message"], letters[0]
    assert all(v["error"] == "UnsupportedLob" and v["fields"]["xid"] == str(lob_tx.xid)
               and v["fields"]["table"] == "APP.T1" and f"XID {lob_tx.xid}" in v["message"] for v in letters)
    assert metrics._m.dead_letters.labels("ora", "APP.T1")._value.get() == len(letters)
    stream = read_stream(broker.bootstrap, pub.topic)
    assert [x for x, _, _ in stream.transactions] == [x for _, x, _ in expected(opts) if x != str(lob_tx.xid)]
