"""One writer per stream: a lease the broker arbitrates, so two daemons for one source never interleave.

A rolling update, a stuck pod and its replacement, or an operator starting a second ``cdc run`` give
two daemons for one source. Both would continue numbering from the same stream tail and interleave
their records. The lease stops that with the broker's own fencing of transactional producers:

* each publisher holds a small transactional producer whose ``transactional.id`` is the stream's
  (``cdc-writer.<prefix>.<source>``). ``init_transactions`` by a newer holder bumps the id's epoch at the
  broker, and from then on every transactional write of the older holder is refused (PRODUCER_FENCED);
* the holder proves it still holds the lease with one transactional write to the lease topic
  ``<prefix>.<source>.writer`` at most every ``CHECK_EVERY_S`` while it publishes: before a record is
  produced, when the last proof is older than that (:meth:`WriterLease.check`, called by the publisher).
  A refused proof stops the publisher at once with :class:`WriterFenced`, naming the newer writer (its
  claim, the last record of the lease topic) -- its queued records are purged, never sent;
* a newer writer that finds a live claim of another writer in the lease topic (a proof younger than
  ``STALE_AFTER_S``, not followed by that writer's ``release`` at a clean stop) fences it, then waits ``GRACE_S`` (more than the older writer's proof interval plus
  a request's flight time) before it reads the stream's tail: by then the older one has stopped, and
  the tail it reads is final. Recovery then closes the older writer's open transaction with ABORTED
  and the reader reads that transaction again: nothing is lost or applied twice.
* the claim's offset in the lease topic (one partition) is the holder's writer EPOCH (offset + 1):
  the broker orders the claims, so every later claim, by any writer, has a higher one. The publisher
  stamps it on every record of the stream (header ``cdc.epoch``, cdc.stream.envelope) and consumers refuse a
  record of a lower epoch after a higher one (cdc.stream.stream_structure);
* the lease FAILS CLOSED: a read of the lease topic that fails or times out (``READ_TIMEOUT_S``) is a
  PublishError, which the daemon retries with backoff; it is never taken as "no other writer";
* the same process re-acquiring after a broker outage (the daemon restarts the source) does NOT take
  the lease back from a newer writer that claimed it meanwhile: that is WriterFenced too.

The data records themselves are produced as before (idempotent, non-transactional: offsets stay
contiguous and consumers need no read_committed). The remaining window is a writer frozen (SIGSTOP,
a VM pause) for longer than ``GRACE_S`` with records already queued in its client: they may land
after the newer writer started; every consumer then stops on the stream's structure rules
(a BEGIN inside a transaction, a sequence at or below the last) rather than apply them.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from typing import Any

import orjson
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from cdc.config.kafka_settings import KafkaConnection, create_client
from cdc.errors import CdcError, PublishError, Terminal
from cdc.publish.topics import TopicSpec, ensure_topic

log = logging.getLogger(__name__)

CHECK_EVERY_S = 0.5
GRACE_S = 2 * CHECK_EVERY_S + 2.0
STALE_AFTER_S = 15.0  # a claim or proof older than this belongs to a writer that is gone
LEASE_RETENTION_MS = 3_600_000
_FENCED = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH,
           KafkaError.INVALID_PRODUCER_ID_MAPPING}
WRITER_ID = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"  # this process
READ_TIMEOUT_S = 10.0  # a read of the lease topic that takes longer: PublishError (never "no other writer")


class _Unreadable(Exception):
    """The lease topic's last claim could not be read (turned into PublishError)."""


class WriterFenced(CdcError, Terminal):
    """Another daemon took over this source's stream (``source``, ``topic``, ``newer``: its claim)."""


def lease_topic(topic_prefix: str, source: str) -> str:
    return f"{topic_prefix}.{source}.writer"


class WriterLease:
    """The lease of one source's stream for this process. See the module docstring."""

    def __init__(self, where: str | KafkaConnection, topic_prefix: str, source: str, *,
                 check_every_s: float = CHECK_EVERY_S, grace_s: float = GRACE_S,
                 stale_after_s: float = STALE_AFTER_S, timeout_s: float = 30.0) -> None:
        self.conn = KafkaConnection.of(where)
        self.source, self.topic = source, lease_topic(topic_prefix, source)
        self.transactional_id = f"cdc-writer.{topic_prefix}.{source}"
        self.check_every_s, self.grace_s, self.stale_after_s = check_every_s, grace_s, stale_after_s
        self.timeout_s = timeout_s  # a broker that does not answer a proof for this long: PublishError
        self.writer = WRITER_ID
        self.due = float("inf")  # monotonic time of the next proof (inf: not held)
        self.epoch = 0  # the writer epoch of the last claim: its offset in the lease topic + 1 (0: never held)
        self._p: Any = None
        self._held_once = False

    # -- acquiring ---------------------------------------------------------------------------------------
    def acquire(self, stream_topic: str) -> None:
        """Fence any other writer of the stream; wait until an active one has stopped. Raises WriterFenced
        when this process held the lease before and a newer writer has claimed it since."""
        ensure_topic(self.conn, self.topic, TopicSpec(1, None, {"retention.ms": str(LEASE_RETENTION_MS)}))
        last = self._last_claim()
        other_live = (last is not None and last.get("writer") != self.writer and last.get("kind") != "release"
                      and time.time() * 1000 - int(last.get("at_ms", 0)) < self.stale_after_s * 1000)
        if self._held_once and last is not None and last.get("writer") != self.writer:
            raise self._fenced(stream_topic, last)
        self.close()
        self._p = create_client("producer", self.conn.settings("producer", {
            "transactional.id": self.transactional_id, "enable.idempotence": True, "acks": "all",
            "linger.ms": 0, "transaction.timeout.ms": 60_000,
            "message.timeout.ms": max(1000, int(self.timeout_s * 1000))}))
        try:
            self._p.init_transactions(self.timeout_s)  # the broker fences every older holder of the id here
        except KafkaException as exc:
            raise PublishError(f"cannot take the writer lease {self.transactional_id} of {stream_topic} on "
                               f"{self.conn.bootstrap}: {exc.args[0] if exc.args else exc} (the broker must allow "
                               "transactional producers: ACL WRITE on TransactionalId cdc-writer.*; a broker "
                               "without transactions: kafka.writer_fencing: false and one daemon per source)",
                               topic=self.topic) from None
        self._write("claim", stream_topic)
        self._held_once = True
        log.info("source %s: writer lease of %s taken, writer epoch %d", self.source, stream_topic, self.epoch,
                 extra={"source": self.source})
        if other_live:
            log.warning("source %s: taking over %s from writer %s (its last proof %.1fs ago); waiting %.1fs for "
                        "it to stop before reading the stream's tail", self.source, stream_topic,
                        last.get("writer"), time.time() - int(last.get("at_ms", 0)) / 1000, self.grace_s,
                        extra={"source": self.source})
            time.sleep(self.grace_s)

    # -- holding -----------------------------------------------------------------------------------------
    def check(self, stream_topic: str) -> None:
        """Prove the lease is still ours (a transactional write); WriterFenced when a newer writer took it."""
        self._write("proof", stream_topic)

    def _write(self, kind: str, stream_topic: str) -> None:
        p = self._p
        value = orjson.dumps({"writer": self.writer, "kind": kind, "stream": stream_topic,
                              "host": socket.gethostname(), "pid": os.getpid(), "at_ms": int(time.time() * 1000)})
        delivered: list[Any] = []
        try:
            p.begin_transaction()
            p.produce(self.topic, value, self.source.encode(), 0,
                      on_delivery=lambda err, msg: delivered.append(None if err else msg.offset()))
            p.commit_transaction(self.timeout_s)
            if kind == "claim" and not delivered:
                p.poll(0)  # the delivery report of the committed claim, if commit did not serve it
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if isinstance(err, KafkaError) and (err.code() in _FENCED or "fence" in err.str().lower()):
                self.due = float("inf")
                raise self._fenced(stream_topic, self._newer_claim()) from None
            if isinstance(err, KafkaError) and err.txn_requires_abort():
                try:
                    p.abort_transaction(10)
                except KafkaException:  # the error below is the one to report
                    pass
            raise PublishError(f"writer lease of {stream_topic}: {err.str() if err else exc}",
                               topic=self.topic) from None
        if kind == "claim":
            offset = delivered[0] if delivered else None
            if offset is None or offset < 0:
                raise PublishError(f"writer lease of {stream_topic}: the broker did not report the offset of this "
                                   f"writer's claim in {self.topic}, which is its writer epoch", topic=self.topic)
            self.epoch = offset + 1
        self.due = time.monotonic() + self.check_every_s

    def _fenced(self, stream_topic: str, newer: dict | None) -> WriterFenced:
        who = (f"writer {newer.get('writer')} (host {newer.get('host')}, pid {newer.get('pid')})"
               if newer else "another writer")
        return WriterFenced(
            f"source {self.source}: {who} took over the stream {stream_topic}; this daemon ({self.writer}) stops "
            "writing. Nothing is lost: the newer writer closes this one's open transaction with ABORTED and reads "
            "it again. Run one daemon per source (a Kubernetes Deployment with strategy Recreate, or leave the "
            "rolling update to this fencing)", source=self.source, topic=stream_topic, newer=newer,
            writer=self.writer)

    def _last_claim(self) -> dict | None:
        """The last record of the lease topic (the current holder's latest claim or proof); None only when
        the topic holds none. Fails CLOSED: a read that fails, times out or finds a record that is not a
        claim raises PublishError (retryable: the daemon backs off and tries again), never None, which
        would mean "no other writer" and skip the wait for one."""
        consumer = None
        try:
            consumer = create_client("consumer", self.conn.settings("consumer", {
                "group.id": f"cdc-lease-{uuid.uuid4().hex[:12]}", "enable.auto.commit": False,
                "enable.partition.eof": False}))
            part = TopicPartition(self.topic, 0)
            low, high = consumer.get_watermark_offsets(part, timeout=READ_TIMEOUT_S, cached=False)
            if high <= low:
                return None
            consumer.assign([TopicPartition(self.topic, 0, max(low, high - 64))])  # control records sit between
            last, deadline = None, time.monotonic() + READ_TIMEOUT_S
            while time.monotonic() < deadline:
                msgs = consumer.consume(100, 0.2)
                for m in msgs:
                    if m.error():
                        raise KafkaException(m.error())
                    if m.value():
                        last = m
                if last is not None and (not msgs or last.offset() >= high - 1):
                    break
                if last is None and not msgs and consumer.position([part])[0].offset >= high:
                    return None  # read to the end: only aborted proofs and control records in the window
            if last is None:
                raise _Unreadable(f"no record arrived within {READ_TIMEOUT_S:g}s although the topic holds "
                                  f"offsets {low}..{high - 1}")
            claim = orjson.loads(last.value())
            if not isinstance(claim, dict):
                raise _Unreadable(f"the record at offset {last.offset()} is not a claim: {last.value()[:80]!r}")
            return claim
        except (KafkaException, orjson.JSONDecodeError, _Unreadable) as exc:
            raise PublishError(
                f"source {self.source}: cannot read the writer lease topic {self.topic} on {self.conn.bootstrap} "
                f"({exc}); without it this process cannot know whether another daemon holds the stream, so it "
                "takes nothing and retries (the broker must let it read that topic: ACL READ on "
                "<topic_prefix>.*.writer)", topic=self.topic, source=self.source) from None
        finally:
            if consumer is not None:
                consumer.close()

    def _newer_claim(self) -> dict | None:
        """The newer writer's claim to name in WriterFenced; None when it cannot be read (the fencing stands)."""
        try:
            return self._last_claim()
        except PublishError:
            return None

    def close(self) -> None:
        """Release the lease (a ``release`` record: the next writer need not wait); best effort."""
        p = self._p
        if p is not None and self.due != float("inf"):  # held and not fenced
            try:
                self.timeout_s, saved = min(self.timeout_s, 2.0), self.timeout_s
                self._write("release", "")
                self.timeout_s = saved
            except CdcError:  # fenced or the broker is gone: the next writer waits out the grace
                pass
        self._p = None
        self.due = float("inf")
