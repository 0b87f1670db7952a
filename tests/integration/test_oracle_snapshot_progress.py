"""The Oracle initial snapshot logs its progress (#17): rows read, rate, elapsed; on the LogMiner
simulator through the real publisher and broker."""

from __future__ import annotations

import pytest

from cdc.metrics import SourceMetrics
from readers.oracle.sim.demo import make_source, pump
from tests.integration.stream_check import oracle_publisher, read_stream

pytestmark = [pytest.mark.oracle, pytest.mark.kafka]

OPTS = "seed=29,transactions=60,lanes=3,threads=1,log_scns=40,rows_max=4,head_step=50"


def test_the_snapshot_logs_a_final_line_with_every_row_it_read(broker, topic_prefix, tmp_path, caplog):
    pub = oracle_publisher(broker, topic_prefix)
    pub.recover()
    src = make_source("ora", OPTS, str(tmp_path), SourceMetrics("ora"), sessions=1, scn_range_size=30,
                      snapshot="initial", snapshot_chunk_rows=5)
    with caplog.at_level("INFO", logger="readers.oracle.snapshot"):
        pump(src, pub)
    pub.close()
    snapshot_rows = sum(r["op"] == "r" for _, rows, _ in read_stream(broker.bootstrap, pub.topic).transactions
                        for r in rows)
    lines = [r.getMessage() for r in caplog.records if " rows: " in r.getMessage()]
    assert snapshot_rows > 0 and lines, caplog.text
    assert lines[-1].startswith("snapshot as of SCN ") and f": rows: {snapshot_rows} " in lines[-1], lines
