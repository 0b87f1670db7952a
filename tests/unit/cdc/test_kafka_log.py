"""librdkafka's repeated lines: the first through, then one per interval carrying how many were dropped."""

from __future__ import annotations

import logging
import time

from cdc.kafka_log import KAFKA_LOG, RepeatLimit


def _record(msg: str, level: int = logging.ERROR) -> logging.LogRecord:
    # confluent-kafka logs as logger.log(level, "%s [%s] %s", facility, client name, text)
    return logging.LogRecord("cdc.kafka", level, __file__, 1, "%s [%s] %s", ("FAIL", "rdkafka#producer-1", msg), None)


def test_a_line_repeated_every_50ms_comes_out_once_then_with_its_count():
    f = RepeatLimit(interval_s=0.3)
    passed = []
    t_end = time.monotonic() + 1.0
    while time.monotonic() < t_end:
        r = _record("127.0.0.1:9/bootstrap: Connect to ipv4#127.0.0.1:9 failed: Connection refused (after 0ms in "
                    "state CONNECT)")
        if f.filter(r):
            passed.append(r.getMessage())
        time.sleep(0.05)
    assert 2 <= len(passed) <= 5, passed  # ~20 lines in: one, then one per 0.3 s
    assert "repeated" not in passed[0]
    assert all("Connection refused" in m and "repeated" in m and "more times" in m for m in passed[1:]), passed


def test_lines_differing_only_in_numbers_are_one_kind_and_other_lines_still_pass():
    f = RepeatLimit(interval_s=60)
    assert f.filter(_record("Connect failed (after 0ms in state CONNECT)"))
    assert not f.filter(_record("Connect failed (after 3ms in state CONNECT)"))
    assert not f.filter(_record("Connect failed (after 0ms in state CONNECT, 1 identical error(s) suppressed)"))
    assert f.filter(_record("Connect failed (after 3ms in state CONNECT)", logging.WARNING))  # another level
    assert f.filter(_record("SSL handshake failed"))


def test_every_confluent_client_logs_through_the_rate_limited_logger():
    assert any(isinstance(f, RepeatLimit) for f in KAFKA_LOG.filters)


def test_the_kinds_it_remembers_are_bounded():
    """Lines with ever new names (not digits) in them: the filter forgets kinds past its bound (the oldest
    first) and a recent kind stays held back."""
    f = RepeatLimit(interval_s=60, max_kinds=100)

    def line(i: int) -> logging.LogRecord:
        name = "".join(chr(ord("a") + int(d)) for d in str(i))  # no digits: every line its own kind
        return logging.LogRecord("cdc.kafka", logging.WARNING, __file__, 1, f"topic {name} gone", None, None)

    for i in range(10_000):
        assert f.filter(line(i))
        assert len(f._seen) <= 100
    assert not f.filter(line(9_999))  # the newest kind: still held back
