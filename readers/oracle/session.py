"""LogMiner session management on the ADG side (the seed paper's loop).

Two kinds of database session:

* ``Standby`` -- the ADG standby (``standby_dsn``): builds the flat-file
  dictionary (``DBMS_LOGMNR_D.BUILD ... STORE_IN_FLAT_FILE``), reports the
  applied head SCN, lists the logs that hold an SCN range (archived logs from
  ``V$ARCHIVED_LOG`` plus the current standby redo logs from
  ``V$STANDBY_LOG``/``V$LOGFILE``), checks each redo thread's sequence for
  holes, and answers table definitions (``ALL_TAB_COLUMNS``).
* ``LogMinerSession`` -- one session on the separate mining instance
  (``dsn``) co-located with the standby, so it can open the standby's files
  without the standby's own locks (the paper's "enq: WL - contention"). For
  each SCN range: if the log set changed (a log switch) it ends LogMiner and
  adds the new logs, then ``START_LOGMNR`` with the range and the dictionary,
  then reads ``V$LOGMNR_CONTENTS``. After ``session_recycle_s`` it closes
  the connection and opens a new one (LogMiner's PGA only shrinks that way).

The same code runs against ``oracledb`` and against the simulator (dsn
``simulator[:options]``), which answers the same SQL.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import oracledb
import pyarrow as pa

from cdc.stream.events import TableId, TableSchema
from readers.oracle import columns
from readers.oracle.config import OracleSourceConfig
from readers.oracle.errors import ArchiveLogMissing, LogMinerError, MissingLog, RedoGap, SchemaHistoryGone, SessionError

NLS = {
    "NLS_DATE_FORMAT": "YYYY-MM-DD HH24:MI:SS",
    "NLS_TIMESTAMP_FORMAT": "YYYY-MM-DD HH24:MI:SS.FF6",
    "NLS_TIMESTAMP_TZ_FORMAT": "YYYY-MM-DD HH24:MI:SS.FF6 TZH:TZM",
    "NLS_NUMERIC_CHARACTERS": ".,",
}
# V$LOGMNR_CONTENTS columns the reader reads, in this order (see dispatcher.py for the indices)
CONTENTS_SQL = ("SELECT SCN, TIMESTAMP, THREAD#, RAWTOHEX(XID), XIDUSN, XIDSLT, XIDSQN, OPERATION_CODE, SEG_OWNER, "
                "TABLE_NAME, ROW_ID, ROLLBACK, CSF, SQL_REDO, RS_ID, SSN, INFO, STATUS "
                "FROM V$LOGMNR_CONTENTS WHERE SCN >= :1 AND SCN <= :2")
CONTENTS_COLUMNS = ("SCN", "TIMESTAMP", "THREAD#", "XID", "XIDUSN", "XIDSLT", "XIDSQN", "OPERATION_CODE", "SEG_OWNER",
                    "TABLE_NAME", "ROW_ID", "ROLLBACK", "CSF", "SQL_REDO", "RS_ID", "SSN", "INFO", "STATUS")
_NUMBERS = frozenset({"SCN", "THREAD#", "XIDUSN", "XIDSLT", "XIDSQN", "OPERATION_CODE", "ROLLBACK", "CSF", "SSN", "STATUS"})
# fetch_df_batches' requested schema for CONTENTS_SQL: NUMBER columns as int64 (every one holds an integer);
# TIMESTAMP in milliseconds (an Oracle DATE has seconds; the simulator's rows carry milliseconds)
CONTENTS_SCHEMA = pa.schema([(name, pa.int64() if name in _NUMBERS else pa.timestamp("ms") if name == "TIMESTAMP"
                              else pa.string()) for name in CONTENTS_COLUMNS])
STANDBY_LOGS_SQL = ("SELECT MIN(F.MEMBER) AS FILE_NAME, L.FIRST_CHANGE# AS FIRST_CHANGE, L.LAST_CHANGE# AS LAST_CHANGE, "
                    "L.THREAD#, L.SEQUENCE#, L.STATUS FROM V$STANDBY_LOG L, V$LOGFILE F "
                    "WHERE F.GROUP# = L.GROUP# AND (L.ARCHIVED = 'NO' OR L.STATUS = 'ACTIVE') "
                    "GROUP BY F.GROUP#, L.FIRST_CHANGE#, L.LAST_CHANGE#, L.THREAD#, L.SEQUENCE#, L.STATUS ORDER BY 4, 5")
ARCHIVED_LOGS_SQL = ("SELECT NAME, FIRST_CHANGE#, NEXT_CHANGE#, THREAD#, SEQUENCE#, DICTIONARY_BEGIN FROM V$ARCHIVED_LOG "
                     "WHERE NEXT_CHANGE# > :lo AND FIRST_CHANGE# <= :hi AND STATUS = 'A' AND DELETED = 'NO' "
                     "AND STANDBY_DEST = 'NO' ORDER BY THREAD#, SEQUENCE#")
_TRANSIENT = ("ORA-03113", "ORA-03114", "ORA-03135", "ORA-12541", "DPY-1001", "DPY-4011", "DPY-6005")


@dataclass(frozen=True, order=True)
class LogFile:
    thread: int
    sequence: int
    first_scn: int
    next_scn: int
    name: str


ARCHIVE_WAY_OUT = ("Way out: restore the missing archived logs to the standby (RMAN: RESTORE ARCHIVELOG FROM "
                   "SEQUENCE <n> THREAD <t>; then restart), or set `snapshot: when_needed` on the source and restart "
                   "(the captured tables are re-snapshotted and mining continues), or start the stream afresh "
                   "(`cdc stream reset`, rebuild the targets); see the runbook 'Oracle archive log gap'. Keep "
                   "archived logs on the standby longer than the longest outage (RMAN retention / deletion policy).")


@dataclass(frozen=True)
class StandIn:
    """A dev/test tool that serves Oracle DSNs ``<scheme>[:options]`` in-process instead of a database (the
    LogMiner simulator, readers/oracle/sim/simulator.py, registers one when it is imported; cdc.registry
    STAND_INS imports it for a configured DSN of its scheme). Product code never imports the tool."""

    connect: Callable[[str, str], Any]  # (options, role) -> a DB-API connection
    first_scn: Callable[[str], int]  # (options) -> where a new stream without start_scn mines from


_STAND_INS: dict[str, StandIn] = {}


def register_stand_in(scheme: str, stand_in: StandIn) -> None:
    """Serve DSNs ``scheme`` and ``scheme:<options>`` with ``stand_in`` in this process (idempotent)."""
    _STAND_INS[scheme] = stand_in


def stand_in(dsn: str) -> tuple[StandIn, str] | None:
    """(the registered stand-in, its options) for ``dsn``; None for a DSN of the database."""
    scheme, _, options = dsn.partition(":")
    found = _STAND_INS.get(scheme)
    return (found, options) if found is not None else None


def connect(dsn: str, config: OracleSourceConfig, role: str) -> Any:
    """A DB-API connection: oracledb for a real DSN, a registered stand-in (the simulator) for its scheme."""
    if (served := stand_in(dsn)) is not None:
        tool, options = served
        return tool.connect(options, role)
    try:
        return oracledb.connect(user=config.user, password=config.password.get_secret_value(), dsn=dsn,
                                **(config.tls.connect_kwargs() if config.tls else {}))
    except oracledb.Error as exc:
        raise SessionError(f"cannot connect to Oracle ({role}) at {dsn}: {exc}", dsn=dsn) from None


def classify(exc: Exception, what: str, **fields: Any) -> Exception:
    """Turn an oracledb error into the reader's error classes."""
    text = str(exc)
    if any(code in text for code in _TRANSIENT):
        return SessionError(f"{what}: {text}", **fields)
    if "ORA-01291" in text or "ORA-01284" in text or "ORA-00308" in text:
        return MissingLog(f"{what}: a redo log is missing: {text}", **fields)
    return LogMinerError(f"{what}: {text}", **fields)


def _run(conn: Any, sql: str, binds: Any = None) -> list[tuple]:
    cur = conn.cursor()
    try:
        cur.execute(sql, binds or {})
        return cur.fetchall() if cur.description else []
    finally:
        cur.close()


class Standby:
    """Queries on the ADG standby instance. Thread-safe (one lock around the connection)."""

    def __init__(self, config: OracleSourceConfig) -> None:
        self.config = config
        self.dsn = config.standby_dsn or config.dsn
        self._lock = threading.Lock()
        self.conn = connect(self.dsn, config, "standby")

    def query(self, sql: str, binds: Any = None) -> list[tuple]:
        with self._lock:
            try:
                return _run(self.conn, sql, binds)
            except oracledb.Error as exc:
                raise classify(exc, "standby query failed", sql=sql[:80]) from None

    def head_scn(self) -> int:
        return int(self.query("SELECT CURRENT_SCN FROM V$DATABASE")[0][0])

    def build_dictionary(self, filename: str | None = None) -> str:
        """Flat-file dictionary on the standby host; returns its path (for DICTFILENAME).

        ``filename`` (default ``dictionary_file``): a rebuild after a DDL writes a NEW file, so a
        LogMiner session starting meanwhile never opens a half-written one (ORA-01284)."""
        c = self.config
        name = filename or c.dictionary_file
        self.query("BEGIN DBMS_LOGMNR_D.BUILD(DICTIONARY_LOCATION => :location, DICTIONARY_FILENAME => :filename, "
                   "OPTIONS => DBMS_LOGMNR_D.STORE_IN_FLAT_FILE); END;",
                   {"location": c.dictionary_path, "filename": name})
        return f"{c.dictionary_path.rstrip('/')}/{name}"

    def logs_for(self, lo: int, hi: int) -> list[LogFile]:
        """Every log holding SCNs in [lo, hi], per thread contiguous; raises RedoGap / MissingLog.

        Standby logs are listed BEFORE archived logs: a log switch between the two
        queries then shows the switched log in both lists (the archived copy wins),
        never in neither. A hole is re-checked once before it is reported.
        """
        try:
            return self._logs_for(lo, hi)
        except (RedoGap, MissingLog):
            return self._logs_for(lo, hi)

    def _logs_for(self, lo: int, hi: int) -> list[LogFile]:
        found: dict[tuple[int, int], LogFile] = {}
        standby = self.query(STANDBY_LOGS_SQL)
        for name, first, nxt, thread, seq, _ in self.query(ARCHIVED_LOGS_SQL, {"lo": lo, "hi": hi}):
            found[(int(thread), int(seq))] = LogFile(int(thread), int(seq), int(first), int(nxt), name)
        for name, first, last, thread, seq, _ in standby:
            key = (int(thread), int(seq))
            if key not in found and int(first) <= hi:
                found[key] = LogFile(int(thread), int(seq), int(first), int(last) + 1, name)
        logs = sorted(found.values())
        threads = sorted({log.thread for log in logs})
        if not threads:
            raise MissingLog(f"no archived or standby redo log holds SCN {lo}", scn=lo)
        for thread in threads:
            mine = [log for log in logs if log.thread == thread]
            if mine[0].first_scn > lo:
                old = mine[0]
                raise ArchiveLogMissing(
                    f"archived logs gone past the checkpoint: redo thread {thread}: no log holds SCN {lo}; the "
                    f"oldest available is sequence {old.sequence} from SCN {old.first_scn}, so SCN {lo}.."
                    f"{old.first_scn - 1} (sequences before {old.sequence}) can no longer be mined. {ARCHIVE_WAY_OUT}",
                    thread=thread, scn=lo, missing_to=old.sequence - 1, oldest_sequence=old.sequence,
                    oldest_scn=old.first_scn)
            if mine[-1].next_scn <= hi:
                last = mine[-1]
                raise RedoGap(f"redo thread {thread}: no log after sequence {last.sequence} holds SCN {last.next_scn}.."
                              f"{hi} (sequence {last.sequence + 1} onwards is missing)", thread=thread,
                              missing_from=last.sequence + 1, missing_to=None, scn=last.next_scn)
            for a, b in itertools.pairwise(mine):
                if b.sequence != a.sequence + 1:
                    raise RedoGap(f"redo thread {thread}: log sequences {a.sequence + 1}..{b.sequence - 1} are missing "
                                  f"(SCN {a.next_scn}..{b.first_scn - 1})", thread=thread,
                                  missing_from=a.sequence + 1, missing_to=b.sequence - 1, scn=a.next_scn)
        return logs

    def table_schema(self, owner: str, name: str, scn: int | None = None) -> TableSchema:
        """The table's definition from the dictionary: as it was at ``scn`` (a flashback read of the dictionary
        views, ``AS OF SCN``: the schema in force when a row of that SCN was written, whatever DDL ran since), or
        the current one when ``scn`` is None. No columns: the table did not exist then. Raises SchemaHistoryGone
        when the database no longer holds the dictionary's past (undo retention, ORA-01555 / ORA-08180)."""
        as_of = " AS OF SCN :scn" if scn is not None else ""
        binds: dict[str, Any] = {"owner": owner, "name": name} | ({"scn": scn} if scn is not None else {})
        try:
            cols = self.query(f"SELECT {columns.SELECT} FROM ALL_TAB_COLUMNS{as_of} "
                              "WHERE OWNER = :owner AND TABLE_NAME = :name ORDER BY COLUMN_ID", binds)
            pk = self.query(f"SELECT C.COLUMN_NAME FROM ALL_CONSTRAINTS{as_of} K, ALL_CONS_COLUMNS{as_of} C "
                            "WHERE K.OWNER = :owner AND K.TABLE_NAME = :name AND K.CONSTRAINT_TYPE = 'P' "
                            "AND C.OWNER = K.OWNER AND C.CONSTRAINT_NAME = K.CONSTRAINT_NAME ORDER BY C.POSITION", binds)
        except LogMinerError as exc:
            if scn is not None and any(code in str(exc) for code in ("ORA-01555", "ORA-08180", "ORA-08181")):
                raise SchemaHistoryGone(
                    f"the dictionary of {owner}.{name} as of SCN {scn} cannot be read any more ({exc}): the reader "
                    "needs the definition in force at the SCN of the rows it resumes at. Way back: restart the "
                    "source with snapshot: when_needed after `cdc stream reset`, or re-snapshot the table; raise "
                    "UNDO_RETENTION so that restarts within it read the past definition",
                    scn=scn, table=f"{owner}.{name}") from None
            raise columns.unreadable(exc, f"{owner}.{name}") or exc from None
        return TableSchema(TableId(owner, name), columns.columns(f"{owner}.{name}", cols),
                           tuple(r[0] for r in pk))

    def close(self) -> None:
        with self._lock:
            self.conn.close()


class LogMinerSession:
    """One LogMiner session on the mining instance; ``mine(lo, hi, logs)`` yields row batches."""

    def __init__(self, config: OracleSourceConfig, dictfile: Callable[[], str | None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config, self._dictfile, self._clock = config, dictfile, clock
        self.conn: Any = None
        self.opened_at = 0.0
        self.added: tuple[str, ...] = ()
        self.recycles = 0
        self.log_switches = 0

    def _open(self) -> None:
        self.conn = connect(self.config.dsn, self.config, "miner")
        self.opened_at = self._clock()
        self.added = ()
        for key, value in NLS.items():
            _run(self.conn, f"ALTER SESSION SET {key} = '{value}'")

    def _ensure(self) -> None:
        if self.conn is not None and self._clock() - self.opened_at >= self.config.session_recycle_s:
            self.close()  # recycle: LogMiner's PGA is only given back when the session ends
            self.recycles += 1
        if self.conn is None:
            self._open()

    def mine(self, lo: int, hi: int, logs: list[LogFile]) -> Iterator[Any]:
        """Rows with lo <= SCN <= hi, in SCN order, in batches of ``fetch_size``: lists of tuples, or with
        ``pipeline: columnar`` Arrow tables (``fetch_df_batches``, NUMBER columns as int64)."""
        try:
            self._ensure()
            names = tuple(log.name for log in logs)
            if names != self.added:  # first use or a log switch: restart the cycle with the new log set
                if self.added:
                    self.log_switches += 1
                    _run(self.conn, "BEGIN DBMS_LOGMNR.END_LOGMNR; END;")
                for i, name in enumerate(names):
                    opt = "DBMS_LOGMNR.NEW" if i == 0 else "DBMS_LOGMNR.ADDFILE"
                    _run(self.conn, f"BEGIN DBMS_LOGMNR.ADD_LOGFILE(LOGFILENAME => :name, OPTIONS => {opt}); END;",
                         {"name": name})
                self.added = names
            self._start(lo, hi)
            if self.config.pipeline == "columnar":  # Arrow batches, no Python object per row
                for frame in self.conn.fetch_df_batches(CONTENTS_SQL, [lo, hi], self.config.fetch_size,
                                                        requested_schema=CONTENTS_SCHEMA):
                    table = pa.table(frame)
                    if table.num_rows:
                        yield table
                return
            cur = self.conn.cursor()
            cur.arraysize = self.config.fetch_size
            cur.execute(CONTENTS_SQL, [lo, hi])
            while True:
                rows = cur.fetchmany(self.config.fetch_size)  # noqa: the cursor streams
                if not rows:
                    break
                yield rows
            cur.close()
        except oracledb.Error as exc:
            self.close()
            raise classify(exc, f"LogMiner session failed mining SCN {lo}..{hi}", scn=lo) from None

    def _start(self, lo: int, hi: int) -> None:
        strategy = self.config.dictionary
        binds: dict[str, Any] = {"startscn": lo, "endscn": hi}
        if strategy == "flat_file":
            binds["dictfile"] = self._dictfile()
            opts = "DICTFILENAME => :dictfile, OPTIONS => 0"
        elif strategy == "redo_log":
            opts = "OPTIONS => DBMS_LOGMNR.DICT_FROM_REDO_LOGS + DBMS_LOGMNR.DDL_DICT_TRACKING"
        else:
            opts = "OPTIONS => DBMS_LOGMNR.DICT_FROM_ONLINE_CATALOG"
        _run(self.conn, f"BEGIN DBMS_LOGMNR.START_LOGMNR(STARTSCN => :startscn, ENDSCN => :endscn, {opts}); END;",
             binds)

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # the session is being thrown away either way  # noqa: BLE001,S110 -- thrown away either way
                pass
        self.conn, self.added = None, ()
