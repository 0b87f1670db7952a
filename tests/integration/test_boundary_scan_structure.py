"""The planner's boundary scan on a stream two writers interleaved (real broker): batches end at the whole
transactions before the first broken record, the broken transaction gets a batch of its own (which the engine
refuses), and nothing after it is ever a boundary."""

from __future__ import annotations

import time
import uuid

import orjson
import pytest

from cdc.consumer.assembler import TransactionAssembler
from cdc.errors import StreamCorrupt
from streaming.stream.batches import BoundaryScanner
from streaming.testing import produce
from tests.unit.cdc.stream.structure_streams import write

pytestmark = [pytest.mark.kafka]


def test_the_scan_cuts_whole_transactions_then_the_broken_record_alone(broker):
    tail = write([("tx", [("c", "db.a", i, i), ("c", "db.b", i, i)]) for i in range(6)], 1, "P")
    n = len(tail)
    a = write([("tx", [("c", "db.a", 10, 1), ("c", "db.a", 11, 1)]), ("tx", [("c", "db.a", 12, 1)])], n + 1, "A",
              {"db.a", "db.b"})
    b = write([("hb", []), ("tx", [("c", "db.a", 10, 1), ("c", "db.a", 11, 1)]), ("tx", [("c", "db.a", 12, 1)])],
              n + 1, "A", {"db.a", "db.b"})  # the same source, one heartbeat ahead
    merged = tail + a[:2] + b[:4] + a[2:] + b[4:]
    topic = f"scan-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic)
    produce(broker.bootstrap, topic, [(orjson.dumps(k) if k else None, orjson.dumps(v)) for k, v in merged])
    asm = TransactionAssembler(topic)
    ends = []
    with pytest.raises(StreamCorrupt) as info:
        for offset, (k, v) in enumerate(merged):
            if asm.feed(offset, k, v) is not None:
                ends.append(offset + 1)
    broken = info.value.offset
    s = BoundaryScanner(broker.bootstrap, topic, "json")
    try:
        cuts, at = [], 0
        settled, deadline = time.monotonic() + 5, time.monotonic() + 60
        while time.monotonic() < settled:  # until no cut for 5 s: a busy broker hands the records out in parts
            assert time.monotonic() < deadline, (cuts, ends, broken)
            end = s.cut(0, at, 1000)
            if end == at:
                time.sleep(0.2)
                continue
            cuts.append(end)
            at, settled = end, time.monotonic() + 5
    finally:
        s.close()
    # whole transactions up to the last one the consumer library hands out; then one batch that holds the first
    # broken record (the scan does not read total_order: it sees the mixture at the next BEGIN, offset 34); no more
    assert set(cuts[:-1]) <= set(ends) and cuts[-2] == ends[-1], (cuts, ends, broken)
    assert cuts[-1] > broken and cuts[-1] < len(merged), (cuts, broken)
