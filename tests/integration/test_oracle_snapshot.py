"""Oracle initial snapshot (AS OF SCN) on the LogMiner simulator, through the real publisher and broker.

The simulator's head moves on while the source reads (``head_step``: the
"primary" keeps committing), so the snapshot is a flashback read at one SCN
S while later transactions pile up in the redo. A first run is cut off in
the middle of a snapshot chunk; the second run resumes the snapshot at the
same S, then streams. Replaying the stream (``r`` records, then changes)
must give exactly the model's tables at the last published commit (DATE values in the
stream's ISO encoding, ``temporal: iso``, from both paths).
"""

from __future__ import annotations

import pytest

from cdc.metrics import SourceMetrics
from readers.oracle.sim import simulator
from readers.oracle.sim.demo import make_source, pump
from readers.oracle.sim.workload import stream_row, table_name
from tests.integration.stream_check import oracle_publisher, publish_then_crash, read_stream

pytestmark = [pytest.mark.oracle, pytest.mark.kafka]

OPTS = ("seed=23,transactions=150,lanes=5,threads=2,scn_share=2,log_scns=40,rows_max=6,rollback_rate=0.2,"
        "partial_rollback_rate=0.3,csf_rate=0.1,head_step=90")


def _source(tmp_path):
    return make_source("ora", OPTS, str(tmp_path), SourceMetrics("ora"), sessions=2, scn_range_size=30,
                       snapshot="initial", snapshot_chunk_rows=7)


def test_snapshot_then_stream_replays_to_the_model_state_across_a_crash(broker, topic_prefix, tmp_path):
    sim = simulator.instance(OPTS)
    pub = oracle_publisher(broker, topic_prefix)
    assert pub.recover() is None
    src = _source(tmp_path)
    publish_then_crash(src, pub, after_commits=3)  # "crash" inside the 4th snapshot chunk

    pub = oracle_publisher(broker, topic_prefix)
    resume = pub.recover()
    assert resume is not None and "snapshot" in resume  # cut off mid-snapshot: the snapshot goes on
    scn = resume["snapshot"]["scn"]
    assert scn < sim.model.end_scn  # the snapshot SCN is in the middle of the workload
    stats = pump(_source(tmp_path), pub, resume)
    pub.close()
    assert stats["transactions"] > 0

    stream = read_stream(broker.bootstrap, pub.topic)
    assert len(stream.aborted) == 1
    ops = [r["op"] for _, rows, _ in stream.transactions for r in rows]
    first_change = next(i for i, op in enumerate(ops) if op != "r")
    assert set(ops[:first_change]) == {"r"} and "r" not in ops[first_change:]  # r records, then changes

    snapshot_rows = {(r["source"]["table"], r["after"]["ID"]): r["after"]
                     for _, rows, _ in stream.transactions for r in rows if r["op"] == "r"}
    at_scn = {(table_name(n), row["ID"]): stream_row(row) for n in range(sim.workload.tables)
              for row in sim.table_at(scn, table_name(n))}
    assert snapshot_rows == at_scn  # the flashback image at S: every row once, none from after S
    assert len(snapshot_rows) > 50 and sum(r["op"] == "r" for _, rows, _ in stream.transactions for r in rows) == \
        len(snapshot_rows)
    assert all(r["source"]["scn"] == scn for _, rows, _ in stream.transactions for r in rows if r["op"] == "r")

    state: dict[tuple, dict] = {}
    for _, rows, _ in stream.transactions:  # replay, as a target would apply it
        for r in rows:
            key = (r["source"]["table"], (r["after"] or r["before"])["ID"])
            if r["op"] == "d":
                assert state.pop(key, None) is not None, f"delete of a row the target never had: {key}"
            else:
                state[key] = r["after"]
    last = stream.transactions[-1][2]["position"].get("commit_scn")
    assert last is not None and last > scn
    want = {(table_name(n), row["ID"]): stream_row(row) for n in range(sim.workload.tables)
            for row in sim.table_at(last, table_name(n))}
    assert state == want
    streamed = [end["position"]["commit_scn"] for _, rows, end in stream.transactions if rows[0]["op"] != "r"]
    assert streamed == sorted(streamed) and streamed[0] > scn  # only transactions committed after S
    assert len(streamed) > 20 and state != at_scn  # the changes after S did change the tables
