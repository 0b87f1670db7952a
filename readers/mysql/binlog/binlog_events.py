"""What the reader is handed from the binlog, and the rule for every event it is not built to decode.

The reader asks python-mysql-replication for EVERY event, not a list of the classes it handles: an
event the library maps to no class comes back as ``NotImplementedEvent``, and an event the library
parsed but would drop on its own (a rows event whose TABLE_MAP it did not keep) comes back as
:class:`UnreadEvent` instead of vanishing (:func:`install`). Compressed events were already turned into
plain ones below the library (readers/mysql/binlog/inflate.py).

The rule (:func:`classify`): an event is either one the reader decodes (GTID, TABLE_MAP, rows, query,
XID, XA), one that by definition carries no change of any table (:data:`PASSIVE`: format description,
rotate, heartbeat, checkpoints, GTID lists, annotations of rows events, and the context events of a
statement, whose statement is itself checked), or anything else, which stops the source with
:class:`~readers.mysql.errors.UndecodedEvent` before the transaction is taken into the checkpoint.
Nothing is skipped because a list did not name it: an event type code added by a future server
version stops the reader until it learns it.
"""

from __future__ import annotations

from typing import Any

from pymysqlreplication import binlogstream, packet
from pymysqlreplication.event import (
    BinLogEvent,
    FormatDescriptionEvent,
    HeartbeatLogEvent,
    IntvarEvent,
    MariadbAnnotateRowsEvent,
    MariadbBinLogCheckPointEvent,
    MariadbGtidListEvent,
    MariadbStartEncryptionEvent,
    NotImplementedEvent,
    PreviousGtidsEvent,
    RandEvent,
    RotateEvent,
    RowsQueryLogEvent,
    StopEvent,
    UserVarEvent,
)

from readers.mysql.binlog import json_opaque, mysql8_events, query_status, vector
from readers.mysql.binlog.inflate import EVENT_NAMES, TRANSACTION_PAYLOAD_EVENT
from readers.mysql.errors import UndecodedEvent

_ORIGINAL_WRAPPER = packet.BinLogPacketWrapper

#: event type code -> (name, the server setting or statement that makes a server write it, the fix)
KNOWN_CODES: dict[int, tuple[str, str, str]] = {
    0x00: ("UNKNOWN_EVENT", "", ""),
    0x01: ("START_EVENT_V3", "a pre-5.0 binlog", "replicate from a MySQL 5.6+/MariaDB 10.x server"),
    0x06: ("LOAD_EVENT", "LOAD DATA logged as a statement (binlog_format=STATEMENT/MIXED)",
           "binlog_format=ROW in the writing session"),
    0x07: ("SLAVE_EVENT", "", ""),
    0x08: ("CREATE_FILE_EVENT", "LOAD DATA logged as a statement", "binlog_format=ROW in the writing session"),
    0x09: ("APPEND_BLOCK_EVENT", "LOAD DATA logged as a statement", "binlog_format=ROW in the writing session"),
    0x0A: ("EXEC_LOAD_EVENT", "LOAD DATA logged as a statement", "binlog_format=ROW in the writing session"),
    0x0B: ("DELETE_FILE_EVENT", "LOAD DATA logged as a statement", "binlog_format=ROW in the writing session"),
    0x0C: ("NEW_LOAD_EVENT", "LOAD DATA logged as a statement", "binlog_format=ROW in the writing session"),
    0x11: ("BEGIN_LOAD_QUERY_EVENT", "LOAD DATA logged as a statement (binlog_format=STATEMENT/MIXED)",
           "binlog_format=ROW in the writing session; no client may SET SESSION binlog_format"),
    0x12: ("EXECUTE_LOAD_QUERY_EVENT", "LOAD DATA logged as a statement (binlog_format=STATEMENT/MIXED)",
           "binlog_format=ROW in the writing session; no client may SET SESSION binlog_format"),
    0x14: ("PRE_GA_WRITE_ROWS_EVENT", "a MySQL 5.1.0-5.1.15 binlog", "replicate from a MySQL 5.6+ server"),
    0x15: ("PRE_GA_UPDATE_ROWS_EVENT", "a MySQL 5.1.0-5.1.15 binlog", "replicate from a MySQL 5.6+ server"),
    0x16: ("PRE_GA_DELETE_ROWS_EVENT", "a MySQL 5.1.0-5.1.15 binlog", "replicate from a MySQL 5.6+ server"),
    0x1A: ("INCIDENT_EVENT", ("the server logged an incident: changes may be missing from its binlog (e.g. a "
                              "non-transactional write that failed half-way, or lost events)"),
           "re-snapshot the tables the incident touched after moving past it"),
    0x22: ("ANONYMOUS_GTID_LOG_EVENT", "gtid_mode OFF_PERMISSIVE/ON_PERMISSIVE: a transaction without a GTID",
           "gtid_mode=ON and enforce_gtid_consistency=ON"),
    0x26: ("XA_PREPARE_LOG_EVENT", "", ""),
    0x27: ("PARTIAL_UPDATE_ROWS_EVENT",
           "binlog_row_value_options=PARTIAL_JSON: updates of JSON columns logged as diffs",
           "SET GLOBAL binlog_row_value_options='' (and in my.cnf), then restart the writers"),
    0x28: ("TRANSACTION_PAYLOAD_EVENT", "binlog_transaction_compression=ON",
           "SET GLOBAL binlog_transaction_compression=OFF"),
    0x29: ("HEARTBEAT_LOG_EVENT_V2", "", ""),
    0x2A: ("GTID_TAGGED_LOG_EVENT", "a tagged GTID (SET gtid_next='AUTOMATIC:tag', MySQL 8.3+)",
           "do not use tagged GTIDs on captured tables"),
    0xA4: ("MARIADB_START_ENCRYPTION_EVENT", "", ""),
    # MariaDB log_bin_compress: decoded (readers/mysql/binlog/inflate.py); named here for an event it cannot inflate
    **{code: (name, "log_bin_compress=ON", "SET GLOBAL log_bin_compress=OFF") for code, name in EVENT_NAMES.items()
       if code != TRANSACTION_PAYLOAD_EVENT},
}

#: events that never carry a change of a table (a statement's context events are harmless alone: the
#: statement that uses them is a QueryEvent, checked by the reader)
PASSIVE = (FormatDescriptionEvent, RotateEvent, HeartbeatLogEvent, PreviousGtidsEvent, MariadbGtidListEvent,
           MariadbBinLogCheckPointEvent, MariadbAnnotateRowsEvent, RowsQueryLogEvent, StopEvent,
           MariadbStartEncryptionEvent, IntvarEvent, RandEvent, UserVarEvent)


#: codes the library has no class for that carry no change of a table: IGNORABLE_LOG_EVENT, MySQL group
#: replication's TRANSACTION_CONTEXT_EVENT and VIEW_CHANGE_EVENT, MySQL 8's HEARTBEAT_LOG_EVENT_V2
PASSIVE_CODES = frozenset({0x1C, 0x24, 0x25, 0x29})
_IGNORABLE_F = 0x80  # LOG_EVENT_IGNORABLE_F: "a replica that does not know this type may ignore it"


def passive(ev: Any) -> bool:
    """True when ``ev`` carries no change of any table by definition (see the module docstring).

    An unknown type code is passive only when the server flagged the event ignorable
    (``LOG_EVENT_IGNORABLE_F``), the server's own rule for replicas that do not know a type.
    """
    if isinstance(ev, PASSIVE):
        return True
    if type(ev) is NotImplementedEvent:
        code = ev.event_type
        return code in PASSIVE_CODES or (code not in KNOWN_CODES and bool(ev.packet.flags & _IGNORABLE_F))
    return False


class UnreadEvent(BinLogEvent):
    """An event the library parsed far enough to drop (``_processed`` False): e.g. a rows event whose
    TABLE_MAP it does not hold. Carries the type code and the packet's position fields only."""

    def __init__(self, wrapper: Any) -> None:  # no BinLogEvent.__init__: nothing left to read
        self.packet = wrapper
        self.event_type = wrapper.event_type
        self.timestamp = wrapper.timestamp


class _Wrapper(_ORIGINAL_WRAPPER):
    """The library's packet wrapper, but an event it would drop comes back as an UnreadEvent."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.event is None and self.event_type != 0x13:  # TABLE_MAP: only a filter or freeze drops one
            self.event = UnreadEvent(self)


#: every event class, for ``BinLogStreamReader(only_events=...)``: nothing is filtered in the library
ALL_EVENTS = frozenset(_ORIGINAL_WRAPPER._BinLogPacketWrapper__event_map.values()) | {
    NotImplementedEvent, UnreadEvent, mysql8_events.GtidTaggedLogEvent}


def install_decoders() -> None:
    """Teach the library what it cannot decode alone: MySQL 8.3+ tagged GTID events
    (readers/mysql/binlog/mysql8_events.py), MySQL 9 VECTOR columns (readers/mysql/binlog/vector.py),
    query events with status variables it does not know (readers/mysql/binlog/query_status.py) and dates, times
    and binary strings inside JSON documents (readers/mysql/binlog/json_opaque.py). Idempotent; every user of
    the library (the reader, ``cdc source skip``) calls it."""
    mysql8_events.install()
    vector.install()
    query_status.install()
    json_opaque.install()


def install() -> None:
    """:func:`install_decoders`, and make the library hand back the events it would drop (see
    :class:`UnreadEvent`). Idempotent."""
    install_decoders()
    binlogstream.BinLogPacketWrapper = _Wrapper


def describe(code: int) -> tuple[str, str, str]:
    """(name, setting behind it, fix) of an event type code; unknown codes get a generic fix."""
    name, setting, fix = KNOWN_CODES.get(code, (f"UNKNOWN_TYPE_{code}", "", ""))
    if not setting:
        setting = "a server version or option this reader does not know"
    if not fix:
        fix = ("upgrade the CDC service to a version that decodes it, or turn off the server option that "
               "writes it")
    return name, setting, fix


def unparsable(exc: Exception, where: str, gtid: str | None, host: str | None) -> UndecodedEvent:
    """The UndecodedEvent for an event the binlog library failed to parse (the event after ``where``)."""
    return UndecodedEvent(
        f"the binlog library failed to parse the event after {where} "
        f"{'in transaction ' + gtid if gtid else 'between transactions'} on {host}: {exc!r}. The source stops "
        "before this transaction; its checkpoint does not include it, so nothing is lost. Fix: find the event "
        f"with `mysqlbinlog --start-position` at {where}; if the server wrote something this reader cannot "
        "read, move past the transaction with `cdc source skip` and resync the tables it touched (see the runbook)",
        event_type=None, code=None, position=where, gtid=gtid, setting=None, host=host)


def refuse(code: int, where: str, gtid: str | None, host: str | None, detail: str = "") -> UndecodedEvent:
    """The UndecodedEvent for an event of type ``code`` at ``where`` (``file:pos``) in ``gtid``."""
    name, setting, fix = describe(code)
    inside = f"in transaction {gtid}" if gtid else "outside any GTID transaction"
    return UndecodedEvent(
        f"binlog event {name} (type code {code}) at {where} {inside} on {host}: the reader cannot decode it{detail} "
        f"and it can carry changes of captured tables. Written because of: {setting}. The source stops "
        f"before this transaction; its checkpoint does not include it, so nothing is lost. Fix: {fix}. Events "
        "already written stay in the binlog: restart with a version that decodes them, or move past this "
        f"transaction with `cdc source skip --source <name> --gtid {gtid or '<gtid>'} --yes` and resync the "
        "tables it touched (see the runbook)",
        event_type=name, code=code, position=where, gtid=gtid, setting=setting, host=host)
