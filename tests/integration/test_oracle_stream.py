"""Oracle reader (LogMiner simulator) through the real publisher into the real broker.

A first run is cut off mid-transaction (BEGIN and some rows written, no END:
a crash); the second run recovers from the stream's tail (ABORTED closes the
cut-off transaction) and resumes from the last END's resume state. The
committed transactions in the stream must equal the model's, in commit-SCN
order, each exactly once.
"""

from __future__ import annotations

import pytest

from cdc.metrics import SourceMetrics
from readers.oracle.sim.demo import make_source, pump, run_demo, stream_demo
from tests.integration.stream_check import oracle_publisher, publish_then_crash, read_stream
from tests.unit.readers.oracle.helpers import expected

pytestmark = [pytest.mark.oracle, pytest.mark.kafka]

OPTS = ("seed=11,transactions=80,lanes=5,threads=2,scn_share=2,log_scns=40,rows_max=6,rollback_rate=0.2,"
        "partial_rollback_rate=0.3,csf_rate=0.1")


def test_stream_equals_model_across_a_crash(broker, topic_prefix, tmp_path):
    pub = oracle_publisher(broker, topic_prefix)
    assert pub.recover() is None
    src = make_source("ora", OPTS, str(tmp_path), SourceMetrics("ora"), sessions=3, scn_range_size=25,
                      spill_threshold_rows=3, spill_chunk_rows=2)
    publish_then_crash(src, pub, after_commits=12)  # "crash" inside the 13th transaction

    pub = oracle_publisher(broker, topic_prefix)
    resume = pub.recover()
    assert resume is not None and {"low_watermark_scn", "commit_scn", "xids_at_commit_scn"} <= set(resume)
    stats = pump(make_source("ora", OPTS, str(tmp_path), SourceMetrics("ora"), sessions=2, scn_range_size=40),
                 pub, resume)
    pub.close()
    assert stats["transactions"] > 0

    stream = read_stream(broker.bootstrap, pub.topic)
    assert len(stream.aborted) == 1
    got = [(end["position"]["commit_scn"], txid,
            [(r["op"], r["source"]["db"], r["source"]["table"], r["before"], r["after"]) for r in rows])
           for txid, rows, end in stream.transactions]
    assert got == expected(OPTS)
    scns = [g[0] for g in got]
    assert scns == sorted(scns)
    assert all(r["source"]["txId"] == txid for txid, rows, _ in stream.transactions for r in rows)


def test_demo_runs_through_the_broker(broker, topic_prefix):
    lines: list[str] = []
    summary = stream_demo(broker.bootstrap, topic_prefix=topic_prefix,
                       workload="seed=3,transactions=100,lanes=4,threads=2,log_scns=60,head_step=50", out=lines.append)
    assert summary["rows"] > 0 and summary["log_switches"] > 0
    assert "NO live Oracle" in lines[0]


def test_run_demo_entry_point_for_cdc_dev_demo(broker):
    lines: list[str] = []
    assert run_demo(broker.bootstrap, workload="seed=4,transactions=20,lanes=2", out=lines.append) == 0
    assert any("published" in line for line in lines)
