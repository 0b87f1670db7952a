"""A fenced writer's records stop (issue #36 section 3): the producer checks the lease while it is blocked on a
full local queue (not only between records), and fencing purges what is queued at once instead of leaving it in
the client (queued records never expire: ``message.timeout.ms=0``). No broker listens here: nothing is delivered,
so the queue fills and stays full."""

from __future__ import annotations

import time

import pytest

from cdc.publish.lease import WriterFenced
from cdc.publish.producer import OrderedProducer


def _producer() -> OrderedProducer:
    return OrderedProducer("127.0.0.1:9", {"queue.buffering.max.messages": 5, "log_level": 0},
                           delivery_timeout_s=60)


def test_the_lease_is_checked_while_blocked_on_a_full_queue():
    p = _producer()
    calls: list[float] = []

    def check_lease() -> None:
        calls.append(time.monotonic())
        if len(calls) >= 3:
            raise WriterFenced("fenced", source="s")

    p.while_blocked = check_lease
    started = time.monotonic()
    try:
        with pytest.raises(WriterFenced):
            for i in range(10):
                p.produce("t", b"v%d" % i, b"k")
        assert time.monotonic() - started < 5  # not the 60 s delivery timeout
        assert 0 < p.produced < 10 and len(calls) == 3
    finally:
        p.close(0)


def test_fencing_purges_the_queue_at_once():
    p = _producer()
    try:
        for i in range(5):
            p.produce("t", b"v%d" % i, b"k")
        assert len(p._p) >= 5
        p.fence(WriterFenced("fenced", source="s"))
        assert len(p._p) == 0  # nothing left to reach the broker later
        with pytest.raises(WriterFenced):
            p.check()
        with pytest.raises(WriterFenced):
            p.produce("t", b"late", b"k")  # nothing more is queued after fencing
    finally:
        p.close(0)
