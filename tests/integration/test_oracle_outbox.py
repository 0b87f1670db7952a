"""The outbox router on an Oracle source (LogMiner simulator: no Oracle server runs here), through the real reader
and publisher into the real broker, and through a crash: each event lands once, in commit order.

The simulator's tables have no outbox columns, so its table T0 plays the outbox table: ID is the event id and
the aggregate id, AMOUNT the aggregate type (an insert's AMOUNT is 0, 2, .. 10: six topics), NAME the event type
and the payload. The workload interleaves transactions over two redo threads, rolls some back (whole, or
partly: rows removed by ROLLBACK=1 undo rows) and splits long rows into CSF pieces.

The crash: the first run (columnar pipeline, 2 sessions of 20 SCNs) stops right after the rows of a transaction
holding several T0 inserts, before its COMMIT: the stream has its BEGIN and rows, no END, and its events are in
the outbox topics. The restart reads from the checkpoint's low watermark with another pipeline (rows, through
the parse pool) and other SCN ranges (3 sessions of 7 SCNs): the transaction's identities (commit SCN, XID, index)
are the same, so its events are recognised and not routed again."""

from __future__ import annotations

import orjson
import pytest

from cdc.config.models import KafkaConfig
from cdc.metrics import SourceMetrics
from cdc.publish.outbox import OutboxError, attach
from cdc.publish.publisher import Publisher
from cdc.stream.events import Begin, Change, ChangeBatch, Column, Commit, Heartbeat, TableId, TableSchema
from readers.oracle.config import OracleSourceConfig
from readers.oracle.sim.demo import make_source, pump
from tests.integration.stream_check import read_stream
from tests.integration.test_outbox_router import _topic
from tests.unit.readers.oracle.helpers import expected

pytestmark = [pytest.mark.oracle, pytest.mark.kafka]

OPTS = ("seed=43,transactions=100,lanes=4,threads=2,log_scns=30,rows_max=6,rollback_rate=0.15,"
        "partial_rollback_rate=0.3,csf_rate=0.1,tables=3")


def _outbox(prefix: str) -> dict:
    return {"table": "app.t0",  # read in upper case, as `tables` is
            "topic": "{prefix}.outbox.{aggregatetype}",
            "columns": {"id": "ID", "aggregatetype": "AMOUNT", "aggregateid": "ID", "type": "NAME",
                        "payload": "NAME"},
            "headers": {"CREATED": "created"}}


def _publisher(broker, prefix: str, outbox) -> Publisher:
    pub = Publisher("ora", "oracle", KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=prefix),
                    SourceMetrics("ora"))
    attach(pub, outbox)
    return pub


def _events() -> list[tuple[int, str, int, dict]]:
    """The model's outbox events in commit order: (commit SCN, XID, index in the transaction, row)."""
    out = []
    for scn, xid, rows in expected(OPTS):
        inserts = [after for op, _, table, _, after in rows if op == "c" and table == "T0"]
        out += [(scn, xid, n, after) for n, after in enumerate(inserts)]
    return out


def _publish_until_mid_transaction(src, pub, after_commits: int) -> int:
    """Publish the source's events as the daemon does (a ChangeBatch whole) until the rows of a transaction holding
    at least two T0 inserts, after ``after_commits`` commits, are published; then stop as a crash would, before
    its COMMIT. Returns the T0 inserts of that transaction."""
    src.start(pub.recover())
    commits, inserts = 0, 0
    try:
        for ev in src.events():
            if type(ev) is Heartbeat:
                continue
            pub.publish(ev)
            if type(ev) is Commit:
                commits, inserts = commits + 1, 0
            elif type(ev) in (Change, ChangeBatch):
                changes = ev.changes() if type(ev) is ChangeBatch else [ev]
                inserts += sum(1 for ch in changes if ch.table.table == "T0" and ch.op == "c")
                if commits >= after_commits and inserts >= 2:
                    break
    finally:
        src.close()
    pub.flush()
    pub.close()
    return inserts


def test_oracle_outbox_events_land_once_in_order_through_a_restart(broker, topic_prefix, tmp_path):
    events = _events()
    assert len(events) > 30 and len({e[3]["AMOUNT"] for e in events}) >= 4

    def source(**kw):
        return make_source("ora", OPTS, str(tmp_path), SourceMetrics("ora"), outbox=_outbox(topic_prefix), **kw)

    first = source(pipeline="columnar", parse_workers=0, sessions=2, scn_range_size=20)
    assert first.config.outbox.table == "APP.T0"
    pub = _publisher(broker, topic_prefix, first.config.outbox)
    landed = _publish_until_mid_transaction(first, pub, len(expected(OPTS)) // 2)
    assert landed >= 2 and pub._outbox.routed > landed

    again = source(pipeline="rows", parse_workers=1, sessions=3, scn_range_size=7)
    pub = _publisher(broker, topic_prefix, again.config.outbox)
    pump(again, pub, pub.recover())
    pub.close()
    assert len(pub._outbox._written) == landed, "the tail read did not find the cut-off transaction's events"
    assert pub._outbox.skipped == landed

    stream = read_stream(broker.bootstrap, pub.topic)
    assert len(stream.aborted) == 1
    got = [(end["position"]["commit_scn"], txid) for txid, rows, end in stream.transactions if rows]
    assert got == [(scn, xid) for scn, xid, _ in expected(OPTS)], "a transaction was lost or published twice"

    for agg in sorted({e[3]["AMOUNT"] for e in events}):
        want = [e for e in events if e[3]["AMOUNT"] == agg]
        records = _topic(broker.bootstrap, f"{topic_prefix}.outbox.{agg}")
        assert [h["cdc.event"].decode() for _, _, h in records] == [f"{scn}:{xid}#{n}" for scn, xid, n, _ in want], \
            f"aggregate type {agg}: not each event once, in commit order"
        assert [(k, v) for k, v, _ in records] == [(r["ID"].encode(), r["NAME"].encode()) for *_, r in want]
        assert all(h["id"] == k and h["type"] == v and h["created"] == r["CREATED"].encode()
                   for (k, v, h), (*_, r) in zip(records, want, strict=True))
        seqs = [int(h["cdc.sequence"]) for _, _, h in records]
        assert seqs == sorted(set(seqs))


def test_oracle_config_spells_the_outbox_as_the_dictionary_does():
    cfg = OracleSourceConfig(name="ora", dsn="simulator", tables=["APP.*"],
                             outbox={"table": "app.outbox", "columns": {"payload": "Body"}})
    cols = cfg.outbox.columns
    assert cfg.outbox.table == "APP.OUTBOX"
    assert (cols.id, cols.aggregatetype, cols.aggregateid, cols.type, cols.payload) == (
        "ID", "AGGREGATETYPE", "AGGREGATEID", "TYPE", "Body")


OUTBOX = TableId("APP", "OUTBOX")
SCHEMA = TableSchema(OUTBOX, (Column("ID", "varchar2(36)", False), Column("AGGREGATETYPE", "varchar2(64)", True),
                              Column("AGGREGATEID", "varchar2(64)", True), Column("TYPE", "varchar2(64)", True),
                              Column("PAYLOAD", "blob", True)), ("ID",))


def _row(k: int, agg: str | None) -> Change:
    after = {"ID": f"e-{k}", "AGGREGATETYPE": agg, "AGGREGATEID": "a-1", "TYPE": "Created",
             "PAYLOAD": "HEXTORAW('" + orjson.dumps({"k": k}).hex().upper() + "')"}
    return Change(OUTBOX, "c", None, after, {"scn": 1000 + k, "commit_scn": 1010, "txId": "5.3.77"}, SCHEMA)


def test_a_blob_payload_routes_as_its_bytes_and_a_bad_row_names_scn_and_xid(broker, topic_prefix):
    outbox = OracleSourceConfig(name="ora", dsn="simulator", tables=["APP.*"], outbox={
        "table": "APP.OUTBOX", "topic": "{prefix}.ob.{aggregatetype}"}).outbox
    pub = _publisher(broker, topic_prefix, outbox)
    pub.recover()
    pub.publish(Begin("5.3.77", 1))
    pub.publish(_row(1, "order"))
    with pytest.raises(OutboxError) as err:
        pub.publish(_row(2, None))
    pub.flush()
    pub.close()
    assert "commit_scn 1010" in err.value.message and "txId 5.3.77" in err.value.message
    assert "HEXTORAW" not in err.value.message
    (record,) = _topic(broker.bootstrap, f"{topic_prefix}.ob.order")
    assert record[1] == orjson.dumps({"k": 1}) and record[2]["cdc.event"] == b"1010:5.3.77#0"
