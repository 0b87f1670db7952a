"""The publisher: reader events -> the ordered change stream of one source.

Lifecycle: ``recover()`` once (reads the stream's tail, closes a cut-off
transaction with ABORTED, returns the resume state for the reader), then
``publish(event)`` for every event in reader order, ``flush()`` at a
transaction boundary before reporting anything as done, ``close()``.
One publisher per source, used from one thread.

Guarantees:

- one partition, records in publish order (see cdc.publish.producer), every
  value with a ``sequence`` one above the previous record's;
- ``publish()`` is asynchronous: nothing is assumed delivered until the
  broker acknowledged it; metrics advance only then, and any failed record
  raises PublishError (at the next publish/flush) so the caller stops;
- memory per open transaction: one counter per table (and per table+op),
  never the records;
- every record of the changes topic carries the writer epoch (header
  ``cdc.epoch``, cdc.stream.envelope): the writer lease's when the stream has one
  (cdc.publish.lease; above every epoch already in the stream), else the
  stream tail's (unchanged);
- SCHEMA records: a DDL (SchemaChange) is a checkpoint like END. A table's
  definition is also written once, before its first row published by this
  process, and again whenever Change.schema differs from the last one
  written. Such a SCHEMA record may sit inside a transaction; it then
  carries ``resume: null`` and is NOT a checkpoint (cdc.publish.recovery).

Dead letters (readers): a reader that cannot decode ONE change calls
``SourceContext.dead_letter(error, raw)`` when the daemon wired it (only
when ``kafka.dead_letter_topic`` is set), which is :meth:`dead_letter`: the
error and the raw input go to that topic as JSON and the reader skips the
change. When the callback is None the reader raises the DecodeError and the
source stops at that position.
"""

from __future__ import annotations

import base64
import logging
import time
from typing import Any

import orjson

from cdc.config.kafka_settings import KafkaConnection
from cdc.config.models import KafkaConfig
from cdc.debezium import tx_metadata
from cdc.debezium.errors import TruncateOnCompactedTopic
from cdc.debezium.record import ConnectRecord, DebeziumRecords, TxContext, json_bytes
from cdc.debezium.schema_change import schema_change, schema_change_topic
from cdc.errors import CdcError, StreamCorrupt
from cdc.metrics import SourceMetrics
from cdc.publish.acks import END, HEARTBEAT, PROGRESS, SCHEMA, AckTracker
from cdc.publish.lease import WriterFenced, WriterLease
from cdc.publish.producer import DELIVERY_TIMEOUT_S, RECORD_OVERHEAD, OrderedProducer, RecordTooLarge
from cdc.publish.recovery import read_tail
from cdc.publish.topics import admin_client, ensure_topic, retention_warnings, topic_spec
from cdc.schema.evolution import changes_json, statement_changes
from cdc.stream import wire
from cdc.stream.envelope import (
    aborted_record,
    begin_record,
    changes_topic,
    end_record,
    heartbeat_record,
    schema_record,
    table_topic,
)
from cdc.stream.events import Begin, Change, ChangeBatch, Commit, Heartbeat, Idle, SchemaChange, TableId, TableSchema
from cdc.stream.resync_range import OP as RANGE_OP
from cdc.stream.resync_range import ResyncRangeError
from cdc.stream.serde import get_serdes, get_table_key_serde
from cdc.stream.wire import (
    BEGIN_VALUE,
    COLLECTION,
    END_VALUE,
    NULL,
    OPS,
    VALUE,
    epoch_headers,
    key_close,
    key_head,
    key_json,
    source_base,
    source_fields,
    source_parts,
    value_fragments,
)

log = logging.getLogger(__name__)

try:  # compiled at install (pyproject ext-modules); without a C compiler, _splice_py makes every record
    from cdc.publish import _splice_native as _native  # type: ignore[attr-defined]
except ImportError:
    _native = None
else:
    _native.configure(value_fragments())  # the record's bytes are cdc.stream.wire's, not the C file's
# a small transaction in one call (_commit_held); None with a module compiled before it had the call
_SPLICE_TX = getattr(_native, "splice_tx", None)
_NATIVE_OFF = False  # tests compare the two paths by switching this

PROGRESS_EVERY = 10_000  # records between progress marks inside a long transaction
ACK_CHECK_EVERY = 1_000  # records between looks at the acknowledged prefix inside a transaction
SPLICE_CHUNK = 4_096  # records of a ChangeBatch formatted before they are handed to the producer
HOLD_ROWS = 64  # a transaction's one ChangeBatch up to this many rows waits for its Commit (_commit_held)


dumps = orjson.dumps


class _Tx:
    __slots__ = ("counts", "id_json", "ops", "total", "ts_json", "ts_ms", "txid")

    def __init__(self, txid: str, ts_ms: int) -> None:
        self.txid, self.ts_ms = txid, ts_ms
        self.id_json, self.ts_json = dumps(txid), dumps(ts_ms)
        self.counts: dict[str, int] = {}
        self.ops: dict[tuple[str, str], int] = {}
        self.total = 0


class Publisher:
    def __init__(self, source_name: str, connector: str, kafka: KafkaConfig, metrics: SourceMetrics, *,
                 producer_config: dict | None = None, heartbeat_min_interval_s: float = 0.5,
                 lease: WriterLease | None = None) -> None:
        self.source_name, self.connector, self.kafka, self.metrics = source_name, connector, kafka, metrics
        self._lease = lease  # one writer per stream (cdc.publish.lease): taken in recover(), proven in publish()
        self.topic = changes_topic(kafka.topic_prefix, source_name)
        framing = getattr(kafka, "avro_framing", "confluent")
        self._kser, self._vser = get_serdes(kafka.encoding, framing)
        self._tkser = get_table_key_serde(kafka.encoding, framing)
        self._kenc, self._venc = self._kser.encode, self._vser.encode
        self._producer = OrderedProducer(kafka.connection(), producer_config,
                                         single_partition=(self.topic,),
                                         idempotence=getattr(kafka, "idempotence", True),
                                         delivery_timeout_s=getattr(kafka, "delivery_timeout_s", DELIVERY_TIMEOUT_S))
        if lease is not None:  # a writer blocked on a full queue still learns it was fenced (cdc.publish.producer)
            self._producer.while_blocked = self._lease_due
        # a data record (key + value + overhead) above this is refused before producing (_too_large);
        # lowered to the topic's max.message.bytes when the broker reports one (_learn_record_limit)
        self._record_limit = self._producer.max_message_bytes - RECORD_OVERHEAD
        self._recovered_to: int | None = None  # last sequence in the stream when recover() returned
        self._seq: int | None = None  # next sequence; set by recover()
        self._tx: _Tx | None = None
        self._names: dict[int, _TableOut] = {}  # id(TableId) -> _table_entry()
        self._json = kafka.encoding == "json"  # data records by the JSON template (_change)
        self._per_table = kafka.per_table_topics
        self._debezium = DebeziumRecords(source_name, connector, kafka.topic_prefix, kafka.debezium)
        self._registry = None  # Avro through a Schema Registry for the Debezium-shaped topics (_produce_connect)
        if kafka.avro_framing == "schema_registry":
            from cdc.debezium.schema_registry import RegistryAvro  # its HTTP client only when configured

            self._registry = RegistryAvro(kafka.schema_registry.client_settings())
        self._tx_topic = (tx_metadata.transaction_topic(kafka.topic_prefix, source_name)
                          if kafka.debezium.transaction_topic else None)
        self._ddl_topic = schema_change_topic(kafka.topic_prefix, source_name) if kafka.debezium.schema_change_topic \
            else None
        # data records per table on the per-table topics in the open transaction: the transaction topic's END
        # counts these (a key change is two, a delete and a create, as Debezium counts it)
        self._tx_records: dict[str, int] = {}
        self._schemas: dict[str, TableSchema] = {}
        self._consts: dict[int, tuple] = {}  # id(TableId) -> _constants(): _splice's per-table parts
        self._table_topics: set[str] = set()
        self._hb_min = heartbeat_min_interval_s
        self._last_hb = 0.0
        self._last_hb_resume: Any = None
        self._bytes = 0  # value bytes produced so far
        # (produced index, kind, payload, produce time, cumulative bytes, sequence): metrics after ack
        self._check_at = ACK_CHECK_EVERY  # sequence of the next look at the acknowledged prefix
        self._last_mark = 0
        self._acks = AckTracker(self._producer, metrics)
        self.epoch = 0  # the writer epoch stamped on every record of the changes topic; set by recover()
        self._headers = epoch_headers(0)
        self._outbox = None  # cdc.publish.outbox.attach(): the outbox router, recovered with the stream
        # a small transaction's BEGIN value (its sequence taken) and its one ChangeBatch, not produced yet: they go
        # out with its END in one call at its Commit (_commit_held), or as they would have at the next other event
        # or flush (_release). Only on the JSON changes topic with the C splice and nothing else to write per row
        self._held: bytes | None = None
        self._held_rows: ChangeBatch | None = None

    @property
    def last_resume(self) -> dict[str, Any] | None:
        """Resume state of the last ACKNOWLEDGED checkpoint (the source's reportable position)."""
        return self._acks.last_resume

    @property
    def acked_sequence(self) -> int:
        """The highest sequence known to be in the stream: the tail found by recover(), or a later
        acknowledged marker (0: none). A stream that later ends below it lost acknowledged records."""
        return max(self._acks.acked_sequence, (self._recovered_to or 0))

    def broker_problem(self, after_s: float = 5.0) -> str | None:
        """Why the broker is not taking records (records still pending, when this publisher's thread last
        served delivery reports, with no acknowledgement for more than ``after_s``), else None. No row values.
        Safe from another thread (/readyz)."""
        stuck = self._producer.unacked_seen_for()
        if stuck <= after_s:
            return None
        pending = self._producer.produced - self._producer._acked
        why = f"; {self._producer.broker_down}" if self._producer.broker_down else ""
        return (f"broker unreachable: {pending} records not acknowledged for {stuck:.1f}s "
                f"({self.kafka.bootstrap_servers}, stop after kafka.delivery_timeout_s="
                f"{self._producer.delivery_timeout_s:g}s){why}")

    @property
    def in_transaction(self) -> bool:
        return self._tx is not None

    @property
    def next_sequence(self) -> int | None:
        return self._seq

    # ---------------------------------------------------------------- recovery
    def recover(self) -> dict[str, Any] | None:
        """Prepare the topics, read the tail; returns the resume state (None: no stream yet).

        Afterwards the next record gets the highest sequence in the stream + 1
        (duplicates skipped wherever they sit in the tail), and a transaction
        cut off by a crash is closed with an acknowledged ABORTED marker.
        The changes topic is created with infinite retention; a finite one is
        logged as a warning naming the setting. Raises StreamCorrupt on a gap
        in the tail's sequences and when the topic was emptied (low watermark
        above 0), PublishError (retried by the daemon) when the broker reports
        records it does not deliver: neither is ever a new stream (the way
        out is ``cdc stream reset``).
        """
        bs = self.kafka.connection()
        ensure_topic(bs, self.topic, topic_spec(self.kafka, "changes"))
        for warning in retention_warnings(bs, self.topic):
            log.warning(warning, extra={"source": self.source_name})
        if self.kafka.dead_letter_topic:
            ensure_topic(bs, self.kafka.dead_letter_topic, topic_spec(self.kafka, "dead_letter"))
        if self._lease is not None:  # fence any other writer of this stream before its tail is read
            self._lease.acquire(self.topic)
        if self.kafka.encoding == "avro":
            self._publish_avro_schemas()
        tail = read_tail(bs, self.topic, self._kser, self._vser, source=self.source_name)
        if self._outbox is not None:  # its events above the tail's checkpoint are not routed again
            self._outbox.recover(tail)
        self._seq = 1 if tail.last_sequence is None else tail.last_sequence + 1
        # the lease's epoch, above every epoch in the stream (a lease topic recreated since restarts its offsets)
        self.epoch = tail.epoch if self._lease is None else max(self._lease.epoch, tail.epoch + 1)
        self._headers = epoch_headers(self.epoch)
        if tail.open_begin is not None:
            txid = tail.open_begin.get("id")
            log.warning("closing transaction %s cut off by an earlier crash with ABORTED", txid,
                        extra={"source": self.source_name, "txid": txid})
            self._produce(self.topic, aborted_record(self._take_seq(), txid, _now_ms()), None)
            self.flush()
        self._acks.last_resume = tail.resume
        log.info("recovered %s: next sequence %d, writer epoch %d, resume %s", self.topic, self._seq, self.epoch,
                 tail.resume, extra={"source": self.source_name, "position": tail.resume})
        return tail.resume

    def recovered(self) -> int:
        """Called once after recover() (cdc.runtime.daemon.run_source): remembers the stream's last
        sequence (returned) and learns the topic's record size limit."""
        self._recovered_to = (self._seq or 1) - 1
        self._producer.settle()
        limit, cluster_id = _broker_facts(self.kafka.connection(), self.topic)
        self._record_limit = min(self._record_limit, limit)
        if self._producer.idempotence and (cluster_id or "").startswith("tansu") and cluster_id != "tansu_memory":
            # (tansu_memory: the embedded broker on in-memory storage, cdc.dev.broker: no restart keeps data)
            log.warning("broker cluster %r looks like tansu: with persistent storage, a restart of it can drop a "
                        "batch of an idempotent producer without an error (it answers DUPLICATE_SEQUENCE_NUMBER "
                        "for a batch it never wrote); set kafka.idempotence: false for such a broker",
                        cluster_id, extra={"source": self.source_name})
        return self._recovered_to

    def _publish_avro_schemas(self) -> None:
        """Write the writer schemas to the compacted ``<prefix>._schemas`` topic, keyed by id."""
        topic = f"{self.kafka.topic_prefix}._schemas"
        ensure_topic(self.kafka.connection(), topic, topic_spec(self.kafka, "schemas"))
        for serde in (self._kser, self._vser, self._tkser):
            doc = {"id": serde.schema_id, "name": serde.name, "schema": serde.text, "framing": serde.framing}
            self._producer.produce(topic, orjson.dumps(doc), str(serde.schema_id).encode())
        self.flush()

    # ---------------------------------------------------------------- publishing
    def publish(self, event: Any) -> None:
        """Turn one reader event into records (asynchronously produced)."""
        if self._seq is None:
            raise CdcError("Publisher.publish() before recover()", source=self.source_name)
        if self._lease is not None and time.monotonic() >= self._lease.due:
            self._prove_lease()
        t = type(event)
        if self._held is not None:  # a small transaction's records wait for its Commit (_commit_held)
            if t is Commit and self._held_rows is not None and self._commit_held(event):
                return
            if t is ChangeBatch and self._hold(event):
                return
            self._release()
        if t is Change:
            self._change(event)
        elif t is ChangeBatch:
            self._batch(event)
        elif t is Begin:
            if self._tx is not None:
                raise StreamCorrupt("BEGIN inside an open transaction", source=self.source_name,
                                    open=self._tx.txid, txid=event.txid)
            tx = self._tx = _Tx(event.txid, event.ts_ms)
            if self._json:  # the bytes of begin_record's dict (test_wire_conformance holds them equal)
                seq = self._seq  # _take_seq(), without a call per transaction
                self._seq = seq + 1
                value = BEGIN_VALUE % (seq, tx.id_json, tx.ts_json)
                if self._tx_topic is None and not self._per_table and self._outbox is None and _SPLICE_TX is not None \
                        and not _NATIVE_OFF:
                    self._held = value  # produced with the transaction's rows and END, or by _release()
                else:
                    self._produce_bytes(self.topic, value, None)
            else:
                self._produce(self.topic, begin_record(self._take_seq(), event.txid, event.ts_ms), None)
            if self._tx_topic is not None:
                self._tx_records = {}
                self._produce_connect(tx_metadata.begin(self._tx_topic, event.txid, event.ts_ms))
        elif t is Commit:
            self._commit(event)
        elif t is Heartbeat:
            self._heartbeat(event)
        elif t is Idle:
            self._acks.check()  # take in acknowledgements while the source is quiet (cdc.stream.events.Idle)
        elif t is SchemaChange:
            self._schema_change(event)
        else:
            raise CdcError(f"unknown event type {type(event).__name__}", source=self.source_name)

    def _change(self, ch: Change) -> None:
        tx = self._tx
        if tx is None:
            raise StreamCorrupt("row change outside a transaction", source=self.source_name, table=str(ch.table))
        if ch.op == RANGE_OP and self._per_table:  # Debezium has no "delete this key range" record: fail closed
            raise ResyncRangeError(
                f"a resync of {ch.table} cannot go to its per-table topic: Debezium consumers have no record for a "
                "range delete, so they would keep rows the source no longer has. Turn kafka.per_table_topics off "
                "and restart (the source resumes at this chunk), or resync the table with the daemon stopped "
                "(`cdc compare --repair`)", table=str(ch.table), why="per_table_topics", txid=tx.txid)
        before, after, src = ch.before, ch.after, ch.source
        row = after if after is not None else before
        if self._json and not self._per_table and row is not None and (not src or _BASE_KEYS.isdisjoint(src)):
            # The per-row hot path: the same bytes orjson.dumps gives for the dicts of
            # cdc.stream.envelope.data_record (test_wire_conformance holds them equal), spliced from per-table and
            # per-transaction constants with one dumps per row image.
            kv = key_json(row, ch.schema.primary_key if ch.schema is not None else ())
            self._splice([(ch.table, ch.schema)], [(ch.op, kv, NULL if before is None else dumps(before),
                                                     NULL if after is None else dumps(after), source_fields(src))])
            return
        entry = self._entry(ch.table, ch.schema)
        name = entry.name
        n, total, seq = self._count(tx, name, ch.op)
        # Same dicts as cdc.stream.envelope.data_record, built from per-table constants. (Keys keep the base's order.)
        op = ch.op
        if op == "r":
            source = {**entry.base, "ts_ms": tx.ts_ms, "snapshot": "true", **src}
        else:
            source = {**entry.base, "ts_ms": tx.ts_ms, **src}
        # op "t" (TRUNCATE): no row image and, as in Debezium, no key
        key_values = None if row is None else wire.key_values(
            row, ch.schema.primary_key if ch.schema is not None else ())
        value = {"sequence": seq, "before": before, "after": after, "op": op,
                 "ts_ms": int(time.time() * 1000), "source": source,
                 "transaction": {"id": tx.txid, "total_order": total, "data_collection_order": n}}
        vbytes = self._venc(value)
        kbytes = self._kenc({"table": name, "key": key_values})
        if len(vbytes) + len(kbytes) > self._record_limit:
            return self._too_large(op, src, name, key_values, len(vbytes) + len(kbytes), seq)
        self._bytes += len(vbytes)
        self._producer.produce(self.topic, vbytes, kbytes, self._headers)
        if self._per_table:
            self._to_table_topic(ch, key_values, vbytes, TxContext(tx.txid, tx.ts_ms, total, n, seq, value["ts_ms"]))
        self._after_row(seq)

    def _batch(self, ev: ChangeBatch) -> None:
        """A reader's serialized changes (cdc.stream.events.ChangeBatch): spliced into records as they are on the
        JSON changes topic; every other configuration takes them one Change at a time."""
        if self._tx is None:
            raise StreamCorrupt("row changes outside a transaction", source=self.source_name, rows=len(ev))
        if not self._json or self._per_table:
            for ch in ev.changes():
                self._change(ch)
            return
        if None not in ev.tables:
            self._splice(ev.tables, ev.rows)
            return
        for known, row in zip(ev.tables, ev.rows, strict=True):  # rows the reader left as Changes, in their places
            if known is None:
                self._change(row)
            else:
                self._splice([known], [row])

    # ---------------------------------------------------------------- small transactions in one call
    def _hold(self, ev: ChangeBatch) -> bool:
        """Keep ``ev`` with the held BEGIN until the Commit when it is the transaction's first and only batch
        so far, of at most HOLD_ROWS rows of ONE table whose record parts are known (nothing, such as a SCHEMA
        record, has to be written before its rows); else False (nothing kept)."""
        tables = ev.tables
        if self._held_rows is not None or not tables or len(tables) > HOLD_ROWS:
            return False
        known = tables[0]
        if known is None:
            return False
        for other in tables:
            if other is not known:
                return False
        c = self._consts.get(id(known[0]))
        if c is None or c[0] is not known[0] or c[1] is not known[1]:
            return False
        self._held_rows = ev
        return True

    def _release(self) -> None:
        """Produce what is held (BEGIN, then its batch) as it would have been produced without holding: before
        any other record of the stream, a flush or a stop."""
        value, batch = self._held, self._held_rows
        self._held = self._held_rows = None
        if value is not None:
            self._produce_bytes(self.topic, value, None)
        if batch is not None:
            self._batch(batch)

    def _commit_held(self, ev: Commit) -> bool:
        """BEGIN, the held batch's records and END in one C call (``_splice_native.splice_tx``): the bytes, order,
        sequences and counters of BEGIN (publish), :meth:`_splice` and :meth:`_commit` (the conformance tests hold
        them equal). When the C loop leaves a row (above the size limit, a part it does not vouch for), the rest
        and END take those paths after the rows it queued. False when nothing was done (another txid, the
        table's parts changed): the caller releases and takes the ordinary path."""
        tx, batch = self._tx, self._held_rows
        known = batch.tables[0]  # type: ignore[union-attr]
        table = known[0]
        c = self._consts.get(id(table))
        if tx is None or tx.txid != ev.txid or c is None or c[0] is not table or c[1] is not known[1]:
            return False
        rows, name, begin = batch.rows, c[2], self._held  # type: ignore[union-attr]
        nrows = len(rows)
        seq = self._seq  # the BEGIN's is seq - 1
        end_seq = seq + nrows
        end = END_VALUE % (end_seq, tx.id_json, nrows, COLLECTION % (dumps(name), nrows), dumps(ev.ts_ms),
                           dumps(ev.position), dumps(ev.resume))
        self._held = self._held_rows = None
        j, seq, total, n, nbytes, counted, marks, python = self._producer.produce_tx(
            _SPLICE_TX, self.topic, self._headers, batch.tables, rows, known,  # type: ignore[union-attr]
            c[3:] + (tx.ts_json, tx.id_json), seq, int(time.time() * 1000), self._record_limit, begin, end)
        ops = tx.ops  # empty until now: the held batch is the transaction's first and only one
        if j == 1 and nrows == 1:  # one row, through the C loop: its op is the one counted
            ops[(name, rows[0][0])] = 1
        else:
            for op, k in zip("cudrt", counted):
                if k:
                    ops[(name, op)] = k
        self._seq, tx.total = seq, total
        if j:
            tx.counts[name] = n
        if marks & 2:  # END is out: every row went through the C loop
            if seq != end_seq:
                raise StreamCorrupt("splice_tx: the sequences of a transaction do not add up",
                                    source=self.source_name, txid=tx.txid, expected=end_seq, got=seq)
            self._seq = end_seq + 1
            self._bytes += len(begin) + nbytes + len(end)  # type: ignore[arg-type]
            self._tx = None
            self._acks.mark_and_maybe_check(END, (ev, ops), self._bytes, end_seq)
            if end_seq >= self._check_at:
                self._after_row(end_seq)
            return True
        self._bytes += len(begin) + nbytes  # type: ignore[arg-type]
        if python:  # this one row by the Python path (its size refusal or dead letter, its KeyError)
            self._splice_py([known], [rows[j]])
            j += 1
        if j < nrows:
            self._splice(batch.tables[j:], rows[j:])  # type: ignore[union-attr]
        self._commit(ev)
        return True

    def _entry(self, table: TableId, schema: TableSchema | None) -> _TableOut:
        """The table's record constants; writes its SCHEMA record first when ``schema`` is new."""
        entry = self._names.get(id(table))  # by identity: TableId's dataclass __hash__ is slow
        if entry is None or entry.table is not table:
            entry = self._table_entry(table)
        if schema is not None and self._schemas.get(entry.name) is not schema:
            self._table_schema(entry.name, schema)
        return entry

    def _count(self, tx: _Tx, name: str, op: str) -> tuple[int, int, int]:
        """One more row of ``name`` in the transaction: its data_collection_order, total_order, sequence."""
        counts = tx.counts
        n = counts[name] = counts.get(name, 0) + 1
        ops, opkey = tx.ops, (name, op)
        ops[opkey] = ops.get(opkey, 0) + 1
        total = tx.total = tx.total + 1
        seq = self._seq
        self._seq = seq + 1
        return n, total, seq

    def _splice(self, tables: list[Any], rows: list[tuple]) -> None:
        """:meth:`_splice_py`'s records, formatted and produced by the C loop of cdc/publish/_splice_native.c
        (compiled at install; without it, or for a row it does not vouch for -- an op it does not know, a part
        not bytes, a record above the size limit -- :meth:`_splice_py` makes them). Same bytes, same order,
        same counters (tests/unit/cdc/publish/test_publisher_splice_native.py holds them equal)."""
        if _native is None or _NATIVE_OFF:
            return self._splice_py(tables, rows)
        tx = self._tx
        counts, ops, consts, producer = tx.counts, tx.ops, self._consts, self._producer
        now, limit, i, nrows = int(time.time() * 1000), self._record_limit, 0, len(rows)
        while i < nrows:
            known = tables[i]
            table, schema = known
            c = consts.get(id(table))
            if c is None or c[0] is not table or c[1] is not schema:
                c = self._constants(table, schema)  # may write the table's SCHEMA record (self._seq moves)
            name = c[2]
            j, seq, total, n, nbytes, counted, python = producer.produce_spliced(
                _native.splice, self.topic, self._headers, tables, rows, i, known, c[3:] + (tx.ts_json, tx.id_json),
                self._seq, tx.total, counts.get(name, 0), now, limit)
            self._seq, tx.total, self._bytes = seq, total, self._bytes + nbytes
            if j > i:
                counts[name] = n
                for op, k in zip("cudrt", counted):
                    if k:
                        ops[(name, op)] = ops.get((name, op), 0) + k
            if python:  # this one row by the Python path (its size refusal or dead letter, its KeyError)
                self._splice_py([known], [rows[j]])
                j += 1
            i = j
        if self._seq - 1 >= self._check_at:
            self._after_row(self._seq - 1)

    def _splice_py(self, tables: list[Any], rows: list[tuple]) -> None:
        """Data records on the JSON changes topic from the JSON of their parts. ``tables[i]``: (TableId,
        TableSchema | None); ``rows[i]``: (op, key values as cdc.stream.envelope.row_key gives them for that schema,
        before, after, the ``source`` fields after the opening brace or ``}`` when none). The per-row hot
        path: only bytes formatting between the reader's JSON and the producer, with each table's constant
        parts made once per transaction and the counters in locals (written back wherever anything else
        may read them)."""
        tx = self._tx
        counts, ops, limit, consts = tx.counts, tx.ops, self._record_limit, self._consts
        now, idj, ts = int(time.time() * 1000), tx.id_json, tx.ts_json
        values: list[bytes] = []
        keys: list[bytes] = []
        seq, total, nbytes = self._seq, tx.total, 0
        last = None
        for known, row in zip(tables, rows, strict=True):
            if known is not last:
                table, schema = last = known
                c = consts.get(id(table))
                if c is None or c[0] is not table or c[1] is not schema:
                    if values:  # before the SCHEMA record _constants may write
                        self._producer.produce_all(self.topic, values, keys, self._headers)
                        self._bytes += nbytes
                        values, keys, nbytes = [], [], 0
                    self._seq, tx.total = seq, total
                    c = self._constants(table, schema)
                    seq = self._seq
                _, _, name, head, close, shead, stail, stail_r = c
            op, kv, before, after, src = row
            n = counts[name] = counts.get(name, 0) + 1
            opkey = (name, op)
            ops[opkey] = ops.get(opkey, 0) + 1
            total += 1
            kbytes = head + kv + close
            vbytes = VALUE % (seq, before, after, OPS[op], now, shead, ts, stail_r if op == "r" else stail, src, idj,
                               total, n)
            if len(vbytes) + len(kbytes) > limit:  # rare: _too_large takes the row back out of the counters
                if values:  # the rows before it go first (its stop or dead letter names what precedes it)
                    self._producer.produce_all(self.topic, values, keys, self._headers)
                    self._bytes += nbytes
                    values, keys, nbytes = [], [], 0
                self._seq, tx.total = seq + 1, total
                position = orjson.loads(b"{" + src[1:]) if len(src) > 1 else {}
                self._too_large(op, position, name, orjson.loads(kbytes)["key"], len(vbytes) + len(kbytes), seq)
                seq, total = self._seq, tx.total
                continue
            seq += 1
            nbytes += len(vbytes)
            values.append(vbytes)
            keys.append(kbytes)
            if len(values) >= SPLICE_CHUNK:  # a long batch: never all its records held at once
                self._producer.produce_all(self.topic, values, keys, self._headers)
                self._bytes += nbytes
                values, keys, nbytes = [], [], 0
        self._seq, tx.total = seq, total
        self._bytes += nbytes
        self._producer.produce_all(self.topic, values, keys, self._headers)
        if seq - 1 >= self._check_at:
            self._after_row(seq - 1)

    def _constants(self, table: TableId, schema: TableSchema | None) -> tuple:
        """A table's constant record parts (cached in ``_consts`` by the TableId's identity until a schema
        record changes what is known): (table, schema, name, key head, key close, source head, source
        tail, source tail of op 'r'). Writes the table's SCHEMA record first when ``schema`` is new."""
        entry = self._entry(table, schema)
        if schema is not entry.key_schema:
            entry.key_for(schema)
        if len(self._consts) > 10_000:  # a reader that makes a new TableId per row
            self._consts.clear()
        c = self._consts[id(table)] = (table, schema, entry.name, entry.key_head, entry.key_close, entry.source_head,
                                       entry.source_tail, entry.source_tail_r)
        return c

    def _after_row(self, seq: int) -> None:
        """Every ACK_CHECK_EVERY records: a look at the acknowledged prefix (and a progress mark inside a
        long transaction)."""
        if seq >= self._check_at:
            self._check_at = seq + ACK_CHECK_EVERY
            if self._lease is not None and time.monotonic() >= self._lease.due:
                self._prove_lease()
            produced = self._producer.produced
            if produced - self._last_mark >= PROGRESS_EVERY:  # long transaction: show progress before END
                self._last_mark = produced
                self._acks.mark(PROGRESS, None, self._bytes, seq)
            self._acks.check()

    def _too_large(self, op: str, position: dict[str, Any], name: str, key: Any, size: int, seq: int) -> None:
        """A row whose record exceeds the broker's limit: take it back out of the transaction's counts
        and its sequence, then dead-letter it (``kafka.dead_letter_topic``: the reason, table, key, size
        and position, never the row) or raise RecordTooLarge (Terminal: the source stops here)."""
        tx = self._tx
        tx.counts[name] -= 1
        if not tx.counts[name]:
            del tx.counts[name]
        tx.ops[(name, op)] -= 1
        if not tx.ops[(name, op)]:
            del tx.ops[(name, op)]
        tx.total -= 1
        self._seq = seq
        key_text = orjson.dumps(key, default=str).decode()
        err = RecordTooLarge(f"a change of {name} with key {key_text} is {size} bytes as a record, above the "
                             f"broker's limit of {self._record_limit} bytes (message.max.bytes less "
                             f"{RECORD_OVERHEAD} bytes of overhead)", table=name, key=key_text, size=size,
                             limit=self._record_limit, op=op, position=position, txid=tx.txid)
        if not self.kafka.dead_letter_topic:
            raise err
        self.dead_letter(err, None)

    def _table_entry(self, table: TableId) -> _TableOut:
        """The per-table constants of data records, cached by identity."""
        if len(self._names) > 10_000:  # a reader that makes a new TableId per row
            self._names.clear()
        entry = _TableOut(table, self.source_name, self.connector)
        self._names[id(table)] = entry
        return entry

    def _table_schema(self, name: str, schema: TableSchema) -> None:
        self._consts.clear()  # what _splice's cache assumed about the table's schema record
        if self._schemas.get(name) != schema:
            resume = None if self._tx is not None else self.last_resume
            self._produce(self.topic, schema_record(self._take_seq(), name, None, schema, _now_ms(), resume,
                                                        kind=self.connector),
                          {"table": name})
            self._to_schema_change_topic(schema.table, None, schema, _now_ms())
        self._schemas[name] = schema

    def _to_table_topic(self, ch: Change, pk: dict[str, Any], vbytes: bytes, where: TxContext) -> None:
        """The change on its per-table topic. JSON: Debezium's records (cdc.debezium.record: a key change
        is delete + tombstone + create, a delete is followed by a tombstone, TRUNCATE is ``op: t``)."""
        if self._json or self._registry is not None:
            if ch.op == "t" and "compact" in topic_spec(self.kafka, "per_table").config.get("cleanup.policy", ""):
                raise TruncateOnCompactedTopic(
                    f"TRUNCATE of {ch.table} cannot go to its compacted per-table topic: Debezium's op 't' record "
                    "has a null key, which compaction refuses. Set kafka.topics.per_table.cleanup.policy: delete "
                    "(or turn kafka.per_table_topics off) and restart: the source resumes at this TRUNCATE",
                    table=str(ch.table), position=ch.source, txid=where.txid)
            name = str(ch.table)
            for rec in self._debezium.records(ch, where):
                self._produce_connect(rec)
                if rec.value is not None:
                    self._tx_records[name] = self._tx_records.get(name, 0) + 1
            return
        topic = table_topic(self.kafka.topic_prefix, self.source_name, ch.table.db, ch.table.table)
        self._ensure_topic(topic)
        kbytes = None if pk is None else self._tkser.encode(pk)
        self._produce_bytes(topic, vbytes, kbytes)
        if ch.op == "d":
            self._produce_bytes(topic, None, kbytes)  # tombstone: compaction forgets the key

    def _ensure_topic(self, topic: str) -> None:
        """Create a per-table, transaction or schema-change topic at its first record in this process, as
        kafka.topics says for its kind (per-table topics are compacted; the other two are not: compaction
        would keep one record per transaction id / database)."""
        if topic not in self._table_topics:
            kind = {self._tx_topic: "transaction", self._ddl_topic: "schema_change"}.get(topic, "per_table")
            ensure_topic(self.kafka.connection(), topic, topic_spec(self.kafka, kind))
            self._table_topics.add(topic)

    def _produce_connect(self, rec: ConnectRecord) -> None:
        """A Debezium-shaped record (per-table, transaction or schema-change topic) in the configured
        encoding: Avro through the Schema Registry (cdc.debezium.schema_registry), else JSON, with Kafka
        Connect's ``{schema, payload}`` when ``kafka.debezium.schemas``. Its delivery is checked like every
        record's; it is produced before the marker that checkpoints it (END, SCHEMA) is acknowledged."""
        self._ensure_topic(rec.topic)
        if self._registry is not None:
            kbytes, vbytes = self._registry.record_bytes(rec)
        else:
            kbytes, vbytes = json_bytes(rec, self.kafka.debezium.schemas)
        # + the writer epoch: a fenced writer's late record is told from the newer writer's (docs/stream.md)
        self._producer.produce(rec.topic, vbytes, kbytes, rec.headers + tuple(self._headers.items()))

    def _to_schema_change_topic(self, table: TableId | None, ddl: str | None, schema: TableSchema | None,
                                ts_ms: int, tables: list[dict[str, Any]] | None = None) -> None:
        if self._ddl_topic is not None:  # called before self._schemas takes the new definition
            known = table is not None and str(table) in self._schemas
            self._produce_connect(schema_change(self._ddl_topic, self.connector, self.source_name, table, ddl,
                                                schema, ts_ms, known=known, tables=tables))

    def _commit(self, ev: Commit) -> None:
        tx = self._tx
        if tx is None or tx.txid != ev.txid:
            raise StreamCorrupt("COMMIT without its BEGIN", source=self.source_name, txid=ev.txid,
                                open=None if tx is None else tx.txid)
        seq = self._take_seq()
        if self._json:  # the bytes of end_record's dict (test_wire_conformance holds them equal)
            collections = b",".join([COLLECTION % (dumps(t), n) for t, n in tx.counts.items()])
            self._produce_bytes(self.topic, END_VALUE % (seq, tx.id_json, sum(tx.counts.values()), collections, dumps(ev.ts_ms),
                                                    dumps(ev.position), dumps(ev.resume)), None)
        else:
            self._produce(self.topic, end_record(seq, ev.txid, ev.ts_ms, tx.counts, ev.resume, ev.position), None)
        if self._tx_topic is not None:
            counts = self._tx_records if self._per_table and (self._json or self._registry is not None) else tx.counts
            self._produce_connect(tx_metadata.end(self._tx_topic, ev.txid, ev.ts_ms, counts))
        self._tx = None
        self._acks.mark_and_maybe_check(END, (ev, tx.ops), self._bytes, seq)

    def _heartbeat(self, ev: Heartbeat) -> None:
        if self._tx is not None:
            return  # a reader's keep-alive inside a transaction: not a stream record
        now = time.monotonic()
        if now - self._last_hb < self._hb_min and ev.resume == self._last_hb_resume:
            return  # a reader that heartbeats very often: nothing new to say yet
        self._last_hb, self._last_hb_resume = now, ev.resume
        seq = self._take_seq()
        self._produce(self.topic, heartbeat_record(seq, ev.ts_ms, ev.resume), None)
        self._acks.mark(HEARTBEAT, ev, self._bytes, seq)
        self._acks.maybe_check()

    def _schema_change(self, ev: SchemaChange) -> None:
        if self._tx is not None:
            raise StreamCorrupt("schema change inside a transaction", source=self.source_name,
                                txid=self._tx.txid, table=str(ev.table) if ev.table else None)
        name = str(ev.table) if ev.table is not None else None
        seq = self._take_seq()
        before = self._schemas.get(name) if name is not None else None
        changes = changes_json(statement_changes(before, ev.schema, ev.ddl)[0]) if before is not None and ev.schema is not None \
            and ev.ddl is not None else None
        self._produce(self.topic, schema_record(seq, name, ev.ddl, ev.schema, ev.ts_ms, ev.resume, changes,
                                                tables=ev.tables, kind=self.connector),
                      {"table": name} if name else None)
        self._to_schema_change_topic(ev.table, ev.ddl, ev.schema, ev.ts_ms, ev.tables)
        self._consts.clear()
        if name is not None and ev.schema is not None:
            self._schemas[name] = ev.schema
        elif name is not None:
            self._schemas.pop(name, None)
        self._acks.mark(SCHEMA, ev, self._bytes, seq)
        self._acks.maybe_check()

    # ---------------------------------------------------------------- dead letters
    def dead_letter(self, error: CdcError, raw: Any = None) -> None:
        """Send one undecodable change to ``kafka.dead_letter_topic`` (JSON), or raise ``error``.

        The record names the source, the error class, message and fields
        (table, column, position, value) and the raw input (bytes as base64).
        Its delivery is checked like every other record.
        """
        topic = self.kafka.dead_letter_topic
        if not topic:
            raise error
        table = str(getattr(error, "table", None) or "")
        if isinstance(raw, (bytes, bytearray, memoryview)):
            raw_value, raw_enc = base64.b64encode(bytes(raw)).decode(), "base64"
        else:
            raw_value, raw_enc = raw, "json"
        value = {"source": self.source_name, "connector": self.connector, "error": type(error).__name__,
                 "message": getattr(error, "message", str(error)), "fields": getattr(error, "fields", {}),
                 "raw": raw_value, "raw_encoding": raw_enc, "after_sequence": (self._seq or 1) - 1,
                 "txid": self._tx.txid if self._tx else None, "ts_ms": _now_ms()}
        data = orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS)
        self._producer.produce(topic, data, orjson.dumps({"source": self.source_name, "table": table}))
        self.metrics.dead_letter(table or "-")
        log.error("dead-lettered a change of %s: %s", table or "?", error,
                  extra={"source": self.source_name, "txid": value["txid"]})

    # ---------------------------------------------------------------- plumbing
    def _take_seq(self) -> int:
        seq = self._seq
        self._seq = seq + 1
        return seq

    def _produce(self, topic: str, value: dict[str, Any], key: dict[str, Any] | None) -> None:
        self._produce_bytes(topic, self._venc(value), None if key is None else self._kenc(key))

    def _produce_bytes(self, topic: str, vbytes: bytes | None, kbytes: bytes | None) -> None:
        if topic == self.topic:
            if vbytes is not None:
                self._bytes += len(vbytes)
            self._producer.produce(topic, vbytes, kbytes, self._headers)
            return
        self._producer.produce(topic, vbytes, kbytes, self._headers)  # a per-table topic: the writer epoch too

    def _prove_lease(self) -> None:
        """The lease is still ours, or WriterFenced: then nothing queued may reach the broker (purged)."""
        try:
            self._lease.check(self.topic)  # type: ignore[union-attr]
        except WriterFenced as exc:
            self._producer.fence(exc)  # what is queued and in flight is purged now, never sent
            raise

    def _lease_due(self) -> None:
        """The producer's wait on a full queue (OrderedProducer.while_blocked): prove the lease when due."""
        if time.monotonic() >= self._lease.due:  # type: ignore[union-attr]
            self._prove_lease()

    def flush(self, timeout_s: float = 30) -> None:
        """Wait until the broker acknowledged every record; raise PublishError if any failed."""
        if self._held is not None:
            self._release()
        if self._seq is not None and self._producer.produced > self._acks.reported[0]:
            self._acks.mark(PROGRESS, None, self._bytes, self._seq - 1)
        self._producer.flush(timeout_s)
        self._acks.check()

    def close(self) -> None:
        self._producer.close()


class _TableOut:
    """A table's constant parts of data records: its name, the base of the ``source`` block (as a
    dict, and as JSON cut around ``ts_ms``), and the JSON head of record keys for the last schema."""

    __slots__ = ("base", "key_close", "key_head", "key_schema", "name", "pk", "source_head", "source_tail",
                 "source_tail_r", "table")

    def __init__(self, table: TableId, source_name: str, connector: str) -> None:
        self.table, self.name = table, str(table)
        self.base = _source_base(table, source_name, connector)
        self.source_head, self.source_tail, self.source_tail_r = source_parts(self.base)
        self.key_for(None)

    def key_for(self, schema: TableSchema | None) -> None:
        """Key JSON up to the key values: ``pk`` is None (whole row), a column name or a tuple of them."""
        pk = schema.primary_key if schema is not None else ()
        self.key_head, self.key_close = key_head(self.name, pk), key_close(pk)
        self.pk = pk[0] if len(pk) == 1 else (tuple(pk) if pk else None)
        self.key_schema = schema


def _source_base(table: TableId, source_name: str, connector: str) -> dict[str, Any]:
    """The constant part of a data record's ``source`` block for ``table`` (see envelope.data_record)."""
    return source_base(table.db, table.table, source_name, connector)


_BASE_KEYS = frozenset(_source_base(TableId("db", "table"), "source", "connector"))  # a Change's own source fields


def _add_ops(ops: dict[tuple[str, str], int], name: str, counted: dict[str, int]) -> None:
    for op, n in counted.items():
        ops[(name, op)] = ops.get((name, op), 0) + n


def _broker_facts(conn: KafkaConnection, topic: str) -> tuple[int, str | None]:
    """The topic's ``max.message.bytes`` less the record overhead (a large number when the broker does
    not report it: tansu reports no topic configs), and the broker's cluster id (None if unknown)."""
    from confluent_kafka.admin import ConfigResource

    limit, cluster_id = 1 << 62, None
    admin = admin_client(conn)
    try:
        res = admin.client.describe_configs([ConfigResource("topic", topic)], request_timeout=10)
        entry = next(iter(res.values())).result(10).get("max.message.bytes")
        if entry is not None and entry.value:
            limit = int(entry.value) - RECORD_OVERHEAD
    except Exception as exc:  # noqa: BLE001 - the producer's own limit still applies
        log.warning("cannot read max.message.bytes of %s (%s): rows are checked against the producer's "
                    "message.max.bytes only", topic, exc)
    try:
        cluster_id = admin.client.describe_cluster(request_timeout=10).result(10).cluster_id
    except Exception:  # noqa: BLE001, S110 - only used for a warning
        pass
    admin.done()
    return limit, cluster_id


def _now_ms() -> int:
    return int(time.time() * 1000)
