"""An ordered, acknowledged Kafka producer: the one place that calls confluent-kafka's produce.

Guarantees the publisher builds on:

- ORDER, NO GAP: ``acks=all`` with ONE request in flight and unlimited
  retries: a batch is retried before anything after it is sent, so the log
  holds the records in produce order with no gap. A retry of a batch the
  broker did write but whose ack was lost appends it again: the stream may
  hold a run of DUPLICATES (same sequences again), which the contract
  allows (a consumer drops any sequence at or below the last it applied;
  cdc.publish.recovery takes the max). Why not the idempotent producer:
  measured on tansu (tests/integration/test_publisher_broker_restart.py),
  after a broker restart it silently LOSES an acknowledged in-flight batch
  (a gap of ~2,500 records, no error reported) in about one run in four,
  while this mode lost nothing in the same runs. On a real Kafka you may
  set ``kafka.producer: {enable.idempotence: true,
  enable.gapless.guarantee: true}`` to avoid duplicates.
- NO DROP: on ``BufferError`` (local queue full) it polls and retries the
  SAME record, never skips it.
- POLL: ``poll(0)`` serves delivery callbacks. Only failures produce one
  here, so it runs every ``POLL_EVERY`` records rather than after each:
  measured, a poll per record costs ~14 us when reader threads compete for
  the GIL (poll releases it), 5x the produce call itself.
- ACK TRACKING without a Python callback per record: successful deliveries
  are not reported (``delivery.report.only.error``), so the number of
  acknowledged records is ``produced - len(producer)``, a prefix of the
  produce order. :meth:`acked` returns it. Failed deliveries and fatal
  producer errors are remembered and raised as :class:`PublishError` by
  :meth:`check` / :meth:`flush`: after any failure nothing later may be
  trusted, so the caller stops (the stream tail stays consistent and a
  restart recovers from it).
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from cdc.errors import PublishError

# Measured on tansu (2 cores): lz4 + only-error reports ~480k rec/s, a Python
# callback per record halves that, no compression is 4x slower (broker-bound).
POLL_EVERY = 1000

DEFAULTS: dict[str, Any] = {
    "enable.idempotence": False,
    "acks": "all",
    "max.in.flight.requests.per.connection": 1,
    "linger.ms": 10,
    "batch.size": 1_000_000,
    "compression.type": "lz4",
    "queue.buffering.max.messages": 200_000,
    "queue.buffering.max.kbytes": 64 * 1024,  # bounds memory: a full queue blocks produce()
    "message.max.bytes": 8 * 1024 * 1024,
    "delivery.report.only.error": True,
}


class OrderedProducer:
    """Wraps one confluent_kafka.Producer; see the module docstring."""

    def __init__(self, bootstrap: str, extra: dict[str, Any] | None = None, *,
                 single_partition: tuple[str, ...] = ()) -> None:
        conf = {"bootstrap.servers": bootstrap, **DEFAULTS, **(extra or {})}
        if not conf.get("enable.idempotence"):
            conf["max.in.flight.requests.per.connection"] = 1  # order and no gap depend on it
        conf["delivery.report.only.error"] = True  # acked() depends on it
        conf["on_delivery"] = self._on_error
        conf["error_cb"] = self._on_client_error
        self.bootstrap = bootstrap
        # topics of ONE partition by contract (the change stream): records go to partition 0 explicitly,
        # which also skips the partitioner's key hash (~0.1-0.3 us per record)
        self._single = frozenset(single_partition)
        self._p = Producer(conf)
        self.produced = 0
        self.failure: PublishError | None = None

    # -- callbacks (run inside poll/flush, on the calling thread) --
    def _on_error(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None and self.failure is None:
            self.failure = PublishError(f"broker did not acknowledge a record: {err.str()}",
                                        topic=msg.topic(), code=err.name())

    def _on_client_error(self, err: KafkaError) -> None:
        if err.fatal() and self.failure is None:
            self.failure = PublishError(f"fatal producer error: {err.str()}", code=err.name())

    # -- producing --
    def produce(self, topic: str, value: bytes | None, key: bytes | None = None) -> None:
        """Queue one record; blocks (polling) while the local queue is full."""
        p = self._p
        partition = 0 if topic in self._single else -1  # -1: librdkafka's partitioner (RD_KAFKA_PARTITION_UA)
        while True:
            try:
                p.produce(topic, value, key, partition)
                break
            except BufferError:
                p.poll(0.005)
                if self.failure is not None:
                    raise self.failure from None
            except KafkaException as exc:
                raise PublishError(f"produce to {topic} failed: {exc}", topic=topic) from None
        self.produced += 1
        if not self.produced % POLL_EVERY:
            p.poll(0)

    def poll(self, timeout: float = 0) -> None:
        self._p.poll(timeout)

    def acked(self) -> int:
        """How many records (a prefix of produce order) the broker has acknowledged.

        Polls first: librdkafka only drops acknowledged records from ``len()``
        when delivery reports are served, so without it a trickle of records
        (fewer than POLL_EVERY) would never look acknowledged until flush().
        """
        self._p.poll(0)
        return self.produced - len(self._p)

    def check(self) -> None:
        """Raise the first delivery failure, if any."""
        if self.failure is not None:
            raise self.failure

    def flush(self, timeout_s: float = 30) -> None:
        """Wait for every queued record's acknowledgement; raise PublishError on failure or timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = self._p.flush(max(0.0, min(1.0, deadline - time.monotonic())))
            self.check()
            if left == 0:
                return
            if time.monotonic() >= deadline:
                raise PublishError(f"{left} records not acknowledged within {timeout_s}s",
                                   bootstrap=self.bootstrap, pending=left)

    def close(self, timeout_s: float = 5) -> None:
        """Best-effort flush, then drop what is left and release the client; never raises
        (use flush() when the outcome matters). Idempotent."""
        p, self._p = self._p, None
        if p is None:
            return
        try:
            if self.failure is None:  # after a failure, sending what follows would leave a gap: drop it
                p.flush(timeout_s)
            p.purge()
            p.close()
        except Exception:  # noqa: BLE001, S110 - closing after a failure must not mask it
            pass

