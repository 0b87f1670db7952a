"""The dispatcher: V$LOGMNR_CONTENTS rows in SCN order -> committed transactions in commit-SCN order.

Every row is routed by XID to its transaction's buffer (cdc.spill.store: big
transactions go to chunk files). Rows of one transaction are never parsed
before its COMMIT, so rolled-back work costs no parsing.

* START opens a transaction (so does its first DML row).
* DML (1 INSERT, 2 DELETE, 3 UPDATE) of a captured table is buffered (the first
  ``INLINE_ROWS`` rows of a transaction in a plain list, the rest in a spillable
  cdc.spill.store buffer; the store's own memory accounting starts at that size too; under
  ``max_buffer_bytes`` the largest inline transactions move into the store once all
  inline rows pass the store's ``outside_budget``, a quarter of the bound); ``CSF = 1``
  rows are continuation pieces: joined with the following pieces of the same
  XID before the statement is parsed.
* ``ROLLBACK = 1`` rows (undo of a partial rollback) remove the latest earlier
  row with the same ROW_ID from the buffer.
* COMMIT (7) releases the transaction: Begin, Change*, Commit. Rows reach us
  in SCN order merged across redo threads, so commits come out in commit-SCN
  order. A transaction already published before the resume state is dropped.
* ROLLBACK (36) discards the transaction. Rollback rows whose XID sequence is
  ``ffffffff`` are matched by undo segment + slot.
* DDL (5) becomes a SchemaChange (TRUNCATE TABLE: a transaction of one ``op: "t"``
  change), published once across restarts like a commit (see ``_ddl``).
* LOB operations (SEL_LOB_LOCATOR 9, LOB_WRITE 10, LOB_TRIM 11, LOB_ERASE 28/29) of a
  row the transaction inserted are assembled into that INSERT's image
  (readers/oracle/lobs.py). Any other LOB row and UNSUPPORTED (255) of a captured
  table are kept with their transaction; at its COMMIT they stop the reader naming
  table, XID and SCN, or go to the dead-letter topic / are skipped and counted when
  configured (``_refuse``); never dropped silently. MISSING_SCN (34) stops the reader; other codes (internal,
  SELECT_FOR_UPDATE) are ignored.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from operator import attrgetter, itemgetter
from typing import Any

from cdc.spill.store import TransactionStore, TxBuffer
from cdc.stream.events import Begin, Change, Commit, Event, SchemaChange, TableId, TableSchema
from readers.oracle.ddl import classify, table_actions
from readers.oracle.errors import (
    DictionaryMismatch,
    DictionaryStale,
    LogMinerError,
    RedoParseError,
    UnloggedRowChange,
    UnsupportedLob,
    UnsupportedOperation,
)
from readers.oracle.lobs import LobAssembler
from readers.oracle.parse_pool import ERROR, ParsePool, parse_error
from readers.oracle.parser import parse_redo
from readers.oracle.position import ResumeState, Xid

log = logging.getLogger(__name__)

# row indices (session.CONTENTS_SQL)
SCN, TS, THREAD, XID, USN, SLT, SQN, OP, OWNER, TABLE, ROW_ID, ROLLBACK, CSF, SQL, RS_ID, SSN, INFO, STATUS = range(18)
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = _EPOCH.replace(tzinfo=dt.timezone.utc)
_MS = dt.timedelta(milliseconds=1)
_START_SCN = attrgetter("start_scn")
_SQL_OF = itemgetter(1)  # an item's SQL_REDO
_NBYTES = attrgetter("nbytes")
_PARTITION_ROWS = re.compile(r"\b(?:truncate|drop|exchange)\s+(?:sub)?partition\b", re.IGNORECASE)
# LOB operation codes (LOB_ERASE is 28 in the documentation, 29 on 23ai)
_LOB_NAMES = {9: "SEL_LOB_LOCATOR", 10: "LOB_WRITE", 11: "LOB_TRIM", 28: "LOB_ERASE", 29: "LOB_ERASE"}
_OP_NAMES = {1: "INSERT", 2: "DELETE", 3: "UPDATE"}
LOB_OPS = frozenset(_LOB_NAMES)
# OPERATION_CODEs that never change a table's rows: INTERNAL (0), SELECT_FOR_UPDATE (25). Every other code
# the dispatcher does not handle is refused on a captured table (fail closed: _refused_row)
PASSIVE_OPS = frozenset({0, 25})
HANDLED_OPS = frozenset({1, 2, 3, 5, 6, 7, 34, 36, 255, *LOB_OPS, *PASSIVE_OPS})


def ts_ms(value: Any) -> int:
    """Epoch milliseconds of a LogMiner TIMESTAMP (naive: UTC); 0 when there is none."""
    if isinstance(value, dt.datetime):
        return (value - (_EPOCH if value.tzinfo is None else _EPOCH_UTC)) // _MS
    return 0


INLINE_ROWS = 256  # a transaction's rows kept in a list before it gets a TxBuffer (most never do)


class _Tx:
    """One open transaction. ``items``/``keys``: its first rows and their ROW_IDs; from the row after
    ``inline`` on they all live in ``buf`` (cdc.spill.store), which may spill them to disk."""

    __slots__ = ("bad", "began", "buf", "counted", "csf", "items", "keys", "lobs", "nbytes", "raw", "start_scn",
                 "undo_slot", "xid")

    def __init__(self, raw: str, start_scn: int, usn: int, slot: int, sqn: int, began: Any = None) -> None:
        self.raw, self.start_scn, self.began = raw, start_scn, began  # began: its first row's TIMESTAMP
        self.xid = f"{usn}.{slot}.{sqn}"  # str(Xid): the row's XIDUSN, XIDSLT, XIDSQN are the XID's parts
        self.undo_slot = (usn, slot)
        self.csf: list[str] | None = None
        self.items: list[tuple] = []
        self.keys: list[Any] = []
        self.buf: TxBuffer | None = None
        self.bad: list[tuple] | None = None  # rows the reader cannot publish (LOB operations, UNSUPPORTED)
        self.lobs: LobAssembler | None = None  # LOB values its LOB rows wrote (readers/oracle/lobs.py)
        self.counted = self.nbytes = 0  # items summed into nbytes so far (Dispatcher._bound_inline)

    def to_store(self, store: TransactionStore) -> None:
        """Move the rows into a spillable buffer: every later row goes there too."""
        buf = self.buf = store.open(self.raw)
        for item, key in zip(self.items, self.keys):
            buf.append(item, key, len(item[1]) + 120)
        self.items, self.keys = [], []

    def undo(self, key: Any) -> None:
        """A ROLLBACK=1 row: remove the latest earlier row with this ROW_ID."""
        if self.buf is not None:
            self.buf.undo(key)
            return
        keys = self.keys
        for i in range(len(keys) - 1, -1, -1):
            if keys[i] == key:
                del keys[i], self.items[i]
                return

    def rows(self) -> Any:
        """The surviving rows in order (an iterable: a spilled buffer reads its chunk files back)."""
        return self.items if self.buf is None else self.buf

    def discard(self) -> None:
        if self.buf is not None:
            self.buf.discard()
        self.items, self.keys = [], []


class _Mark:
    """A pipeline entry that is not a row: an event to emit (None: only the context) and the
    commit SCN and XID of the items that follow it."""

    __slots__ = ("event", "lobs", "open_count", "scn", "xid")

    def __init__(self, event: Event | None, scn: int | None, xid: str | None, open_count: int = 0,
                 lobs: LobAssembler | None = None) -> None:
        self.event, self.scn, self.xid, self.open_count, self.lobs = event, scn, xid, open_count, lobs


class Dispatcher:
    def __init__(self, store: TransactionStore, captured: Callable[[str, str], bool], *,
                 resume: ResumeState | None, schema_of: Callable[[str, str, int | None], TableSchema | None],
                 unsupported: str = "fail", convert: Callable[[Change], None] | None = None,
                 on_commit: Callable[[int], None] | None = None,
                 on_ddl: Callable[[int], None] | None = None, pool: ParsePool | None = None,
                 job_rows: int = 1000, max_jobs: int = 4,
                 dead_letter: Callable[[Exception, Any], None] | None = None,
                 on_refused: Callable[[Exception], None] | None = None,
                 shaped: Callable[[str, str], bool] | None = None) -> None:
        """``shaped(owner, table)``: True for a table the source's transforms shape (cdc/transforms): its
        statements never appear in an error or a dead letter (they hold clear values), and the columnar stage's
        native pass declines its rows (readers/oracle/columnar/stage.py)."""
        self.store, self.captured, self.resume = store, captured, resume
        self.shaped = shaped
        self.schema_of, self.unsupported, self.convert = schema_of, unsupported, convert
        self.on_commit, self.on_ddl = on_commit, on_ddl
        self.dead_letter, self.on_refused = dead_letter, on_refused
        self.inline_rows = min(INLINE_ROWS, store.policy.threshold_rows)
        self.inline_budget = store.outside_budget  # max_buffer_bytes' share for inline rows (None: no bound)
        self.peak_inline_bytes = 0
        self.open: dict[str, _Tx] = {}
        self.by_slot: dict[tuple[int, int], _Tx] = {}
        self.commit_scn = resume.commit_scn if resume else 0
        self.xids_at_commit: set[str] = set(resume.xids_at_commit_scn) if resume else set()
        self.mined_through = (resume.low_watermark_scn - 1) if resume else 0
        self.skipped_unsupported = 0
        self._schemas: dict[tuple[str, str], tuple[TableId, TableSchema | None]] = {}
        self._captured: dict[tuple[str, str], bool] = {}
        # pool mode (see _release): released work waiting to be parsed / emitted, in order
        self.pool, self.job_rows, self.max_jobs = pool, job_rows, max_jobs
        self._job: list[Any] = []          # item tuples and _Marks (see _release)
        self._job_sqls: list[str] = []
        self._jobs: deque[tuple[list[tuple], bool]] = deque()  # submitted: (entries, sent to the pool)
        self._counts: dict[tuple[str, str, str], int] = {}  # (owner, table, op) -> changes, see take_counts
        self._ddl_pieces: dict[str, list[str]] = {}  # XID -> SQL_REDO pieces of a DDL split with CSF = 1
        self.failed = False
        self.dictionary_rebuilt_scn: int | None = None  # SCN of the last DDL that rebuilt the dictionary (on_ddl)
        # lowest start SCN of open transactions held outside ``open`` (readers/oracle/columnar/stage.py), or None
        self.outside_low_watermark: int | None = None

    @property
    def pending(self) -> bool:
        """True while released transactions wait in the parse pipeline (pool mode)."""
        return bool(self._jobs or self._job)

    # -- state -----------------------------------------------------------------------------------------

    def state(self, at_scn: int | None = None) -> ResumeState:
        """Resume state now: see readers.oracle.position for the guarantee."""
        lw = min((tx.start_scn for tx in self.open.values()), default=None)
        if self.outside_low_watermark is not None:
            lw = self.outside_low_watermark if lw is None else min(lw, self.outside_low_watermark)
        if lw is None:
            lw = at_scn if at_scn is not None else self.mined_through + 1
        return ResumeState(lw, self.commit_scn, frozenset(self.xids_at_commit))

    def _resume_at(self, scn: int, low: int | None = None) -> dict[str, Any]:
        """``state(at_scn=scn).to_json()`` without the intermediate object (once per commit). ``low``: the
        lowest start SCN of the open transactions, when the caller knows it (the columnar feed)."""
        if low is not None:
            lw = low
        elif self.outside_low_watermark is not None:
            lw = min(min(map(_START_SCN, self.open.values()), default=scn), self.outside_low_watermark)
        else:
            lw = min(map(_START_SCN, self.open.values()), default=scn)
        return {"low_watermark_scn": lw, "commit_scn": self.commit_scn,
                "xids_at_commit_scn": sorted(self.xids_at_commit)}

    def open_transactions(self) -> list[dict[str, Any]]:
        """The transactions this dispatcher holds open, oldest first (cdc.contract.Observation's fields; ``rows``
        counts undone rows of a spilled buffer too, ``bytes`` is what the inline rows hold, 0 once they moved to
        the store). Read-only, for another thread: a copy of ``open`` taken at once, each entry read as it is."""
        now_ms = time.time() * 1000
        out = []
        for tx in sorted(self.open.values(), key=_START_SCN):  # one C call: no other thread runs meanwhile
            began = ts_ms(tx.began) or None
            items = tx.items
            out.append({"xid": tx.xid, "start_scn": tx.start_scn, "started_ms": began,
                        "age_s": None if began is None else max(0.0, (now_ms - began) / 1000),
                        "rows": len(items) + (len(tx.buf) if tx.buf is not None else 0),
                        "bytes": sum(len(it[1]) + 120 for it in list(items))})
        return out

    def take_counts(self) -> dict[tuple[str, str, str], int]:
        """Changes emitted per (owner, table, op) since the last call (for the metrics)."""
        counts = self._counts.copy()
        self._counts.clear()  # in place: the emitting loops hold a reference to it
        return counts

    def _tx(self, row: tuple) -> _Tx:
        raw = row[XID]
        tx = self.open.get(raw)
        if tx is None:
            if raw.endswith("FFFFFFFF"):
                tx = self.by_slot.get((row[USN], row[SLT]))
                if tx is not None:
                    return tx
            tx = _Tx(raw, row[SCN], row[USN], row[SLT], row[SQN], row[TS])
            self.open[raw] = tx
            self.by_slot[tx.undo_slot] = tx
        return tx

    def _bound_inline(self) -> None:
        """max_buffer_bytes across transactions: the rows open transactions hold inline (outside the
        store) count against ``inline_budget``; above it, the largest move into the store, which spills
        under its own bound. Run once per fed batch, so the inline rows exceed the budget by one batch
        at most; sums only rows added since the last look."""
        total, inline = 0, []
        for tx in self.open.values():
            if tx.buf is not None:
                continue
            items = tx.items
            if len(items) < tx.counted:  # a partial rollback removed rows: count afresh
                tx.counted = tx.nbytes = 0
            if len(items) > tx.counted:
                tx.nbytes += sum(len(it[1]) + 120 for it in items[tx.counted:])
                tx.counted = len(items)
            total += tx.nbytes
            inline.append(tx)
        if total > self.inline_budget:
            for tx in sorted(inline, key=_NBYTES, reverse=True):
                tx.to_store(self.store)
                total -= tx.nbytes
                if total <= self.inline_budget * 3 // 4:
                    break
        self.peak_inline_bytes = max(self.peak_inline_bytes, total)

    def _find(self, row: tuple) -> _Tx | None:
        tx = self.open.get(row[XID])
        if tx is None and row[XID].endswith("FFFFFFFF"):
            tx = self.by_slot.get((row[USN], row[SLT]))
        return tx

    def _close(self, tx: _Tx) -> None:
        self._forget(tx)
        tx.discard()

    # -- rows ------------------------------------------------------------------------------------------

    def feed(self, rows: Iterable[tuple]) -> Iterator[Event]:
        """Route a batch of rows (SCN order; any iterable); yields the events of transactions committed in it."""
        captured, seen, open_txs, inline = self.captured, self._captured, self.open, self.inline_rows
        if self.inline_budget is not None and len(open_txs) > 16:
            self._bound_inline()
        row = None
        for row in rows:
            op = row[OP]
            if op == 1 or op == 2 or op == 3:
                owner = row[OWNER]
                if owner == "UNKNOWN":
                    if self.dictionary_rebuilt_scn is not None and row[SCN] > self.dictionary_rebuilt_scn:
                        raise DictionaryStale(
                            f"LogMiner did not know object {row[TABLE]} at SCN {row[SCN]} when it mined that range: the "
                            f"dictionary was rebuilt for a DDL at SCN {self.dictionary_rebuilt_scn} after the range "
                            "was mined; the source restarts, builds the dictionary anew and resumes before this SCN",
                            scn=row[SCN], xid=str(Xid.parse(row[XID])), table=f"{owner}.{row[TABLE]}",
                            text=(row[SQL] or "")[:500])
                    raise DictionaryMismatch(
                        f"LogMiner does not know object {row[TABLE]} at SCN {row[SCN]}: the dictionary is older than "
                        "the table; restarting the source rebuilds the flat-file dictionary and resumes before "
                        "this SCN", scn=row[SCN], xid=str(Xid.parse(row[XID])),
                        table=f"{owner}.{row[TABLE]}", text=(row[SQL] or "")[:500])
                tkey = (owner, row[TABLE])
                ok = seen.get(tkey)
                if ok is None:
                    ok = seen[tkey] = captured(owner, row[TABLE])
                if not ok:
                    continue
                tx = open_txs.get(row[XID])
                if tx is None:
                    tx = self._tx(row)
                sql = row[SQL]
                if row[CSF]:
                    if tx.csf is None:
                        tx.csf = [sql]
                    else:
                        tx.csf.append(sql)
                    continue
                if tx.csf is not None:
                    tx.csf.append(sql)
                    sql = "".join(tx.csf)
                    tx.csf = None
                if row[ROLLBACK]:
                    tx.undo(row[ROW_ID])
                    continue
                if tx.lobs is not None and tx.lobs.touches(row[ROW_ID]):
                    self._refuse_later(tx, row)
                item = (row[SCN], sql, owner, row[TABLE], row[RS_ID], row[SSN])
                if tx.buf is None:
                    tx.items.append(item)
                    tx.keys.append(row[ROW_ID])
                    if len(tx.keys) > inline:
                        tx.to_store(self.store)
                else:
                    tx.buf.append(item, row[ROW_ID], len(sql) + 120)
            elif op == 7:
                tx = self.open.get(row[XID])
                if tx is not None:
                    if self.pool is None:
                        yield from self._commit(tx, row)
                    else:
                        yield from self._release(tx, row)
            elif op == 36:
                tx = self._find(row)
                if tx is not None:
                    self._close(tx)
            elif op == 6:
                self._tx(row)
            elif op == 5:
                if self.pool is not None and self.pending:
                    # what was released before the DDL comes out first, read with the definitions in force then
                    yield from self.drain()
                yield from self._ddl(row)
            elif op == 255 or op in LOB_OPS:
                self._refused_row(row)
            elif op == 34:
                raise LogMinerError(f"LogMiner reported MISSING_SCN at SCN {row[SCN]}: redo is missing from the "
                                    "added logs", scn=row[SCN], text=(row[SQL] or "")[:500])
            elif op not in PASSIVE_OPS:  # an operation code this dispatcher does not know: refused like UNSUPPORTED
                self._refused_row(row)
        if row is not None:
            self.mined_through = row[SCN]
        if self.pool is not None:
            if self._job:
                yield from self._submit()
            yield from self.ready()

    def _forget(self, tx: _Tx) -> None:
        """The transaction ended (COMMIT or ROLLBACK seen): no later row may find it by XID or undo slot."""
        self.open.pop(tx.raw, None)
        if self.by_slot.get(tx.undo_slot) is tx:
            del self.by_slot[tx.undo_slot]

    def _skip(self, tx: _Tx, scn: int, xid: str) -> bool:
        """Nothing to publish: an empty transaction, or one a restart already published.

        Rows it holds that cannot be published (``tx.bad``) are dealt with first: a stop naming
        them, or the dead-letter topic (see ``_refuse``)."""
        if self.resume is not None and self.resume.already_published(scn, xid):
            return True
        if tx.bad:
            self._refuse(tx, scn)
        return tx.buf is None and not tx.items

    def _commit(self, tx: _Tx, row: tuple, low: int | None = None, open_count: int | None = None) -> Iterator[Event]:
        """COMMIT: Begin, one Change per surviving row (parsed now), Commit with the resume state.

        The per-row part is the reader's hot loop: kept flat (no call per row
        but the parser's and the Change's). ``low`` / ``open_count``: the open transactions' lowest
        start SCN and number when they are not all in ``open`` (the columnar feed knows them)."""
        scn, xid = row[SCN], tx.xid
        self._forget(tx)
        try:
            if self._skip(tx, scn, xid):
                return
            when = ts_ms(row[TS])
            yield Begin(xid, when)
            change_of, lobs = self.change_of, tx.lobs
            for item in tx.rows():
                yield change_of(item, scn, xid, lobs)
            commit = self.committed(scn, xid, when, low)
            if self.on_commit is not None:
                self.on_commit(len(self.open) if open_count is None else open_count)
            yield commit
        finally:
            tx.discard()

    def _published(self, scn: int, xid: str) -> None:
        """Transaction (or DDL) ``xid`` committed at ``scn`` goes into the stream: later resume states name it."""
        if scn != self.commit_scn:
            self.commit_scn, self.xids_at_commit = scn, set()
        self.xids_at_commit.add(xid)

    def committed(self, scn: int, xid: str, when: int, low: int | None = None) -> Commit:
        """The Commit of transaction ``xid`` at ``scn`` (marked published) with the resume state after it (``low``:
        see ``_resume_at``); every release path ends a transaction with it."""
        self._published(scn, xid)
        return Commit(xid, when, self._resume_at(scn, low), {"scn": scn, "commit_scn": scn, "txId": xid})

    def change_of(self, item: tuple, scn: int, xid: str, lobs: LobAssembler | None = None) -> Change:
        """The Change of one released row (parsed now, converted, counted) of transaction ``xid`` committed
        at ``scn``; a row that does not parse raises naming SCN, XID, table and offset."""
        row_scn, sql, owner, table, rs_id, ssn = item
        try:
            op, _schema, _table, before, after = parse_redo(sql)
        except (RedoParseError, DictionaryMismatch) as exc:
            error = (ERROR, type(exc).__name__, exc.message, exc.fields.get("offset"))
            raise self._parse_failed(item, xid, error) from None
        tid, schema = self._schemas.get((owner, table)) or self._table(owner, table, row_scn)
        if lobs is not None and op == "c":
            lobs.patch(owner, table, after)
        change = Change(tid, op, before, after,
                        {"scn": row_scn, "commit_scn": scn, "txId": xid, "rs_id": rs_id, "ssn": ssn}, schema)
        if self.convert is not None:
            self.convert(change)
        key = (owner, table, op)
        self._counts[key] = self._counts.get(key, 0) + 1
        return change

    def _table(self, owner: str, table: str, scn: int | None = None) -> tuple[TableId, TableSchema | None]:
        """The table's definition in force at ``scn`` (a row's SCN; None: the first SCN not mined yet, where the
        rows being released lie), cached until the table's next DDL. A table's definition changes only by DDL,
        and Oracle lets no transaction hold changes of a table across its DDL, so every later row of the table
        until that DDL has this one."""
        at = scn if scn is not None else self.mined_through + 1
        known = self._schemas[(owner, table)] = (TableId(owner, table), self.schema_of(owner, table, at))
        return known

    def _parse_failed(self, item: tuple, xid: str, error: tuple) -> RedoParseError | DictionaryMismatch:
        """The error for an unparseable row, naming SCN, XID, table, offset and the text (of a shaped table:
        neither the text nor the parser's words, which may quote it)."""
        scn, sql, owner, table = item[0], item[1], item[2], item[3]
        said, text = error[2], sql[:500]
        if self.shaped is not None and self.shaped(owner, table):
            said = (f"{error[1]} at offset {error[3]} (the statement is not shown: the table is shaped by "
                    "sources[].transforms)")
            text = "(not shown)"
        return parse_error((*error[:2], f"{said} (SCN {scn}, XID {xid}, table {owner}.{table})", error[3]),
                           scn=scn, xid=xid, table=f"{owner}.{table}", text=text)

    # -- pool mode: parse in worker processes while the next rows are dispatched ----------------------

    def _release(self, tx: _Tx, row: tuple, low: int | None = None, open_count: int | None = None) -> Iterator[Event]:
        """COMMIT in pool mode: the transaction's entries join the job being built (same checks,
        same resume state as _commit, taken now); full jobs go to the pool. Entries: a _Mark
        (Begin: sets the commit SCN and XID of the rows after it; Commit; a DDL's event) or a
        list of item tuples (rows to parse, in order)."""
        scn, xid = row[SCN], tx.xid
        self._forget(tx)
        try:
            if self._skip(tx, scn, xid):
                return
            when = ts_ms(row[TS])
            job, sqls, job_rows = self._job, self._job_sqls, self.job_rows
            job.append(_Mark(Begin(xid, when), scn, xid, 0, tx.lobs))
            if tx.buf is None:  # a small transaction: its list as it is
                job.append(tx.items)
                sqls.extend(map(_SQL_OF, tx.items))
            else:  # a big one streams through in jobs of job_rows
                part: list[tuple] = []
                job.append(part)
                for item in tx.buf:
                    part.append(item)
                    sqls.append(item[1])
                    if len(sqls) >= job_rows:
                        yield from self._submit()
                        job, sqls, part = self._job, self._job_sqls, []
                        job.append(_Mark(None, scn, xid))  # the rows that follow belong to this transaction
                        job.append(part)
            job.append(_Mark(self.committed(scn, xid, when, low), scn, xid,
                             len(self.open) if open_count is None else open_count))
            if len(sqls) >= job_rows:
                yield from self._submit()
        finally:
            tx.discard()

    def _submit(self) -> Iterator[Event]:
        entries, sqls = self._job, self._job_sqls
        self._job, self._job_sqls = [], []
        assert self.pool is not None
        if sqls:
            self.pool.submit(sqls)
        self._jobs.append((entries, bool(sqls)))
        while len(self._jobs) > self.max_jobs:  # bounds memory (a huge transaction streams through)
            yield from self._emit_oldest()

    def _emit_oldest(self) -> Iterator[Event]:
        try:
            yield from self._emit_job(*self._jobs.popleft())
        except BaseException:
            self.failed = True  # a job stopped half-way: nothing after it may be emitted
            raise

    def _emit_job(self, entries: list, parsed: bool) -> Iterator[Event]:
        ops, befores, afters = map(iter, self.pool.result()) if parsed else (iter(()),) * 3
        schemas, convert, counts = self._schemas, self.convert, self._counts
        scn = xid = lobs = None
        for e in entries:
            if type(e) is list:  # rows of the transaction the last _Mark named, with their results in order
                last_owner = last_table = tid = schema = None
                for item, op, before, after in zip(e, ops, befores, afters):  # e's item first: no result skipped
                    if op == ERROR:
                        raise self._parse_failed(item, xid, (ERROR, *before))
                    row_scn, _sql, owner, table, rs_id, ssn = item
                    if table != last_table or owner != last_owner:
                        tid, schema = schemas.get((owner, table)) or self._table(owner, table, row_scn)
                        last_owner, last_table = owner, table
                    if lobs is not None and op == "c":
                        lobs.patch(owner, table, after)
                    change = Change(tid, op, before, after,
                                    {"scn": row_scn, "commit_scn": scn, "txId": xid, "rs_id": rs_id, "ssn": ssn},
                                    schema)
                    if convert is not None:
                        convert(change)
                    key = (owner, table, op)
                    counts[key] = counts.get(key, 0) + 1
                    yield change
                continue
            scn, xid, lobs = e.scn, e.xid, e.lobs
            event = e.event
            if event is None:
                continue
            if type(event) is Commit and self.on_commit is not None:
                self.on_commit(e.open_count)
            yield event

    def ready(self) -> Iterator[Event]:
        """Pool mode: the events of submitted jobs whose results have arrived (never waits)."""
        jobs, pool = self._jobs, self.pool
        while jobs and (not jobs[0][1] or pool.ready()):
            yield from self._emit_oldest()

    def drain(self) -> Iterator[Event]:
        """Pool mode: every released event, waiting for the parse results."""
        if self.pool is None or self.failed:
            return
        if self._job:
            yield from self._submit()
        while self._jobs:
            yield from self._emit_oldest()

    def _ddl(self, row: tuple) -> Iterator[Event]:
        """A DDL row (its pieces joined when LogMiner split a long statement with ``CSF = 1``).

        A DDL is published like a commit at its own SCN: it joins ``xids_at_commit`` (the resume
        state it carries names it), and after a restart the same row, mined again from the low
        watermark, passes the already-published test and is dropped: never emitted twice.
        The statement decides which tables it concerns (readers/oracle/ddl.py: a CREATE INDEX row
        names the index, a RENAME the old name). ``TRUNCATE TABLE`` of a captured table becomes a
        transaction of one ``op: "t"`` change (before and after None), as Debezium publishes it;
        other DDL a SchemaChange carrying the table's definition in force right after it (read AS OF
        the DDL's SCN), and for CREATE / DROP / RENAME TABLE the table-level actions the apply
        performs (``tables``)."""
        owner, table = row[OWNER], row[TABLE]
        sql = row[SQL] or ""
        if row[CSF]:
            self._ddl_pieces.setdefault(row[XID], []).append(sql)
            return
        pieces = self._ddl_pieces.pop(row[XID], None)
        if pieces:
            sql = "".join(pieces) + sql
        parsed = classify(sql, owner, table)
        names = [t for t in (parsed.table, parsed.old) if t is not None]
        if not names and owner and table:
            names = [TableId(owner, table)]
        captured = [t for t in names if self.captured(t.db, t.table)]
        if names and not captured:
            return
        scn, xid = row[SCN], f"{row[USN]}.{row[SLT]}.{row[SQN]}"
        if parsed.kind != "truncate":
            for t in names:  # re-read the definitions after the change (also after one published before a restart)
                self._schemas.pop((t.db, t.table), None)
        if self.resume is not None and self.resume.already_published(scn, xid):
            return
        if captured and _PARTITION_ROWS.search(sql):
            t = captured[0]
            raise UnloggedRowChange(
                f"{sql[:200]!r} on captured table {t} at SCN {scn} (XID {xid}) removes or swaps rows "
                "without DML redo: the change stream cannot carry it and the target would keep those rows. The "
                f"source stops before it; re-snapshot {t} (or delete the rows with DML instead)",
                scn=scn, xid=xid, table=str(t), text=sql[:500])
        self._published(scn, xid)
        when = ts_ms(row[TS])
        if parsed.kind == "truncate" and captured:
            t = captured[0]
            known = self._schemas.get((t.db, t.table)) or self._table(t.db, t.table, scn)
            source = {"scn": scn, "commit_scn": scn, "txId": xid, "rs_id": row[RS_ID], "ssn": row[SSN]}
            key = (t.db, t.table, "t")
            self._counts[key] = self._counts.get(key, 0) + 1
            yield Begin(xid, when)
            yield Change(known[0], "t", None, None, source, known[1])
            yield self.committed(scn, xid, when)
            return
        if self.on_ddl is not None:
            self.on_ddl(scn)
            self.dictionary_rebuilt_scn = scn

        def read(t: TableId) -> TableSchema | None:
            return self.schema_of(t.db, t.table, scn)

        tables = table_actions(parsed, lambda t: self.captured(t.db, t.table), read)
        tid = captured[0] if captured else None
        if parsed.kind == "rename" and parsed.table in captured:
            tid = parsed.table  # the name it has now
        schema = None if tid is None or parsed.kind == "drop" or (parsed.kind == "rename" and tid == parsed.old) \
            else read(tid)
        yield SchemaChange(tid, sql, schema, when, self.state(at_scn=scn).to_json(), tables)

    def _refused_row(self, row: tuple) -> None:
        """A LOB operation or an UNSUPPORTED row of a captured table. A LOB row the transaction's
        LobAssembler takes is done; any other is kept with its transaction and refused at its
        COMMIT (``_refuse``): a transaction that rolls back never stops the reader."""
        owner, table, op = row[OWNER], row[TABLE], row[OP]
        if not owner or not self.captured(owner, table or "") or row[ROLLBACK]:
            return
        tx = self.open.get(row[XID]) or self._tx(row)
        sql, info = row[SQL] or "", row[INFO]
        if op in LOB_OPS:
            if row[CSF]:  # a long LOB_WRITE continues in the next row
                tx.csf = [*(tx.csf or ()), sql]
                return
            if tx.csf is not None:
                sql, tx.csf = "".join(tx.csf) + sql, None
            info = self._assemble(tx, row, sql)
            if info is None:
                return
        self._keep_bad(tx, row, sql, info, op in LOB_OPS)

    @staticmethod
    def _keep_bad(tx: _Tx, row: tuple, sql: str, info: Any, lob: bool) -> None:
        if tx.bad is None:
            tx.bad = []
        tx.bad.append((row[SCN], row[OP], row[OWNER], row[TABLE], row[ROW_ID], sql[:500], info, lob))

    @staticmethod
    def _assemble(tx: _Tx, row: tuple, sql: str) -> str | None:
        """Hand a LOB row to the transaction's LobAssembler; returns why it cannot (None: taken)."""
        if tx.buf is not None:
            return "the transaction spilled to disk: its INSERT rows are not held to receive LOB values"
        if tx.lobs is None:
            tx.lobs = LobAssembler()
        rid = row[ROW_ID]
        inserted = row[OP] == 9 and any(k == rid and it[1][:6].lower() == "insert" for k, it in zip(tx.keys, tx.items))
        return tx.lobs.feed(row[OP], rid, sql, inserted)

    def _refuse_later(self, tx: _Tx, row: tuple) -> None:
        """A change of a row whose LOB this transaction wrote: its images would lack the LOB value."""
        self._keep_bad(tx, row, row[SQL] or "", f"{_OP_NAMES.get(row[OP], row[OP])} of a row whose LOB the "
                       f"transaction wrote (ROW_ID {row[ROW_ID]}): its images would lack the LOB value", True)

    def _refuse(self, tx: _Tx, commit_scn: int) -> None:
        """The committed transaction ``tx`` holds rows the reader cannot publish.

        Never dropped silently: with a dead-letter topic each row goes there (the rest of the
        transaction is published as LogMiner wrote it); with ``unsupported: skip`` each is logged
        and counted; otherwise the first one stops the reader, naming table, XID and SCN. All
        but the stop count in ``cdc_source_errors_total{class=...}`` (on_refused)."""
        for scn, op, owner, table, row_id, sql, info, lob in tx.bad or ():
            name = _LOB_NAMES.get(op) or (_OP_NAMES.get(op, "UNSUPPORTED") if lob or op == 255
                                          else f"OPERATION_CODE {op}")
            if self.shaped is not None and self.shaped(owner, table):  # its statement holds clear values
                sql = "(not shown: the table is shaped by sources[].transforms)"
            fields = {"scn": scn, "commit_scn": commit_scn, "xid": tx.xid, "table": f"{owner}.{table}",
                      "operation": name, "row_id": row_id, "text": sql}
            if lob:
                err: Exception = UnsupportedLob(
                    f"LOB operation {name} on {owner}.{table} at SCN {scn} (XID {tx.xid}, commit SCN {commit_scn}) "
                    f"cannot be assembled into a row image: {info}", reason=info, **fields)
            else:
                err = UnsupportedOperation(
                    f"LogMiner cannot decode a change of {owner}.{table} at SCN {scn} (XID {tx.xid}, commit SCN "
                    f"{commit_scn}, {name}: {info or 'an operation this reader does not decode'})", **fields)
            if self.dead_letter is not None:
                self.dead_letter(err, {**fields, "info": info})
            elif self.unsupported == "skip":
                self.skipped_unsupported += 1
                log.warning("skipping %s", err)
            else:
                err.message = (f"{err.message}. The source stops before this transaction at every restart. Way back: "
                               f"`cdc source skip --config <cdc.yaml> --source <name> --xid {tx.xid} --yes --resync` "
                               "moves past it, records it in the stream and re-reads the tables it touched")
                err.args = (err.message,)
                raise err
            if self.on_refused is not None:
                self.on_refused(err)
        tx.bad = None
