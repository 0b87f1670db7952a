"""Oracle reader (LogMiner simulator: no Oracle server runs here) through the real publisher into the
real broker, issue 13: a restart right after a DDL (the stream's tail is the DDL's SCHEMA record) and
right after a TRUNCATE publishes neither twice; a TRUNCATE is a transaction of one op 't' record."""

from __future__ import annotations

import pytest

from cdc.events import Commit, Heartbeat, SchemaChange
from cdc.metrics import SourceMetrics
from readers.oracle.sim.demo import make_source, pump
from tests.integration.stream_check import oracle_publisher, read_stream
from tests.unit.readers.oracle.helpers import expected

pytestmark = [pytest.mark.oracle, pytest.mark.kafka]

OPTS = "seed=31,transactions=40,lanes=4,threads=2,log_scns=30,truncate_at=9:22,ddl_at=13:30,rollback_rate=0.2"


def _publish_until(src, pub, stop) -> None:
    """Publish until ``stop(event)`` holds for a published event, flush, close: a clean stop right there."""
    src.start(pub.recover())
    try:
        for ev in src.events():
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
    mk = lambda: make_source("ora", OPTS, str(tmp_path), SourceMetrics("ora"), sessions=2,  # noqa: E731
                             scn_range_size=20)
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
