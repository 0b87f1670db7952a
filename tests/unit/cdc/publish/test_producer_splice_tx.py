"""OrderedProducer.produce_tx (a small transaction in one C call): a full local queue (BufferError) at any record
-- BEGIN, a row, END -- is served and the call resumes there; the client sees the same records, in the same
order, with the same arguments as when nothing was full, and the returned counters are the same."""

from __future__ import annotations

import pytest

from cdc.publish import publisher  # configures the C module's value fragments
from cdc.publish.producer import OrderedProducer

pytestmark = pytest.mark.skipif(publisher._SPLICE_TX is None, reason="the C splice module is not compiled here")


class _Client:
    """confluent-kafka's Producer as produce_tx uses it; ``full_at``: the produce calls (0-based) that raise
    BufferError once each."""

    def __init__(self, full_at: set[int]) -> None:
        self.calls: list[tuple] = []
        self.full_at, self.attempts, self.polls = set(full_at), 0, 0

    def produce(self, *args):
        k = self.attempts
        self.attempts += 1
        if k in self.full_at:
            raise BufferError("Local: Queue full")
        self.calls.append(args)

    def poll(self, timeout=0):
        self.polls += 1
        return 0

    def __len__(self):
        return 0


def _run(full_at: set[int]):
    p = OrderedProducer("127.0.0.1:9", {"log_level": 0}, single_partition=("t",))
    p._p = client = _Client(full_at)
    known = ("table", None)
    rows = [("c", b"1", b"null", b'{"id":1}', b',"row":0}'), ("u", b"2", b'{"id":2}', b'{"id":2}', b',"row":1}'),
            ("d", b"3", b'{"id":3}', b"null", b',"row":2}')]
    parts = (b'{"table":"db.t","key":{"id":', b"}}", b'{"db":"db"', b',"ts_ms":', b',"x":1', b"7", b'"tx"')
    out = p.produce_tx(publisher._SPLICE_TX, "t", {"cdc.epoch": b"1"}, [known] * 3, rows, known, parts, 10, 5,
                       1 << 30, b"BEGIN", b"END")
    return out, client.calls, p.produced, client.polls


@pytest.mark.parametrize("full_at", [{0}, {1}, {2}, {3}, {4}, {0, 2, 4}, {1, 2, 3}])
def test_a_full_queue_anywhere_in_a_small_transaction_resumes_at_that_record(full_at):
    want, want_calls, want_produced, _ = _run(set())
    got, calls, produced, polls = _run(full_at)
    assert tuple(got[5]) == tuple(want[5]) == (1, 1, 1, 0, 0)
    assert got[:5] == want[:5] and got[6:] == want[6:] == (3, False)
    assert calls == want_calls and len(calls) == 5 and produced == want_produced == 5
    assert calls[0][1] == b"BEGIN" and calls[-1][1] == b"END"
    assert all(c[4:7] == (None, None, 0) for c in calls)  # callback, on_delivery, timestamp: the client's defaults
    assert polls >= len(full_at)  # every full queue was served before the call was made again


def test_splice_calls_refuse_arguments_of_the_wrong_number_or_kind():
    from cdc.publish import _splice_native as native  # type: ignore[attr-defined]

    args = [[], [], 0, None, (b"",) * 7, 1, 0, 0, 0, 1 << 30, print, "t", 0, None]
    assert native.splice(*args)[:5] == (0, 1, 0, 0, 0)  # nothing to do: nothing done
    assert native.splice_tx(*args, None, None)[-1] == 0
    for bad in (args[:-1], args + [None]):
        with pytest.raises(TypeError):
            native.splice(*bad)
    with pytest.raises(TypeError):
        native.splice_tx(*args)
    with pytest.raises(TypeError):
        native.splice(*([(), *args[1:]]))  # tables not a list
    with pytest.raises(TypeError):
        native.splice(*(args[:5] + ["1", *args[6:]]))  # seq not an integer
    with pytest.raises(TypeError):
        native.splice_tx(*args, "BEGIN", None)  # head not bytes
