"""``pipeline: columnar`` through the real publisher and broker: the records in the changes topic are
byte for byte the row pipeline's (cdc.envelope's layout), apart from the two fields that are not the
reader's: ``sequence`` (heartbeats, which depend on timing, are dropped before comparing) and the
``ts_ms`` the publisher stamps with the time of publishing (data records; the SCHEMA record it writes
before a table's first row)."""

from __future__ import annotations

import re

import pytest

from cdc.bench.oracle import _read_topic
from cdc.metrics import SourceMetrics
from readers.oracle.sim.demo import make_source, pump
from tests.integration.stream_check import oracle_publisher

pytestmark = [pytest.mark.oracle, pytest.mark.kafka]

OPTS = ("seed=23,transactions=150,lanes=6,threads=2,scn_share=2,log_scns=40,rows_max=6,rollback_rate=0.2,"
        "partial_rollback_rate=0.3,csf_rate=0.1,unknown_sqn_rate=0.5,ddl_at=40,truncate_at=70,types_at=5")
_SEQUENCE = re.compile(rb'^\{"sequence":\d+')
_NOW = re.compile(rb'"ts_ms":\d+,"source":')
_ANNOUNCED = re.compile(rb'"ts_ms":\d+,"resume":null\}$')  # the SCHEMA the publisher writes before a table's first row


def _records(broker, prefix, tmp_path, **cfg):
    pub = oracle_publisher(broker, prefix)
    work = tmp_path / prefix[-1]
    work.mkdir()
    pump(make_source("ora", OPTS, str(work), SourceMetrics("ora"), sessions=3, scn_range_size=30,
                     fetch_size=17, **cfg), pub, pub.recover())
    pub.close()
    out = []
    for key, value in _read_topic(broker.bootstrap, pub.topic):
        if b'"status":"HEARTBEAT"' in value:
            continue
        value = _NOW.sub(b'"ts_ms":0,"source":', _SEQUENCE.sub(b'{"sequence":0', value))
        out.append((key, _ANNOUNCED.sub(b'"ts_ms":0,"resume":null}', value) if b'"ddl":null' in value else value))
    return out


@pytest.mark.parametrize("workers", [0, 1])
def test_columnar_records_are_the_row_pipelines_byte_for_byte(broker, topic_prefix, tmp_path, workers):
    rows = _records(broker, f"{topic_prefix}r", tmp_path, parse_workers=workers)
    cols = _records(broker, f"{topic_prefix}c", tmp_path, parse_workers=workers, pipeline="columnar")
    assert len(rows) > 600 and any(b'"op":"t"' in v for _, v in rows) and any(b'"SCHEMA"' in v for _, v in rows)
    assert cols == rows
