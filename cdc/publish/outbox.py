"""The outbox router: INSERTs of an outbox table -> one topic per aggregate type, exactly once.

Debezium's outbox pattern (``sources[].outbox``, docs/transforms.md): a row ``(id, aggregatetype,
aggregateid, type, payload)`` inserted by the application becomes one record of the topic named by
its aggregate type (``outbox.event.{aggregatetype}``), key = the aggregate id as text, value = the
payload as-is, headers ``id``, ``type`` and the configured ones. UPDATEs and DELETEs of the outbox
table, and its snapshot rows (``op: r``), are not routed (as Debezium's EventRouter does).

Where: in the publisher (:func:`attach`), from the same fenced producer, right after the change is
written to the change stream and before its transaction's END. The outbox topics and the change stream
are other partitions, often on other brokers: the client may deliver a transaction's END before its
outbox records, and a crash then would leave an END (the next run resumes after it) without the events
before it. So a transaction that routed an event waits for the acknowledgement of everything produced
before its END is written (one round trip per such transaction; transactions without events pay
nothing): the END in the stream means every outbox record of its transaction is in its topic.

Exactly once, without Kafka transactions (tansu does not hide aborted ones, DESIGN.md): every routed
record carries its identity, header ``cdc.event`` = ``<source transaction>#<n>`` (the n-th routed
INSERT of that transaction, from 0), next to ``cdc.source``, ``cdc.sequence`` (the stream sequence of
its change) and ``cdc.epoch`` (the writer epoch). After a crash the publisher resumes after the last
checkpoint of the change stream (cdc.publish.recovery), so the reader reads the transactions after it
again, and the records they routed before the crash may already be in the outbox topics. At
recovery, :meth:`OutboxRouter.recover` reads the tail of every outbox topic of the source and
remembers the identities of its records above the checkpoint's sequence; routing the same transaction
again skips those. The identity of an event is therefore the same on every read of its transaction:

* MySQL/MariaDB: ``<GTID>#<n>``; a GTID names one transaction on every server of the cluster.
* Oracle: ``<commit SCN>:<XID>#<n>``; both come from the redo, so a LogMiner session started again
  from the checkpoint's low watermark (whatever its SCN ranges, sessions or pipeline) finds the same
  pair, and rebuilds the transaction's rows in the same redo order (rolled-back and partially
  rolled-back rows removed, CSF pieces joined), hence the same n. The commit SCN is in the identity
  because an XID (undo segment, slot, sequence) is reused once its slot's sequence wraps.

Within a partition the
records keep their source order (an idempotent producer writes a gapless prefix: kafka.idempotence,
the default) and their ``cdc.sequence`` increases, so a consumer may also drop a record at or below
the last sequence it saw, as on the change stream.
"""

from __future__ import annotations

import base64
import logging
import re
import time
from typing import Any

import orjson
from confluent_kafka import TopicPartition

from cdc.errors import CdcError, PublishError, Terminal
from cdc.publish.recovery import TAIL_WINDOW, TailState, make_consumer
from cdc.publish.topics import TopicSpec, ensure_topic
from cdc.stream.events import Change, ChangeBatch

log = logging.getLogger(__name__)

SOURCE, EVENT, SEQUENCE = "cdc.source", "cdc.event", "cdc.sequence"
ACK_WAIT_S = 60.0  # a transaction's outbox records acknowledged before its END (module docstring)
_TOPIC_CHARS = re.compile(r"[A-Za-z0-9._-]+")
_HEXTORAW = re.compile(r"HEXTORAW\('([0-9A-Fa-f]*)'\)")
# the position fields an error names: MySQL's, Oracle's
_POSITION = ("gtid", "file", "pos", "row", "scn", "commit_scn", "txId")


class OutboxError(CdcError, Terminal):
    """An outbox row that cannot be routed: names table, position, column (never the payload)."""


class OutboxRouter:
    """Routes the outbox table's INSERTs of one source's publisher. Built by :func:`attach`."""

    def __init__(self, config: Any, publisher: Any) -> None:
        self.config, self.pub = config, publisher
        db, table = config.table.split(".")
        self.db, self.table = db, table
        cols = config.columns
        self.required = (cols.id, cols.aggregatetype, cols.aggregateid, cols.type, cols.payload)
        self._topics: set[str] = set()  # outbox topics ensured by this process
        self._written: set[bytes] = set()  # identities already in the outbox topics above the checkpoint
        self._txid: str | None = None
        self._n = 0  # routed INSERTs of the open transaction
        self.routed = self.skipped = 0
        self.unacknowledged = 0  # routed in the open transaction, not yet known to be acknowledged
        prefix, source = publisher.kafka.topic_prefix, publisher.source_name
        self._format = {"prefix": prefix, "source": source}
        head, _, tail = config.topic.format(aggregatetype="\0", prefix=prefix, source=source).partition("\0")
        self._topic_re = re.compile(re.escape(head) + r"[A-Za-z0-9._-]+" + re.escape(tail))
        self._source = source.encode()

    # ------------------------------------------------------------------ recovery
    def recover(self, tail: TailState) -> None:
        """Called by Publisher.recover() after the lease is held and the stream's tail read: remember the
        identities of this source's records in the outbox topics above the tail's checkpoint (those of
        transactions the reader will read again). Raises PublishError when a topic's tail is unreadable."""
        above = 0 if tail.checkpoint is None else int(tail.checkpoint.get("sequence") or 0)
        conn = self.pub.kafka.connection()
        consumer = make_consumer(conn)
        try:
            topics = [t for t in consumer.list_topics(timeout=15).topics if self._topic_re.fullmatch(t)]
            self._written = _identities_above(consumer, topics, self._source, above)
        finally:
            consumer.close()
        if self._written:
            log.warning("outbox: %d event(s) of transactions after the last checkpoint (sequence %d) are already in "
                        "the outbox topics; they are not routed again", len(self._written), above,
                        extra={"source": self.pub.source_name})

    # ------------------------------------------------------------------ routing
    def is_outbox(self, change: Change) -> bool:
        t = change.table
        return t.table == self.table and t.db == self.db

    def route(self, change: Change, sequence: int) -> None:
        """Produce ``change`` (a row of the outbox table written at ``sequence`` of the stream, or the last
        stream record before it when the table is not kept in the stream) to its outbox topic, unless an
        earlier run already did. A bad row raises OutboxError, or goes to the dead-letter topic when
        ``kafka.dead_letter_topic`` is set (Publisher.dead_letter)."""
        if change.op != "c":
            return  # UPDATE, DELETE, snapshot rows, TRUNCATE: not events (Debezium's EventRouter)
        txid = self._transaction(change)
        if txid != self._txid:
            self._txid, self._n = txid, 0
        ident = f"{txid}#{self._n}".encode()
        self._n += 1
        if ident in self._written:
            self.skipped += 1
            return
        try:
            topic, key, value, headers = self._record(change)
        except OutboxError as err:
            self.pub.dead_letter(err, None)  # raises err without a dead-letter topic: the source stops here
            return
        headers += [(SOURCE, self._source), (EVENT, ident), (SEQUENCE, str(sequence).encode()),
                    *self.pub._headers.items()]
        if topic not in self._topics:
            ensure_topic(self.pub.kafka.connection(), topic,
                         TopicSpec(self.config.partitions, self.pub.kafka.topics.replication_factor))
            self._topics.add(topic)
        self.pub._producer.produce(topic, value, key, headers)
        self.routed += 1
        self.unacknowledged += 1

    def _transaction(self, change: Change) -> str:
        """The identity of the open source transaction (module docstring): its GTID (MySQL), or
        ``<commit SCN>:<XID>`` (Oracle: every change of a released transaction carries ``commit_scn``)."""
        txid = self.pub._tx.txid
        scn = (change.source or {}).get("commit_scn")
        return txid if scn is None else f"{scn}:{txid}"

    def _record(self, change: Change) -> tuple[str, bytes | None, bytes | None, list[tuple[str, bytes]]]:
        row, cols = change.after or {}, self.config.columns
        for column in self.required:
            if column not in row:
                raise self._bad(change, column, f"has no column {column!r}: set sources[].outbox.columns to the "
                                "table's column names")
        agg_type = row[cols.aggregatetype]
        if agg_type is None:
            raise self._bad(change, cols.aggregatetype, f"has NULL in {cols.aggregatetype!r}: every outbox row "
                            "needs an aggregate type (it names the topic)")
        topic = self.config.topic.format(aggregatetype=str(agg_type), **self._format)
        if len(topic) > 249 or not _TOPIC_CHARS.fullmatch(topic):
            raise self._bad(change, cols.aggregatetype, f"gives topic name {topic[:80]!r}, not a valid topic name "
                            "([A-Za-z0-9._-], at most 249 characters)")
        agg_id = row[cols.aggregateid]
        key = None if agg_id is None else _text(agg_id)
        value = self._payload(change, row[cols.payload])
        headers = [(name, _text(row[c])) for name, c in (("id", cols.id), ("type", cols.type)) if row[c] is not None]
        for column, name in self.config.headers.items():
            if column not in row:
                raise self._bad(change, column, f"has no column {column!r} (sources[].outbox.headers)")
            if row[column] is not None:
                headers.append((name, _text(row[column])))
        return topic, key, value, headers

    def _payload(self, change: Change, value: Any) -> bytes | None:
        if value is None:
            return None  # a tombstone, as Debezium's router writes for a NULL payload
        if isinstance(value, str):
            if self._binary(change):
                raw = _HEXTORAW.fullmatch(value)  # Oracle RAW / BLOB: SQL_REDO's literal (readers/oracle/types.py)
                if raw is not None:
                    return bytes.fromhex(raw.group(1))
                return base64.b64decode(value)  # the stream's form of a binary value (cdc.schema.values)
            return value.encode()
        if isinstance(value, (bytes, bytearray)):
            return bytes(value)
        return orjson.dumps(value)  # a JSON column decoded by the reader, or a number

    def _binary(self, change: Change) -> bool:
        schema = change.schema
        for col in schema.columns if schema is not None else ():
            if col.name == self.config.columns.payload:
                family = getattr(col.logical, "family", None)
                return family in ("binary", "blob") or "blob" in col.type or "binary" in col.type
        return False

    def _bad(self, change: Change, column: str, what: str) -> OutboxError:
        where = ", ".join(f"{k} {v}" for k, v in (change.source or {}).items() if k in _POSITION)
        return OutboxError(f"outbox row of {change.table} at {where or '?'} {what}", table=str(change.table),
                           position=change.source, column=column)


def _text(value: Any) -> bytes:
    return value.encode() if isinstance(value, str) else orjson.dumps(value)


def attach(publisher: Any, config: Any) -> OutboxRouter:
    """Route ``config``'s outbox table through ``publisher`` (call before ``recover()``).

    The publisher's per-change entry points and its commit are wrapped on this instance only: a publisher
    without an outbox keeps its own methods, fast paths and costs. A ChangeBatch (the readers' serialized rows) that
    holds an outbox row is taken one Change at a time."""
    router = OutboxRouter(config, publisher)
    change, batch = publisher._change, publisher._batch
    keep = config.keep_in_stream

    def routed_change(ch: Change) -> None:
        if not router.is_outbox(ch):
            return change(ch)
        tx = publisher._tx
        if not keep:
            if tx is None:
                change(ch)  # the publisher's own error (a row outside a transaction)
            return router.route(ch, publisher._seq - 1)
        written = tx.total if tx is not None else None
        change(ch)
        if publisher._tx.total != written:  # not taken back (a row above the record size limit: dead letter)
            router.route(ch, publisher._seq - 1)

    def routed_batch(ev: ChangeBatch) -> None:
        if _holds(ev, router):
            if publisher._tx is None:
                return batch(ev)  # the publisher's own error
            for ch in ev.changes():
                routed_change(ch)
            return None
        return batch(ev)

    commit = publisher._commit

    def acknowledged_commit(ev: Any) -> None:
        if router.unacknowledged:  # the END only after the transaction's outbox records (module docstring)
            publisher._producer.flush(ACK_WAIT_S)  # PublishError past it: retried from the last checkpoint
            router.unacknowledged = 0
        commit(ev)

    publisher._change, publisher._batch, publisher._commit = routed_change, routed_batch, acknowledged_commit
    publisher._outbox = router
    return router


def _holds(ev: ChangeBatch, router: OutboxRouter) -> bool:
    last = None
    for i, known in enumerate(ev.tables):
        if known is None:
            if router.is_outbox(ev.rows[i]):
                return True
        elif known is not last:
            last = known
            t = known[0]
            if t.table == router.table and t.db == router.db:
                return True
    return False


def _identities_above(consumer: Any, topics: list[str], source: bytes, above: int, *, idle_s: float = 0.75,
                      deadline_s: float = 120.0) -> set[bytes]:
    """``cdc.event`` of every record of ``source`` with ``cdc.sequence`` above ``above`` in ``topics``.

    Each partition is read from ``TAIL_WINDOW`` records before its reported end to its true end (the
    reported end may lie below it: cdc.publish.recovery); when the first record of ``source`` read is
    still above ``above`` (or none was) and the partition has older records, it is read again from twice
    as far back. Raises PublishError when the reads do not end within ``deadline_s``."""
    parts: dict[tuple[str, int], list[int]] = {}  # -> [low, reported high, start]
    meta = consumer.list_topics(timeout=15)
    for topic in topics:
        for p in meta.topics[topic].partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
            if high > low:
                parts[(topic, p)] = [low, high, max(low, high - TAIL_WINDOW)]
    found: set[bytes] = set()
    deadline = time.monotonic() + deadline_s
    size = TAIL_WINDOW
    pending = dict(parts)
    while pending:
        first = _read(consumer, pending, source, above, found, idle_s, deadline)
        size *= 2
        again = {}
        for tp, (low, high, start) in pending.items():
            if start > low and (first.get(tp) is None or first[tp] > above):
                again[tp] = [low, high, max(low, start - size)]
        pending = again
    return found


def _read(consumer: Any, parts: dict[tuple[str, int], list[int]], source: bytes, above: int, found: set[bytes],
          idle_s: float, deadline: float) -> dict[tuple[str, int], int]:
    """One pass over ``parts`` from their starts to their true ends; returns the first ``cdc.sequence`` of
    ``source`` seen per partition."""
    consumer.assign([TopicPartition(t, p, start) for (t, p), (_, _, start) in parts.items()])
    position = {tp: start for tp, (_, _, start) in parts.items()}
    first: dict[tuple[str, int], int] = {}
    last_seen = time.monotonic()
    try:
        while True:
            msgs = consumer.consume(5000, 0.1)
            now = time.monotonic()
            for m in msgs:
                if m.error():
                    raise PublishError(f"reading outbox topic {m.topic()}: {m.error()}", topic=m.topic())
                tp = (m.topic(), m.partition())
                position[tp] = m.offset() + 1
                headers = dict(m.headers() or ())
                if headers.get(SOURCE) != source or SEQUENCE not in headers:
                    continue
                seq = int(headers[SEQUENCE])
                first.setdefault(tp, seq)
                if seq > above and EVENT in headers:
                    found.add(headers[EVENT])
            if msgs:
                last_seen = now
            elif now - last_seen >= idle_s and all(position[tp] >= parts[tp][1] for tp in parts):
                return first
            elif now - last_seen >= 10 * idle_s + 10:
                return first  # records below a watermark that never come (retention): what was read stands
            if now > deadline:
                raise PublishError("reading the outbox topics' tails did not end in time", topics=sorted(
                    {t for t, _ in parts}))
    finally:
        consumer.unassign()
