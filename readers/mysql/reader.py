"""``MySqlSource``: the MySQL/MariaDB binlog reader (cdc.contract.Source).

It streams the binlog of the current primary over the replication protocol
(python-mysql-replication, GTID auto-positioning) and yields
Begin/Change*/Commit per committed transaction touching a captured table (the
rows of a rows event the native pass decoded come as one ChangeBatch: _serialized),
SchemaChange per DDL on a captured database, and Heartbeat when idle. A
``TRUNCATE TABLE`` of a captured table is its own transaction holding one
``op: "t"`` change (before and after None), as Debezium publishes it.

Resume contract: ``resume = {"gtid_set": <full GTID state>}``. The state is
the configured/checkpointed state plus every GTID whose transaction has been
fully read (yielded with its Commit, or skipped because it touched no
captured table). The state on a Commit/SchemaChange/Heartbeat is the state
AFTER that event, so ``start(resume)`` continues with the next transaction
and never yields one twice. Skipped transactions advance the state silently;
the next Heartbeat carries it.

Connection loss (our rule, instead of the library's replay-from-start
reconnect, its issue #367):
* between transactions: reconnect from the current state, bounded attempts
  with exponential backoff, each counted (metrics.reconnect()); each attempt
  re-runs primary selection and checkpoint validation (failover.py), and a
  change of host counts metrics.failover();
* inside a transaction whose Begin and N changes were already yielded:
  reconnect the same way (the state excludes the open transaction, so the
  server sends it again from its GTID event) and skip its first N changes:
  a transaction's row events are in the same order on every server that
  logged it. No Heartbeat and no stop happen in between. If the first GTID
  after reconnecting is another one, or the attempts run out, raise
  TransactionInterrupted / SourceUnavailable: the daemon restarts the source
  from the stream tail, the publisher closes the open transaction with
  ABORTED, and the whole transaction is read again. Nothing is yielded
  twice and no partial transaction is ever completed with rows of another.

Divergence, purged binlogs, a wrong password, undecodable values and XA
transactions on captured tables are Terminal errors; so are a rows event
without every column (PartialRowImage: a session with binlog_row_image
MINIMAL/NOBLOB) and a DML logged as a statement (StatementFormatDml), both
raised before the transaction's first record.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pymysql
from pymysql.constants import CR
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import (
    GtidEvent,
    HeartbeatLogEvent,
    MariadbGtidEvent,
    QueryEvent,
    XAPrepareEvent,
    XidEvent,
)
from pymysqlreplication.row_event import (
    DeleteRowsEvent,
    PartialUpdateRowsEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)

from cdc.contract import STOP_CHECK_S, Observation, SourceContext
from cdc.errors import CdcError, Terminal
from cdc.publish.lease import WRITER_ID
from cdc.schema.evolution import DROP_PART
from cdc.stream import wire
from cdc.stream.events import (
    Begin,
    Change,
    ChangeBatch,
    Commit,
    Event,
    Heartbeat,
    Idle,
    SchemaChange,
    TableId,
    TableSchema,
)
from cdc.transforms.mapper import SourceTransforms
from readers.mysql.binlog import binlog_events
from readers.mysql.binlog.decode import ConvertedRow, RowConverter
from readers.mysql.binlog.fastevents import FastBegin, FastGtid, FastPacket, FastStream, FastTableMap, FastXid
from readers.mysql.binlog.fastrows import install as _install_fast_rows
from readers.mysql.binlog.inflate import INFLATED, Inflater
from readers.mysql.binlog.mysql8_events import TAGGED_GTID_EVENT, GtidTaggedLogEvent, payload_events
from readers.mysql.binlog.native_rows import ShapedRow, decode_masks, shaped_rows
from readers.mysql.check import refuse_unsafe, refuse_unsafe_hosts
from readers.mysql.config import MySqlSourceConfig
from readers.mysql.connection import connection_settings, open_connection
from readers.mysql.definitions import (
    Lookahead,
    Unknown,
    alter_clauses,
    definition_at,
    named_columns,
    replaced_columns,
)
from readers.mysql.errors import (
    BinlogPurged,
    CompressedEventError,
    ConnectionLost,
    DecodeError,
    Divergence,
    SourceUnavailable,
    TaggedGtidUndecodable,
    TransactionInterrupted,
)
from readers.mysql.failover import WAY_OUT, choose_primary, default_prober
from readers.mysql.guards import partial_image, refuse_partial, refuse_statement, refuse_unlogged_ddl
from readers.mysql.incremental import IncrementalSnapshots
from readers.mysql.observe import LagCounter, observe
from readers.mysql.patterns import warn_unmatched
from readers.mysql.position import GtidSet, GtidState
from readers.mysql.schema import schema_from_information_schema, schema_from_table_map
from readers.mysql.shared_tls import SharedTlsConnection
from readers.mysql.snapshot import InitialSnapshot
from readers.mysql.tables import (
    DML_WORDS,
    TableFilter,
    ddl_subject,
    ddl_table,
    ddl_tables,
    rows_follow,
    schema_reader,
    table_actions,
)
from readers.mysql.verify import DefinitionChecks, saved

log = logging.getLogger(__name__)
_install_fast_rows()  # same values as the library's row decoder, fewer steps (see fastrows.py)
binlog_events.install()  # events the library would drop come back as UnreadEvent (fail closed)

_LOST = {2006, 2013, 2055}
_DUMP_COMMANDS = {0x12, 0x1E}  # COM_BINLOG_DUMP, COM_BINLOG_DUMP_GTID
_ROWS = (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)
_OP_OF = {WriteRowsEvent: "c", UpdateRowsEvent: "u", DeleteRowsEvent: "d"}  # the library's classes fast_rows makes


def _db(ev: Any) -> str:
    """The default database of a QueryEvent."""
    return ev.schema.decode() if isinstance(ev.schema, bytes) else (ev.schema or "")


def _guarded_connect(**settings: Any) -> pymysql.connections.Connection:
    """pymysql.connect whose reads raise ConnectionLost instead of OperationalError 2006/2013.

    The library catches those two codes and silently reconnects from its
    ORIGINAL start position; turning them into our error keeps reconnects ours.
    """
    address = f"{settings.get('host')}:{settings.get('port')}"
    try:
        return _Guarded(**settings)
    except pymysql.err.OperationalError as exc:
        raise ConnectionLost(f"cannot reach {address}: {exc}", host=address) from exc


class _Guarded(SharedTlsConnection):
    """Once it has sent a binlog dump command, every packet it reads is a binlog event: compressed ones
    are inflated into the plain events they hold (readers/mysql/binlog/inflate.py) before the library sees them."""

    _inflater: Inflater | None = None
    _pending: list[bytes] = []  # noqa: RUF012 - replaced by a fresh list when a dump starts
    _unread: Any = None  # a packet handed back (unread) by FastStream, read again next

    def unread(self, pkt: Any) -> None:
        """The next _read_packet returns ``pkt`` (readers/mysql/binlog/fastevents.py: a packet it leaves to the library)."""
        self._unread = pkt

    def _write_bytes(self, data: bytes) -> None:
        if len(data) > 4 and data[4] in _DUMP_COMMANDS:
            self._inflater, self._pending, self._unread = Inflater(payload_events), [], None
        super()._write_bytes(data)

    def _read_packet(self, packet_type=pymysql.connections.MysqlPacket):
        if self._unread is not None:
            pkt, self._unread = self._unread, None
            return pkt
        if self._inflater is None:
            return self._read_guarded(packet_type)
        if not self._pending:
            pkt = self._read_guarded(packet_type)
            data = pkt.get_all_data()
            if len(data) < 6 or data[0] != 0 or data[5] not in INFLATED:
                return pkt
            self._pending = self._inflater.packets(data)[::-1]
        return packet_type(self._pending.pop(), self.encoding)

    def next_data(self) -> bytes | None:
        """The next binlog event packet's bytes, for FastStream, read as :meth:`_read_packet` reads it (same
        sequence check, same errors, a compressed event's parts inflated first) without the packet objects and
        call layers; None when the next packet must come from :meth:`_read_packet` (one handed back, no dump
        started, the read timeout not set yet): nothing is read then."""
        if self._unread is not None or self._inflater is None or self._current_timeout != self._read_timeout:
            return None
        if self._pending:
            return self._pending.pop()
        read = self._rfile.read  # pymysql's _read_bytes without its call: its errors are _lost()'s
        try:
            try:
                header = read(4)
                if len(header) < 4:
                    raise self._lost(None)
                n = header[0] | header[1] << 8 | header[2] << 16
                if header[3] != self._next_seq_id or n >= 0xFFFFFF:  # pymysql's own read raises or joins the parts
                    return self._read_rest(header, n)
                self._next_seq_id = (self._next_seq_id + 1) % 256
                data = read(n)
            except OSError as exc:
                raise self._lost(exc) from exc
            except BaseException:
                self._force_close()
                raise
            if len(data) < n:
                raise self._lost(None)
            if data[0] == 0xFF:  # an error packet: raised as pymysql raises it
                self._raise_packet(data)
        except (pymysql.err.OperationalError, pymysql.err.InternalError) as exc:
            err = self._ours(exc)
            if err is exc:
                raise
            raise err from exc
        if len(data) < 6 or data[0] != 0 or data[5] not in INFLATED:
            return data
        self._pending = self._inflater.packets(data)[::-1]
        return self._pending.pop()

    def read_failed(self, exc: OSError) -> Exception:
        """What :meth:`next_data` raises when reading the socket raised ``exc`` (the connection closed first): for
        the C read of readers/mysql/binlog/_events_native.c, whose socket reads raise as the buffer's reads do."""
        return self._ours(self._lost(exc))

    def _lost(self, exc: OSError | None) -> pymysql.err.OperationalError:
        """What pymysql's ``_read_bytes`` raises when the socket fails (``exc``) or ends early (None), the
        connection closed."""
        self._force_close()
        detail = f" ({exc})" if exc is not None else ""
        return pymysql.err.OperationalError(CR.CR_SERVER_LOST, f"Lost connection to MySQL server during query{detail}")

    def _read_rest(self, header: bytes, n: int) -> bytes:
        """pymysql's _read_packet after its first header was read: a wrong sequence number raises as it does,
        a packet of 16 MiB or more is joined from its parts."""
        parts = []
        while True:
            if header[3] != self._next_seq_id:
                self._force_close()
                if header[3] == 0:  # MariaDB sends error packet with seqno==0 when shutdown
                    raise pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query")
                raise pymysql.err.InternalError(
                    f"Packet sequence number wrong - got {header[3]} expected {self._next_seq_id}")
            self._next_seq_id = (self._next_seq_id + 1) % 256
            parts.append(self._read_bytes(n))
            if n < 0xFFFFFF:
                break
            header = self._read_bytes(4)
            n = header[0] | header[1] << 8 | header[2] << 16
        data = b"".join(parts)
        if data[0] == 0xFF:
            self._raise_packet(data)
        return data

    def _raise_packet(self, data: bytes) -> None:
        packet = pymysql.connections.MysqlPacket(data, self.encoding)
        if self._result is not None and self._result.unbuffered_active is True:
            self._result.unbuffered_active = False
        packet.raise_for_error()

    def _read_guarded(self, packet_type):
        try:
            return super()._read_packet(packet_type)
        except (pymysql.err.OperationalError, pymysql.err.InternalError) as exc:
            err = self._ours(exc)
            if err is exc:
                raise
            raise err from exc

    def _ours(self, exc: Exception) -> Exception:
        """A read's pymysql error as the reader raises it: a lost connection is ConnectionLost, an error the
        server sent is what :func:`_server_refused` makes of it; any other error stays as it is."""
        if isinstance(exc, pymysql.err.InternalError):
            return _server_refused(exc, f"{self.host}:{self.port}")
        if exc.args and exc.args[0] in _LOST:
            return ConnectionLost(f"binlog connection to {self.host}:{self.port} lost: {exc.args[-1]}",
                                  host=f"{self.host}:{self.port}")
        return exc


def _server_refused(exc: Exception, address: str) -> Exception:
    code, msg = (exc.args + (None, ""))[:2]
    if code == 1236:
        if "purged" in str(msg).lower():
            return BinlogPurged(f"binlog purged past the checkpoint on {address}: {msg}. {WAY_OUT}", host=address)
        return Divergence(f"{address} refused our GTID state: {msg}", host=address, server_error=str(msg))
    return exc


_GTID, _FILE = b',"gtid":', b',"file":'


def _serialized(rows: list[Any], op: str, known: tuple[TableId, Any], gtid: str, file: str | None, pos: int,
                row_no: int, server_id: int, thread: int | None, mapper: Any = None,
                shaped: bool = False) -> ChangeBatch | None:
    """The rows of one rows event decoded by the native pass (ConvertedRow images: nothing left to convert, so
    nothing that could be dead-lettered) as a ChangeBatch: per row, the JSON of its key values, before and after
    images and ``source`` fields, byte for byte what the publisher writes for the equal Change (cdc.stream.events;
    the bytes' rules are cdc.stream.wire's). None when a value has no JSON form (the rows then go out as Changes and
    fail, or not, as they always did).

    ``mapper`` (a shaped table, cdc/transforms): each row change goes through ``mapper.change`` on the decoded
    images BEFORE any byte is made, exactly as the Change path does (_shaped_change): filtered rows are left out
    and take no row number, the op may turn (an update leaving or entering the filter), and only the shaped
    images (masked values, no excluded column) are ever serialized. ``known`` then holds the shaped schema. A
    mapper the C pass implements shapes every image there first (readers/mysql/binlog/native_rows.py shaped_rows).
    ``shaped``: the images are ShapedRows, shaped by the C pass while it decoded them (FastStream.shapes)."""
    dumps = orjson.dumps
    schema = known[1]
    pk = schema.primary_key if schema is not None else ()
    if type(pos) is int and type(server_id) is int and (thread is None or type(thread) is int):
        # wire.source_split({"gtid", "file", "pos", "row", "server_id"[, "thread"]}, "row") cut by hand: the same
        # bytes (the conformance test holds them equal) without a dict and its JSON per rows event
        head = b'%b%b%b%b,"pos":%d,"row":' % (_GTID, dumps(gtid), _FILE, dumps(file), pos)
        tail = b',"server_id":%d}' % server_id if thread is None else \
            b',"server_id":%d,"thread":%d}' % (server_id, thread)
    else:
        fields = {"gtid": gtid, "file": file, "pos": pos, "row": 0, "server_id": server_id}
        if thread is not None:
            fields["thread"] = thread
        head, tail = wire.source_split(fields, "row")
    out = []
    kind: type = ShapedRow if shaped else ConvertedRow
    if mapper is not None and not shaped:
        images = shaped_rows(rows, op, mapper)  # the C pass: excludes and masks on every image, or None
        if images is None:
            return _serialized_shaped(rows, op, known, pk, head, tail, row_no, mapper)
        rows, kind = images, ShapedRow
    try:
        for i, r in enumerate(rows):
            if op == "c":
                row = r["values"]
                before, after = wire.NULL, dumps(row)
            elif op == "d":
                row = r["values"]
                before, after = dumps(row), wire.NULL
            else:
                row = r["after_values"]
                if type(r["before_values"]) is not kind:
                    return None
                before, after = dumps(r["before_values"]), dumps(row)
            if type(row) is not kind:
                return None
            kv = (after if op != "d" else before) if not pk else wire.key_json(row, pk)  # keyless: the image's bytes
            out.append((op, kv, before, after, b"%b%d%b" % (head, row_no + i, tail)))
    except orjson.JSONEncodeError:
        return None
    return ChangeBatch([known] * len(out), out)


def _serialized_shaped(rows: list[Any], op: str, known: tuple[TableId, Any], pk: tuple[str, ...], head: bytes,
                       tail: bytes, row_no: int, mapper: Any) -> ChangeBatch | None:
    """_serialized for a shaped table: the mapper shapes the clear images first, then the shaped ones are
    serialized (the clear images are never handed to orjson). None as _serialized (the rows then take the
    Change path, which shapes them again: the mapper is a pure function of the row)."""
    dumps, null, key_json, shape = orjson.dumps, wire.NULL, wire.key_json, mapper.change
    out = []
    n = 0  # the rows kept: a filtered row takes no row number
    try:
        for r in rows:
            if op == "u":
                before, after = r["before_values"], r["after_values"]
                if type(before) is not ConvertedRow or type(after) is not ConvertedRow:
                    return None
            elif type(r["values"]) is not ConvertedRow:
                return None
            else:
                before, after = (None, r["values"]) if op == "c" else (r["values"], None)
            shaped = shape(op, before, after)
            if shaped is None:
                continue
            sop, sb, sa = shaped
            b = null if sb is None else dumps(sb)
            a = null if sa is None else dumps(sa)
            kv = (a if sop != "d" else b) if not pk else key_json(sa if sop != "d" else sb, pk)
            out.append((sop, kv, b, a, b"%b%d%b" % (head, row_no + n, tail)))
            n += 1
    except orjson.JSONEncodeError:
        return None
    return ChangeBatch([known] * len(out), out)


class MySqlSource:
    """Reader for one ``kind: mysql`` source. See the module docstring for the contract."""

    def __init__(self, config: MySqlSourceConfig, context: SourceContext) -> None:
        self.name = config.name
        self.config = config
        self.metrics = context.metrics
        # -- snapshot hooks (readers/mysql/snapshot.py, incremental.py): initial + incremental snapshots --
        signal = [config.signal_table] if config.signal_table else []
        self.filter = TableFilter(config.tables + signal)
        self._initial_snapshot: InitialSnapshot | None = None
        self._snapshot_running: InitialSnapshot | None = None
        self._incremental = (IncrementalSnapshots(self, config.signal_table, config.snapshot_chunk_rows)
                             if config.signal_table else None)
        # a replica id of its own per process: two daemons of one source (a rolling update) must not make
        # the server drop one's connection for the other's
        self.server_id = config.server_id or 1_000_000 + zlib.crc32(f"{config.name}:{WRITER_ID}".encode()) \
            % 1_000_000_000
        self.gtid_state = GtidState()  # updated in place per transaction; ``state`` is its GtidSet
        self.host: str | None = None
        self.flavor = "mariadb"
        self._stop = threading.Event()
        self._partial: tuple[str, int] | None = None  # (gtid, changes yielded) of a cut transaction
        self._table_schemas: dict[TableId, Any] = {}  # last TABLE_MAP shape per table (for TRUNCATE records)
        self._lookahead = Lookahead()  # the DDL logged after the reader's position (readers/mysql/definitions.py)
        # definitions published at a DDL that the table's next TABLE_MAP must confirm (readers/mysql/verify.py)
        self._checks = DefinitionChecks(config.name)
        self._dead_letter = getattr(context, "dead_letter", None)  # callable(error, raw) or None
        # rows the native pass decoded go out as one ChangeBatch per rows event (see _serialized); the incremental
        # snapshot's window (incremental.py) reads each Change, so with a signal table every row is a Change
        self._serialize = self._incremental is None
        # -- transforms hook (cdc/transforms): the key files are read here, so a bad one stops the start --
        self.transforms = SourceTransforms(config.name, config.transforms,
                                           key_window=config.signal_table is not None)
        self._stream: BinLogStreamReader | None = None
        self._ctl: pymysql.connections.Connection | None = None
        self._prober = default_prober(config.user, config.password.get_secret_value(), config.connect_timeout_s,
                                      config.tls)
        self._lag = LagCounter(self)  # the operations API's lag in transactions (readers/mysql/observe.py)

    @property
    def state(self) -> GtidSet:
        """The GTID state (every transaction fully read) as an immutable GtidSet."""
        return self.gtid_state.freeze()

    @state.setter
    def state(self, value: GtidSet) -> None:
        self.gtid_state = GtidState(value)

    # -- lifecycle ---------------------------------------------------------
    def start(self, resume: dict[str, Any] | None) -> None:
        """Pick the primary and the starting GTID state. Raises Terminal errors on bad checkpoints."""
        checkpoint = GtidSet.parse(resume["gtid_set"]) if resume and resume.get("gtid_set") is not None else None
        try:
            info = self._choose(checkpoint)
            resnapshot = False
        except BinlogPurged as exc:  # divergence was ruled out first (failover.validate)
            if self.config.snapshot != "when_needed":
                raise
            log.warning("source %s: %s; snapshot: when_needed: re-snapshotting the captured tables", self.name, exc)
            self.metrics.resnapshot()
            info, resnapshot, checkpoint, resume = self._choose(None), True, None, None
        for host in refuse_unsafe_hosts(self.config, info.address):  # the chosen host and every candidate
            log.warning("source %s: failover candidate %s unreachable; its settings are checked if it is chosen",
                        self.name, host)
        warn_unmatched(self.config, info.address)  # a pattern matching no table: say so (readers/mysql/patterns.py)
        self.state = checkpoint if checkpoint is not None else info.gtid_state
        self._checks.restore(resume)
        # -- snapshot hook: a new stream (or one cut off mid-snapshot) starts with the tables' rows; a stream
        #    whose log is gone past its checkpoint (when_needed) with them, each table replaced (snapshot.py) --
        if self.config.snapshot != "never" and (resume is None or "snapshot" in resume):
            self._initial_snapshot = InitialSnapshot(self, (resume or {}).get("snapshot"),
                                                     self.config.snapshot_chunk_rows, replace=resnapshot)
            self.state = GtidSet.parse(self._initial_snapshot.gtid_set)
        if self._incremental is not None:
            self._incremental.restore(resume)
        log.info("source %s: streaming from %s (%s) after %s", self.name, info.address, info.flavor,
                 self.state or "<empty>")

    def request_stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        self._close_stream()
        for hook in (self._snapshot_running, self._incremental):  # snapshot hooks
            if hook is not None:
                hook.close()

    def observe(self, checkpoint: dict[str, Any] | None) -> Observation:
        """cdc.contract.Observable: the snapshot read now and the transactions not yet published (observe.py)."""
        return observe(self, self._lag, checkpoint)

    def resume_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {"gtid_set": str(self.gtid_state)}
        if self._checks.unverified:  # a restart still checks them (readers/mysql/verify.py)
            state["unverified"] = saved(self._checks.unverified)
        if self._incremental is not None:  # snapshot hook: incremental snapshot progress
            state.update(self._incremental.progress())
        return state

    # -- streaming -----------------------------------------------------------
    def events(self) -> Iterator[Event]:
        attempt = 0
        rechoose = False
        snapshot, self._initial_snapshot = self._initial_snapshot, None
        if snapshot is not None:  # snapshot hook: op 'r' chunks before the first streamed transaction
            self._snapshot_running = snapshot  # close() ends its consistent read if we stop mid-snapshot
            yield from snapshot.events()
            self._snapshot_running = None
        wrap = self._incremental.wrap if self._incremental is not None else (lambda evs: evs)
        while not self._stop.is_set():
            try:
                if rechoose:  # the host may have changed: probe all, validate our state there
                    self._choose(self.state)
                    rechoose = False
                for ev in wrap(self._stream_events()):
                    attempt = 0
                    yield ev
                return
            except TransactionInterrupted:
                self._close_stream()
                self.metrics.error("TransactionInterrupted")
                raise
            except SourceUnavailable as exc:
                self._close_stream()
                self.metrics.connected(False)
                if attempt >= self.config.reconnect_attempts:
                    raise SourceUnavailable(f"source {self.name}: gave up after {attempt} reconnect attempts: {exc}",
                                            host=self.host, state=str(self.state)) from exc
                delay = min(self.config.reconnect_backoff_s * (2 ** attempt), 5.0)
                attempt += 1
                rechoose = True
                self.metrics.reconnect(exc)
                log.warning("source %s: %s; reconnect %d/%d in %.1fs from %s", self.name, exc, attempt,
                            self.config.reconnect_attempts, delay, self.state)
                if self._partial is None:  # never stop or heartbeat between Begin and Commit
                    if self._stop.wait(delay):
                        return
                    yield Heartbeat(int(time.time() * 1000), self.resume_state())
                else:
                    time.sleep(delay)
            except CdcError as exc:
                self.metrics.error(exc)
                self._close_stream()
                raise

    def _choose(self, checkpoint: GtidSet | None):
        try:
            info = choose_primary(self.config.hosts, self._prober, checkpoint)
        except CdcError as exc:
            if isinstance(exc, Terminal):
                self.metrics.error(exc)
            raise
        if self.host is not None and info.address != self.host:
            self.metrics.failover()
            log.warning("source %s: failover %s -> %s", self.name, self.host, info.address)
            refuse_unsafe(info.address, self.config)  # the new primary may be configured differently
        self.host, self.flavor = info.address, info.flavor
        return info

    def _open_stream(self) -> BinLogStreamReader:
        assert self.host is not None
        # the server's heartbeat events wake the blocking read at least every STOP_CHECK_S: an idle reader sees
        # request_stop() that soon, whatever our own heartbeat interval (or none)
        wake = min(self.config.heartbeat_interval_s or STOP_CHECK_S, STOP_CHECK_S)
        settings = connection_settings(self.host, self.config.user, self.config.password.get_secret_value(),
                                       self.config.connect_timeout_s, read_timeout_s=max(10.0, wake * 4 + 5),
                                       tls=self.config.tls)
        self._ctl = open_connection(self.host, self.config.user, self.config.password.get_secret_value(),
                                    self.config.connect_timeout_s, tls=self.config.tls)
        # every event, unfiltered: the library must not drop anything before our rule sees it (binlog_events.py)
        self._stream = FastStream(
            connection_settings=settings, server_id=self.server_id, blocking=True, resume_stream=True,
            auto_position=str(self.gtid_state) if (self.gtid_state or self.flavor == "mariadb") else None,
            is_mariadb=self.flavor == "mariadb", only_events=binlog_events.ALL_EVENTS,
            slave_heartbeat=wake, pymysql_wrapper=_guarded_connect, enable_logging=False,
        )
        self.metrics.connected(True)
        return self._stream

    def _close_stream(self) -> None:
        for closer in (self._stream, self._ctl):
            try:
                if closer is not None:
                    closer.close()
            except Exception as exc:  # noqa: BLE001 - closing a dead socket may fail; nothing to do
                log.debug("source %s: close failed: %s", self.name, exc)
        self._stream = self._ctl = None

    def _stream_events(self) -> Iterator[Event]:
        stream = self._open_stream()
        hb_every = self.config.heartbeat_interval_s or None  # None: heartbeats off
        last_yield = time.monotonic()
        gtid: str | None = None  # GTID of the open transaction
        began = False
        row_no = skip = 0
        thread: int | None = None
        in_tx = False  # the open GTID group is a transaction, not a standalone DDL
        converters: dict[int, tuple[Any, RowConverter, Any, Any]] = {}
        null_masks: dict[int, bytes] = {}
        self._null_masks = null_masks
        tables: dict[tuple[str, str], tuple[TableId, bool, str]] = {}  # (db, table) -> (TableId, captured, name)
        try:
            it = iter(stream)
            while True:
                try:
                    ev = next(it)
                except StopIteration:
                    raise ConnectionLost(f"{self.host} ended the binlog stream", host=self.host) from None
                except CompressedEventError as exc:  # raised below the library, which knows no GTID or file
                    raise binlog_events.refuse(exc.fields["code"], f"{stream.log_file}:{exc.fields['log_pos']}",
                                               gtid, self.host, f" ({exc.message})") from None
                except TaggedGtidUndecodable as exc:
                    raise binlog_events.refuse(TAGGED_GTID_EVENT, f"{stream.log_file}:{stream.log_pos}", gtid,
                                               self.host, f" ({exc.message})") from None
                except CdcError:
                    raise
                except pymysql.err.MySQLError as exc:
                    raise _server_refused(exc, self.host or "?") from exc
                except OSError as exc:
                    raise ConnectionLost(f"binlog connection to {self.host} failed: {exc}", host=self.host) from exc
                except Exception as exc:  # the library raises anything on bytes it cannot parse
                    raise binlog_events.unparsable(exc, f"{stream.log_file}:{stream.log_pos}", gtid,
                                                   self.host) from exc
                now = time.monotonic()
                t = type(ev)  # the per-transaction events decoded below the library first (fastevents.py)
                if t is FastXid:
                    if gtid is not None:
                        commit = self._commit(gtid, began, ev.timestamp, ev.log_pos, stream)
                        if commit is not None:
                            yield commit
                            last_yield = time.monotonic()
                    gtid, began = None, False
                elif t is FastTableMap:
                    null_masks[ev.table_id] = ev.null_bitmask
                elif t is FastBegin:
                    thread = ev.thread
                elif t is FastGtid or isinstance(ev, (MariadbGtidEvent, GtidEvent, GtidTaggedLogEvent)):
                    gtid, began, row_no, thread = ev.gtid, False, 0, None
                    in_tx = not getattr(ev, "flags", 1) & 1  # MariaDB: not FL_STANDALONE (a CREATE ... SELECT)
                    ts_ms = ev.timestamp * 1000
                    if self._partial is not None:  # re-reading a transaction cut by a lost connection
                        began, skip = self._resume_partial(gtid)
                elif isinstance(ev, _ROWS) and not isinstance(ev, PartialUpdateRowsEvent):
                    known = tables.get((ev.schema, ev.table))
                    if known is None:  # one TableId per table: the publisher caches a table's parts by identity
                        if len(tables) > 10_000:
                            tables.clear()
                        table = TableId(ev.schema, ev.table)
                        known = tables[(ev.schema, ev.table)] = (table, self.filter.matches(table), str(table))
                    table, captured, name = known
                    if not captured:
                        continue
                    if gtid is None:  # a transaction without a GTID event (gtid_mode *_PERMISSIVE)
                        raise binlog_events.refuse(0x22, self._where(ev), None, self.host,
                                                   f": a rows event of {table} outside a GTID transaction")
                    if partial_image(ev):
                        refuse_partial(ev, table, gtid, self._where(ev), stream.table_map.get(ev.table_id),
                                       self.host)  # before the transaction's first record
                    if self._checks.unverified and table in self._checks.unverified:  # a definition published at
                        # a DDL: its rows confirm it (tested for emptiness first: TableId's dataclass hash is Python)
                        correction = self._verify(ev, table, gtid, began)
                        if correction is not None:
                            yield correction
                    if not began:
                        yield Begin(gtid, ts_ms)
                        began = True
                    fast = self._fast_batch(ev, table, gtid, row_no, converters, thread, name) \
                        if type(ev.packet) is FastPacket else None
                    changes = self._changes(ev, table, gtid, row_no, converters, thread) if fast is None else \
                        (fast,) if fast.rows else ()
                    for change in changes:
                        if type(change) is ChangeBatch:  # a whole rows event, already serialized
                            n = len(change.rows)
                            row_no += n
                            if skip:  # its first rows were yielded before the connection dropped
                                done, skip = min(skip, n), skip - min(skip, n)
                                if done == n:
                                    continue
                                change = ChangeBatch(change.tables[done:], change.rows[done:])
                            yield change
                            continue
                        row_no += 1
                        if skip:  # already yielded before the connection dropped
                            skip -= 1
                            continue
                        yield change
                    last_yield = time.monotonic()
                elif isinstance(ev, XidEvent):
                    if gtid is not None:
                        commit = self._commit(gtid, began, ev.timestamp, ev.packet.log_pos, stream)
                        if commit is not None:
                            yield commit
                            last_yield = time.monotonic()
                    gtid, began = None, False
                elif isinstance(ev, QueryEvent):
                    q = ev.query.strip()
                    word = q.split(None, 1)[0].upper() if q else ""
                    if word == "BEGIN":
                        thread = getattr(ev, "slave_proxy_id", None)
                    elif word == "COMMIT":  # non-transactional engines end with a COMMIT query
                        if gtid is not None:
                            commit = self._commit(gtid, began, ev.timestamp, ev.packet.log_pos, stream)
                            if commit is not None:
                                yield commit
                        gtid, began = None, False
                    elif word == "XA":
                        self._refuse_xa(ev, q, gtid, began, stream)
                        if q.upper().startswith(("XA COMMIT", "XA ROLLBACK")) and gtid is not None:
                            self.gtid_state.add(gtid)  # its own GTID; the branch was refused or not ours
                            gtid = None
                    elif word in ("ROLLBACK", "SAVEPOINT"):
                        pass
                    elif word in DML_WORDS and gtid is not None:
                        refuse_statement(q, _db(ev), self.filter, gtid, self._where(ev), self.host)
                    elif word == "TRUNCATE" and gtid is not None and not began:
                        truncate = self._truncate(ev, q, gtid)
                        gtid, began = None, False
                        if truncate is not None:
                            yield from truncate
                            last_yield = time.monotonic()
                    elif gtid is not None and not began:
                        changes = self._schema_change(ev, q, gtid, rows := rows_follow(q, in_tx))
                        gtid, began = (gtid if rows else None), False  # rows_follow: its Xid commits them
                        if changes:
                            yield from changes
                            last_yield = time.monotonic()
                elif isinstance(ev, XAPrepareEvent):
                    self._refuse_xa(ev, "XA PREPARE", gtid, began, stream)
                    if gtid is not None:
                        self.gtid_state.add(gtid)
                    gtid = None
                elif isinstance(ev, TableMapEvent):  # the converter is rebuilt when the table map changes
                    null_masks[ev.table_id] = ev.null_bitmask  # (same bytes: the same object, fastrows.py)
                elif not binlog_events.passive(ev):  # fail closed: anything else stops the source
                    raise binlog_events.refuse(ev.event_type, self._where(ev), gtid, self.host)
                # the server's heartbeat is ours when it comes at our interval (<= STOP_CHECK_S); otherwise ours is
                # due by time and a server heartbeat in between is only a wake-up (Idle)
                if gtid is not None:  # inside a transaction: never a heartbeat or a stop
                    continue
                beat = isinstance(ev, HeartbeatLogEvent)
                if hb_every is not None and (now - last_yield >= hb_every or beat and hb_every <= STOP_CHECK_S):
                    yield Heartbeat(int(time.time() * 1000), self.resume_state())
                    last_yield = time.monotonic()
                    if self._stop.is_set():
                        return
                elif beat:
                    yield Idle()
                if self._stop.is_set():
                    return
        except ConnectionLost:
            if began:  # Begin and `row_no` changes are out: the next stream skips them (see events())
                self._partial = (gtid, row_no - skip)
            raise

    def _resume_partial(self, gtid: str) -> tuple[bool, int]:
        """At the first GTID after a reconnect inside a transaction: (began, rows to skip).

        The binlog holds the transaction's rows in the same order on every
        server that logged it (ROW events, log_slave_updates), so skipping
        the rows already yielded continues it exactly. Any other first GTID
        means the history changed under us: the daemon must ABORT it.
        """
        want, done = self._partial  # type: ignore[misc]
        self._partial = None
        if gtid != want:
            raise TransactionInterrupted(
                f"connection lost inside transaction {want}; after reconnecting the binlog continues with {gtid}",
                gtid=want, found=gtid, host=self.host)
        log.warning("source %s: continuing transaction %s after its first %d changes", self.name, want, done)
        return True, done

    def _changes(self, ev: Any, table: TableId, gtid: str, row_no: int,
                 converters: dict[int, tuple[Any, RowConverter, Any, Any]], thread: int | None) -> Iterator[Change]:
        stream = self._stream
        pos = ev.packet.log_pos
        file = stream.log_file if stream is not None else None
        cached = converters.get(ev.table_id)
        tmap = stream.table_map.get(ev.table_id) if stream is not None else None
        if cached is None or cached[0] is not tmap:
            schema = schema_from_table_map(tmap, self._null_masks.get(ev.table_id))
            self._checks.last_seen[table] = schema
            mapper = self.transforms.mapper(schema)  # the transforms hook: None for a table not shaped
            cached = (tmap, RowConverter(str(table), tmap.columns), schema if mapper is None else mapper.schema,
                      mapper)
            converters[ev.table_id] = cached
            self._table_schemas[table] = cached[2]
            shapes = getattr(stream, "shapes", None)  # the reader's own stream shapes while decoding (fastevents)
            if shapes is not None:
                masks = None if mapper is None else decode_masks(mapper, tmap)
                if masks is None:
                    shapes.pop(ev.table_id, None)
                else:
                    shapes[ev.table_id] = (tmap, masks)
        _, convert, schema, mapper = cached
        try:
            rows = ev.rows
        except Exception as exc:  # noqa: BLE001 - the library raises anything from its decoders
            where = f"{file}:{pos} gtid {gtid}"
            said = "(the table has masked columns: the library's words are not shown)" if mapper else repr(exc)
            raise DecodeError(f"cannot decode a row of {table} at {where}: {said}", table=str(table),
                              position=where, column=None, value=None) from None
        server_id = ev.packet.server_id
        op = "c" if isinstance(ev, WriteRowsEvent) else "u" if isinstance(ev, UpdateRowsEvent) else "d"
        self.metrics.event_read(str(table), op, len(rows))
        # natively decoded rows go out serialized; a shaped table's are shaped first (_serialized), or come shaped
        kind = type(rows[0].get("values", rows[0].get("after_values"))) if rows else None
        if kind is ShapedRow and mapper is None:  # shaped for a mapper this table no longer has: never written
            raise DecodeError(f"rows of {table} were shaped for transforms the table no longer has", table=str(table),
                              position=f"{file}:{pos} gtid {gtid}", column=None, value=None)
        if self._serialize and (kind is ConvertedRow or kind is ShapedRow):
            batch = _serialized(rows, op, (table, schema), gtid, file, pos, row_no, server_id, thread, mapper,
                                shaped=kind is ShapedRow)
            if batch is not None:
                if batch.rows:  # every row filtered out: nothing moves, as on the Change path
                    yield batch
                return
        where = f"{file}:{pos} gtid {gtid}"
        i = 0  # the rows yielded: a filtered or dead-lettered row takes no row number
        for r in rows:
            src = {"gtid": gtid, "file": file, "pos": pos, "row": row_no + i, "server_id": server_id}
            if thread is not None:
                src["thread"] = thread
            try:
                if kind is ShapedRow:  # shaped while decoded: the stream's images already
                    change = Change(table, op, None if op == "c" else r["values" if op == "d" else "before_values"],
                                    None if op == "d" else r["values" if op == "c" else "after_values"], src, schema)
                elif mapper is not None:
                    change = self._shaped_change(r, op, table, src, schema, convert, where, mapper)
                    if change is None:  # the rule's filter keeps the row out (cdc/transforms)
                        continue
                elif op == "c":
                    change = Change(table, op, None, convert(r["values"], where), src, schema)
                elif op == "d":
                    change = Change(table, op, convert(r["values"], where), None, src, schema)
                else:
                    change = Change(table, op, convert(r["before_values"], where),
                                    convert(r["after_values"], where), src, schema)
            except DecodeError as exc:
                if self._dead_letter is None:
                    raise
                row = repr(r)[:2000] if mapper is None else "(not shown: the table has masked columns)"
                self._dead_letter(exc, {"table": str(table), "op": op, "source": src, "row": row})
                continue
            i += 1
            yield change

    def _fast_batch(self, ev: Any, table: TableId, gtid: str, row_no: int,
                    converters: dict[int, tuple[Any, RowConverter, Any, Any]], thread: int | None,
                    name: str) -> ChangeBatch | None:
        """What :meth:`_changes` yields for a rows event the native pass decoded below the library
        (fastevents.fast_rows) of a table whose converter is cached for its TABLE_MAP, as one ChangeBatch
        (possibly empty: every row filtered out), without a generator per event; None when any of that does
        not hold or :func:`_serialized` declines (then :meth:`_changes` takes the event, as before). ``name``:
        ``str(table)``, for the metric."""
        stream = self._stream
        cached = converters.get(ev.table_id)
        if cached is None or stream is None or not self._serialize or cached[0] is not stream.table_map.get(ev.table_id):
            return None
        rows = ev.rows
        if not rows:
            return None
        first = rows[0]
        if type(first.get("values", first.get("after_values"))) is not ConvertedRow:
            return None
        op = _OP_OF.get(type(ev))
        if op is None:
            return None
        packet = ev.packet
        batch = _serialized(rows, op, (table, cached[2]), gtid, stream.log_file, packet.log_pos, row_no,
                            packet.server_id, thread, cached[3])
        if batch is not None:
            self.metrics.event_read(name, op, len(rows))
        return batch

    @staticmethod
    def _shaped_change(r: dict[str, Any], op: str, table: TableId, src: dict[str, Any], schema: Any,
                       convert: RowConverter, where: str, mapper: Any) -> Change | None:
        """The Change of one row of a shaped table: converted, then filtered and shaped (cdc/transforms; None
        when the filter keeps it out); a DecodeError names the column but shows no value of a masked or dropped
        column."""
        try:
            before = convert(r["values"] if op == "d" else r["before_values"], where) if op != "c" else None
            after = convert(r["values"] if op == "c" else r["after_values"], where) if op != "d" else None
        except DecodeError as exc:
            column = exc.fields.get("column")
            if not mapper.hides(column):
                raise
            raise DecodeError(f"cannot decode {table}.{column} at {where} (the value is not shown: the column is "
                              "masked or left out)", table=str(table), column=column, position=where,
                              value=None) from None
        shaped = mapper.change(op, before, after)
        return None if shaped is None else Change(table, shaped[0], shaped[1], shaped[2], src, schema)

    def _commit(self, gtid: str, began: bool, timestamp: int, log_pos: int,
                stream: BinLogStreamReader) -> Commit | None:
        """The state takes ``gtid``; the Commit of a transaction whose Begin was yielded (else None)."""
        self.gtid_state.add(gtid)
        if not began:
            return None
        self.metrics.transaction_read()
        return Commit(gtid, timestamp * 1000, self.resume_state(), {"gtid": gtid, "file": stream.log_file,
                                                                    "pos": log_pos})

    def _truncate(self, ev: Any, query: str, gtid: str) -> list[Event] | None:
        """A TRUNCATE TABLE (its own GTID, a statement in every binlog format) as Debezium publishes it:
        one transaction holding one ``op: "t"`` change (before and after None) for the table.

        None when the table is not captured (the state still advances past the GTID).
        """
        self.gtid_state.add(gtid)
        db = _db(ev)
        named = ddl_table(query, db)
        if named is None or not self.filter.matches(named):
            return None
        schema = self._table_schemas.get(named)
        if schema is None and self._ctl is not None:  # never saw a row of it: the catalog's definition
            try:
                schema = schema_from_information_schema(self._ctl, named.db, named.table)
            except pymysql.err.MySQLError as exc:
                raise ConnectionLost(f"cannot read the schema of {named} from {self.host}: {exc}",
                                     host=self.host) from exc
        schema = self.transforms.shape(schema)
        stream = self._stream
        file = stream.log_file if stream is not None else None
        src = {"gtid": gtid, "file": file, "pos": ev.packet.log_pos, "row": 0, "server_id": ev.packet.server_id}
        self.metrics.event_read(str(named), "t", 1)
        self.metrics.transaction_read()
        ts_ms = ev.timestamp * 1000
        return [Begin(gtid, ts_ms), Change(named, "t", None, None, src, schema),
                Commit(gtid, ts_ms, self.resume_state(), {"gtid": gtid, "file": file, "pos": ev.packet.log_pos})]

    def _schema_change(self, ev: Any, query: str, gtid: str, rows_follow: bool = False) -> list[SchemaChange]:
        """A DDL is its own GTID transaction: advance the state, report it if it concerns us. A CREATE ...
        SELECT (``rows_follow``) is not: the state takes its GTID at the commit of the rows that follow.

        One record per DDL, except for an ALTER that drops a column and adds one of the same name
        (``DROP COLUMN f, ADD COLUMN f ...``): first the definition without those columns (its statement: the
        DROP part, its resume state before the DDL), then the statement's, so that the apply replaces the column
        (a new column, filled with its default) instead of keeping the old values under a new type."""
        db = _db(ev)
        named, captured = ddl_subject(query, db, self.filter)  # RENAME TABLE _t_gho TO t concerns t
        if captured and named is not None:  # raises before the state takes the GTID
            refuse_unlogged_ddl(query, named, gtid, self._where(ev), self.host)
        # each definition as it was AT this DDL, not as the catalog shows it now (readers/mysql/definitions.py);
        # read before the state takes the GTID: a failed read reconnects and reads the DDL again
        read = self._at_position(ev, query, db, gtid, named) if captured else None
        tables = table_actions(query, db, self.filter, read) if read is not None else None
        raw = read(named) if read is not None and named is not None else None
        schema = raw
        out: list[SchemaChange] = []
        if captured:  # the transforms hook, before the state takes the GTID: a rule that no longer fits stops here
            schema = self.transforms.shape(raw)
            tables = self._shaped_actions(tables)
            replaced = replaced_columns(query, db) if raw is not None and not tables else []
            if replaced:
                gone = {c.lower() for c in replaced}
                first = TableSchema(raw.table, tuple(c for c in raw.columns if c.name.lower() not in gone),
                                    tuple(k for k in raw.primary_key if k.lower() not in gone))
                drop = ", ".join("DROP COLUMN `" + c.replace("`", "``") + "`" for c in replaced)
                out.append(SchemaChange(named, f"{DROP_PART} ALTER TABLE "
                                               f"`{named.db}`.`{named.table}` {drop}", self.transforms.shape(first),
                                        ev.timestamp * 1000, self.resume_state()))
        if not rows_follow:
            self.gtid_state.add(gtid)
        if not captured:
            return out
        self._checks.after_ddl(named, raw, tables, gtid)
        if named is not None:  # the shape after the DDL (the same object: the publisher writes it once)
            self._table_schemas.pop(named, None)
            if schema is not None:
                self._table_schemas[named] = schema
        out.append(SchemaChange(named, query, schema, ev.timestamp * 1000, self.resume_state(), tables))
        return out

    def _at_position(self, ev: Any, query: str, db: str, gtid: str, named: TableId | None) -> Callable[
            [TableId], TableSchema | None]:
        """``read(table)``: the table's definition right after this DDL (definitions.definition_at), None when the
        statement drops it, or when it cannot be known and the apply keeps the shape it has (a captured table
        renamed) or takes it from the table's first rows (a CREATE). Otherwise the best definition the reader has
        (verify.DefinitionChecks.unvouched), which the table's next TABLE_MAP confirms or corrects (readers/mysql/verify.py)."""
        conn, stream = self._ctl, self._stream
        if conn is None or stream is None:
            return lambda table: None
        parsed = ddl_tables(query, db)
        kind = parsed.kind if parsed is not None else None
        dropped = set(parsed.tables) if kind == "drop" else set()
        columns = named_columns(query, db) if kind == "alter" else None
        keeps: set[TableId] = set()
        origin: dict[TableId, TableId] = {}  # a renamed table's new name -> its name before the statement
        if kind == "create":
            keeps.add(parsed.tables[0])
        elif kind == "rename":
            for old, new in parsed.renames:
                origin[new] = origin.pop(old, old)
            keeps = {new for new, old in origin.items() if self.filter.matches(old)}
            dropped = set(origin.values()) - set(origin)  # renamed away: no such table after the statement
        # ALTER TABLE t <column clauses>, RENAME TO u: u's shape is not t's, the statement's clauses are read
        altering = query.lstrip()[:5].upper() == "ALTER" and any(c.kind != "none"
                                                                 for c in alter_clauses(query, db) or ())
        catalog = schema_reader(conn, self.host)
        file, end, where = stream.log_file, ev.packet.log_pos, self._where(ev)
        known: dict[TableId, TableSchema | None] = {}

        def later() -> list[Any]:
            try:
                return self._lookahead.after(conn, file, end)
            except pymysql.err.MySQLError as exc:
                raise ConnectionLost(f"cannot list the binlog after {where} on {self.host}: {exc}",
                                     host=self.host) from exc

        def read(table: TableId) -> TableSchema | None:
            if table in dropped:
                return None
            if table in known:
                return known[table]
            statements = later()
            for _ in range(5):  # a DDL logged while the catalog was read: start over (module docstring)
                found = definition_at(table, statements, catalog, columns if table == named else None)
                again = later()
                if len(again) == len(statements):
                    break
                statements = again
            else:
                found = Unknown("(DDL kept coming while the catalog was read)")
            if isinstance(found, Unknown):
                found = None if table in keeps and not altering else self._checks.unvouched(
                    table, catalog(table), query, db, gtid, where, found.blocker,
                    altering and (table == named or table in keeps), origin.get(table, table))
            known[table] = found
            return found
        return read

    def _verify(self, ev: Any, table: TableId, gtid: str, began: bool) -> SchemaChange | None:
        """At the first rows of a table whose published definition is unverified: None when its TABLE_MAP (full
        row metadata) confirms it, else the corrected definition's SCHEMA record, to go before the rows
        (verify.DefinitionChecks.check, which raises UnverifiableDefinition when there is none to publish)."""
        seen = schema_from_table_map(self._stream.table_map.get(ev.table_id), self._null_masks.get(ev.table_id))
        fixed = self._checks.check(table, seen, gtid, self._where(ev), began)
        if fixed is None:
            return None
        shaped = self.transforms.shape(fixed[0])
        self._table_schemas[table] = shaped
        return SchemaChange(table, fixed[1], shaped, ev.timestamp * 1000, self.resume_state())

    def _shaped_actions(self, actions: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        """table_actions with each table's schema shaped by the transforms."""
        if not actions or not self.transforms:
            return actions
        return [a | {"schema": self.transforms.shape(TableSchema.from_json(a["schema"])).to_json()}
                if a.get("schema") is not None else a for a in actions]

    def _where(self, ev: Any) -> str:
        """``file:pos`` of a binlog event of the open stream."""
        return f"{self._stream.log_file if self._stream is not None else None}:{ev.packet.log_pos}"

    def _refuse_xa(self, ev: Any, query: str, gtid: str | None, began: bool, stream: BinLogStreamReader) -> None:
        if began:
            raise DecodeError(
                f"XA transaction on a captured table at {stream.log_file}:{ev.packet.log_pos} gtid {gtid}: "
                "prepared XA branches are not supported", table=None, column=None,
                position=f"{stream.log_file}:{ev.packet.log_pos}", value=query[:200])

