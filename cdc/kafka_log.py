"""librdkafka's own log lines, through Python logging, rate-limited.

Every confluent-kafka client the product creates gets ``logger: KAFKA_LOG``
(cdc.config.kafka_settings), so librdkafka's lines honour ``logging.level`` and
``logging.json`` (cdc.runtime.logs) instead of going raw to stderr. A
producer's and a consumer's lines are served by their poll(); an admin
client's only by ``AdminClient.poll()``, which our admin helpers call when
they are done (cdc.publish.topics).

librdkafka repeats a line per retry: during a broker outage an admin client
logs ``Connect to ... failed: Connection refused`` every ~50 ms, and every new
producer repeats the CONFWARN about ``enable.gapless.guarantee`` being
experimental. :class:`RepeatLimit` lets the first line of a kind through, then
at most one per ``RATE_LIMIT_S`` seconds, carrying how many like it were
dropped meanwhile. "Of a kind": same level, facility and text once digits are
ignored (``after 0ms`` and ``after 3ms``, ``rdkafka#producer-1`` and ``-2``
are the same line), and librdkafka's own ``, N identical error(s) suppressed``.
The kinds remembered are bounded (``MAX_KINDS``): a daemon that runs for months and logs lines with
ever new names in them (topics, hosts, tables) does not grow; past the bound the kinds no longer held
back are forgotten, then the oldest.
"""

from __future__ import annotations

import logging
import re
import threading
import time

RATE_LIMIT_S = 30.0
MAX_KINDS = 4096
_DIGITS = re.compile(r"\d+")
_SUPPRESSED = re.compile(r", \d+ identical error\(s\) suppressed")  # librdkafka's own count, not another line


class RepeatLimit(logging.Filter):
    """See the module docstring. Thread-safe (librdkafka lines arrive on whichever thread polls)."""

    def __init__(self, interval_s: float = RATE_LIMIT_S, max_kinds: int = MAX_KINDS) -> None:
        super().__init__()
        self.interval_s, self.max_kinds = interval_s, max_kinds
        self._seen: dict[tuple[int, str], tuple[float, int]] = {}  # kind -> (last emitted at, dropped since)
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        kind = (record.levelno, _DIGITS.sub("#", _SUPPRESSED.sub("", record.getMessage())))
        now = time.monotonic()
        with self._lock:
            last, dropped = self._seen.get(kind, (-self.interval_s, 0))
            if now - last < self.interval_s:
                self._seen[kind] = (last, dropped + 1)
                return False
            self._seen[kind] = (now, 0)
            if len(self._seen) > self.max_kinds:
                self._forget(now)
        if dropped:
            record.msg = f"{record.getMessage()} (repeated {dropped} more times in the last {now - last:.0f}s)"
            record.args = None
        return True

    def _forget(self, now: float) -> None:
        """Drop the kinds no longer held back (they pass anyway), then, if still too many, the oldest half."""
        seen = self._seen
        for kind in [k for k, (last, _) in seen.items() if now - last >= self.interval_s]:
            del seen[kind]
        if len(seen) > self.max_kinds:
            for kind in sorted(seen, key=lambda k: seen[k][0])[:len(seen) // 2]:
                del seen[kind]


_ON_PURPOSE = re.compile(r"CONFWARN .*Configuration property enable\.gapless\.guarantee is experimental")


class OnPurpose(logging.Filter):
    """librdkafka's CONFWARN that ``enable.gapless.guarantee`` is experimental names a setting the producer
    makes on purpose (cdc.publish.producer): nothing for an operator to do, so it is a DEBUG line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.DEBUG and _ON_PURPOSE.search(record.getMessage()):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return KAFKA_LOG.isEnabledFor(logging.DEBUG)
        return True


KAFKA_LOG = logging.getLogger("cdc.kafka")
KAFKA_LOG.addFilter(OnPurpose())
KAFKA_LOG.addFilter(RepeatLimit())
