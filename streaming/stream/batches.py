"""Cutting the change stream into micro-batches, and reading one input partition.

Driver side (:class:`BoundaryScanner`): follows the topic from a start offset
to its TRUE end (the broker's high watermark is not trusted: tansu reports the
base offset of the last record batch; we read until nothing more arrives)
and remembers every transaction boundary it passed. ``cut()`` picks the end
of the next micro-batch: the last boundary within the record limit, or the
first boundary when a single transaction is larger than the limit (a
transaction is never split). A data record is recognised by its key
(``{"table", "key"}``) without decoding its value. Every record is held to
the sequence rule (cdc.stream.sequence: its sequence peeked from the value's first
bytes): a record at or below the highest sequence already scanned is a
duplicate (a producer retry appended a run twice) and changes nothing, so a
duplicated END is never a boundary inside the next transaction. Markers are
held to the stream's structure (cdc.stream.stream_structure): a BEGIN closed by the
END of another id, an END whose ``event_count`` differs from the records
since its BEGIN, a data record outside a transaction, a HEARTBEAT inside
one... The first record that breaks the structure or the sequence ends the
last batch: the batches before it hold the whole transactions that precede
it, the next one ends just after it, and the engine's check of that batch
(streaming.stream.structure) raises the StreamCorrupt that names it, with
the target at the last whole transaction before it. Runs of plain
transactions (BEGIN, data records, END of one writer, in sequence: the usual
small ones) are taken without the calls per record, ending in exactly the
state record-by-record would (``_take_plain``; a property test holds the
two equal on valid, interleaved and damaged streams): by a C loop
(streaming/stream/_scan_native.c) where it vouches for the bytes (markers in
a narrow JSON grammar it reads as orjson does), by a Python loop where not.

Idle streams (``hold_beats_s``): a cut whose new records are only HEARTBEATs
(no transaction, SCHEMA or ABORTED after the start) is held back (``cut``
returns the start: Spark plans no batch, the target commits nothing) until
``hold_beats_s`` passed since this partition's last cut. Held-back records are
not skipped: the next cut begins at the same start and takes them, with
whatever followed. Spark's checkpoint and the target's progress row therefore
stay where they were (nothing is committed on either side), so a crash or a
stop while a tail is held back resumes exactly as before; only the progress
row's ``applied_at`` on an idle stream moves once per ``hold_beats_s`` instead
of once per heartbeat.

Executor side (:func:`read_range`): reads [start, end) of one partition with
a fresh consumer and yields Arrow record batches of streaming.stream.records rows.
It needs nothing but its :class:`RangePartition`. Offsets below the
partition's low watermark (deleted by retention) raise OffsetsGone, never a
silent skip.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from cdc.config.kafka_settings import KafkaConnection, create_client
from cdc.errors import StreamCorrupt
from cdc.stream.envelope import BEGIN, END, HEARTBEAT, record_epoch
from cdc.stream.sequence import JSON_HEAD
from cdc.stream.stream_structure import StreamStructure
from cdc.stream.wire import record_epochs
from streaming.errors import ApplyError, OffsetsGone

try:  # compiled at install (pyproject ext-modules); without a C compiler the Python loop takes every run
    from streaming.stream import _scan_native  # type: ignore[attr-defined]
except ImportError:
    _scan_native = None
_TAKE_PLAIN = getattr(_scan_native, "take_plain", None)  # tests compare the two paths by setting this to None
_C_INT = 1 << 62  # sequences, epochs and offsets the C loop is handed stay well inside its 64-bit integers

IDLE_POLL_S = 0.15  # no message for this long = we are at the end of the topic
TAIL_POLL_S = 0.06  # ... after a short fetch (> fetch.wait.max.ms, the broker's wait for more)
READ_STALL_S = 120.0  # an executor read that gets nothing for this long fails
SCAN_BUDGET_S = 3.0  # planner time per trigger for finding boundaries when the source outruns the scan
# the scan ahead polls briefly (the planner waits for its current poll when it needs the consumer) and
# takes this many empty polls in a row (~1 s) for the end of the topic
AHEAD_POLL_S = 0.02
AHEAD_EMPTY_POLLS = 50
ARROW_ROWS = 32768  # records per Arrow batch handed to Spark (and per decode)


def consumer_config(where: str | KafkaConnection, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The settings of the source's consumers, driver and executors alike: the connection's (``kafka.client``,
    ``kafka.consumer``: TLS, SASL) over our defaults, then ``extra``."""
    conf = {"group.id": f"cdc-apply-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
            "auto.offset.reset": "error", "fetch.wait.max.ms": 50, "socket.timeout.ms": 10000}
    return {**KafkaConnection.of(where).settings("consumer", conf), **(extra or {})}


def check_retention(consumer: Any, topic: str, partition: int, offset: int) -> None:
    from confluent_kafka import TopicPartition

    low, _high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    if low > offset:
        raise OffsetsGone(f"records {offset}..{low - 1} of {topic}[{partition}] are gone from Kafka (retention); "
                          "the target cannot be brought forward without them: re-snapshot or restore them",
                          topic=topic, partition=partition, offset=offset, low_watermark=low)


@dataclass(slots=True)
class _PartitionScan:
    base: int  # the start offset the scan began at (a boundary)
    scanned_to: int  # next offset to inspect
    boundaries: list[int]  # offsets (next-to-read) just after each boundary record, ascending
    sizes: list[int] = field(default_factory=list)  # per boundary: bytes (keys + values) from base to it
    size: int = 0  # bytes (keys + values) of the records from base to scanned_to
    structure: StreamStructure | None = None  # the stream's structure (cdc.stream.stream_structure); None until synced
    last_seq: int | None = None  # highest sequence taken (cdc.stream.sequence: records at or below it are duplicates)
    hole_ok: bool = False  # a record without a sequence since the last one taken: a jump over it is no gap
    broken_at: int | None = None  # the boundary just after the first record that broke the structure
    last_real: int = -1  # the last boundary that is not a HEARTBEAT (a transaction, SCHEMA, ABORTED, ...)


class BoundaryScanner:
    def __init__(self, where: str | KafkaConnection, topic: str, encoding: str,
                 consumer_extra: dict[str, Any] | None = None) -> None:
        from cdc.stream.serde import get_serdes

        self.topic = topic
        from cdc.stream.sequence import sequence_peeker

        self.key_serde, self.value_serde = get_serdes(encoding)
        self._peek = sequence_peeker(encoding, "confluent", self.value_serde.decode)
        # JSON keys are compact orjson: a data record's key is {"table":..,"key":{..}} and no control record's
        # key has a "key" member, so the bytes tell a data record without decoding anything
        self._json_keys = encoding == "json"
        self._conf = consumer_config(where, consumer_extra)
        self._consumer: Any = None
        self._scans: dict[int, _PartitionScan] = {}
        self._ahead: threading.Thread | None = None  # the scan ahead, while a micro-batch runs
        self._ahead_stop = threading.Event()
        self._ahead_error: BaseException | None = None
        self._backlog: dict[int, bool] = {}  # per partition: the last cut left whole transactions behind
        self._cut_at: dict[int, float] = {}  # per partition: monotonic time of the last cut that moved on
        self._following: _PartitionScan | None = None  # the scan the consumer was last assigned for

    def _client(self) -> Any:
        # metadata and watermark calls may run beside the scan ahead (librdkafka handles are thread-safe);
        # whatever assigns and consumes settles it first
        if self._consumer is None:
            self._consumer = create_client("consumer", self._conf)
        return self._consumer

    def partitions(self) -> list[int]:
        md = self._client().list_topics(self.topic, timeout=10)
        t = md.topics.get(self.topic)
        if t is None or t.error is not None or not t.partitions:
            raise ApplyError(f"changes topic {self.topic!r} does not exist on the broker", topic=self.topic)
        return sorted(t.partitions)

    def earliest(self, partition: int) -> int:
        from confluent_kafka import TopicPartition

        low, _ = self._client().get_watermark_offsets(TopicPartition(self.topic, partition), timeout=10)
        return low

    def true_end(self, partition: int) -> int:
        """Next offset after the last record that exists now (reads past the high watermark)."""
        from confluent_kafka import TopicPartition

        self._settle()
        c = self._client()
        low, high = c.get_watermark_offsets(TopicPartition(self.topic, partition), timeout=10)
        end = pos = max(low, high - 1)
        c.assign([TopicPartition(self.topic, partition, pos)])
        self._following = None
        while msgs := c.consume(num_messages=5000, timeout=IDLE_POLL_S):
            end = max([end] + [m.offset() + 1 for m in msgs if m.error() is None])
        return end

    def boundaries(self, partition: int, start: int, enough_at: int | None = None,
                   enough_bytes: int | None = None) -> list[int]:
        """Boundaries after ``start``, scanning toward the end of the partition.

        The scan stops at the end, or once it passed ``enough_at`` (or ``enough_bytes`` of records after
        ``start``) with a boundary beyond ``start``, or after SCAN_BUDGET_S with one: a source that writes
        faster than we scan must not keep the planner here forever."""
        self._settle()
        scan = self._scans.get(partition)
        if scan is None or start < scan.base or (start > scan.base and start not in scan.boundaries
                                                  and start != scan.scanned_to):
            check_retention(self._client(), self.topic, partition, start)
            scan = self._scans[partition] = _PartitionScan(start, start, [])
        self._follow(partition, scan, start, enough_at, self._size_limit(partition, start, enough_bytes))
        i = bisect.bisect_right(scan.boundaries, start)
        del scan.boundaries[:max(0, i - 1)]  # forget boundaries before start, keep memory bounded
        del scan.sizes[:max(0, i - 1)]
        return [b for b in scan.boundaries if b > start]

    def _follow(self, partition: int, scan: _PartitionScan, start: int, enough_at: int | None,
                enough_size: int | None = None, c: Any = None) -> None:
        from confluent_kafka import KafkaError, TopicPartition

        ahead = c is not None  # called by the scan ahead, with the consumer it may use
        c = c or self._client()
        tp = TopicPartition(self.topic, partition, scan.scanned_to)
        if self._following is not scan or not _stands_at(c, tp):
            c.assign([tp])
            self._following = scan  # the scan whose records the consumer hands out from here on
        began, empty, short = time.monotonic(), 0, False
        while not (ahead and self._ahead_stop.is_set()):
            have_one = bool(scan.boundaries) and scan.boundaries[-1] > start
            # with a boundary beyond start: stop once past enough_at, out of time, or at the high watermark of
            # the last fetch (tansu's is the base offset of its last record batch, which a fetch returns whole:
            # still the end; a live topic never ends, so cut at what we have rather than chase it)
            if have_one and ((enough_at is not None and scan.scanned_to > enough_at)
                             or (enough_size is not None and scan.size > enough_size)
                             or (not ahead and time.monotonic() - began > SCAN_BUDGET_S)
                             or self._at_high(c, tp, scan.scanned_to)):
                return
            # after a short fetch with a boundary in hand the planner only checks briefly for more (one fetch wait)
            timeout = AHEAD_POLL_S if ahead else TAIL_POLL_S if short and have_one else IDLE_POLL_S
            msgs = c.consume(num_messages=5000, timeout=timeout)
            if not msgs:
                empty += 1
                # the planner stops at the first empty poll (the end, as far as this trigger cares); the scan
                # ahead shares the broker with the executors reading the batch, so a slow fetch is not the end
                if not ahead or empty >= AHEAD_EMPTY_POLLS:
                    return
                continue
            empty, short = 0, len(msgs) < 5000
            first = scan.scanned_to
            # the usual fetch: exactly the next records, none an error: taken as one run (see _take)
            if [m.offset() for m in msgs] == list(range(first, first + len(msgs))) \
                    and not any(m.error() is not None for m in msgs):
                self._take(scan, first, [m.key() for m in msgs], [m.value() for m in msgs],
                           record_epochs([m.headers() for m in msgs]))
                continue
            for m in msgs:
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    if m.error().code() == KafkaError.OFFSET_OUT_OF_RANGE:
                        check_retention(c, self.topic, partition, scan.scanned_to)
                    raise ApplyError(f"reading {self.topic}[{partition}] failed: {m.error()}", topic=self.topic)
                off = m.offset()
                if off < scan.scanned_to:
                    continue
                if off > scan.scanned_to and scan.scanned_to == scan.base:
                    check_retention(c, self.topic, partition, scan.scanned_to)
                self._take_one(scan, off, m.key(), m.value(), record_epoch(m.headers()))

    def _take_one(self, scan: _PartitionScan, offset: int, key: bytes | None, value: bytes | None,
                  epoch: int) -> None:
        """Record ``offset`` scanned: counted, and a boundary after it when :meth:`_boundary` says so."""
        scan.scanned_to = offset + 1
        scan.size += (len(key) if key else 0) + (len(value) if value else 0)
        kind = self._boundary(scan, offset, key, value, epoch)
        if kind is not None:
            scan.boundaries.append(offset + 1)
            scan.sizes.append(scan.size)
            if kind != "HEARTBEAT":
                scan.last_real = offset + 1

    def _take(self, scan: _PartitionScan, first: int, keys: list[bytes | None], values: list[bytes | None],
              epochs: list[int]) -> None:
        """Records ``first``, ``first + 1``, ... (their keys, values and writer epochs) scanned in order: runs of
        plain transactions by :meth:`_take_plain`, every other record by :meth:`_boundary`."""
        n, i = len(values), 0
        plain = self._json_keys
        while i < n:
            check = scan.structure
            if plain and check is not None and scan.broken_at is None and scan.last_seq is not None \
                    and not scan.hole_ok and not check.in_transaction:
                i = self._take_plain(scan, check.epoch, first, keys, values, epochs, i)
                if i >= n:
                    break
            self._take_one(scan, first + i, keys[i], values[i], epochs[i])
            i += 1

    @staticmethod
    def _take_plain(scan: _PartitionScan, epoch: int, first: int, keys: list[bytes | None],
                    values: list[bytes | None], epochs: list[int], i: int) -> int:
        """Take whole plain transactions from position ``i`` on, as :meth:`_boundary` would take them record by
        record, without its per-record calls: a run of BEGIN (no key), data records (JSON keys with a "key"
        member), END (no key) of one transaction id, with consecutive sequences, one writer epoch (0, or the
        structure's current one: ``epoch``), an ``event_count`` equal to the data records (at least one), and
        HEARTBEATs between transactions. Returns the position of the first record it did not take: the first
        that is anything else (a duplicate, a gap, a SCHEMA, another epoch, a broken rule), or the BEGIN of
        the transaction it was in; :meth:`_boundary` goes on from there, with the structure's state exactly
        what it was after the last record taken (none of these records changes it: an epoch watermark moves
        only on a higher epoch, which this leaves to :meth:`_boundary`)."""
        n, last, bounds, sizes = len(values), scan.last_seq, scan.boundaries, scan.sizes
        taken, begin, txid, tx_epoch, rows = i, -1, None, 0, 0
        size = taken_size = scan.size  # bytes through the record before i; through the last record taken
        head, loads = JSON_HEAD.match, orjson.loads
        # between transactions the C loop takes what it vouches for first (the same records, the same state)
        c_loop = _TAKE_PLAIN if type(keys) is list and type(values) is list and type(epochs) is list \
            and type(epoch) is int and type(first) is int and type(size) is int \
            and -_C_INT < epoch < _C_INT and 0 <= first < _C_INT and 0 <= size < _C_INT else None
        fast = c_loop
        while i < n:
            if begin < 0 and fast is not None and type(last) is int and -_C_INT < last < _C_INT:
                i, size, last, real = fast(keys, values, epochs, i, last, epoch, size, first, bounds, sizes)
                if i > taken:
                    taken, taken_size, scan.last_seq = i, size, last
                    if real >= 0:
                        scan.last_real = real
                if i >= n:
                    break
                fast = None  # the Python loop takes the next transaction or HEARTBEAT, then the C loop again
            v, e = values[i], epochs[i]
            m = head(v) if v is not None else None
            if m is None or int(m.group(1)) != last + 1:
                break
            k = keys[i]
            size += len(v)  # counted from here on (a record not taken is not counted: see taken_size)
            if k is not None:  # a data record of the open transaction
                if begin < 0 or e != tx_epoch or b'"key":' not in k:
                    break
                rows += 1
                size += len(k)
            else:
                try:
                    d = loads(v)
                except orjson.JSONDecodeError:
                    break
                status = d.get("status") if type(d) is dict else None
                if status == BEGIN:
                    if begin >= 0 or type(e) is not int or (e and e != epoch):
                        break
                    begin, txid, tx_epoch, rows = i, d.get("id"), e, 0
                elif status == END:
                    count = d.get("event_count")
                    if begin < 0 or e != tx_epoch or d.get("id") != txid or not rows or type(count) is not int \
                            or count != rows:
                        break
                    begin, taken, taken_size = -1, i + 1, size
                    bounds.append(first + taken)
                    sizes.append(size)
                    scan.last_real = first + taken
                    scan.last_seq = last + 1
                    fast = c_loop
                elif status == HEARTBEAT:
                    if begin >= 0 or type(e) is not int or (e and e != epoch):
                        break
                    taken, taken_size = i + 1, size
                    bounds.append(first + taken)
                    sizes.append(size)
                    scan.last_seq = last + 1
                    fast = c_loop
                else:
                    break
            last += 1
            i += 1
        scan.scanned_to, scan.size = first + taken, taken_size
        return taken

    @staticmethod
    def _at_high(c: Any, tp: Any, position: int) -> bool:
        """``position`` is at or past the high watermark of the last fetch response."""
        high = c.get_watermark_offsets(tp, cached=True)
        return high is not None and 0 <= high[1] <= position

    def _boundary(self, scan: _PartitionScan, offset: int, key: bytes | None, value: bytes | None,
                  epoch: int | None = None) -> str | None:
        """None when the record is not a batch boundary, else what ends there: its marker status, "DATA" (a
        record outside any transaction, or one that does not decode: the engine judges it), or "BROKEN".

        Every record is held to the sequence rule (its sequence peeked from the value's first bytes) and,
        from the first BEGIN, HEARTBEAT or SCHEMA with a resume state on (a scan may start after a
        duplicated run), to the stream's structure (cdc.stream.stream_structure: markers decoded, data records
        counted by their keys; their tables and transaction ids are the engine's to check; every record's
        writer epoch, ``epoch``, from its header). The first
        record that breaks either ends a batch ("BROKEN") and no later record is a boundary: the batches
        before it end at the last whole transaction, the next one ends right after it, and the engine's
        check of that batch raises the StreamCorrupt that names it."""
        if scan.broken_at is not None:
            return None
        check = scan.structure
        outside = None if check is not None and check.in_transaction else "DATA"
        try:
            data = self._json_keys and key is not None and b'"key":' in key
            if not data:
                k = self.key_serde.decode(key) if key is not None else None
                data = isinstance(k, dict) and "key" in k
            seq = self._peek(value)
            value_dict = None if data or value is None else self.value_serde.decode(value)
        except Exception:  # noqa: BLE001 - the engine reports undecodable records with their offset
            value_dict, seq, data = None, None, False
        if seq is None:  # no sequence: the engine stops on it (or dead-letters it)
            scan.hole_ok = True
            if check is not None and check.in_transaction:
                check.rows(offset, None, 1, None)
            return outside
        if scan.last_seq is not None:
            if seq <= scan.last_seq:
                return None  # a duplicate (a retried produce): it neither opens nor closes anything
            if seq != scan.last_seq + 1 and not scan.hole_ok:
                return self._broken(scan, offset)  # a gap: the engine names it
        scan.last_seq, scan.hole_ok = seq, False
        status = None if data or value_dict is None else value_dict.get("status")
        if check is None:
            if status == "BEGIN" or status == "HEARTBEAT" or (status == "SCHEMA" and value_dict.get("resume")
                                                                  is not None):
                check = scan.structure = StreamStructure(self.topic)
            else:
                return None if status == "BEGIN" else (status or "DATA")
        try:
            if data or value_dict is None:
                check.row(offset, seq, epoch=epoch)
            else:
                check.record(offset, seq, None, value_dict, epoch)
        except StreamCorrupt:
            return self._broken(scan, offset)
        if check.in_transaction:
            return None
        return None if status == "BEGIN" else (status or "DATA")

    @staticmethod
    def _broken(scan: _PartitionScan, offset: int) -> str:
        scan.broken_at = offset + 1
        return "BROKEN"

    def scan_ahead(self, ends: dict[int, int], records: int, max_bytes: int | None = None) -> None:
        """Go on scanning past ``ends`` (per partition whose last cut left a backlog) in the background,
        ``records`` records deep, while the micro-batch up to there is read and applied: the next ``cut``
        finds its boundaries scanned already.
        Any other call first stops the scan ahead (keeping what it scanned) and re-raises its failure."""
        self._settle()
        # only behind a backlog: on a live tail (the cut took all there was) the next batch is small anyway,
        # and polling beside it would only take CPU from the batch and add to its latency
        todo = [(p, self._scans[p], e) for p, e in ends.items() if p in self._scans and self._backlog.get(p)]
        if not todo or records <= 0:
            return
        c = self._client()

        def work() -> None:
            try:
                for p, scan, e in todo:
                    if self._ahead_stop.is_set():
                        return
                    enough_size = self._size_limit(p, e, max_bytes)
                    if scan.scanned_to < e + records and (enough_size is None or scan.size <= enough_size):
                        self._follow(p, scan, e, e + records, enough_size, c)
            except BaseException as exc:  # noqa: BLE001 - handed to the next call on the planner's thread
                self._ahead_error = exc

        self._ahead_stop.clear()
        self._ahead = threading.Thread(target=work, name=f"cdc-scan-ahead-{self.topic}", daemon=True)
        self._ahead.start()

    def _settle(self) -> None:
        if self._ahead is not None:
            self._ahead_stop.set()
            self._ahead.join()
            self._ahead = None
        if self._ahead_error is not None:
            exc, self._ahead_error = self._ahead_error, None
            raise exc

    def cut(self, partition: int, start: int, max_records: int | None, not_after: int | None = None,
            hold_beats_s: float = 0.0, max_bytes: int | None = None) -> int:
        """The end offset of the next micro-batch of ``partition`` (== start: nothing whole to read, or
        only heartbeats within ``hold_beats_s`` of the last cut: see the module docstring): the last
        boundary within ``max_records`` records and ``max_bytes`` bytes (keys and values) of ``start``, or the
        first boundary when the first transaction alone is larger."""
        enough = start + max_records if max_records is not None else None
        bounds = [b for b in self.boundaries(partition, start, enough, max_bytes)
                  if not_after is None or b <= not_after]
        if not bounds:
            return start
        if len(bounds) > 1 and bounds[-1] == self._scans[partition].broken_at:
            bounds.pop()  # whole transactions first; the batch that holds the broken record comes alone, next
        now = time.monotonic()
        if hold_beats_s > 0 and self._scans[partition].last_real <= start \
                and now - self._cut_at.get(partition, -hold_beats_s) < hold_beats_s:
            return start
        self._cut_at[partition] = now
        if max_records is None and max_bytes is None:
            return bounds[-1]
        i = bisect.bisect_right(bounds, start + max_records) if max_records is not None else len(bounds)
        limit = self._size_limit(partition, start, max_bytes)
        if limit is not None:
            scan = self._scans[partition]
            j = bisect.bisect_left(scan.boundaries, bounds[0])
            i = min(i, bisect.bisect_right(scan.sizes, limit, j, j + len(bounds)) - j)
        self._backlog[partition] = i < len(bounds)  # whole transactions left beyond this batch's limit
        return bounds[i - 1] if i > 0 else bounds[0]

    def size_at(self, partition: int, offset: int) -> int | None:
        """Bytes (keys and values) of the records the scan of ``partition`` passed from its base to ``offset``:
        known at the base, at a boundary it still holds and where it stands; else None."""
        scan = self._scans.get(partition)
        if scan is None:
            return None
        if offset == scan.scanned_to:
            return scan.size
        if offset == scan.base:
            return 0
        i = bisect.bisect_left(scan.boundaries, offset)
        return scan.sizes[i] if i < len(scan.boundaries) and scan.boundaries[i] == offset else None

    def _size_limit(self, partition: int, start: int, max_bytes: int | None) -> int | None:
        """The scan's byte count (:meth:`size_at`) that ``max_bytes`` after ``start`` reaches; None: no limit
        (none given, or the bytes before ``start`` are not known)."""
        base = self.size_at(partition, start) if max_bytes is not None else None
        return None if base is None else base + max_bytes

    def seen_to(self) -> dict[int, int]:
        """Per partition scanned: the offset after the last record the scan has seen (the stream head as far
        as the planner knows; reported to Spark's progress as the source's latest offset)."""
        return {p: scan.scanned_to for p, scan in self._scans.items()}

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing: the scan ahead's failure no longer matters
            self._settle()
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


@dataclass(frozen=True, slots=True)
class RangePartition:
    """One Spark input partition: records [start, end) of one topic partition. ``kafka``: how to reach the
    broker (bootstrap servers, or a KafkaConnection with its TLS/SASL settings: pickled to the executor)."""

    kafka: str | KafkaConnection
    topic: str
    partition: int
    start: int
    end: int
    encoding: str = "json"


def _stands_at(consumer: Any, tp: Any) -> bool:
    """``consumer`` is assigned ``tp``'s partition alone and the next record it hands out is at ``tp.offset``:
    the scan goes on where it stopped, and assigning again would drop what the client fetched ahead (up to
    queued.min.messages records, read from the broker again by the next fetch)."""
    from confluent_kafka import TopicPartition

    assigned = consumer.assignment()
    if len(assigned) != 1 or assigned[0].topic != tp.topic or assigned[0].partition != tp.partition:
        return False
    at = consumer.position([TopicPartition(tp.topic, tp.partition)])
    return len(at) == 1 and at[0].error is None and at[0].offset == tp.offset


def split_range(kafka: str | KafkaConnection, topic: str, partition: int, start: int, end: int, encoding: str,
                per_split: int, size: int | None = None, per_split_bytes: int | None = None) -> list[RangePartition]:
    """[start, end) as the fewest input partitions of at most ``per_split`` records (and, given the range's
    ``size`` in bytes, of about ``per_split_bytes`` bytes at most), of equal size (within one record): a batch a
    little over ``per_split`` becomes two halves read in parallel, not a full partition and a sliver (one task
    reading alone while the other core waits)."""
    if end <= start:
        return []
    parts = -(-(end - start) // max(1, per_split))
    if size and per_split_bytes:
        parts = min(end - start, max(parts, -(-size // max(1, per_split_bytes))))
    bounds = [start + (end - start) * i // parts for i in range(parts + 1)]
    return [RangePartition(kafka, topic, partition, a, b, encoding) for a, b in itertools.pairwise(bounds)]


def read_range(p: RangePartition, consumer_extra: dict[str, Any] | None = None) -> Iterator[Any]:
    """Yield pyarrow RecordBatches (streaming.stream.records schema) of records [p.start, p.end)."""
    from confluent_kafka import KafkaError, TopicPartition

    if p.end <= p.start:
        return
    decode = _chunk_decoder(p)
    # the range is read whole: fetch big (measured on tansu: half the wall time of the defaults for 200k records)
    fetch = {"fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 10_485_760, **(consumer_extra or {})}
    c = create_client("consumer", consumer_config(p.kafka, fetch))
    try:
        check_retention(c, p.topic, p.partition, p.start)
        c.assign([TopicPartition(p.topic, p.partition, p.start)])
        offsets: list[int] = []
        keys: list[bytes | None] = []
        values: list[bytes | None] = []
        epochs: list[int] = []
        expected = p.start
        last_progress = time.monotonic()
        while expected < p.end:
            # consume() waits until it has num_messages OR the timeout passed: keep the timeout short
            msgs = c.consume(num_messages=min(5000, p.end - expected), timeout=0.1)
            if not msgs:
                if time.monotonic() - last_progress > READ_STALL_S:
                    raise ApplyError(f"no records from {p.topic}[{p.partition}] at offset {expected} for "
                                     f"{READ_STALL_S:.0f}s (range {p.start}..{p.end})", topic=p.topic, offset=expected)
                continue
            last_progress = time.monotonic()
            # the usual fetch: exactly the next records, no error, none at or past the end: taken whole (a quarter
            # less CPU per record in this read than the loop below, which takes anything else record by record)
            run = range(expected, expected + len(msgs))
            if run[-1] < p.end and [m.offset() for m in msgs] == list(run) \
                    and not any(m.error() is not None for m in msgs):
                offsets.extend(run)
                keys.extend([m.key() for m in msgs])
                values.extend([m.value() for m in msgs])
                epochs.extend(record_epochs([m.headers() for m in msgs]))
                expected = run[-1] + 1
            else:
                for m in msgs:
                    if m.error() is not None:
                        if m.error().code() == KafkaError._PARTITION_EOF:
                            continue
                        if m.error().code() == KafkaError.OFFSET_OUT_OF_RANGE:
                            check_retention(c, p.topic, p.partition, expected)
                        raise ApplyError(f"reading {p.topic}[{p.partition}] failed: {m.error()}", topic=p.topic)
                    off = m.offset()
                    if off < expected:
                        continue
                    if off >= p.end:
                        expected = p.end
                        break
                    if off > expected:
                        check_retention(c, p.topic, p.partition, expected)
                    offsets.append(off)
                    keys.append(m.key())
                    values.append(m.value())
                    epochs.append(record_epoch(m.headers()))
                    expected = off + 1
            if len(offsets) >= ARROW_ROWS:
                yield decode(offsets, keys, values, epochs)
                offsets, keys, values, epochs = [], [], [], []
        if offsets:
            yield decode(offsets, keys, values, epochs)
    finally:
        c.close()


def _chunk_decoder(p: RangePartition) -> Any:
    """decode(offsets, keys, values, epochs) -> RecordBatch: DuckDB for JSON, record by record otherwise."""
    if p.encoding == "json":
        from streaming.stream.decode import JsonChunkDecoder

        return JsonChunkDecoder(p.partition).decode
    import pyarrow as pa

    from cdc.stream.serde import get_serdes
    from streaming.stream.records import FIELDS, arrow_schema, to_row

    schema = arrow_schema()
    key_serde, value_serde = get_serdes(p.encoding)

    def decode(offsets: list[int], keys: list, values: list, epochs: list[int]) -> Any:
        rows = [to_row(p.partition, o, k, v, key_serde, value_serde, e)
                for o, k, v, e in zip(offsets, keys, values, epochs)]
        return _batch(pa, schema, FIELDS, rows)

    return decode


def _batch(pa: Any, schema: Any, fields: tuple[str, ...], rows: list[tuple]) -> Any:
    cols = list(zip(*rows))
    return pa.RecordBatch.from_arrays([pa.array(col, type=schema.field(f).type) for f, col in zip(fields, cols)],
                                      schema=schema)
