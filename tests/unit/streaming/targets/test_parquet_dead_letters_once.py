"""Parquet dead letters are written once per committed batch (issue #36 section 5): the engine retries a batch
once per bad record it finds, and a dead letter written outside the batch was repeated on every retry (k bad
records gave k(k+1)/2 lines). A batch rolled back writes none."""

from __future__ import annotations

import orjson

from cdc.config.models import ApplyConfig, TargetConfig
from cdc.schema.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.stream.records import StreamRecord, to_row
from streaming.targets.parquet.target import ParquetTarget
from streaming.testing import _Json
from tests.unit.cdc.stream.structure_streams import write

TOPIC = "cdc.src.changes"


def _records(recs, garbage: set[int]) -> list[StreamRecord]:
    j = _Json()
    return [StreamRecord(*to_row(0, i, orjson.dumps(k) if k is not None else None,
                                 b"\x00not json" if i in garbage else orjson.dumps(v), j, j))
            for i, (k, v) in enumerate(recs)]


def test_k_bad_records_give_k_dead_letter_lines(tmp_path):
    t = ParquetTarget(TargetConfig(name="pq", kind="parquet", path=str(tmp_path), dead_letter_table="cdc_dead"))
    e = ApplyEngine("src", t, TableMap.from_config(ApplyConfig(source="src", target="pq"))).start()
    e.topic = TOPIC
    recs = write([("tx", [("c", "db.a", i, i) for i in range(1, 6)])], 1, "A")
    data = [i for i, (k, v) in enumerate(recs) if "op" in v]
    bad = set(data[1:4])  # three rows of the five cannot be decoded
    rows = _records(recs, bad)
    result = e.apply_records(rows, 0, {"next": {"0": len(rows)}, "topic": TOPIC})
    assert result.dead_letters == 3
    lines = (tmp_path / "_cdc" / "dead-letter-src.jsonl").read_bytes().splitlines()
    assert len(lines) == 3, lines  # not 1 + 2 + 3 = 6
    assert sorted(orjson.loads(x)["error"].split(" does not decode")[0] for x in lines) == [
        f"stream record at offset {i}" for i in sorted(bad)]
    e.close()
