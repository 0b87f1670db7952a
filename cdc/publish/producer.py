"""An ordered, acknowledged Kafka producer: the one place that calls confluent-kafka's produce.

Guarantees the publisher builds on:

- ORDER, NO GAP, NO DUPLICATE (default, ``kafka.idempotence: true``):
  librdkafka's idempotent producer (``enable.idempotence``, ``acks=all``,
  ``enable.gapless.guarantee``) with ONE request in flight. The broker
  drops a retried batch it already wrote (no duplicate run) and refuses one
  that would leave a hole; an error that could leave a gap is fatal and
  stops the producer. That is the promise of a real Kafka, which keeps its
  producer state with the log.
- THE EMBEDDED BROKER (tansu, cdc.dev.broker) accepts InitProducerId but
  does NOT keep that promise across its own restart with persistent (s3)
  storage: a batch in flight when it stops gets a transport error, and the
  retry after the restart is answered DUPLICATE_SEQUENCE_NUMBER ("previous
  send succeeded") although the batch is not in the log: librdkafka counts
  it delivered, a silent gap of one batch (measured: 2 runs in 5 with a
  record every 2 ms, 5 records lost each; the same runs without
  idempotence lost nothing and once appended 5 records twice). With memory
  storage a restarted tansu is empty and answers UNKNOWN_PRODUCER_ID
  without end: nothing is written, the delivery timeout below stops the
  source and the daemon refuses the emptied stream (cdc.runtime.daemon).
  So a tansu with persistent storage that may restart under the daemon
  needs ``kafka.idempotence: false``.
- ``kafka.idempotence: false`` (tansu with persistent storage, brokers
  without InitProducerId): acks=all, one request in flight, retries:
  ordered and gapless while the broker keeps what it acknowledged, but a
  retry after a lost acknowledgement appends a run twice (DUPLICATES, which
  the contract lets every consumer drop by ``sequence``); and when all
  brokers are lost the producer stops at once (:meth:`OrderedProducer.check`)
  rather than send its queue into a topic that may have come back empty
  (the daemon then restarts the source from the stream's tail).
- NO EXPIRY BEHIND A HOLE: librdkafka never expires a queued record
  (``message.timeout.ms=0``): an expired record N with N+1 delivered later
  is a gap, and librdkafka's gapless guarantee does not cover timeouts.
  The DELIVERY TIMEOUT is ours (``kafka.delivery_timeout_s``): when records
  are pending and no acknowledgement arrived for that long, :meth:`check`
  raises PublishError ("broker unreachable"), and :meth:`close` purges
  what is queued and in flight before anything more is sent, so the broker
  holds a PREFIX of the produce order. The caller then restarts from the
  stream's tail (cdc.runtime.daemon).
- NO DROP: on ``BufferError`` (local queue full) it polls and retries the
  SAME record, never skips it (and honours the delivery timeout meanwhile).
  While blocked so it also calls :attr:`OrderedProducer.while_blocked` (the
  publisher's writer-lease check, cdc.publish.lease): a writer fenced while
  its queue is full learns it within a proof interval, not after draining.
- FENCED: :meth:`OrderedProducer.fence` purges everything queued and in
  flight at once (``Producer.purge()``: a queued record never expires, so
  left in the client it would land after the newer writer's) and refuses
  every later record; the wait is bounded (no flush after fencing).
- POLL: ``poll(0)`` serves delivery callbacks. Only failures produce one
  here, so it runs every ``POLL_EVERY`` records rather than after each:
  measured, a poll per record costs ~14 us when reader threads compete for
  the GIL (poll releases it), 5x the produce call itself.
- ACK TRACKING without a Python callback per record: successful deliveries
  are not reported (``delivery.report.only.error``), so the number of
  acknowledged records is ``produced - len(producer)``, a prefix of the
  produce order. :meth:`acked` returns it, and raises instead once a
  failure is known (a failed record leaves the queue too, and nothing at or
  after it may count as acknowledged). Failed deliveries and fatal
  producer errors are remembered and raised as :class:`PublishError` by
  :meth:`check` / :meth:`flush`: after any failure nothing later may be
  trusted, so the caller stops (the stream tail stays consistent and a
  restart recovers from it).
- SIZE: a record above the broker's limit fails as :class:`RecordTooLarge`
  (Terminal: retrying cannot help), naming topic and size; the publisher
  checks rows before producing them (cdc.publish.publisher) so that the
  error names table and key.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from cdc.config.kafka_settings import KafkaConnection, create_client
from cdc.errors import CdcError, ConfigError, PublishError, Terminal

# Measured on tansu (2 cores): lz4 + only-error reports ~480k rec/s, a Python
# callback per record halves that, no compression is 4x slower (broker-bound).
POLL_EVERY = 1000
DELIVERY_TIMEOUT_S = 120.0  # kafka.delivery_timeout_s default
RECORD_OVERHEAD = 512  # bytes a record adds to key + value in a batch (headers, lengths, batch header), rounded up
PURGE_WAIT_S = 2.0  # fence(): how long it waits for the purged records' delivery reports

DEFAULTS: dict[str, Any] = {
    "enable.idempotence": True,
    "enable.gapless.guarantee": True,
    "acks": "all",
    "max.in.flight.requests.per.connection": 1,
    "message.timeout.ms": 0,  # never expire a queued record: see NO EXPIRY BEHIND A HOLE
    "linger.ms": 10,
    "batch.size": 1_000_000,
    "compression.type": "lz4",
    "queue.buffering.max.messages": 200_000,
    "queue.buffering.max.kbytes": 64 * 1024,  # bounds memory: a full queue blocks produce()
    "message.max.bytes": 8 * 1024 * 1024,
    "delivery.report.only.error": True,
}
_OURS = ("message.timeout.ms", "delivery.timeout.ms", "enable.idempotence", "enable.gapless.guarantee")
# _PRODUCE_ARGS: confluent-kafka's produce(topic, value, key, partition, callback, on_delivery, timestamp, headers) is
# called with every argument positional (None, None, 0: its defaults): a keyword argument costs it a dictionary and a
# lookup per keyword name, a third of the call (measured under valgrind: ~2,000 of ~6,000 instructions per record).
_BROKER_DOWN = (KafkaError._ALL_BROKERS_DOWN,)
_TOO_LARGE = (KafkaError.MSG_SIZE_TOO_LARGE,)


class RecordTooLarge(CdcError, Terminal):
    """A record is larger than the broker accepts: ``topic``, ``size``, ``limit`` (and, from the
    publisher, ``table``, ``key``, ``position``). Never carries row values."""


def producer_config(where: str | KafkaConnection, extra: dict[str, Any] | None = None, *,
                    idempotence: bool = True) -> dict[str, Any]:
    """librdkafka settings: DEFAULTS, then ``kafka.client``, ``kafka.producer`` and ``extra``
    (cdc.config.kafka_settings). The settings the guarantees rest on are ours: a block naming them is a
    ConfigError naming the key."""
    conn = KafkaConnection.of(where)
    for block, given in (("kafka.client", conn.client), ("kafka.producer", {**conn.producer, **(extra or {})})):
        for key in _OURS:
            if key in given:
                hint = ("kafka.delivery_timeout_s" if "timeout" in key else "kafka.idempotence")
                raise ConfigError(f"{block}.{key} is set by the service (use {hint} instead): "
                                  f"see cdc.publish.producer", key=f"{block}.{key}")
    conf = {**conn.settings("producer", DEFAULTS), **(extra or {})}
    if not idempotence:
        conf["enable.idempotence"] = False
        del conf["enable.gapless.guarantee"]
        conf["max.in.flight.requests.per.connection"] = 1  # order and no gap depend on it
    return conf


class OrderedProducer:
    """Wraps one confluent_kafka.Producer; see the module docstring. Used from one thread, except
    :meth:`unacked_for` and :attr:`broker_down` (read by the /readyz thread)."""

    def __init__(self, where: str | KafkaConnection, extra: dict[str, Any] | None = None, *,
                 single_partition: tuple[str, ...] = (), idempotence: bool = True,
                 delivery_timeout_s: float = DELIVERY_TIMEOUT_S) -> None:
        conf = producer_config(where, extra, idempotence=idempotence)
        bootstrap = conf["bootstrap.servers"]
        conf["delivery.report.only.error"] = True  # acked() depends on it
        conf["on_delivery"] = self._on_error
        conf["error_cb"] = self._on_client_error
        self.bootstrap, self.idempotence, self.delivery_timeout_s = bootstrap, idempotence, delivery_timeout_s
        self.max_message_bytes = int(conf["message.max.bytes"])
        # topics of ONE partition by contract (the change stream): records go to partition 0 explicitly,
        # which also skips the partitioner's key hash (~0.1-0.3 us per record)
        self._single = frozenset(single_partition)
        self._p = create_client("producer", conf)
        self.produced = 0
        self.failure: CdcError | None = None
        self._fatal = False  # failure is a fatal client error (a later size refusal explains it: RecordTooLarge)
        self._down_failure = False  # failure is the non-idempotent stop on "all brokers down"
        self.broker_down: str | None = None  # librdkafka's last "all brokers down" report, until an ack
        self._acked = 0  # acknowledged prefix at the last look
        self._progress_t = time.monotonic()  # when the acknowledged prefix last moved (or nothing was pending)
        self._looked_t = self._progress_t  # when the calling thread last served delivery reports (_look, a full queue)
        self.while_blocked: Callable[[], None] | None = None  # called while the local queue is full (a lease check)

    # -- callbacks (run inside poll/flush, on the calling thread) --
    def _on_error(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:
            return
        if self.failure is not None and not (err.code() in _TOO_LARGE and self._fatal):
            return  # the first failure is the one to report; but a size refusal is the cause of a fatal error
        if err.code() in _TOO_LARGE:
            size = len(msg.value() or b"") + len(msg.key() or b"")
            self.failure = RecordTooLarge(f"the broker refused a record of {size} bytes on {msg.topic()} as too "
                                          f"large: {err.str()}", topic=msg.topic(), size=size)
        else:
            self.failure = PublishError(f"broker did not acknowledge a record: {err.str()}",
                                        topic=msg.topic(), code=err.name())

    def _on_client_error(self, err: KafkaError) -> None:
        if err.fatal() and self.failure is None:
            self.failure = PublishError(f"fatal producer error: {err.str()}", code=err.name())
            self._fatal = True
        elif err.code() in _BROKER_DOWN:
            self.broker_down = err.str()
            if not self.idempotence and self.failure is None:
                # without idempotence a reconnect would send the queue into whatever the broker now
                # holds (a topic that came back empty): stop, and let recovery look first
                self._down_failure = True
                self.failure = PublishError(f"broker {self.bootstrap} unreachable: {err.str()}; the "
                                            f"non-idempotent producer stops before sending more",
                                            bootstrap=self.bootstrap, code=err.name())

    # -- producing --
    def produce(self, topic: str, value: bytes | None, key: bytes | None = None,
                headers: tuple[tuple[str, bytes], ...] | list[tuple[str, bytes]] | dict[str, bytes] | None = None,
                ) -> None:
        """Queue one record; blocks (polling) while the local queue is full, up to the delivery timeout."""
        if self.failure is not None and not self._down_failure:
            raise self.failure  # fenced or failed: nothing more is queued behind it
        p = self._p
        partition = 0 if topic in self._single else -1  # -1: librdkafka's partitioner (RD_KAFKA_PARTITION_UA)
        while True:
            try:
                if headers:  # positional (callback, on_delivery, timestamp at their defaults): see _PRODUCE_ARGS
                    p.produce(topic, value, key, partition, None, None, 0,
                              headers if type(headers) in (list, dict) else list(headers))
                else:
                    p.produce(topic, value, key, partition)
                break
            except BufferError:
                self._blocked()
            except KafkaException as exc:
                raise self._refused(exc, topic, value, key) from None
        if self.produced == self._acked:  # nothing was pending: the delivery timeout starts now
            self._progress_t = time.monotonic()
        self.produced += 1
        if not self.produced % POLL_EVERY:
            p.poll(0)

    def _blocked(self) -> None:
        """One wait on a full local queue: serve deliveries, raise a failure or the delivery timeout, and
        check the writer lease (:attr:`while_blocked`; WriterFenced then purges the queue, see :meth:`fence`)."""
        self._p.poll(0.005)
        self._looked_t = time.monotonic()
        self.check()
        if self.while_blocked is not None:
            self.while_blocked()

    def fence(self, failure: CdcError) -> None:
        """This writer was fenced (cdc.publish.lease.WriterFenced): purge what is queued and in flight NOW, so
        nothing of it reaches the broker after the newer writer's records, and refuse every later record
        with ``failure``. Never flushes; waits at most :data:`PURGE_WAIT_S` for the purged records' reports
        (the client's threads hand them over; a busy host may take a moment)."""
        self.failure, self._fatal = failure, False
        p = self._p
        if p is None:
            return
        try:
            p.purge()  # queued and in flight; their delivery reports say "purged" (ignored: failure is set)
            deadline = time.monotonic() + PURGE_WAIT_S
            while len(p) and time.monotonic() < deadline:  # the reports are counted until a poll serves them
                p.poll(0.01)
        except Exception:  # noqa: BLE001, S110 - the client is being given up: the fencing error is the one to report
            pass

    def _refused(self, exc: KafkaException, topic: str, value: bytes | None, key: bytes | None) -> CdcError:
        """The error for a record librdkafka refused to queue."""
        err = exc.args[0] if exc.args else None
        if isinstance(err, KafkaError) and err.code() in _TOO_LARGE:
            size = len(value or b"") + len(key or b"")
            return RecordTooLarge(f"a record of {size} bytes is larger than message.max.bytes="
                                  f"{self.max_message_bytes} on {topic}", topic=topic, size=size,
                                  limit=self.max_message_bytes)
        return PublishError(f"produce to {topic} failed: {exc}", topic=topic)

    def produce_all(self, topic: str, values: list[bytes], keys: list[bytes],
                    headers: dict[str, bytes] | list[tuple[str, bytes]] | None = None) -> None:
        """:meth:`produce` of each (value, key) in order, in one loop (the publisher's batch path); every
        record with ``headers`` when given (None: none)."""
        if len(values) <= 1:
            if values:
                self.produce(topic, values[0], keys[0], headers)
            return
        p = self._p
        partition = 0 if topic in self._single else -1
        if self.produced == self._acked:  # nothing was pending: the delivery timeout starts now
            self._progress_t = time.monotonic()
        start, i, n = self.produced, 0, len(values)
        try:
            while i < n:
                try:
                    while i < n:
                        p.produce(topic, values[i], keys[i], partition, None, None, 0, headers)
                        i += 1
                except BufferError:  # the local queue is full: serve deliveries, then resume at record i
                    self.produced = start + i
                    self._blocked()
                except KafkaException as exc:
                    raise self._refused(exc, topic, values[i], keys[i]) from None
        finally:
            self.produced = start + i  # the records queued, whatever stopped the loop
        if start // POLL_EVERY != self.produced // POLL_EVERY:
            p.poll(0)

    def produce_spliced(self, splice: Any, topic: str, headers: list[tuple[str, bytes]] | None, tables: list[Any],
                        rows: list[Any], i: int, known: Any, parts: tuple[bytes, ...], seq: int, total: int, n: int,
                        now: int, limit: int) -> tuple[int, int, int, int, int, list[int], bool]:
        """The JSON changes topic's data records of ``rows[i:]`` while ``tables[j] is known``, formatted and
        queued by ``splice`` (cdc/publish/_splice_native.c: confluent-kafka's produce called from one C loop,
        with the same order, full-queue and refusal handling as :meth:`produce`). Returns (j, seq, total, n,
        value bytes, records per op c/u/d/r/t, whether row j needs the Python path); rows[i:j] are queued."""
        p = self._p
        partition = 0 if topic in self._single else -1
        if self.produced == self._acked:  # nothing was pending: the delivery timeout starts now
            self._progress_t = time.monotonic()
        start, nbytes, ops = self.produced, 0, [0, 0, 0, 0, 0]
        while True:
            j, seq, total, n, nb, counted, status, error = splice(tables, rows, i, known, parts, seq, total, n, now,
                                                                  limit, p.produce, topic, partition, headers)
            self.produced += j - i
            nbytes += nb
            for k in range(5):
                ops[k] += counted[k]
            i = j
            if not self._call_again(status, error, topic):
                break
        if start // POLL_EVERY != self.produced // POLL_EVERY:
            p.poll(0)
        return j, seq, total, n, nbytes, ops, status == 1

    def _call_again(self, status: int, error: Any, topic: str) -> bool:
        """After a splice call: True when the local queue was full (deliveries served, call again from where it
        stopped); raises what the client refused (status 3); False when the call finished."""
        if status == 2:
            self._blocked()
            return True
        if status == 3:
            exc, value, key = error
            if isinstance(exc, KafkaException):
                raise self._refused(exc, topic, value, key) from None
            raise exc
        return False

    def produce_tx(self, splice_tx: Any, topic: str, headers: list[tuple[str, bytes]] | None, tables: list[Any],
                   rows: list[Any], known: Any, parts: tuple[bytes, ...], seq: int, now: int, limit: int,
                   head: bytes, tail: bytes) -> tuple[int, int, int, int, int, list[int], int, bool]:
        """A small transaction of the JSON changes topic in one C call (``splice_tx`` of
        cdc/publish/_splice_native.c): ``head`` (its BEGIN value), the data records of ``rows`` (all of table
        ``known``, as :meth:`produce_spliced`), then ``tail`` (its END value) only when every row went out
        there. Same order, full-queue and refusal handling as :meth:`produce`; refuses to queue anything
        behind a known failure. Returns (j, seq, total, n, row value bytes, records per op c/u/d/r/t (a sequence of
        five), marks, whether row j needs the Python path): BEGIN and rows[:j] are queued, and END when ``marks & 2``."""
        if self.failure is not None and not self._down_failure:
            raise self.failure  # fenced or failed: nothing more is queued behind it
        p = self._p
        partition = 0 if topic in self._single else -1
        if self.produced == self._acked:  # nothing was pending: the delivery timeout starts now
            self._progress_t = time.monotonic()
        start = self.produced
        j, seq, total, n, nbytes, ops, status, error, marks = splice_tx(
            tables, rows, 0, known, parts, seq, 0, 0, now, limit, p.produce, topic, partition, headers, head, tail)
        self.produced = start + j + (marks & 1) + (marks >> 1)
        while status > 1 and self._call_again(status, error, topic):  # the local queue was full: again from row j
            i = j
            j, seq, total, n, nb, counted, status, error, done = splice_tx(
                tables, rows, i, known, parts, seq, total, n, now, limit, p.produce, topic, partition, headers,
                None if marks & 1 else head, tail)
            self.produced += j - i + (done & 1) + (done >> 1)
            marks |= done
            nbytes += nb
            ops = tuple(a + b for a, b in zip(ops, counted))
        if start // POLL_EVERY != self.produced // POLL_EVERY:
            p.poll(0)
        return j, seq, total, n, nbytes, ops, marks, status == 1

    def poll(self, timeout: float = 0) -> None:
        self._p.poll(timeout)

    def acked(self) -> int:
        """How many records (a prefix of produce order) the broker has acknowledged.

        Polls first: librdkafka only drops acknowledged records from ``len()``
        when delivery reports are served, so without it a trickle of records
        (fewer than POLL_EVERY) would never look acknowledged until flush().
        Raises the failure if one is known after that poll: a failed record
        leaves ``len()`` as well, and must not count as acknowledged.
        """
        acked = self._look()
        self.check()
        return acked

    def _look(self) -> int:
        self._p.poll(0)
        pending = len(self._p)
        acked = self.produced - pending
        now = self._looked_t = time.monotonic()
        if acked > self._acked or pending == 0:
            self._acked, self._progress_t = acked, now
            self.broker_down = None
        return acked

    def settle(self) -> None:
        """The broker was just reached (recovery read the stream): forget an "all brokers down" report
        queued before that (a producer built while the broker was still down) when nothing is pending."""
        self._p.poll(0)
        if self._down_failure and self.produced == self._acked:
            self.failure, self._down_failure, self.broker_down = None, False, None

    def unacked_for(self) -> float:
        """Seconds since the acknowledged prefix last moved while records were pending (0: none pending
        at the last look). Safe from another thread."""
        if self.produced <= self._acked:
            return 0.0
        return time.monotonic() - self._progress_t

    def unacked_seen_for(self) -> float:
        """Like :meth:`unacked_for`, but only as far as the calling thread has looked: seconds from the last
        move of the acknowledged prefix to the last time delivery reports were served and records were still
        pending. A thread busy elsewhere (a reader blocked on its source) serves none: records it produced
        then only LOOK unacknowledged, which says nothing about the broker. Safe from another thread."""
        if self.produced <= self._acked:
            return 0.0
        return max(0.0, self._looked_t - self._progress_t)

    def check(self) -> None:
        """Raise the first delivery failure, if any; or PublishError when records have been pending
        without any acknowledgement for the delivery timeout (the broker is unreachable)."""
        if self.failure is not None:
            raise self.failure
        if self.produced > self._acked and time.monotonic() - self._progress_t > self.delivery_timeout_s:
            self._look()  # acknowledgements may have come in since the last look
        if self.failure is not None:
            raise self.failure
        if self.produced > self._acked and time.monotonic() - self._progress_t > self.delivery_timeout_s:
            pending = self.produced - self._acked
            self.failure = PublishError(
                f"broker {self.bootstrap} unreachable: {pending} records not acknowledged for "
                f"{self.delivery_timeout_s:g}s (kafka.delivery_timeout_s); stopping before anything is written "
                f"behind them", bootstrap=self.bootstrap, pending=pending, reason=self.broker_down)
            raise self.failure

    def flush(self, timeout_s: float = 30) -> None:
        """Wait for every queued record's acknowledgement; raise PublishError on failure or timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = self._p.flush(max(0.0, min(1.0, deadline - time.monotonic())))
            self.acked()  # raises a failure; moves the acknowledged prefix
            if left == 0:
                return
            if time.monotonic() >= deadline:
                raise PublishError(f"{left} records not acknowledged within {timeout_s}s",
                                   bootstrap=self.bootstrap, pending=left)

    def close(self, timeout_s: float = 5) -> None:
        """Best-effort flush, then drop what is left and release the client; never raises
        (use flush() when the outcome matters). Idempotent. After a failure nothing queued is sent:
        it is purged (queued and in flight) first, so the broker holds a prefix of produce order."""
        p, self._p = self._p, None
        if p is None:
            return
        try:
            if self.failure is None:
                p.flush(timeout_s)
            p.purge()  # queued and in flight: nothing after a failure may reach the broker
            p.close()
        except Exception:  # noqa: BLE001, S110 - closing after a failure must not mask it
            pass
