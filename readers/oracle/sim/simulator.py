"""A LogMiner simulator with a DB-API connection: the reader's stand-in for Oracle.

No Oracle server exists where this project is built and tested. The reader
therefore talks to this module through the same calls it makes on an
``oracledb`` connection (``cursor()``, ``execute(sql, binds)``,
``fetchmany()``, ``close()``); the simulator answers the session's SQL from
the workload model (readers/oracle/sim/workload.py):

* ``ALTER SESSION SET NLS_...``                      recorded
* ``SELECT CURRENT_SCN FROM V$DATABASE``             the standby's applied head SCN
* ``SELECT SUPPLEMENTAL_LOG_DATA_MIN, SUPPLEMENTAL_LOG_DATA_ALL FROM V$DATABASE``  the ``supplemental``
                                                     option (YES / NO / IMPLICIT, as Oracle reports them)
* ``... FROM ALL_LOG_GROUPS (DBA_LOG_GROUPS) WHERE LOG_GROUP_TYPE = 'ALL COLUMN LOGGING' AND OWNER = :owner``
                                                     the tables with ALL COLUMNS supplemental logging
* ``... FROM V$STANDBY_LOG L, V$LOGFILE F ...``      the current standby redo log per thread
* ``... FROM V$ARCHIVED_LOG ...``                    archived logs overlapping ``:lo``..``:hi``
* ``DBMS_LOGMNR_D.BUILD`` (flat file)                writes the dictionary file (read-only
                                                     standby refuses STORE_IN_REDO_LOGS: ORA-16000)
* ``DBMS_LOGMNR.ADD_LOGFILE`` / ``START_LOGMNR`` / ``END_LOGMNR``  session state; START checks the
                                                     dictionary file (ORA-01284) and that the added logs
                                                     cover the SCN range on every thread (ORA-01291)
* ``SELECT <cols> FROM V$LOGMNR_CONTENTS WHERE SCN > :1 AND SCN <= :2``  rows, lazily, in SCN order
                                                     (also as Arrow batches: ``SimConnection.fetch_df_batches``,
                                                     the shape of python-oracledb's ``Connection.fetch_df_batches``)
* ``ALL_TAB_COLUMNS`` / ``ALL_CONS_COLUMNS``           table definitions for the change schema, sizes
                                                     included (:func:`catalog_row`; ``no_sizes``: ORA-00904)
* ``... FROM ALL_TABLES WHERE OWNER = :owner``       the dictionary's tables of that schema
* ``SELECT MIN(START_SCN) FROM V$TRANSACTION``       start SCN of the oldest transaction open at the head
* ``SELECT <cols> FROM "S"."T" AS OF SCN :scn [WHERE <keyset>] ORDER BY <key> FETCH FIRST n ROWS ONLY``
                                                     a flashback read: the table as the model has it at
                                                     that SCN (see :meth:`Simulator.table_at`), columns
                                                     typed as oracledb returns them (NUMBER as int,
                                                     ``TO_CHAR(col)`` as its text, DATE as datetime)

Errors are raised as ``oracledb.DatabaseError`` with the ORA- text Oracle uses.
Other WHERE conditions in the contents query are ignored (the reader filters
tables itself). Several connections share one ``Simulator`` (standby and
mining instances, one per parallel LogMiner session).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import multiprocessing
import os
import pickle
import re
import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import oracledb
import pyarrow as pa

from readers.oracle.session import StandIn, register_stand_in
from readers.oracle.sim import evolve
from readers.oracle.sim.workload import (
    ADDED_COLUMN,
    COLUMN_TYPES,
    COLUMNS,
    DECLARED,
    OPNAME,
    SCHEMA,
    TYPE_COLUMNS,
    TYPES_TABLE,
    Model,
    Workload,
    base_row,
    table_name,
)

CONTENT_COLUMNS = ("SCN", "TIMESTAMP", "THREAD#", "XID", "XIDUSN", "XIDSLT", "XIDSQN", "OPERATION_CODE",
                   "OPERATION", "SEG_OWNER", "TABLE_NAME", "ROW_ID", "ROLLBACK", "CSF", "SQL_REDO", "RS_ID",
                   "SSN", "INFO", "STATUS")
# V$LOGMNR_CONTENTS columns of type NUMBER: python-oracledb's data frames give them as float64 unless a
# requested schema asks for another type (int64 here: every one of them is an integer)
NUMBER_CONTENT_COLUMNS = frozenset({"SCN", "THREAD#", "XIDUSN", "XIDSLT", "XIDSQN", "OPERATION_CODE", "ROLLBACK",
                                    "CSF", "SSN", "STATUS"})
_EPOCH = dt.datetime(2024, 1, 1)
_LOCK = threading.Lock()
_INSTANCES: dict[str, Simulator] = {}


def instance(options: str) -> Simulator:
    """The shared simulator for a ``simulator[:options]`` DSN (one per distinct option string)."""
    with _LOCK:
        sim = _INSTANCES.get(options)
        if sim is None:
            sim = _INSTANCES[options] = Simulator(Workload.parse(options))
        return sim


class Simulator:
    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.model = Model(workload)
        w = workload
        self.head = self.model.end_scn if not w.head_step else min(self.model.end_scn, w.base_scn + w.head_step)
        if w.head_limit:
            self.head = min(self.head, w.head_limit)
        self.sessions_started = 0
        self.dictionary_builds = 0
        self._lock = threading.Lock()
        drop = w.drop_log.split(":") if w.drop_log else None
        self.dropped = (int(drop[0]), int(drop[1])) if drop else None
        self._rendered: dict[tuple, str] = {}  # (lo, hi, column indices, known tables) -> batch file
        self._rendered_arrow: dict[tuple, str] = {}  # the same key -> Arrow IPC file (prerender(arrow=True))
        self._prebuilt: dict[str, list[list[tuple]]] = {}  # batch file -> its batches, decoded (prerender)
        self._states: dict[int, dict[str, list[dict]]] = {}  # scn -> table -> rows (flashback reads)

    def prerender(self, directory: str, select: str, first_scn: int, range_size: int, batch: int = 5000,
                  in_memory: bool = False, arrow: bool = False) -> int:
        """Render the V$LOGMNR_CONTENTS rows of the ranges ``[first_scn + k * range_size, ...]`` (up to the
        head) into pickled batch files in ``directory``; a later query for exactly one of those ranges, with
        the same columns and dictionary, replays its file instead of generating the rows (any other query
        still generates them). For benchmarks: a real Oracle does this work on another host, so the
        database's own work stays out of the reader's timing. Needs a fixed head (``head_step=0``).
        ``in_memory``: also keep the decoded batches, so that a replay hands out prebuilt row tuples (no
        decoding at all: a fetch that costs nothing, which no real driver does; memory: ~1 kB per row).
        ``arrow``: also write each range as an Arrow IPC file (NUMBER columns int64), which
        ``fetch_df_batches`` replays memory-mapped, as python-oracledb fills Arrow buffers natively.
        Returns the number of rows rendered."""
        if self.workload.head_step:
            raise ValueError("prerender needs head_step=0 (all redo on the standby at once)")
        idx = _columns(" ".join(select.upper().split()))
        known = frozenset(self.dictionary()["tables"])
        cursor = self.connect("miner").cursor()
        total = 0
        for lo in range(first_scn, self.head + 1, range_size):
            hi = min(lo + range_size - 1, self.head)
            path = os.path.join(directory, f"contents-{lo}-{hi}.pickle")
            with open(path, "wb") as fh:
                rows: list[tuple] = []
                for row in cursor._generate(lo, hi, idx, set(known)):
                    rows.append(row)
                    if len(rows) >= batch:
                        pickle.dump(rows, fh, protocol=pickle.HIGHEST_PROTOCOL)
                        total, rows = total + len(rows), []
                if rows:
                    pickle.dump(rows, fh, protocol=pickle.HIGHEST_PROTOCOL)
                    total += len(rows)
            self._rendered[(lo, hi, tuple(idx), known)] = path
            if arrow:
                apath = path[:-len(".pickle")] + ".arrow"
                schema = contents_schema([CONTENT_COLUMNS[i] for i in idx], pa.int64())
                with pa.OSFile(apath, "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
                    for rows in _replay(path):
                        writer.write_batch(_record_batch(rows, schema))
                self._rendered_arrow[(lo, hi, tuple(idx), known)] = apath
            if in_memory:
                self._prebuilt[path] = list(_replay(path))
        return total

    def connect(self, role: str = "miner") -> SimConnection:
        return SimConnection(self, role)

    def poll_head(self) -> int:
        with self._lock:
            if self.workload.head_step:
                self.head = min(self.model.end_scn, self.head + self.workload.head_step)
                if self.workload.head_limit:
                    self.head = min(self.head, self.workload.head_limit)
            return self.head

    # -- redo logs -------------------------------------------------------------------------------------

    def log(self, thread: int, seq: int) -> tuple[str, int, int]:
        w = self.workload
        first = w.base_scn + (seq - 1) * w.log_scns
        return f"/u01/oradata/STBY/arch/{thread}_{seq}.arc", first, first + w.log_scns

    def seq_of(self, scn: int) -> int:
        return (scn - self.workload.base_scn) // self.workload.log_scns + 1

    def archived(self, lo: int, hi: int) -> list[tuple]:
        """Archived logs (complete, below the current log, not deleted: ``purged_before``) overlapping [lo, hi]."""
        cur = self.seq_of(self.head)
        rows = []
        for thread in range(1, self.workload.threads + 1):
            for seq in range(max(1, self.seq_of(lo), self.workload.purged_before), min(cur - 1, self.seq_of(hi)) + 1):
                if (thread, seq) == self.dropped:
                    continue
                name, first, nxt = self.log(thread, seq)
                rows.append((name, first, nxt, thread, seq, "YES" if seq == 1 else "NO"))
        return rows

    def standby(self) -> list[tuple]:
        """The current standby redo log of each thread (being written: LAST_CHANGE# = head)."""
        seq = self.seq_of(self.head)
        return [(self.log(t, seq)[0].replace("arch", "srl"), self.log(t, seq)[1], self.head, t, seq, "ACTIVE")
                for t in range(1, self.workload.threads + 1)]

    def log_by_name(self, name: str) -> tuple[int, int, int, int] | None:
        base = os.path.basename(name).split(".")[0]
        try:
            thread, seq = (int(x) for x in base.split("_"))
        except ValueError:
            return None
        if (thread, seq) == self.dropped and "/arch/" in name:
            return None
        _, first, nxt = self.log(thread, seq)
        return thread, seq, first, (self.head + 1 if "/srl/" in name else nxt)

    # -- flashback (AS OF SCN) -----------------------------------------------------------------------

    def table_at(self, scn: int, table: str) -> list[dict[str, str | None]]:
        """Rows of ``table`` (e.g. ``T1``) at ``scn``, ordered by ID: every pre-existing row a transaction
        of the workload touches (base_row), plus the effects of every transaction committed at or below
        ``scn``, in commit order. Values are the model's SQL_REDO texts (a DATE as ``TO_DATE(...)``)."""
        with self._lock:
            states = self._states.get(scn)
        if states is None:
            states = self._state_at(scn)
            with self._lock:
                self._states[scn] = states
                while len(self._states) > 16:
                    self._states.pop(next(iter(self._states)))
        return states.get(table, [])

    def _state_at(self, scn: int) -> dict[str, list[dict]]:
        w, model = self.workload, self.model
        if w.big_txn_rows:
            raise _err("ORA-00600: internal error (the simulator does not model AS OF with big_txn_rows)")
        rows: dict[tuple[str, int], dict] = {}
        commits = []
        for t in range(w.transactions):
            tx = model.txn(t)
            for table, ident in tx.base_keys:
                rows[(table_name(table), ident)] = base_row(ident)
            end = self.tx_slots(t)[1]
            if tx.committed and model.scn_of(end) <= scn:
                commits.append((end, t))
        for _, t in sorted(commits):
            for op, table, before, after in model.txn(t).expected:
                if op == "t":  # TRUNCATE TABLE
                    rows = {k: v for k, v in rows.items() if k[0] != table_name(table)}
                    continue
                key = (table_name(table), int((after or before)["ID"]))
                if op == "d":
                    rows.pop(key, None)
                else:
                    rows[key] = dict(after)
        out: dict[str, list[dict]] = {}
        for (table, ident), row in sorted(rows.items()):
            out.setdefault(table, []).append(row)
        return out

    def tx_slots(self, t: int) -> tuple[int, int]:
        """Global slots of transaction ``t``'s first record (START) and last (COMMIT / ROLLBACK)."""
        lanes = self.workload.lanes
        lane, k = t % lanes, t // lanes
        starts = self.model._lane_starts[lane]
        return starts[k] * lanes + lane, (starts[k + 1] - 1) * lanes + lane

    def oldest_open(self, scn: int) -> int | None:
        """Start SCN of the oldest transaction open at ``scn`` (started at or below, ended above), if any."""
        model, oldest = self.model, None
        for t in range(self.workload.transactions):
            first, last = (model.scn_of(g) for g in self.tx_slots(t))
            if first <= scn < last and (oldest is None or first < oldest):
                oldest = first
        return oldest

    def supplemental_database(self) -> tuple[str, str]:
        """V$DATABASE (SUPPLEMENTAL_LOG_DATA_MIN, SUPPLEMENTAL_LOG_DATA_ALL) of the ``supplemental`` option.

        Oracle reports MIN as IMPLICIT when only a database-wide ALL (or PK/UI) logging turned it on."""
        parts = set(filter(None, self.workload.supplemental.split("+")))
        db_all = "db_all" in parts
        return ("YES" if "min" in parts else "IMPLICIT" if db_all else "NO", "YES" if db_all else "NO")

    def all_column_log_groups(self) -> list[tuple[str, str]]:
        """(OWNER, TABLE_NAME) of every table with an ALL COLUMN LOGGING log group."""
        parts = set(filter(None, self.workload.supplemental.split("+")))
        tables = sorted(name.split(".", 1)[1] for name in self.dictionary()["tables"])
        named = {t for p in parts for t in p.split(":") if t.startswith("T")}
        return [(SCHEMA, t) for t in tables if "all" in parts or t in named]

    def evolve_ddl_scn(self, step: int) -> int:
        """The SCN of the DDL row of evolve step ``step``."""
        t = step * self.workload.evolve + self.workload.evolve - 1
        return self.model.scn_of(self.tx_slots(t)[0] + 2)  # START, INTERNAL, DDL

    def evolve_state(self, scn: int) -> evolve.State:
        """The evolving tables' dictionary at ``scn`` (every step whose DDL is at or below it)."""
        if not self.workload.evolve:
            return {}
        k = 0
        while k < len(evolve.PLAN) and k * self.workload.evolve + self.workload.evolve - 1 < self.workload.transactions \
                and self.evolve_ddl_scn(k) <= scn:
            k += 1
        return evolve.STATES[k]

    def table_columns(self, table: str, scn: int | None) -> tuple[list[tuple], list[str]] | None:
        """(ALL_TAB_COLUMNS rows, primary key columns) of ``table`` (OWNER.NAME) at ``scn`` (None: the head); None
        when the table does not exist then."""
        at = self.head if scn is None else scn
        owner, _, name = table.partition(".")
        if owner == SCHEMA and name in evolve.NAMES.values():
            st = self.evolve_state(at).get(name)
            if st is None:
                return None
            return [catalog_row(c.name, c.type, c.nullable, c.default) for c in st[0]], list(st[1])
        known = self.dictionary()["tables"].get(table)
        if not known:
            return None
        lob = bool(self.workload.lob_at)  # the LOB workload's "NOTE" is a CLOB
        rows = [catalog_row(c, "CLOB" if lob and c == "NOTE" else DECLARED.get(c, COLUMN_TYPES.get(c, "VARCHAR2(100)")),
                            c != "ID", None) for c in known]
        return rows + [catalog_row(*col) for col in self.added_columns(table, at)], ["ID"]

    def added_columns(self, table: str, scn: int | None = None) -> list[tuple]:
        """ALL_TAB_COLUMNS rows of the columns ``add_column_at`` transactions added to ``table`` (OWNER.NAME) by
        ``scn`` (None: the head, the database's current dictionary); a DDL's change is in the dictionary from
        the SCN of its DDL row on."""
        w = self.workload
        at = self.head if scn is None else scn
        return [ADDED_COLUMN for t in sorted(w.numbers("add_column_at"))
                if f"{SCHEMA}.{table_name(t % w.tables)}" == table
                and self.model.scn_of(self.tx_slots(t)[0] + 2 * w.lanes) <= at]  # from the DDL row's SCN on

    def dictionary(self) -> dict[str, Any]:
        w = self.workload
        tables = {f"{SCHEMA}.{table_name(n)}": list(COLUMNS) for n in range(w.tables) if n != w.unknown_table}
        if w.types_at:  # APP.TYPES: a column per Oracle type (no flashback reads of it)
            tables[f"{SCHEMA}.{table_name(TYPES_TABLE)}"] = list(TYPE_COLUMNS)
        for name, (cols, _) in self.evolve_state(self.head).items():
            tables[f"{SCHEMA}.{name}"] = [c.name for c in cols]
        return {"simulator_dictionary": 1, "build_scn": self.head, "tables": tables}


# ALL_TAB_COLUMNS as the simulator answers it (any subset, in any order); _SIZES: the columns of a type's size
CATALOG_COLUMNS = ("COLUMN_NAME", "DATA_TYPE", "NULLABLE", "DATA_DEFAULT", "DATA_LENGTH", "CHAR_LENGTH",
                   "DATA_PRECISION", "DATA_SCALE")
_SIZES = frozenset(CATALOG_COLUMNS[4:])
_DECLARED = re.compile(r"^([A-Z0-9_ ]+?)\s*(?:\((\*|\d+)\s*(?:,\s*(-?\d+))?\s*(BYTE|CHAR)?\))?(\s+WITH.*)?$")


def catalog_row(name: str, declared: str, nullable: bool, default: str | None) -> tuple:
    """The ALL_TAB_COLUMNS row Oracle keeps for a column declared ``declared`` (as in CREATE TABLE:
    ``VARCHAR2(20)``, ``VARCHAR2(10 CHAR)``, ``NUMBER(8,2)``, ``NUMBER``, ``INTEGER``, ``RAW(16)``,
    ``TIMESTAMP(6)``): (COLUMN_NAME, DATA_TYPE, NULLABLE, DATA_DEFAULT, DATA_LENGTH, CHAR_LENGTH,
    DATA_PRECISION, DATA_SCALE), in AL32UTF8 / AL16UTF16 (a CHAR-semantics character: 4 bytes, a national one: 2)."""
    m = _DECLARED.match(declared.strip().upper())
    if m is None:
        raise ValueError(f"the simulator cannot declare a column {declared!r}")
    base, size, scale, unit, zone = m.groups()
    null = "Y" if nullable else "N"
    if base in ("VARCHAR2", "CHAR", "NVARCHAR2", "NCHAR"):
        n = int(size or 1)
        length = 2 * n if base.startswith("N") else 4 * n if unit == "CHAR" else n
        return name, base, null, default, length, n, None, None
    if base == "RAW":
        return name, base, null, default, int(size), 0, None, None
    if base in ("NUMBER", "INTEGER"):
        if base == "INTEGER" or size == "*":
            return name, "NUMBER", null, default, 22, 0, None, int(scale or 0)
        return name, base, null, default, 22, 0, int(size) if size else None, (int(scale or 0) if size else None)
    if base == "TIMESTAMP":
        return name, declared.strip().upper(), null, default, 13 if zone else 11, 0, None, int(size or 6)
    lengths = {"DATE": 7, "CLOB": 4000, "BLOB": 4000, "BINARY_DOUBLE": 8, "BINARY_FLOAT": 4}
    return name, declared.strip().upper(), null, default, lengths.get(base, 0), 0, None, None


def _serve(cursor: SimCursor, lo: int, hi: int, idx: list[int], known: set[str], send: Any, size: int) -> None:
    cursor.conn.sim.model._lock = threading.Lock()  # a lock held by another thread at fork time stays held
    try:
        batch: list[tuple] = []
        for row in cursor._generate(lo, hi, idx, known):
            batch.append(row)
            if len(batch) >= size:
                send.send(batch)
                batch = []
        if batch:
            send.send(batch)
        send.send(None)
    except BaseException as exc:  # reported to the reading side as a database error  # noqa: BLE001 -- reported as a database error
        send.send(f"ORA-00600: internal error in the simulator: {exc!r}")
    finally:
        send.close()


def _columns(up: str) -> list[int]:
    """Indices into CONTENT_COLUMNS of the columns a (normalised, upper-case) contents query selects."""
    select = up[len("SELECT "):up.index(" FROM V$LOGMNR_CONTENTS")]
    return [CONTENT_COLUMNS.index(c.strip().replace("RAWTOHEX(", "").replace(")", "")) for c in select.split(",")]


def _replay(path: str) -> Iterator[list[tuple]]:
    """The row batches of a prerendered range (Simulator.prerender), decoded batch by batch as a client
    decodes what the server sends."""
    with open(path, "rb") as fh:
        while True:
            try:
                rows = pickle.load(fh)
            except EOFError:
                return
            yield rows


def contents_schema(names: list[str], number: pa.DataType | None = None) -> pa.Schema:
    """The Arrow schema python-oracledb gives a V$LOGMNR_CONTENTS query's data frames: NUMBER columns as
    ``number`` (float64 by default, int64 when a requested schema asks), TIMESTAMP as timestamp[ms] (a
    DATE: seconds on Oracle; the simulator's rows carry milliseconds), the rest as strings."""
    def kind(name: str) -> pa.DataType:
        if name in NUMBER_CONTENT_COLUMNS:
            return number or pa.float64()
        return pa.timestamp("ms") if name == "TIMESTAMP" else pa.string()
    return pa.schema([pa.field(n, kind(n)) for n in names])


def _record_batch(rows: list[tuple], schema: pa.Schema) -> pa.RecordBatch:
    columns = list(zip(*rows)) if rows else [()] * len(schema)
    return pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema)], schema=schema)


class SimDataFrame:
    """One batch of ``fetch_df_batches``: the calls of python-oracledb's DataFrame (``column_names``,
    ``num_rows``, ``num_columns``, ``column_arrays``, ``get_column_by_name``) and the Arrow PyCapsule
    stream interface, so ``pyarrow.table(df)`` takes it without a copy."""

    def __init__(self, batch: pa.RecordBatch) -> None:
        self._batch = batch

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return pa.Table.from_batches([self._batch]).__arrow_c_stream__(requested_schema)

    def column_names(self) -> list[str]:
        return list(self._batch.schema.names)

    def num_rows(self) -> int:
        return self._batch.num_rows

    def num_columns(self) -> int:
        return self._batch.num_columns

    def column_arrays(self) -> list[pa.Array]:
        return list(self._batch.columns)

    def get_column_by_name(self, name: str) -> pa.Array:
        return self._batch.column(name)


class _Batches:
    """Rows that arrive in batches (a replayed range): ``take(n)`` hands a whole batch over as it is
    when it fits, as a driver's fetchmany returns the rows it decoded, instead of re-listing rows one
    by one."""

    def __init__(self, batches: Iterator[list[tuple]]) -> None:
        self._batches = batches
        self._buf: list[tuple] = []
        self._pos = 0

    def take(self, n: int) -> list[tuple]:
        out: list[tuple] | None = None
        while out is None or len(out) < n:
            if self._pos >= len(self._buf):
                self._buf, self._pos = next(self._batches, []), 0
                if not self._buf:
                    break
            if out is None and self._pos == 0 and len(self._buf) <= n:
                out, self._pos = self._buf, len(self._buf)  # the whole batch: ours to hand over
                continue
            k = min(n - (len(out) if out else 0), len(self._buf) - self._pos)
            part = self._buf[self._pos:self._pos + k]
            self._pos += k
            if out is None:
                out = part
            else:
                out.extend(part)
        return out or []

    def rows(self) -> Iterator[tuple]:
        """One row at a time (fetchone, iteration), from the same buffer as take()."""
        while True:
            if self._pos >= len(self._buf):
                self._buf, self._pos = next(self._batches, []), 0
                if not self._buf:
                    return
            self._pos += 1
            yield self._buf[self._pos - 1]


_AS_OF = re.compile(r'SELECT (.+?) FROM "([^"]+)"\."([^"]+)" AS OF SCN :(\w+)(?: WHERE (.+?))? ORDER BY (.+?)'
                    r'(?: FETCH FIRST (\d+) ROWS ONLY)?')
_TYPES = COLUMN_TYPES


def _typed(column: str, value: str | None, as_text: bool) -> Any:
    """A model value (SQL_REDO text) as oracledb returns it: NUMBER -> int (or its text under TO_CHAR),
    DATE -> datetime, VARCHAR2 -> str."""
    if value is None:
        return None
    kind = _TYPES.get(column, "VARCHAR2")
    if kind == "NUMBER":
        return value if as_text else int(value)
    if kind == "DATE":
        text = value[value.index("('") + 2:value.index("',")]
        return dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
    return value


def _err(text: str) -> oracledb.DatabaseError:
    return oracledb.DatabaseError(text)


class SimConnection:
    """One database session (standby or mining instance)."""

    def __init__(self, sim: Simulator, role: str) -> None:
        self.sim, self.role = sim, role
        self.nls: dict[str, str] = {}
        self.logs: dict[str, tuple[int, int, int, int]] = {}
        self.mining: tuple[int, int, dict | None, str] | None = None  # (start, end, dictionary, options)
        self.closed = False

    def cursor(self) -> SimCursor:
        if self.closed:
            raise _err("DPY-1001: not connected to database")
        return SimCursor(self)

    def close(self) -> None:
        self.closed = True
        self.mining = None

    def commit(self) -> None:
        pass

    def fetch_df_batches(self, statement: str, parameters: Any = None, size: int | None = None, *,
                         fetch_decimals: bool | None = None, requested_schema: Any = None) -> Iterator[SimDataFrame]:
        """python-oracledb's ``Connection.fetch_df_batches``: the query's rows as data frames of ``size`` rows
        (the last one shorter; none when there are no rows). Columns are typed as python-oracledb types them
        (:func:`contents_schema` for V$LOGMNR_CONTENTS), or as ``requested_schema`` (any object with the
        Arrow PyCapsule schema interface) says. A prerendered range (``prerender(arrow=True)``) is replayed
        from its Arrow file when the requested types match it."""
        size = size or oracledb.defaults.arraysize
        cur = self.cursor()
        try:
            cur.execute(statement, parameters)
            names = [d[0] for d in cur.description or ()]
            wanted = pa.schema(requested_schema) if requested_schema is not None else None
            if wanted is not None and len(wanted) != len(names):
                raise _err(f"DPY-2069: requested schema has {len(wanted)} columns; the query has {len(names)}")
            schema = wanted or contents_schema(names)
            reader = pa.ipc.open_file(pa.memory_map(cur._arrow)) if cur._arrow is not None else None
            if reader is not None and schema.equals(reader.schema):
                whole = pa.Table.from_batches([reader.get_batch(i) for i in range(reader.num_record_batches)],
                                              schema=schema)
                for offset in range(0, whole.num_rows, size):  # a driver's batches are ``size`` rows each
                    part = whole.slice(offset, size)
                    yield SimDataFrame(part.combine_chunks().to_batches()[0] if part.column(0).num_chunks > 1
                                       else part.to_batches()[0])
                return
            while True:
                rows = cur.fetchmany(size)
                if not rows:
                    return
                yield SimDataFrame(_record_batch(rows, schema))
        finally:
            cur.close()


class SimCursor:
    arraysize = 1000

    def __init__(self, conn: SimConnection) -> None:
        self.conn = conn
        self._rows: Iterator[tuple] = iter(())
        self._batches: _Batches | None = None  # a replayed range (fetchmany hands over whole batches)
        self._arrow: str | None = None  # a prerendered range's Arrow file (fetch_df_batches replays it)
        self.description: list[tuple] | None = None

    def __enter__(self) -> SimCursor:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._rows, self._batches = iter(()), None

    def fetchone(self) -> tuple | None:
        return next(self._rows, None)

    def fetchmany(self, size: int | None = None) -> list[tuple]:
        if self._batches is not None:
            return self._batches.take(size or self.arraysize)
        return list(itertools.islice(self._rows, size or self.arraysize))

    def fetchall(self) -> list[tuple]:
        return list(self._rows)

    def __iter__(self) -> Iterator[tuple]:
        return self._rows

    def execute(self, sql: str, params: Any = None) -> SimCursor:
        conn, sim = self.conn, self.conn.sim
        if conn.closed:
            raise _err("DPY-1001: not connected to database")
        up = " ".join(sql.upper().split())
        binds = params if isinstance(params, dict) else {str(i + 1): v for i, v in enumerate(params or ())}
        self._rows, self._batches, self._arrow = iter(()), None, None
        self.description = None
        if up.startswith("ALTER SESSION SET "):
            key, _, value = up[len("ALTER SESSION SET "):].partition("=")
            conn.nls[key.strip()] = value.strip().strip("'")
        elif "FROM V$DATABASE" in up and "SUPPLEMENTAL_LOG_DATA_MIN" in up:
            self._set(["SUPPLEMENTAL_LOG_DATA_MIN", "SUPPLEMENTAL_LOG_DATA_ALL"], [sim.supplemental_database()])
        elif "FROM V$DATABASE" in up:
            self._set(["CURRENT_SCN"], [(sim.poll_head(),)])
        elif "FROM ALL_LOG_GROUPS" in up or "FROM DBA_LOG_GROUPS" in up:
            owner = str(binds.get("owner", ""))
            groups = sim.all_column_log_groups() if "'ALL COLUMN LOGGING'" in up else []
            self._set(["OWNER", "TABLE_NAME"], [g for g in groups if not owner or g[0] == owner])
        elif "V$STANDBY_LOG" in up:
            self._set(["FILE_NAME", "FIRST_CHANGE", "LAST_CHANGE", "THREAD#", "SEQUENCE#", "STATUS"], sim.standby())
        elif "FROM V$ARCHIVED_LOG" in up:
            self._set(["NAME", "FIRST_CHANGE#", "NEXT_CHANGE#", "THREAD#", "SEQUENCE#", "DICTIONARY_BEGIN"],
                      sim.archived(int(binds["lo"]), int(binds["hi"])))
        elif "DBMS_LOGMNR_D.BUILD" in up:
            self._build(up, binds)
        elif "DBMS_LOGMNR.ADD_LOGFILE" in up:
            name = str(binds["name"])
            log = sim.log_by_name(name)
            if log is None:
                raise _err(f"ORA-01284: file {name} cannot be opened\nORA-00308: cannot open archived log '{name}'")
            if "DBMS_LOGMNR.NEW" in up:
                conn.logs.clear()
            conn.logs[name] = log
        elif "DBMS_LOGMNR.START_LOGMNR" in up:
            self._start(up, binds)
        elif "DBMS_LOGMNR.END_LOGMNR" in up:
            conn.mining, conn.logs = None, {}
        elif "FROM V$LOGMNR_CONTENTS" in up:
            self._contents(up, binds)
        elif "FROM ALL_TAB_COLUMNS" in up:
            asked = [c.strip() for c in up[len("SELECT "):up.index(" FROM ")].split(",")]
            unknown = [c for c in asked if c not in CATALOG_COLUMNS or (sim.workload.no_sizes and c in _SIZES)]
            if unknown:  # no_sizes: a view named ALL_TAB_COLUMNS without the size columns
                raise _err(f'ORA-00904: "{unknown[0]}": invalid identifier')
            found = sim.table_columns(f"{binds['owner']}.{binds['name']}", self._dictionary_scn(up, binds))
            at = [CATALOG_COLUMNS.index(c) for c in asked]
            self._set(asked, [tuple(r[i] for i in at) for r in (found[0] if found else [])])
        elif "ALL_CONS_COLUMNS" in up:
            found = sim.table_columns(f"{binds['owner']}.{binds['name']}", self._dictionary_scn(up, binds))
            self._set(["COLUMN_NAME"], [(c,) for c in found[1]] if found else [])
        elif " AS OF SCN " in up:
            self._as_of(up, {k.upper(): v for k, v in binds.items()})
        elif "FROM V$TRANSACTION" in up:
            self._set(["MIN(START_SCN)"], [(sim.oldest_open(sim.head),)])
        elif "FROM ALL_TABLES" in up:
            owner = str(binds["owner"])
            self._set(["OWNER", "TABLE_NAME"], [tuple(name.split(".", 1)) for name in sorted(sim.dictionary()["tables"])
                                                if name.split(".", 1)[0] == owner])
        else:
            raise _err(f"ORA-00900: invalid SQL statement (the simulator does not answer: {sql[:120]})")
        return self

    def _dictionary_scn(self, up: str, binds: dict) -> int | None:
        """The SCN of a dictionary query's ``AS OF SCN :scn`` (None: the current dictionary)."""
        if " AS OF SCN " not in up:
            return None
        scn, sim = int(binds["scn"]), self.conn.sim
        if scn > sim.head:
            raise _err(f"ORA-08181: specified number is not a valid system change number ({scn})")
        if scn < sim.workload.base_scn:
            raise _err("ORA-01555: snapshot too old: rollback segment number  with name \"\" too small")
        return scn

    def _as_of(self, up: str, binds: dict) -> None:
        """A flashback read (module docstring): select list, keyset WHERE, ORDER BY the key, FETCH FIRST."""
        m = _AS_OF.fullmatch(up)
        if m is None:
            raise _err(f"ORA-00900: invalid SQL statement (the simulator's AS OF reads take one table, a keyset "
                       f"WHERE and ORDER BY its key: {up[:160]})")
        sim = self.conn.sim
        items, owner, table, scn_bind, where, order, limit = m.groups()
        scn = int(binds[scn_bind])
        if f"{owner}.{table}" not in sim.dictionary()["tables"]:
            raise _err("ORA-00942: table or view does not exist")
        if scn > sim.head:
            raise _err(f"ORA-08181: specified number is not a valid system change number ({scn})")
        if scn < sim.workload.base_scn:
            raise _err("ORA-01555: snapshot too old: rollback segment number  with name \"\" too small")
        cols = []
        for item in items.split(", "):
            im = re.fullmatch(r'(TO_CHAR\()?"([^"]+)"\)?', item)
            if im is None or im.group(2) not in COLUMNS:
                raise _err(f"ORA-00904: {item}: invalid identifier")
            cols.append((im.group(2), bool(im.group(1))))
        order_cols = re.findall(r'"([^"]+)"', order)
        if order_cols != ["ID"]:
            raise _err(f"ORA-00900: the simulator orders AS OF reads by the key \"ID\" only, not {order}")
        rows = sim.table_at(scn, table)
        if where:  # keyset condition on the key: ("ID" > :A0)
            cm = re.fullmatch(r'\("ID" > :(\w+)\)', where)
            if cm is None:
                raise _err(f"ORA-00900: the simulator's AS OF reads take a keyset WHERE on \"ID\", not {where}")
            after = int(Decimal(str(binds[cm.group(1)])))
            rows = [r for r in rows if int(r["ID"]) > after]
        if limit:
            rows = rows[:int(limit)]
        self._set([f"TO_CHAR({c})" if text else c for c, text in cols],
                  [tuple(_typed(c, r.get(c), text) for c, text in cols) for r in rows])

    def _set(self, names: list[str], rows: list[tuple]) -> None:
        self.description = [(n, None, None, None, None, None, None) for n in names]
        self._rows = iter(rows)

    def _build(self, up: str, binds: dict) -> None:
        if "STORE_IN_REDO_LOGS" in up and self.conn.role == "standby":
            raise _err("ORA-16000: database or pluggable database open for read-only access")
        if "STORE_IN_FLAT_FILE" in up:
            path = os.path.join(str(binds["location"]), str(binds["filename"]))
            try:
                with open(path, "w") as fh:
                    json.dump(self.conn.sim.dictionary(), fh)
            except OSError as exc:
                raise _err(f"ORA-01308: initialization parameter utl_file_dir is not set ({exc})") from None
        self.conn.sim.dictionary_builds += 1

    def _start(self, up: str, binds: dict) -> None:
        conn, sim = self.conn, self.conn.sim
        start, end = int(binds["startscn"]), int(binds["endscn"])
        dictionary = None
        if "DICTFILENAME" in up:
            path = str(binds["dictfile"])
            try:
                with open(path) as fh:
                    dictionary = json.load(fh)
                assert dictionary.get("simulator_dictionary") == 1
            except (OSError, ValueError, AssertionError):
                raise _err(f"ORA-01284: file {path} cannot be opened") from None
        elif "DICT_FROM_ONLINE_CATALOG" in up:
            # a separate mining instance's own catalog does not know the standby's tables
            dictionary = sim.dictionary() if conn.role != "miner" else {"tables": {}}
        else:  # DICT_FROM_REDO_LOGS: the build in the first archived log, followed through the DDL mined after it
            dictionary = dict(sim.dictionary())
            if "DDL_DICT_TRACKING" in up:
                dictionary["tables"] = {**dictionary["tables"], evolve.DDL_TRACKING: []}
        for thread in range(1, sim.workload.threads + 1):
            # a standby redo log is read as it is at START time (it keeps growing until the switch)
            current = {name: sim.log_by_name(name) or log for name, log in conn.logs.items()}
            spans = sorted((first, nxt) for t, _, first, nxt in current.values() if t == thread)
            covered = start
            for first, nxt in spans:
                if first <= covered < nxt:
                    covered = nxt
            if covered <= end:
                raise _err(f"ORA-01291: missing logfile (thread {thread}, SCN {covered} not in the added logs)")
        conn.mining = (start, end, dictionary, up)
        sim.sessions_started += 1

    def _contents(self, up: str, binds: dict) -> None:
        if self.conn.mining is None:
            raise _err("ORA-01306: dbms_logmnr.start_logmnr() must be invoked before selecting from v$logmnr_contents")
        idx = _columns(up)
        names = [CONTENT_COLUMNS[i] for i in idx]
        start, end, dictionary, _ = self.conn.mining
        lo = max(start, int(binds["1"]) + (0 if "SCN >= :1" in up else 1))
        hi = min(end, int(binds["2"]))
        self.description = [(n, None, None, None, None, None, None) for n in names]
        known = set((dictionary or {}).get("tables", {}))
        rendered = self.conn.sim._rendered.get((lo, hi, tuple(idx), frozenset(known))) if self.conn.sim._rendered else None
        self._arrow = self.conn.sim._rendered_arrow.get((lo, hi, tuple(idx), frozenset(known)))
        if rendered is not None:
            prebuilt = self.conn.sim._prebuilt.get(rendered)
            self._batches = _Batches(_replay(rendered) if prebuilt is None else map(list, prebuilt))
            self._rows = self._batches.rows()
        elif self.conn.sim.workload.process:
            self._rows = self._remote(lo, hi, idx, known)
        else:
            self._rows = self._generate(lo, hi, idx, known)

    def _remote(self, lo: int, hi: int, idx: list[int], known: set[str]) -> Iterator[tuple]:
        """The same rows, generated in a forked child and received in pickled batches over a pipe
        (the way a client receives rows from a database server process)."""
        ctx = multiprocessing.get_context("fork")
        recv, send = ctx.Pipe(duplex=False)
        child = ctx.Process(target=_serve, args=(self, lo, hi, idx, known, send, self.arraysize), daemon=True)
        child.start()
        send.close()
        try:
            while True:
                batch = recv.recv()
                if batch is None:
                    break
                if isinstance(batch, str):
                    raise _err(batch)
                yield from batch
        finally:
            recv.close()
            child.join(timeout=5)
            if child.is_alive():
                child.kill()

    def _generate(self, lo: int, hi: int, idx: list[int], known: set[str]) -> Iterator[tuple]:
        sim = self.conn.sim
        model, w = sim.model, sim.workload
        lanes, threads, base, share = w.lanes, w.threads, w.base_scn, w.scn_share
        ops = OPNAME
        for g in model.slots_for(lo, hi):
            hit = model.record_at(g)
            if hit is None:
                continue
            tx, (op, table, rid, rollback, csf, sql, raw) = hit
            scn = base + g // share
            lane = g % lanes
            owner = tname = None
            status, info = 0, None
            if table >= 0:
                owner, tname = SCHEMA, table_name(table)
                if not evolve.known(f"{owner}.{tname}", known) and not (op == 5 and tname in evolve.NAMES.values()):
                    obj = f"OBJ# {74000 + table}"
                    sql = sql.replace(f'"{owner}"."{tname}"', f'"UNKNOWN"."{obj}"')
                    owner, tname, status, info = "UNKNOWN", obj, 2, "Dictionary Mismatch"
            xid = tx.xid
            sqn = 0xFFFFFFFF if raw.endswith("FFFFFFFF") else xid.sqn
            row = (scn, _EPOCH + dt.timedelta(milliseconds=g), lane % threads + 1, raw, xid.usn, xid.slot, sqn,
                   op, ops.get(op, "UNSUPPORTED"), owner, tname, rid, rollback, csf, sql, f" 0x{g:06x}.00000010.0010 ", g, info, status)
            yield tuple([row[i] for i in idx])


# the hook product code reaches the simulator by (readers/oracle/session.py; cdc.registry STAND_INS imports
# this module for a `dsn: simulator[:options]`): product code never imports the simulator
register_stand_in("simulator", StandIn(connect=lambda options, role: instance(options).connect(role),
                                       first_scn=lambda options: instance(options).workload.base_scn))
