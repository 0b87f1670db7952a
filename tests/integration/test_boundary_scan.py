"""The planner's boundary scan on the real broker: cuts land on transaction ends, with and without the scan
ahead, and a failure of the scan ahead reaches the planner instead of vanishing; a scan that goes on where it
stopped keeps its consumer's assignment (what the client fetched ahead), anything else assigns again."""

from __future__ import annotations

import uuid

import pytest

from streaming.errors import ApplyError
from streaming.stream.batches import BoundaryScanner
from streaming.testing import StreamBuilder, produce

pytestmark = [pytest.mark.kafka]


def _topic(broker, n_tx: int, rows: int) -> tuple[str, list[int]]:
    b = StreamBuilder()
    b.schema("db.t", [("id", "int")], ["id"])
    for i in range(n_tx):
        b.tx(*[("c", "db.t", None, {"id": i * rows + j}) for j in range(rows)])
    topic = f"scan-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic)
    enc = b.encoded()
    produce(broker.bootstrap, topic, enc)
    ends = [i + 1 for i, (_k, v) in enumerate(enc) if b'"status":"END"' in v]
    return topic, ends


def _cuts(scanner: BoundaryScanner, total: int, per_batch: int, ahead: bool) -> list[int]:
    cuts, at = [], 0
    while at < total:
        end = scanner.cut(0, at, per_batch)
        assert end > at, f"no progress at offset {at}"
        cuts.append(end)
        if ahead:
            scanner.scan_ahead({0: end}, per_batch)
        at = end
    return cuts


def test_cuts_are_transaction_ends_and_the_scan_ahead_changes_none(broker):
    topic, ends = _topic(broker, n_tx=300, rows=37)  # 11,700 data records, 300 transactions
    total = ends[-1]
    per_batch = 1000
    for ahead in (False, True):
        s = BoundaryScanner(broker.bootstrap, topic, "json")
        try:
            got = _cuts(s, total, per_batch, ahead)
        finally:
            s.close()
        assert set(got) <= set(ends), "a cut inside a transaction"
        assert got[-1] == total
        assert all(b - a <= per_batch for a, b in zip([0] + got, got)), "a batch over the limit"
        assert all(b - a > per_batch - 40 for a, b in zip([0] + got[:-1], got[:-1])), "a batch cut short"
        if ahead:
            assert got == plain, "the scan ahead changed the cuts"
        plain = got


class _Counting:
    """The scanner's consumer, its assign calls counted."""

    def __init__(self, consumer) -> None:
        self.consumer, self.assigns = consumer, []

    def assign(self, tps) -> None:
        self.assigns.append([(tp.partition, tp.offset) for tp in tps])
        self.consumer.assign(tps)

    def __getattr__(self, name):
        return getattr(self.consumer, name)


def test_a_scan_that_goes_on_keeps_the_assignment_and_a_new_start_assigns(broker):
    topic, ends = _topic(broker, n_tx=200, rows=10)
    s = BoundaryScanner(broker.bootstrap, topic, "json")
    try:
        counting = s._consumer = _Counting(s._client())
        cuts = _cuts(s, ends[-1], 300, ahead=True)
        assert set(cuts) <= set(ends) and cuts[-1] == ends[-1]
        assert counting.assigns == [[(0, 0)]], "the scan assigned its consumer again while it went on"
        # a start the scan has not reached: a new scan, a new assignment, the same cuts
        again = s.cut(0, ends[3], 300)
        assert again in ends and counting.assigns[-1] == [(0, ends[3])]
        # true_end reads at the high watermark: the scan after it assigns again
        scanned_to = s._scans[0].scanned_to
        assigned = len(counting.assigns)
        assert s.true_end(0) == ends[-1]
        assert s.cut(0, again, 300) in ends
        assert counting.assigns[assigned + 1:] == [[(0, scanned_to)]]  # true_end's, then the scan's again
    finally:
        s.close()


def test_a_failure_of_the_scan_ahead_reaches_the_next_call(broker):
    topic, ends = _topic(broker, n_tx=20, rows=10)
    s = BoundaryScanner(broker.bootstrap, topic, "json")
    try:
        end = s.cut(0, 0, 50)

        def broken(*_a, **_k):
            raise ApplyError("broken consumer", topic=topic)

        s._follow = broken  # the next scan (the one ahead) fails
        s.scan_ahead({0: end}, 50)
        with pytest.raises(ApplyError, match="broken consumer"):
            s.cut(0, end, 50)
    finally:
        s.close()


def test_cuts_hold_the_bytes_limit_and_a_larger_transaction_comes_alone(broker):
    b = StreamBuilder()
    b.schema("db.t", [("id", "int"), ("pad", "text")], ["id"])
    sizes = [1, 3, 1, 40, 2, 1, 1, 5, 1, 1] * 6  # rows per transaction; the 40-row one is over the limit alone
    n = 0
    for rows in sizes:
        b.tx(*[("c", "db.t", None, {"id": n + j, "pad": "x" * 300}) for j in range(rows)])
        n += rows
    topic = f"scan-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic)
    enc = b.encoded()
    produce(broker.bootstrap, topic, enc)
    ends = [i + 1 for i, (_k, v) in enumerate(enc) if b'"status":"END"' in v]
    at_bytes = [0]
    for k, v in enc:
        at_bytes.append(at_bytes[-1] + len(k or b"") + len(v))
    limit = 4000  # about ten 300-byte rows
    got: dict[bool, list[int]] = {}
    for ahead in (False, True):
        s = BoundaryScanner(broker.bootstrap, topic, "json")
        try:
            cuts, at = [], 0
            while at < ends[-1]:
                end = s.cut(0, at, 10_000, max_bytes=limit)
                assert end > at, f"no progress at offset {at}"
                assert end in ends, "a cut inside a transaction"
                assert s.size_at(0, end) == at_bytes[end], "the scan counted other bytes than the records hold"
                nxt = min((e for e in ends if e > end), default=None)
                if at_bytes[end] - at_bytes[at] > limit:  # over the limit: only a transaction alone
                    assert [e for e in ends if at < e <= end] == [end], (at, end)
                elif nxt is not None:  # within it, and the next transaction would not have fitted
                    assert at_bytes[nxt] - at_bytes[at] > limit, (at, end, nxt)
                cuts.append(end)
                if ahead:
                    s.scan_ahead({0: end}, 10_000, limit)
                at = end
        finally:
            s.close()
        assert cuts[-1] == ends[-1]
        assert any(at_bytes[e] - at_bytes[a] > limit for a, e in zip([0] + cuts, cuts)), "no batch held the big one"
        got[ahead] = cuts
    assert got[True] == got[False], "the scan ahead changed the cuts"
