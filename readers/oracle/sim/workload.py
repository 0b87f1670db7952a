"""The simulator's workload model: which transactions the "primary" ran, as redo records.

No Oracle server can run where this project is built, so the reader is tested
against this model. It describes a workload the way LogMiner would show it in
``V$LOGMNR_CONTENTS``:

* ``lanes`` transactions are open at once; lane ``L`` runs its transactions
  back to back, and the lanes' redo records interleave slot by slot
  (global slot ``g`` belongs to lane ``g % lanes``);
* slot ``g`` has SCN ``base_scn + g // scn_share`` (``scn_share`` > 1 gives
  several commits at one SCN, as RAC threads do) and redo thread
  ``lane % threads + 1``; each thread switches log every ``log_scns`` SCNs;
* a transaction is START, its DML rows (a row whose SQL_REDO is longer than
  4,000 characters is split over several rows, all but the last with
  ``CSF = 1``), optionally a partial rollback (``ROLLBACK = 1`` undo rows in
  reverse order, same ROW_ID), then COMMIT, or undo rows + ROLLBACK
  (sometimes with XID sequence ``ffffffff``);
* ``big_txn_rows`` > 0 makes transaction 0 one huge UPDATE (lane 0).

Everything is a pure function of ``(seed, transaction number)``: records are
produced lazily for any slot, never materialised for the whole workload; only
the per-lane prefix sums of transaction lengths (one int per transaction) are
kept. ``committed()`` yields the model's answer: every committed transaction,
in commit order, with its surviving rows as the parser must decode them.
"""

from __future__ import annotations

import random
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

from readers.oracle.convert import iso_temporal, stream_type
from readers.oracle.position import Xid
from readers.oracle.redo_values import value as redo_value
from readers.oracle.sim import evolve

CSF_PIECE = 4000
SCHEMA = "APP"
COLUMNS = ("ID", "NAME", "AMOUNT", "CREATED", "NOTE")
START, INSERT, DELETE, UPDATE, COMMIT, ROLLBACK = 6, 1, 2, 3, 7, 36
INTERNAL, DDL, SEL_LOB_LOCATOR, LOB_WRITE, LOB_TRIM, LOB_ERASE = 0, 5, 9, 10, 11, 28
OPNAME = {START: "START", INSERT: "INSERT", DELETE: "DELETE", UPDATE: "UPDATE", COMMIT: "COMMIT",
          ROLLBACK: "ROLLBACK", INTERNAL: "INTERNAL", DDL: "DDL", SEL_LOB_LOCATOR: "SEL_LOB_LOCATOR",
          LOB_WRITE: "LOB_WRITE", LOB_TRIM: "LOB_TRIM", LOB_ERASE: "LOB_ERASE", 25: "SELECT_FOR_UPDATE",
          68: "XML DOC BEGIN", 70: "XML DOC WRITE", 71: "XML DOC END"}
LOB_PIECE = 2000  # characters per LOB_WRITE row
_LOB_DECLARE = ("DECLARE \n loc_c CLOB; \n buf_c VARCHAR2(6426);\n loc_b BLOB; \n buf_b RAW(6426);\n"
                " loc_nc NCLOB; \n buf_nc NVARCHAR2(6426);\nBEGIN\n")


@dataclass(frozen=True)
class Workload:
    seed: int = 1
    transactions: int = 50
    lanes: int = 4
    rows_min: int = 1
    rows_max: int = 6
    rollback_rate: float = 0.1
    partial_rollback_rate: float = 0.15
    csf_rate: float = 0.05
    unknown_sqn_rate: float = 0.5
    threads: int = 2
    scn_share: int = 1
    log_scns: int = 500
    base_scn: int = 1_000_000
    big_txn_rows: int = 0
    tables: int = 3
    head_step: int = 0        # 0: all redo is on the standby at once; else the head moves this many SCNs per poll
    drop_log: str = ""        # "thread:sequence" of an archived log that is missing (gap test)
    purged_before: int = 0    # archived logs of a lower sequence are deleted (RMAN DELETE ARCHIVELOG): every thread
    unknown_table: int = -1   # table number the dictionary does not know ("UNKNOWN"."OBJ# n")
    process: int = 0          # 1: generate V$LOGMNR_CONTENTS rows in a child process, as a database server would
    ddl_at: str = ""          # "5:9": transactions 5 and 9 are an ALTER TABLE of table t % tables (DDL, COMMIT)
    truncate_at: str = ""     # "7": transaction 7 is a TRUNCATE TABLE of table t % tables
    add_column_at: str = ""   # "9": transaction 9 is ALTER TABLE (t % tables) ADD ("TIER" ... DEFAULT 'std'); from
                              # its SCN on (at the head), ALL_TAB_COLUMNS lists ADDED_COLUMN for that table
    lob_at: str = ""          # "3": transaction 3 inserts a row whose CLOB "NOTE" is written by LOB_WRITE rows
    lob_update_at: str = ""   # "4": transaction 4 rewrites the CLOB of an existing row (locator + writes only)
    types_at: str = ""        # "2": transaction 2 inserts the TYPE_ROWS into APP.TYPES (every Oracle type) and
                              # updates its first row
    odd_op_at: str = ""       # "3": transaction 3 holds one more row, of OPERATION_CODE ``odd_op``, on its table
    odd_op: int = 68          # (68: XML DOC BEGIN, an operation the reader does not decode; 25: SELECT_FOR_UPDATE)
    evolve: int = 0           # N: the DDL plan of readers/oracle/sim/evolve.py, a step every N transactions (lanes=1)
    no_sizes: int = 0         # 1: ALL_TAB_COLUMNS is a view without DATA_LENGTH, CHAR_LENGTH, DATA_PRECISION,
                              # DATA_SCALE (ORA-00904 when a query names them)
    head_limit: int = 0       # the standby's head never passes this SCN (0: no limit): redo not yet received
    supplemental: str = "min+all"  # what the "primary" logs, "+"-separated: "min" database minimal, "all" ALL
                                   # COLUMNS on every table, "T0:T2" on those tables only, "db_all" database-wide
                                   # ALL COLUMNS; "" nothing

    def numbers(self, option: str) -> frozenset[int]:
        """The transaction numbers of a ``ddl_at`` / ``truncate_at`` / ``lob_at`` / ``types_at`` option."""
        return frozenset(int(p) for p in getattr(self, option).split(":") if p)

    @classmethod
    def parse(cls, text: str) -> Workload:
        """``key=value,key=value`` (the part of ``dsn: simulator:...`` after the colon)."""
        kinds = {f.name: f.type for f in fields(cls)}
        args: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, _, value = part.partition("=")
            if key not in kinds:
                raise ValueError(f"unknown simulator option {key!r} (known: {', '.join(kinds)})")
            kind = kinds[key]
            args[key] = value if kind == "str" else float(value) if kind == "float" else int(value)
        return cls(**args)


TYPES_TABLE = 99  # table number of APP.TYPES (option types_at)
# ALL_TAB_COLUMNS.DATA_TYPE of the columns: the workload tables T0.. and APP.TYPES (Oracle writes no
# precision for NUMBER/VARCHAR2 there, and the TIMESTAMP fraction digits always; the sizes: DECLARED)
TYPE_COLUMNS = {"ID": "NUMBER", "C_DATE": "DATE", "C_TS0": "TIMESTAMP(0)", "C_TS3": "TIMESTAMP(3)",
                "C_TS6": "TIMESTAMP(6)", "C_TS9": "TIMESTAMP(9)", "C_TSTZ": "TIMESTAMP(6) WITH TIME ZONE",
                "C_TSLTZ": "TIMESTAMP(6) WITH LOCAL TIME ZONE", "C_NUM": "NUMBER", "C_BDBL": "BINARY_DOUBLE",
                "C_RAW": "RAW", "C_VC": "VARCHAR2", "C_NCHAR": "NCHAR"}
COLUMN_TYPES = {"ID": "NUMBER", "AMOUNT": "NUMBER", "CREATED": "DATE", "NAME": "VARCHAR2", "NOTE": "VARCHAR2",
                **TYPE_COLUMNS}

# the columns as declared where DATA_TYPE leaves out the size (ALL_TAB_COLUMNS: simulator.catalog_row)
DECLARED = {"NAME": "VARCHAR2(100)", "NOTE": "VARCHAR2(32767)", "C_RAW": "RAW(16)", "C_VC": "VARCHAR2(100)",
            "C_NCHAR": "NCHAR(10)"}


def _ts(text: str) -> str:
    return f"TO_TIMESTAMP('{text}')"


# APP.TYPES rows as LogMiner writes their values into SQL_REDO (shapes: tests/unit/readers/oracle/
# test_redo_type_values.py, after Debezium's LogMinerDmlParserTest); NULL where a key is missing
TYPE_ROWS = [
    {"ID": "'1'", "C_DATE": "TO_DATE('2024-02-29 13:14:15', 'YYYY-MM-DD HH24:MI:SS')",
     "C_TS0": _ts("2024-02-29 13:14:15."), "C_TS3": _ts("2024-02-29 13:14:15.120"),
     "C_TS6": _ts("2024-02-29 13:14:15.000001"), "C_TS9": _ts("2024-02-29 13:14:15.123456000"),
     "C_TSTZ": "TO_TIMESTAMP_TZ('2024-02-29 23:14:15.123456 -06:00')", "C_TSLTZ": _ts("2024-02-29 19:14:15.123456"),
     "C_NUM": "'12345678901234567890123456789012345678'", "C_BDBL": "'1.10000002E+000'",
     "C_RAW": "HEXTORAW('00ff10')", "C_VC": "'it''s'", "C_NCHAR": "UNISTR('\\00e9t\\00e9 \\d83d\\de00')"},
    {"ID": "'2'", "C_DATE": "TO_DATE('9999-12-31 23:59:59', 'YYYY-MM-DD HH24:MI:SS')",
     "C_TS0": _ts("0001-01-01 00:00:00."), "C_TS3": _ts("1970-01-01 00:00:00.001"),
     "C_TS6": _ts("2038-01-19 03:14:07.999999"), "C_TS9": _ts("2000-01-01 00:00:00.000000000"),
     "C_TSTZ": "TO_TIMESTAMP_TZ('2024-01-01 00:30:00.000000 +14:00')", "C_NUM": "'-.000001'",
     "C_BDBL": "'-Inf'", "C_RAW": "HEXTORAW('00')", "C_NCHAR": "'ab  '"},
    {"ID": "'3'", "C_BDBL": "'Nan'", "C_NUM": "'-1.5'"},
    {"ID": "'4'", "C_TS9": _ts("2024-02-29 13:14:15.123456789")},  # nanoseconds: no target column holds them
]
TYPE_UPDATE = {"C_DATE": "TO_DATE('2024-03-01 00:00:01', 'YYYY-MM-DD HH24:MI:SS')",
               "C_TS6": _ts("2024-03-01 00:00:00.5")}  # row 1, in the same transaction


# the column an ``add_column_at`` transaction adds: (name, as declared, nullable, DATA_DEFAULT: the clause as typed,
# trailing blank kept); its ALL_TAB_COLUMNS row: simulator.catalog_row
ADDED_COLUMN = ("TIER", "VARCHAR2(10)", True, "'std' ")


def table_name(n: int) -> str:
    return "TYPES" if n == TYPES_TABLE else evolve.NAMES.get(n) or f"T{n}"


def row_id(table: int, ident: int) -> str:
    return f"AAAS{table:02d}AAEAA{ident:09X}"[:18]


def _lit(v: str | None) -> str:
    return "NULL" if v is None else "'" + v.replace("'", "''") + "'"


def _date(n: int) -> str:
    return f"TO_DATE('2024-{n % 12 + 1:02d}-{n % 28 + 1:02d} {n % 24:02d}:{n % 60:02d}:00', 'YYYY-MM-DD HH24:MI:SS')"


def base_row(ident: int) -> dict[str, str | None]:
    """The image of a row that existed before the workload started."""
    return {"ID": str(ident), "NAME": f"name {ident}", "AMOUNT": str(ident % 1000), "CREATED": _date(ident),
            "NOTE": None}


_TEMPORAL = frozenset(c for c, t in COLUMN_TYPES.items() if stream_type(t.lower()).startswith(("datetime(", "timestamp(")))


def stream_row(row: dict | None, temporal: str = "iso") -> dict | None:
    """A model row (SQL_REDO texts) as the reader publishes it under ``temporal`` (readers/oracle/convert.py):
    ``iso`` turns DATE/TIMESTAMP values (e.g. "CREATED") into the stream's ISO text."""
    if row is None or temporal != "iso":
        return row
    return {c: iso_temporal(v) if c in _TEMPORAL and v is not None else v for c, v in row.items()}


def sql_insert(table: int, row: dict) -> str:
    cols = ",".join(f'"{c}"' for c in row)
    vals = ",".join(v if c == "CREATED" else _lit(v) for c, v in row.items())
    return f'insert into "{SCHEMA}"."{table_name(table)}"({cols}) values ({vals});'


def _where(row: dict, rid: str) -> str:
    parts = []
    for c, v in row.items():
        if v is None:
            parts.append(f'"{c}" IS NULL')
        else:
            parts.append(f'"{c}" = {v if c == "CREATED" else _lit(v)}')
    return " and ".join(parts) + f" and ROWID = '{rid}'"


def sql_update(table: int, changes: dict, before: dict, rid: str) -> str:
    sets = ", ".join(f'"{c}" = {v if c == "CREATED" else _lit(v)}' for c, v in changes.items())
    return f'update "{SCHEMA}"."{table_name(table)}" set {sets} where {_where(before, rid)};'


def sql_delete(table: int, before: dict, rid: str) -> str:
    return f'delete from "{SCHEMA}"."{table_name(table)}" where {_where(before, rid)};'


class Txn:
    """One transaction's records (templates without SCN) and its expected surviving rows."""

    __slots__ = ("base_keys", "big", "commit_at", "committed", "expected", "number", "records", "xid")

    def __init__(self, number: int, xid: Xid) -> None:
        self.number, self.xid = number, xid
        # record: (op_code, table or -1, row_id, rollback, csf, sql_redo, xid_raw)
        self.records: list[tuple] = []
        self.expected: list[tuple] = []
        self.base_keys: list[tuple[int, int]] = []  # (table, id) of pre-existing rows it touches (snapshots)
        self.committed = True
        self.big = 0
        self.commit_at = -1  # the record whose SCN is the commit SCN (a DDL's own row; else the COMMIT)


class Model:
    """Slot -> record, lazily, with per-lane prefix sums of transaction lengths."""

    def __init__(self, w: Workload) -> None:
        self.w = w
        self._cache: OrderedDict[int, Txn] = OrderedDict()
        self._lock = threading.Lock()
        self._lane_starts: list[list[int]] = [[0] for _ in range(w.lanes)]  # start position of each txn in the lane
        self._lane_done = [False] * w.lanes
        if w.evolve and (w.lanes != 1 or w.evolve < 2 or w.big_txn_rows or w.rollback_rate):
            raise ValueError("simulator option evolve needs lanes=1, evolve >= 2, rollback_rate=0, no big_txn_rows")
        self.end_slot = max((self._lane_length(L) * w.lanes + L for L in range(w.lanes)), default=0)

    # -- transactions ----------------------------------------------------------------------------------

    def xid_of(self, t: int) -> Xid:
        lane = t % self.w.lanes
        return Xid(lane % 50 + 1, lane // 50 + 1, t // self.w.lanes + 1)

    def txn(self, t: int) -> Txn:
        with self._lock:  # parallel LogMiner sessions share the model
            tx = self._cache.get(t)
            if tx is not None:
                self._cache.move_to_end(t)
                return tx
        tx = self._build(t)
        with self._lock:
            self._cache[t] = tx
            while len(self._cache) > 8 * self.w.lanes + 16:
                self._cache.popitem(last=False)
        return tx

    def length(self, t: int) -> int:
        if t == 0 and self.w.big_txn_rows:
            return self.w.big_txn_rows + 2
        return len(self.txn(t).records)

    def _build(self, t: int) -> Txn:
        w = self.w
        tx = Txn(t, self.xid_of(t))
        raw = tx.xid.raw
        if t == 0 and w.big_txn_rows:
            tx.big = w.big_txn_rows
            return tx
        rng = random.Random(w.seed * 1_000_003 + t)
        recs, exp = tx.records, tx.expected
        recs.append((START, -1, None, 0, 0, "set transaction read write;", raw))
        if w.evolve and evolve.ddl_step(t, w.evolve) is not None:
            return self._evolve_ddl(tx, evolve.ddl_step(t, w.evolve))
        if t in w.numbers("ddl_at") or t in w.numbers("truncate_at") or t in w.numbers("add_column_at"):
            return self._ddl(tx, t % w.tables, t in w.numbers("truncate_at"), t in w.numbers("add_column_at"))
        if t in w.numbers("types_at"):
            return self._types(tx)
        if t in w.numbers("lob_at") or t in w.numbers("lob_update_at"):
            return self._lob(tx, t % w.tables, rng, insert=t in w.numbers("lob_at"))
        rows: list[tuple] = []  # (op, table, rid, sql, undo_sql, expected)
        live: dict[tuple[int, int], dict] = {}
        n = rng.randint(w.rows_min, w.rows_max)
        for i in range(n):
            table = rng.randrange(w.tables)
            known = [k for k in live if k[0] == table]
            kind = rng.random()
            if kind < 0.4 or not known and kind < 0.6:
                ident = 2 * (t * 1000 + i)
                row = base_row(ident)
                row["NAME"] = rng.choice([f"new {ident}", f"O'Brien {ident}", f"x''y {ident}"])
                if rng.random() < w.csf_rate:
                    row["NOTE"] = (f"long note {ident} ") * (CSF_PIECE // 12 + rng.randrange(400))
                rid = row_id(table, ident)
                rows.append((INSERT, table, rid, sql_insert(table, row), (sql_delete, table, row, rid),
                             ("c", table, None, dict(row))))
                live[(table, ident)] = row
                continue
            if known and rng.random() < 0.7:
                key = rng.choice(known)
                before = live[key]
            else:
                key = (table, 2 * (t * 1000 + i) + 1)
                before = base_row(key[1])
                tx.base_keys.append(key)
            rid = row_id(table, key[1])
            if kind < 0.85:
                changes = {"AMOUNT": str(rng.randrange(10_000)), "NAME": f"upd {t}.{i}"}
                after = {**before, **changes}
                undo_changes = {c: before[c] for c in changes}
                rows.append((UPDATE, table, rid, sql_update(table, changes, before, rid),
                             (sql_update, table, undo_changes, after, rid), ("u", table, dict(before), dict(after))))
                live[key] = after
            else:
                rows.append((DELETE, table, rid, sql_delete(table, before, rid), (sql_insert, table, before),
                             ("d", table, dict(before), None)))
                live.pop(key, None)
        partial = None
        if len(rows) >= 2 and rng.random() < w.partial_rollback_rate:
            a = rng.randrange(1, len(rows))
            partial = (a, rng.randrange(a, len(rows)) + 1)  # rows [a, b) are undone right after row b-1
        committed = rng.random() >= w.rollback_rate
        for i, (op, table, rid, sql, undo, e) in enumerate(rows):
            self._emit(recs, op, table, rid, 0, sql, raw)
            if partial and i == partial[1] - 1:
                for j in range(partial[1] - 1, partial[0] - 1, -1):
                    op2, table2, rid2, _, undo2, _ = rows[j]
                    self._emit(recs, {INSERT: DELETE, DELETE: INSERT}.get(op2, UPDATE), table2, rid2, 1, undo2[0](*undo2[1:]),
                               raw)
        kept = [r for k, r in enumerate(rows) if not partial or not partial[0] <= k < partial[1]]
        if t in w.numbers("odd_op_at"):  # after the first row: the transaction is open in every pipeline
            table = rows[0][1]
            recs.insert(2, (w.odd_op, table, row_id(table, 2 * t * 1000 + 999), 0, 0,
                            f"/* operation {w.odd_op} */", raw))
        if committed:
            exp.extend(r[5] for r in kept)
            if w.evolve:
                for op, table, rid, sql, e in evolve.writes(t, w.evolve):
                    self._emit(recs, op, table, rid, 0, sql, raw)
                    exp.append(e)
            recs.append((COMMIT, -1, None, 0, 0, "commit;", raw))
        else:
            tx.committed = False
            odd = rng.random() < w.unknown_sqn_rate
            rb_raw = Xid(tx.xid.usn, tx.xid.slot, Xid.UNKNOWN_SQN).raw if odd else raw
            for op, table, rid, _, undo, _ in reversed(kept):
                self._emit(recs, {INSERT: DELETE, DELETE: INSERT}.get(op, UPDATE), table, rid, 1, undo[0](*undo[1:]), rb_raw)
            recs.append((ROLLBACK, -1, None, 0, 0, "rollback;", rb_raw))
        return tx

    @staticmethod
    def _types(tx: Txn) -> Txn:
        """INSERTs of TYPE_ROWS into APP.TYPES, then an UPDATE of the first (before image: every type
        in a WHERE clause), COMMIT. Expected rows: the values as the parser decodes the literals."""
        raw, name = tx.xid.raw, f'"{SCHEMA}"."{table_name(TYPES_TABLE)}"'
        parsed = lambda lits: {c: redo_value(lits.get(c, "NULL"), 0)[0] for c in TYPE_COLUMNS}
        for lits in TYPE_ROWS:
            cols = ",".join(f'"{c}"' for c in TYPE_COLUMNS)
            vals = ",".join(lits.get(c, "NULL") for c in TYPE_COLUMNS)
            rid = row_id(TYPES_TABLE, int(lits["ID"].strip("'")))
            tx.records.append((INSERT, TYPES_TABLE, rid, 0, 0, f"insert into {name}({cols}) values ({vals});", raw))
            tx.expected.append(("c", TYPES_TABLE, None, parsed(lits)))
        first, rid = TYPE_ROWS[0], row_id(TYPES_TABLE, 1)
        sets = ", ".join(f'"{c}" = {v}' for c, v in TYPE_UPDATE.items())
        where = " and ".join(f'"{c}" = {first[c]}' if c in first else f'"{c}" IS NULL' for c in TYPE_COLUMNS)
        sql = f"update {name} set {sets} where {where} and ROWID = '{rid}';"
        tx.records.append((UPDATE, TYPES_TABLE, rid, 0, 0, sql, raw))
        tx.expected.append(("u", TYPES_TABLE, parsed(first), parsed({**first, **TYPE_UPDATE})))
        tx.records.append((COMMIT, -1, None, 0, 0, "commit;", raw))
        return tx

    @staticmethod
    def _ddl(tx: Txn, table: int, truncate: bool, add: bool = False) -> Txn:
        """A DDL as LogMiner shows it: START, the dictionary's own changes (INTERNAL), the DDL row
        (SEG_OWNER, TABLE_NAME, the statement as issued in SQL_REDO), COMMIT. A DDL commits at its own SCN."""
        raw, name = tx.xid.raw, table_name(table)
        tx.records.append((INTERNAL, -1, None, 0, 0, "", raw))
        if truncate:
            tx.records.append((DDL, table, None, 0, 0, f'truncate table "{SCHEMA}"."{name}";', raw))
            tx.expected.append(("t", table, None, None))
        elif add:
            col, kind, _, default = ADDED_COLUMN
            sql = f'alter table "{SCHEMA}"."{name}" add ("{col}" {kind.lower()} default {default.strip()});'
            tx.records.append((DDL, table, None, 0, 0, sql, raw))
        else:
            tx.records.append((DDL, table, None, 0, 0,
                               f'alter table "{SCHEMA}"."{name}" modify ("NOTE" varchar2(4000));', raw))
        tx.commit_at = len(tx.records) - 1
        tx.records.append((COMMIT, -1, None, 0, 0, "commit;", raw))
        return tx

    @staticmethod
    def _evolve_ddl(tx: Txn, step: int) -> Txn:
        """Step ``step`` of the evolve plan, as LogMiner shows a DDL (see _ddl)."""
        kind, table, sql, _ = evolve.PLAN[step]
        raw = tx.xid.raw
        tx.records.append((INTERNAL, -1, None, 0, 0, "", raw))
        tx.records.append((DDL, table, None, 0, 0, sql + ";", raw))
        if kind == "truncate":
            tx.expected.append(("t", table, None, None))
        tx.commit_at = len(tx.records) - 1
        tx.records.append((COMMIT, -1, None, 0, 0, "commit;", raw))
        return tx

    def _lob(self, tx: Txn, table: int, rng: random.Random, insert: bool = True) -> Txn:
        """An INSERT whose CLOB is written afterwards, as LogMiner shows it: the INSERT with
        EMPTY_CLOB(), a SEL_LOB_LOCATOR row selecting the column of that row FOR UPDATE, LOB_WRITE
        rows carrying the text in pieces (offset, length), a LOB_TRIM to the final length, COMMIT.
        ``insert=False``: the CLOB of an existing row rewritten through its locator (no DML row)."""
        raw = tx.xid.raw
        ident = 2 * (tx.number * 1000) + (0 if insert else 1)
        row = base_row(ident)
        rid = row_id(table, ident)
        text = "".join(f"lob {ident} piece {k}; " for k in range(LOB_PIECE // 8))[:int(LOB_PIECE * 2.5)]
        ins = row.copy()
        ins["NOTE"] = None
        sql = sql_insert(table, ins).replace("NULL)", "EMPTY_CLOB())")
        recs = tx.records
        if insert:
            recs.append((INSERT, table, rid, 0, 0, sql, raw))
        else:
            tx.base_keys.append((table, ident))
        where = f'"ID" = \'{ident}\' and ROWID = \'{rid}\''
        recs.append((SEL_LOB_LOCATOR, table, rid, 0, 0, _LOB_DECLARE + f' select "NOTE" into loc_c from '
                     f'"{SCHEMA}"."{table_name(table)}" where {where} for update;', raw))
        full = text + "x" * 10
        for k in range(0, len(full), LOB_PIECE):
            piece = full[k:k + LOB_PIECE]
            sql = f" buf_c := {_lit(piece)};\n  dbms_lob.write(loc_c, {len(piece)}, {k + 1}, buf_c);"
            recs.append((LOB_WRITE, table, rid, 0, 0, sql, raw))
        recs.append((LOB_TRIM, table, rid, 0, 0, f" dbms_lob.trim(loc_c, {len(text)});", raw))
        recs.append((COMMIT, -1, None, 0, 0, "commit;", raw))
        tx.expected.append(("c", table, None, {**row, "NOTE": text}) if insert else
                           ("u", table, row, {**row, "NOTE": text}))
        return tx

    @staticmethod
    def _emit(recs: list, op: int, table: int, rid: str, rollback: int, sql: str, raw: str) -> None:
        if len(sql) <= CSF_PIECE:
            recs.append((op, table, rid, rollback, 0, sql, raw))
            return
        for k in range(0, len(sql), CSF_PIECE):
            piece = sql[k:k + CSF_PIECE]
            recs.append((op, table, rid, rollback, 1 if k + CSF_PIECE < len(sql) else 0, piece, raw))

    def big_record(self, tx: Txn, pos: int) -> tuple:
        raw = tx.xid.raw
        if pos == 0:
            return (START, -1, None, 0, 0, "set transaction read write;", raw)
        if pos > tx.big:
            return (COMMIT, -1, None, 0, 0, "commit;", raw)
        i = pos - 1
        rid = row_id(0, i)
        sql = (f'update "{SCHEMA}"."T0" set "AMOUNT" = \'{i % 997}\', "NAME" = \'big {i}\' where "ID" = \'{i}\' '
               f'and "NAME" = \'name {i}\' and "AMOUNT" = \'{i % 1000}\' and ROWID = \'{rid}\';')
        return (UPDATE, 0, rid, 0, 0, sql, raw)

    # -- slots -----------------------------------------------------------------------------------------

    def _lane_length(self, lane: int) -> int:
        total = 0
        for t in range(lane, self.w.transactions, self.w.lanes):
            total += self.length(t)
            self._lane_starts[lane].append(total)
        return total

    def record_at(self, g: int) -> tuple[Txn, tuple] | None:
        """The record at global slot g, or None when the lane is idle there."""
        lanes = self.w.lanes
        lane, pos = g % lanes, g // lanes
        starts = self._lane_starts[lane]
        if pos >= starts[-1]:
            return None
        k = _bisect(starts, pos)
        tx = self.txn(lane + k * lanes)
        off = pos - starts[k]
        return tx, (self.big_record(tx, off) if tx.big else tx.records[off])

    def scn_of(self, g: int) -> int:
        return self.w.base_scn + g // self.w.scn_share

    def slots_for(self, lo_scn: int, hi_scn: int) -> range:
        """Slots whose SCN is in [lo_scn, hi_scn]."""
        w = self.w
        first = max(0, (lo_scn - w.base_scn) * w.scn_share)
        last = min(self.end_slot, (hi_scn - w.base_scn + 1) * w.scn_share)
        return range(first, max(first, last))

    @property
    def end_scn(self) -> int:
        """One past the SCN of the last slot."""
        return self.scn_of(max(0, self.end_slot - 1)) + 1

    def committed(self, temporal: str = "iso") -> Iterator[tuple[int, str, list[tuple]]]:
        """The model's answer: (commit_scn, xid, rows) of each committed transaction in commit order,
        the row images as the reader publishes them under ``temporal`` (:func:`stream_row`)."""
        w = self.w
        out = []
        for t in range(w.transactions):
            lane, k = t % w.lanes, t // w.lanes
            tx = self.txn(t)
            if not tx.committed:
                continue
            g = ((self._lane_starts[lane][k + 1] - 1) if tx.commit_at < 0
                 else self._lane_starts[lane][k] + tx.commit_at) * w.lanes + lane
            rows = [(op, SCHEMA, table_name(tb), stream_row(b, temporal), stream_row(a, temporal))
                    for op, tb, b, a in tx.expected]
            out.append((g, self.scn_of(g), str(tx.xid), rows))
        out.sort()
        for _, scn, xid, rows in out:
            yield scn, xid, rows


def _bisect(starts: list[int], pos: int) -> int:
    lo, hi = 0, len(starts) - 1
    while lo < hi:  # last k with starts[k] <= pos
        mid = (lo + hi + 1) // 2
        if starts[mid] <= pos:
            lo = mid
        else:
            hi = mid - 1
    return lo
