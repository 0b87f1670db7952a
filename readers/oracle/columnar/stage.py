"""The columnar dispatch stage (``pipeline: columnar``): Arrow batches of V$LOGMNR_CONTENTS -> released transactions.

Sessions fetch with ``fetch_df_batches`` (readers/oracle/session.py), so rows arrive as Arrow record
batches with no Python object per row. :class:`ColumnarFeed` routes each batch as array arithmetic
(numpy over the batch's columns) instead of a Python step per row, then releases the committed
transactions: with the native record pass (readers/oracle/columnar/redo_json.py, the default where it is
compiled) all their rows' JSON in one call and each transaction as Begin, one ChangeBatch, Commit with
the resume state (``_commit_serialized``, the same checks as ``Dispatcher._commit``; rows the pass
declines are parsed by ``Dispatcher.change_of`` in their places); without it through the row
dispatcher's own release path (``Dispatcher._commit`` / ``_release``: parse, Change, Commit). There is
ONE dispatcher semantics: this module decides
which rows survive, which transactions commit and the low watermark at each commit exactly as
``Dispatcher.feed`` does (tests/unit/readers/oracle/columnar/test_columnar_property.py holds them equal on
random streams), and every row kind it cannot vouch for goes through ``Dispatcher.feed`` itself.

Per batch (``work`` = rows of transactions still open after the last batch + the new batch):

* transaction key: the raw XID, dictionary-encoded; a row whose XID sequence is ``ffffffff``
  belongs to the latest transaction that opened with the same undo segment + slot (the
  dispatcher's ``by_slot``), found with one ``searchsorted``;
* a transaction opens at its first START or captured DML row (its start SCN) and ends at its
  first COMMIT / ROLLBACK after that; DML rows of captured tables (decided once per distinct
  table) are its rows; CSF pieces are joined and ``ROLLBACK = 1`` rows cancel the latest earlier
  row of the same ROW_ID (a short loop over the few rows of such (XID, ROW_ID) groups);
* the low watermark at a commit: the start SCN of the earliest-opened transaction still open
  there, for all commits at once (prefix maximum of the ends + ``searchsorted``);
* transactions still open at the end of the batch keep their raw rows (Arrow) for the next one.

The batch is cut at any rare row. A DDL (5; TRUNCATE too) needs no transaction's rows: the commits
before it are released, ``Dispatcher.feed`` takes the DDL row alone (its SchemaChange or TRUNCATE at
its place, the open transactions held here in the resume state it carries) and the rows after it go
on here. At any other, ``Dispatcher.feed`` takes over from the open transactions' raw rows
onwards: LOB operations (9, 10, 11, 28, 29), UNSUPPORTED (255),
MISSING_SCN (34), an ``"UNKNOWN"`` owner, a DML row without SQL_REDO, an ``ffffffff`` row whose
transaction is not open, or an XID seen again after its end. Spilled transactions' rows go with
them, each back in its place after its stub (``_raw_rows``).

Big transactions (with the native pass): when the open transactions' raw rows held here pass
``max_pending_rows`` or ``max_pending_bytes`` (Arrow buffer bytes), the largest ones' rows go to Arrow
IPC chunk files (readers/oracle/columnar/arrow_spill.py) but for each one's first row, until the rows held are
under half the bounds; at COMMIT such a transaction's rows are decided on their flags, then read back
and published chunk by chunk (``_commit_spilled``). Only when that cannot bring them under the
bounds (many small transactions) do the open transactions go to the row path, which spills by
itself: memory stays bounded either way.
The row path hands back to the columnar one at the first batch boundary where it holds no open
transaction and no half-joined DDL (with many concurrent transactions that may take long).
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Generator, Iterator
from itertools import chain
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from cdc.stream.events import Begin, ChangeBatch, Commit, Event, TableSchema
from readers.oracle.columnar import redo_json
from readers.oracle.columnar.arrow_spill import ArrowSpill
from readers.oracle.convert import Converter
from readers.oracle.dispatcher import HANDLED_OPS, LOB_OPS, Dispatcher, _Tx, ts_ms

# the row kinds the columnar routing cannot vouch for (see the module docstring)
RARE_OPS = np.array(sorted({5, 34, 255, *LOB_OPS}), dtype=np.int64)
_HANDLED = np.array(sorted(HANDLED_OPS), dtype=np.int64)  # any other code on a captured table is rare (refused)
_FFFFFFFF = 0xFFFFFFFF
_OP_LETTER = {1: "c", 2: "d", 3: "u"}  # OPERATION_CODE -> the change's op


def to_rows(table: pa.Table | pa.RecordBatch) -> list[tuple]:
    """The rows as fetchmany returns them (the row path's input)."""
    if table.num_rows == 0:
        return []
    return list(zip(*(c.to_pylist() for c in table.columns), strict=True))


def _codes(column: Any) -> tuple[np.ndarray, list[Any]]:
    """Dictionary codes of a column (-1 for null) and its distinct values."""
    enc = pc.dictionary_encode(column)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    codes = enc.indices.to_numpy(zero_copy_only=False)
    codes = np.where(np.isnan(codes), -1, codes).astype(np.int64) if codes.dtype.kind == "f" else codes.astype(np.int64)
    return codes, enc.dictionary.to_pylist()


def _epoch_ms(column: Any) -> list[int]:
    """``dispatcher.ts_ms`` of a timestamp column (naive: UTC; null: 0), for all rows at once."""
    us = pc.cast(column, pa.timestamp("us", column.type.tz), safe=False).cast(pa.int64())
    return (np.asarray(pc.fill_null(us, 0).to_numpy(zero_copy_only=False), dtype=np.int64) // 1000).tolist()


def _survivors(csf: np.ndarray, rollback: np.ndarray, groups: Callable[[], np.ndarray]) -> np.ndarray:
    """Which released rows survive, in order: not a CSF piece (joined into the next row), not a ``ROLLBACK = 1``
    row, not cancelled by one (the latest earlier surviving row of its group: transaction and ROW_ID, from
    ``groups()``, asked only when there is a rollback row; a short loop over the groups it touches)."""
    alive = ~csf
    undo = alive & rollback
    if undo.any():
        group = groups()
        stacks: dict[int, list[int]] = {}
        for i in np.flatnonzero(np.isin(group, group[undo]) & alive).tolist():
            stack = stacks.setdefault(int(group[i]), [])
            if rollback[i]:
                alive[i] = False
                if stack:
                    alive[stack.pop()] = False
            else:
                stack.append(i)
    return alive


def _undone_groups(parts: Callable[[], Iterator[pa.Array]], undo: np.ndarray) -> np.ndarray:
    """``_survivors``' groups for one transaction whose ROW_IDs come in ``parts`` (chunk by chunk, read twice):
    per row the code of its ROW_ID where a ``ROLLBACK = 1`` row (``undo``) has that ROW_ID, else -1 (a row
    no rollback row can cancel). Holds the undone ROW_IDs and an int per row, never all the ROW_IDs."""
    undone, at = [], 0
    for ids in parts():
        sel = np.flatnonzero(undo[at:at + len(ids)])
        at += len(ids)
        if len(sel):
            undone.append(ids.take(pa.array(sel, type=pa.int64())))
    if not undone:
        return np.full(len(undo), -1, dtype=np.int64)
    values = pc.unique(pa.concat_arrays(undone))
    group, at = np.empty(len(undo), dtype=np.int64), 0
    for ids in parts():
        codes = pc.fill_null(pc.index_in(ids, value_set=values), -1)
        group[at:at + len(ids)] = codes.to_numpy(zero_copy_only=False)
        at += len(ids)
    return group


def _join_csf(text: list[str], csf: np.ndarray, pieces: list[str]) -> list[str]:
    """Join the CSF pieces among one transaction's consecutive rows ``text`` into the next row's text, in place;
    ``pieces``: those still waiting from the rows before. Returns those still waiting after."""
    follows = np.concatenate([[bool(pieces)], csf[:-1]])
    for i in np.flatnonzero(csf | follows).tolist():
        if csf[i]:
            pieces.append(text[i])
        elif pieces:
            text[i] = "".join([*pieces, text[i]])
            pieces = []
    return pieces


def _ints(column: Any) -> np.ndarray:
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64) if column.null_count == 0 else \
        np.asarray(pc.fill_null(column, 0).to_numpy(zero_copy_only=False), dtype=np.int64)


class ColumnarFeed:
    """Feeds Arrow batches (in SCN order) to ``dispatcher``; yields the same events ``Dispatcher.feed``
    would for the same rows. ``open_count`` / ``low_watermark()`` cover the transactions it holds."""

    def __init__(self, dispatcher: Dispatcher, max_pending_rows: int = 10_000,
                 max_pending_bytes: int = 64 << 20, serialize: bool | None = None) -> None:
        self.d = dispatcher
        self.max_pending_rows, self.max_pending_bytes = max_pending_rows, max_pending_bytes
        self.pending: pa.Table | None = None   # raw rows of the open transactions (columnar mode)
        self._pending_start: list[int] = []    # their start SCNs
        self.rows_mode = False                 # True while Dispatcher.feed owns the open transactions
        self._captured: dict[Any, bool] = {}
        self.batches_columnar = self.batches_rows = 0
        # the native pass (readers/oracle/columnar/redo_json.py) builds the records' JSON; without it, the row path
        self.serialize = redo_json.NATIVE if serialize is None else serialize
        self._specs: dict[tuple[str, str], tuple[Any, redo_json.Spec | None]] = {}
        self.native_cpu_s = 0.0  # CPU seconds in the native pass (cdc bench oracle's stage figures)
        # big open transactions' rows on disk (readers/oracle/columnar/arrow_spill.py); the serialized release reads them
        self.spill = ArrowSpill(dispatcher.store) if self.serialize else None
        self.peak_pending_bytes = 0  # the most the open transactions' rows held here between batches

    # -- state the reader asks for ------------------------------------------------------------------

    @property
    def open_count(self) -> int:
        return len(self._pending_start) + len(self.d.open)

    def holds_open(self) -> bool:
        return bool(self._pending_start) or bool(self.d.open)

    def open_transactions(self) -> list[dict[str, Any]]:
        """The open transactions held here (their raw rows wait in ``pending``; a spilled one's rest in ``spill``)
        and in the dispatcher, oldest first: Dispatcher.open_transactions' entries. Read-only, for another
        thread (``pending`` is an immutable Arrow table, replaced, never changed)."""
        out = self.d.open_transactions()
        pending, now_ms = self.pending, time.time() * 1000
        if pending is not None and pending.num_rows:
            work = pending.append_column("BYTES", pc.add(pc.fill_null(pc.utf8_length(pending.column("SQL_REDO")), 0),
                                                          120))
            groups = work.group_by("XID").aggregate([("SCN", "min"), ("TIMESTAMP", "min"), ("XIDUSN", "min"),
                                                     ("XIDSLT", "min"), ("XIDSQN", "min"), ("XID", "count"),
                                                     ("BYTES", "sum")]).to_pylist()
            for g in groups:
                began_ms = ts_ms(g["TIMESTAMP_min"]) or None  # a naive datetime (UTC), or None
                spilled = self.spill.rows(g["XID"]) if self.spill is not None else 0
                out.append({"xid": f"{g['XIDUSN_min']}.{g['XIDSLT_min']}.{g['XIDSQN_min']}",
                            "start_scn": g["SCN_min"], "started_ms": began_ms,
                            "age_s": None if began_ms is None else max(0.0, (now_ms - began_ms) / 1000),
                            "rows": g["XID_count"] + spilled, "bytes": g["BYTES_sum"]})
        return sorted(out, key=lambda t: t["start_scn"])

    def _publish_outside(self) -> None:
        """Tell the dispatcher the lowest start SCN of the transactions held here (its resume states)."""
        self.d.outside_low_watermark = min(self._pending_start) if self._pending_start else None

    # -- feeding ------------------------------------------------------------------------------------

    def feed(self, batch: pa.Table | pa.RecordBatch) -> Iterator[Event]:
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        if table.num_rows == 0:
            return
        d = self.d
        if self.rows_mode:
            self.batches_rows += 1
            yield from d.feed(to_rows(table))
            if not d.open and not d._ddl_pieces and not d.by_slot:
                self.rows_mode = False
            return
        self.batches_columnar += 1
        # a batch ends after each DDL row (any batch boundary is as good as another): the rows after a DDL are
        # routed once, not once per DDL before them
        ddl = np.flatnonzero(_ints(table.column("OPERATION_CODE")) == 5) + 1
        for start, stop in zip([0, *ddl.tolist()], [*ddl.tolist(), table.num_rows], strict=True):
            rest: pa.Table | None = table.slice(start, stop - start) if stop > start else None
            while rest is not None:  # the rows after a DDL, which the row path took alone (_kernel)
                if self.rows_mode:
                    yield from self.feed(rest)
                    break
                work = rest if self.pending is None else pa.concat_tables([self.pending, rest])
                n_old = 0 if self.pending is None else self.pending.num_rows
                rest = yield from self._kernel(work, n_old)

    def _to_rows_mode(self, work: pa.Table, keep: np.ndarray, cut: int) -> Iterator[Event]:
        """Hand over: the open transactions' raw rows, then everything from ``cut`` on, to Dispatcher.feed."""
        rows = work.take(pa.array(np.concatenate([keep, np.arange(cut, work.num_rows)]), type=pa.int64()))
        self.pending, self._pending_start = None, []
        self._publish_outside()
        self.rows_mode = True
        mined = self.d.mined_through
        yield from self.d.feed(self._raw_rows(rows))
        self.d.mined_through = max(mined, self.d.mined_through)
        if not self.d.open and not self.d._ddl_pieces and not self.d.by_slot:
            self.rows_mode = False

    def _captured_codes(self, owner: np.ndarray, owners: list, table: np.ndarray, tables: list) -> np.ndarray:
        """captured(owner, table) per row, decided once per distinct pair."""
        pair = owner * (len(tables) + 1) + (table + 1)
        uniq, inv = np.unique(pair, return_inverse=True)
        seen, captured = self._captured, self.d.captured
        ok = np.zeros(len(uniq), dtype=bool)
        for i, p in enumerate(uniq.tolist()):
            o, t = divmod(p, len(tables) + 1)
            key = (owners[o] if o >= 0 else None, tables[t - 1] if t > 0 else None)
            got = seen.get(key)
            if got is None:
                got = seen[key] = bool(key[0]) and key[0] != "UNKNOWN" and bool(captured(key[0], key[1] or ""))
            ok[i] = got
        return ok[inv]

    def _kernel(self, work: pa.Table, n_old: int) -> Generator[Event, None, pa.Table | None]:
        """Route ``work`` (the open transactions' rows, ``n_old`` of them, then new rows); returns the rows
        after a DDL that cut it (still to route), else None."""
        d = self.d
        n = work.num_rows
        op = _ints(work.column("OPERATION_CODE"))
        scn = _ints(work.column("SCN"))
        owner, owners = _codes(work.column("SEG_OWNER"))
        tabl, tables = _codes(work.column("TABLE_NAME"))
        dml = (op == 1) | (op == 2) | (op == 3)
        # -- rare rows cut the batch
        rare = np.isin(op, RARE_OPS)
        if "UNKNOWN" in owners:
            rare |= dml & (owner == owners.index("UNKNOWN"))
        captured = self._captured_codes(owner, owners, tabl, tables)
        rel = dml & captured
        rare |= captured & ~np.isin(op, _HANDLED)  # an operation code the dispatcher does not know
        sql_null = np.asarray(work.column("SQL_REDO").is_null().to_numpy(zero_copy_only=False), dtype=bool)
        self._k = {"rel": rel}
        rare |= rel & sql_null
        # -- transaction keys
        xkey, raws = _codes(work.column("XID"))
        sqn = _ints(work.column("XIDSQN"))
        usn, slt = _ints(work.column("XIDUSN")), _ints(work.column("XIDSLT"))
        slot_key = (usn << 16) | slt
        self._k |= {"op": op, "owner": owner, "owners": np.array([*owners, None], dtype=object), "table": tabl,
                   "tables": np.array([*tables, None], dtype=object), "xkey": xkey,
                   "raws": np.array(raws, dtype=object), "usn": usn, "slt": slt, "sqn": sqn,
                   "ssn": _ints(work.column("SSN")) if work.column("SSN").null_count == 0 else
                   np.array(work.column("SSN").to_pylist(), dtype=object)}
        ff = sqn == _FFFFFFFF
        opener = rel | (op == 6)
        term = (op == 7) | (op == 36)
        rare |= ff & (op == 7)
        pos = np.arange(n, dtype=np.int64)
        ekey = self._k["ekey"] = xkey.copy()
        ffrows = np.flatnonzero(ff & (opener | (op == 36)))
        if len(ffrows):  # by_slot: the latest transaction opened on this undo slot
            cand = np.flatnonzero(opener & ~ff)
            sk = np.sort(slot_key[cand] * (n + 1) + cand)
            j = np.searchsorted(sk, slot_key[ffrows] * (n + 1) + ffrows) - 1
            if len(sk):
                hit = (j >= 0) & (sk[np.maximum(j, 0)] // (n + 1) == slot_key[ffrows])
                found = sk[np.maximum(j, 0)] % (n + 1)
            else:  # no transaction of this chunk opened with a known sequence number: none to match
                hit, found = np.zeros(len(ffrows), dtype=bool), np.zeros(len(ffrows), dtype=np.int64)
            ekey[ffrows] = np.where(hit, xkey[found], -2)
            rare[ffrows[~hit]] = True
        nk = len(raws)
        big = np.int64(n + 1)
        first_open = np.full(nk + 1, big)
        valid = ekey >= 0
        m = opener & valid
        np.minimum.at(first_open, ekey[m], pos[m])
        m = term & valid & (pos > first_open[np.where(valid, ekey, nk)])
        end = np.full(nk + 1, big)
        np.minimum.at(end, ekey[m], pos[m])
        # an FF row must meet its transaction open; no row may open a transaction after its end
        rare[ffrows] |= (ekey[ffrows] < 0) | (pos[ffrows] > end[np.where(ekey[ffrows] >= 0, ekey[ffrows], nk)])
        rare |= opener & valid & (pos > end[np.where(valid, ekey, nk)])
        cut = int(np.argmax(rare)) if rare.any() else n
        if cut < n_old:  # not expected (pending rows passed these checks before): all of it to the row path
            cut = 0
        if cut < n:
            # the columnar part: rows before the cut (the ends computed above may lie past it)
            end = np.where(end < cut, end, big)
            first_open = np.where(first_open < cut, first_open, big)
        # -- per transaction: opened before the cut; committed (7), rolled back (36), or still open
        opened = np.flatnonzero(first_open[:nk] < big)
        ends = end[opened]
        committed = opened[(ends < big) & (op[np.minimum(ends, n - 1)] == 7)]
        still_open = opened[ends >= big]
        keep_rows = np.flatnonzero((opener | ff) & valid & (pos < cut) & np.isin(ekey, still_open))
        yield from self._release(work, committed, first_open, end, scn, ekey, rel, still_open, min(cut, n))
        if self.spill:  # committed or rolled back: their chunks are done with
            for raw in self._k["raws"][opened[ends < big]].tolist():
                self.spill.discard(raw)
        if cut < n and op[cut] == 5 and cut >= n_old and not d.open and not d.by_slot:
            # a DDL needs no transaction of ours: the row path takes it alone, at its place (after the commits
            # before it, the open transactions in the resume state it carries); the rest stays columnar
            self._keep(work, keep_rows, [int(scn[first_open[k]]) for k in still_open])
            yield from d.feed(to_rows(work.slice(cut, 1)))
            return work.slice(cut + 1) if cut + 1 < n else None
        if cut < n:
            yield from self._to_rows_mode(work, keep_rows, cut)
            return None
        d.mined_through = int(scn[-1])
        self._keep(work, keep_rows, [int(scn[first_open[k]]) for k in still_open])
        if self.pending is not None and self.spill is not None and self._over_bound():
            keep_rows = self._relieve(work, keep_rows)
            self.pending = work.take(pa.array(keep_rows, type=pa.int64()))
        if self.pending is not None and self._over_bound():
            self.pending, keep, self._pending_start = None, self.pending, []
            self._publish_outside()
            self.rows_mode = True
            mined = d.mined_through
            yield from d.feed(self._raw_rows(keep))
            d.mined_through = mined
        if self.pending is not None:
            self.peak_pending_bytes = max(self.peak_pending_bytes, self.pending.nbytes)
        return None

    def _keep(self, work: pa.Table, rows: np.ndarray, starts: list[int]) -> None:
        """Hold ``rows`` of ``work`` (the open transactions', which start at SCNs ``starts``) for the next batch."""
        self.pending = work.take(pa.array(rows, type=pa.int64())) if len(rows) else None
        self._pending_start = starts
        self._publish_outside()

    def _over_bound(self) -> bool:
        return self.pending.num_rows > self.max_pending_rows or self.pending.nbytes > self.max_pending_bytes

    def _relieve(self, work: pa.Table, keep_rows: np.ndarray) -> np.ndarray:
        """Spill the largest open transactions' captured rows, all but each one's stub (its first row), until
        the open rows are under half their bound; returns the rows (of ``work``) that stay. A transaction
        moves only a 64th of what the bounds hold or more at a time (at most 64 chunk files per call: many
        small open transactions are not cut into a file per row; they go to the row path instead)."""
        k = self._k
        ekey, rel = k["ekey"][keep_rows], k["rel"][keep_rows]
        keys, first, counts = np.unique(ekey, return_index=True, return_counts=True)
        if len(keys) > self.max_pending_rows // 2:  # their stubs alone pass half the bound: the row path's
            return keep_rows
        per_row = self.pending.nbytes / len(keep_rows)
        least = max(1, int(min(self.max_pending_rows, self.max_pending_bytes / per_row)) // 64)
        left = len(keep_rows)
        drop = np.zeros(len(keep_rows), dtype=bool)
        for j in np.argsort(-counts, kind="stable").tolist():
            if left <= self.max_pending_rows // 2 and left * per_row <= self.max_pending_bytes // 2:
                break
            mine = np.flatnonzero((ekey == keys[j]) & rel)
            mine = mine[mine != first[j]]
            if len(mine) >= least:
                stub = keep_rows[first[j]]
                xid = f"{k['usn'][stub]}.{k['slt'][stub]}.{k['sqn'][stub]}"
                self.spill.append(k["raws"][keys[j]], xid, work.take(pa.array(keep_rows[mine], type=pa.int64())))
                drop[mine] = True
                left -= len(mine)
        return keep_rows[~drop]

    def _raw_rows(self, table: pa.Table) -> Iterator[tuple]:
        """``table``'s rows as the row path takes them, each spilled transaction's rows back in their place
        right after its stub (its first row here); those transactions are the row path's from then on."""
        spill = self.spill
        if not spill:
            yield from to_rows(table)
            return
        xkey, raws = _codes(table.column("XID"))
        stubs = []
        for raw in spill.raws():
            if raw not in raws:  # cannot happen: a spilled transaction is open, so its stub is handed over
                raise RuntimeError(f"spilled transaction {raw!r} has no open row to follow")
            stubs.append((int(np.argmax(xkey == raws.index(raw))), raw))
        start = 0
        for at, raw in sorted(stubs):
            yield from to_rows(table.slice(start, at + 1 - start))
            for chunk in spill.chunks(raw):
                yield from to_rows(chunk)
            spill.discard(raw)
            start = at + 1
        yield from to_rows(table.slice(start))

    def _release(self, work: pa.Table, committed: np.ndarray, first_open: np.ndarray, end: np.ndarray,
                 scn: np.ndarray, ekey: np.ndarray, rel: np.ndarray, still_open: np.ndarray,
                 cut: int) -> Iterator[Event]:
        """Committed transactions in commit order through the dispatcher's release path."""
        d = self.d
        if len(committed) == 0:
            return
        n = work.num_rows
        pos = np.arange(n, dtype=np.int64)
        in_tx = rel & (ekey >= 0) & (pos < cut)
        in_tx &= np.isin(ekey, committed)
        in_tx &= pos < end[np.where(ekey >= 0, ekey, len(end) - 1)]
        spilled = np.array([raw in self.spill for raw in self._k["raws"][committed].tolist()], dtype=bool) \
            if self.spill else np.zeros(len(committed), dtype=bool)
        if spilled.any():  # released chunk by chunk (_commit_spilled)
            in_tx &= ~np.isin(ekey, committed[spilled])
        rows = np.flatnonzero(in_tx)
        csf = _ints(work.column("CSF"))[rows] != 0
        rb = _ints(work.column("ROLLBACK"))[rows] != 0
        keyed = ekey[rows]
        order = np.argsort(keyed, kind="stable")  # transaction by transaction, each in row order
        rows, csf, rb, keyed = rows[order], csf[order], rb[order], keyed[order]
        sql_of: dict[int, str] = {}
        sqls = work.column("SQL_REDO")
        if csf.any():  # join CSF pieces into the next row of the same transaction (rare: a short loop)
            pieces: list[str] = []
            for i in np.flatnonzero(csf | np.roll(csf, 1)).tolist():
                if i > 0 and csf[i - 1] and keyed[i - 1] != keyed[i]:
                    pieces = []  # a transaction's trailing pieces never joined: dropped with it at COMMIT
                text = sqls[int(rows[i])].as_py()
                if csf[i]:
                    pieces.append(text)
                elif pieces:
                    sql_of[int(rows[i])] = "".join([*pieces, text])
                    pieces = []

        def groups() -> np.ndarray:
            rid, _ = _codes(work.column("ROW_ID").take(pa.array(rows, type=pa.int64())))
            return keyed * (int(rid.max()) + 2) + (rid + 1)

        alive = _survivors(csf, rb, groups)
        keep = rows[alive]
        kept_keys = keyed[alive]
        # item tuples (scn, sql, owner, table, rs_id, ssn) of every surviving row, by transaction: integer and
        # dictionary columns through numpy, only the two text columns through Arrow -> str
        k = self._k
        take = pa.array(keep, type=pa.int64())
        text = work.column("SQL_REDO").take(take).to_pylist()
        if sql_of:
            for i, r in enumerate(keep.tolist()):
                joined = sql_of.get(r)
                if joined is not None:
                    text[i] = joined
        row_scns, rs_ids, ssns = scn[keep].tolist(), work.column("RS_ID").take(take).to_pylist(), k["ssn"][keep].tolist()
        lo_b = np.searchsorted(kept_keys, committed, side="left").tolist()
        hi_b = np.searchsorted(kept_keys, committed, side="right").tolist()
        # the open transactions at each commit c (opened before c, ending after it: committed, rolled back or
        # still open), all at once: with the transactions sorted by start, the first whose end lies past c
        # is found on the prefix maximum of the ends; the count is (starts before c) - (ends at or before c)
        commit_pos = end[committed]
        never = np.int64(np.iinfo(np.int64).max)
        rolled = np.flatnonzero((first_open[:-1] < n + 1) & (end[:-1] < cut))
        rolled = rolled[~np.isin(rolled, committed)]
        opened = np.concatenate([committed, still_open, rolled])
        ends = np.concatenate([commit_pos, np.full(len(still_open), never), end[rolled]])
        starts = first_open[opened]
        order = np.argsort(starts, kind="stable")
        starts, ends = starts[order], ends[order]
        first_past = np.searchsorted(np.maximum.accumulate(ends), commit_pos, side="right")
        before = np.searchsorted(starts, commit_pos, side="left")
        has_low = first_past < before
        low_pos = np.where(has_low, starts[np.minimum(first_past, len(starts) - 1)], commit_pos)
        lows = scn[low_pos].tolist()
        open_now = (before - np.searchsorted(np.sort(ends), commit_pos, side="right") + len(d.open)).tolist()
        by_commit = np.argsort(commit_pos, kind="stable").tolist()
        cscn = scn[commit_pos].tolist()
        fo = first_open[committed]
        raws = k["raws"][k["xkey"][fo]].tolist()
        usn, slt, sqn, start = k["usn"][fo].tolist(), k["slt"][fo].tolist(), k["sqn"][fo].tolist(), scn[fo].tolist()
        if self.serialize:  # the native pass: records' JSON built per batch, one ChangeBatch per transaction
            if d.pending:  # transactions the row path released to the parse pool go out first
                yield from d.drain()
            xids = [f"{usn[i]}.{slt[i]}.{sqn[i]}" for i in range(len(committed))]
            # per kept row: its transaction's commit SCN and txId (JSON), by the transaction key
            of_key = np.zeros(len(end), dtype=np.int64)
            of_key[committed] = np.arange(len(committed))
            tx_of_row = of_key[kept_keys]
            xj = np.array([orjson.dumps(x) for x in xids], dtype=object)
            sources = (row_scns, np.asarray(cscn, dtype=np.int64)[tx_of_row].tolist(), xj[tx_of_row].tolist(),
                       rs_ids, ssns)
            built, knowns, table_of_row, names = self._build(k["owner"][keep], k["owners"], k["table"][keep],
                                                             k["tables"], text, sources)
            declined = [j for j, got in enumerate(built) if got is None] if None in built else []
            if declined:  # rows the native pass left to the row path: their items as Dispatcher.feed makes them
                owners, tables = k["owners"][k["owner"][keep]].tolist(), k["tables"][k["table"][keep]].tolist()
                for j in declined:
                    built[j] = (row_scns[j], text[j], owners[j], tables[j], rs_ids[j], ssns[j])
            when = _epoch_ms(work.column("TIMESTAMP").take(pa.array(commit_pos)))  # dispatcher.ts_ms, per batch
            emitted = np.zeros(len(committed), dtype=bool)
            try:
                for i in by_commit:
                    if spilled[i]:
                        yield from self._commit_spilled(work, int(committed[i]), xids[i], cscn[i], when[i], lows[i],
                                                        open_now[i], int(fo[i]), int(commit_pos[i]))
                        continue
                    lo, hi = lo_b[i], hi_b[i]
                    mixed = bool(declined) and bisect_left(declined, hi) > bisect_left(declined, lo)
                    yield from self._commit_serialized(xids[i], cscn[i], when[i], built[lo:hi], knowns[lo:hi],
                                                       lows[i], open_now[i], mixed, emitted, i)
            finally:  # the metrics' changes per (owner, table, op): the rows of the transactions emitted (their
                # ChangeBatch taken, as the row path counts each Change it yields), added once per batch
                counted = emitted[tx_of_row]
                if declined:
                    counted[declined] = False  # Dispatcher.change_of counted those
                self._count(table_of_row[counted] * 4 + k["op"][keep][counted], names)
            return
        items = list(zip(row_scns, text, k["owners"][k["owner"][keep]].tolist(), k["tables"][k["table"][keep]].tolist(),
                         rs_ids, ssns, strict=True))
        cts = work.column("TIMESTAMP").take(pa.array(commit_pos)).to_pylist()
        commit = d._commit if d.pool is None else d._release  # row: (SCN, TIMESTAMP) is all they read of it
        for i in by_commit:
            tx = _Tx(raws[i], start[i], usn[i], slt[i], sqn[i])
            tx.items = items[lo_b[i]:hi_b[i]]
            yield from commit(tx, (cscn[i], cts[i]), low=lows[i], open_count=open_now[i])
        if d.pool is not None:
            if d._job:
                yield from d._submit()
            yield from d.ready()

    # -- the serialized release (readers/oracle/columnar/redo_json.py) ---------------------------------------

    def _commit_spilled(self, work: pa.Table, key: int, xid: str, scn: int, when: int, low: int, open_count: int,
                        stub: int, commit_pos: int) -> Iterator[Event]:
        """``_commit_serialized`` of a spilled transaction (readers/oracle/columnar/arrow_spill.py): its rows are the
        stub's place in ``work`` (the stub itself when it is a captured DML row), the spilled chunks, then its
        later rows in ``work``; which survive is decided on their keys first, then the rows go out chunk by
        chunk, one ChangeBatch each, between one Begin and one Commit."""
        d, k, spill = self.d, self._k, self.spill
        raw = k["raws"][key]
        if d.resume is not None and d.resume.already_published(scn, xid):
            return
        mine = np.flatnonzero(k["rel"] & (k["ekey"] == key))
        mine = mine[mine < commit_pos]
        head, tail = (work.take(pa.array(part, type=pa.int64())) for part in (mine[mine <= stub], mine[mine > stub]))
        rollback, csf = spill.flags(raw)
        rollback = np.concatenate([_ints(head.column("ROLLBACK")) != 0, rollback, _ints(tail.column("ROLLBACK")) != 0])
        csf = np.concatenate([_ints(head.column("CSF")) != 0, csf, _ints(tail.column("CSF")) != 0])
        alive = _survivors(csf, rollback, lambda: _undone_groups(
            lambda: chain((head.column("ROW_ID").combine_chunks(),), spill.row_ids(raw),
                          (tail.column("ROW_ID").combine_chunks(),)), ~csf & rollback))
        if not alive.any():
            return
        yield Begin(xid, when)
        at, pieces, txj = 0, [], orjson.dumps(xid)
        for part in chain((head,), spill.chunks(raw), (tail,)):  # one chunk in memory at a time
            n = part.num_rows
            take, piece = alive[at:at + n], csf[at:at + n]
            at += n
            if not n:
                continue
            text = part.column("SQL_REDO").to_pylist()
            pieces = _join_csf(text, piece, pieces)
            if not take.any():
                continue
            sel = np.flatnonzero(take)
            rows = part.take(pa.array(sel, type=pa.int64()))
            text = [text[j] for j in sel.tolist()]
            owner, owners = _codes(rows.column("SEG_OWNER"))
            table, tables = _codes(rows.column("TABLE_NAME"))
            owners, tables = np.array([*owners, None], dtype=object), np.array([*tables, None], dtype=object)
            scns, rs_ids, ssns = _ints(rows.column("SCN")).tolist(), rows.column("RS_ID").to_pylist(), \
                rows.column("SSN").to_pylist()
            built, knowns, table_of_row, names = self._build(owner, owners, table, tables, text,
                                                             (scns, [scn] * len(sel), [txj] * len(sel), rs_ids, ssns))
            counted = np.ones(len(built), dtype=bool)
            for j, got in enumerate(built):
                if got is None:  # the row path's Change in its place (Dispatcher.change_of counts it)
                    item = (scns[j], text[j], owners[owner[j]], tables[table[j]], rs_ids[j], ssns[j])
                    built[j], knowns[j], counted[j] = d.change_of(item, scn, xid), None, False
            self._count(table_of_row[counted] * 4 + _ints(rows.column("OPERATION_CODE"))[counted], names)
            yield ChangeBatch(knowns, built)
        yield self._commit(scn, xid, when, low, open_count)

    def _spec(self, owner: str, table: str, schema: TableSchema | None) -> redo_json.Spec | None:
        """The native pass's description of a table (temporal columns, key), None when its conversions are
        more than ``temporal: iso`` or the source's transforms shape it (the row path converts and shapes those
        rows: the native pass never serializes a clear value of a masked or left-out column); cached per table
        schema."""
        d = self.d
        known = self._specs.get((owner, table))
        if known is not None and known[0] is schema:
            return known[1]
        convert = d.convert
        temporal: tuple[str, ...] | None
        if d.shaped is not None and d.shaped(owner, table):  # a shaped table (cdc/transforms): the row path,
            temporal = None                                    # where the mapper shapes its Changes
        elif convert is None:
            temporal = ()
        elif isinstance(convert, Converter):
            temporal = convert.temporal_only(owner, table, schema)
        else:
            temporal = None
        pk = tuple(schema.primary_key) if schema is not None and schema.primary_key else None
        spec = None if temporal is None else (temporal, pk)
        self._specs[(owner, table)] = (schema, spec)
        return spec

    def _build(self, owner: np.ndarray, owners: np.ndarray, table: np.ndarray, tables: np.ndarray, text: list[str],
               sources: redo_json.Sources) -> tuple[list[Any], list[Any], np.ndarray, list[tuple[str, str]]]:
        """``redo_json.build`` of released rows (their SEG_OWNER and TABLE_NAME as codes into ``owners`` and
        ``tables``, each ending in None for code -1; SQL_REDO ``text``, CSF pieces joined; None for rows of
        tables the native pass does not convert), each row's (TableId, TableSchema), and each row's table
        as an index into the (owner, table) names of the rows."""
        d = self.d
        width = len(tables)
        pair = owner * width + (table + 1)
        uniq, inv = np.unique(pair, return_inverse=True)
        specs: list[redo_json.Spec] = []
        names: list[tuple[str, str]] = []
        index = np.full(len(uniq), -1, dtype=np.int64)
        known = np.empty(len(uniq), dtype=object)
        for i, p in enumerate(uniq.tolist()):
            o, t = divmod(p, width)
            name = owners[o], tables[t - 1]
            names.append(name)
            known[i] = d._schemas.get(name) or d._table(*name)
            spec = self._spec(*name, known[i][1])
            if spec is not None:
                index[i] = len(specs)
                specs.append(spec)
        of_row, knowns = index[inv], known[inv].tolist()
        t0 = time.thread_time()
        if len(specs) == len(uniq):
            out = redo_json.build(text, of_row.tolist(), specs, sources)
        else:
            out = [None] * len(text)
            if specs:
                sel = np.flatnonzero(of_row >= 0).tolist()
                part = tuple([col[i] for i in sel] for col in sources)
                for i, got in zip(sel, redo_json.build([text[i] for i in sel], of_row[sel].tolist(), specs, part),
                                  strict=True):
                    out[i] = got
        self.native_cpu_s += time.thread_time() - t0
        return out, knowns, inv, names

    def _commit(self, scn: int, xid: str, when: int, low: int, open_count: int) -> Commit:
        """A released transaction's Commit with its resume state (``Dispatcher.committed``), the reader told the
        open count (``on_commit``)."""
        d = self.d
        commit = d.committed(scn, xid, when, low)
        if d.on_commit is not None:
            d.on_commit(open_count)
        return commit

    def _count(self, codes: np.ndarray, names: list[tuple[str, str]]) -> None:
        """Add rows to the dispatcher's changes per (owner, table, op) (its ``take_counts``): ``codes`` is
        table index * 4 + OPERATION_CODE (1 INSERT, 2 DELETE, 3 UPDATE)."""
        if len(codes):
            counts = self.d._counts
            for code, n in zip(*(a.tolist() for a in np.unique(codes, return_counts=True)), strict=True):
                t, op = divmod(code, 4)
                key = (*names[t], _OP_LETTER[op])
                counts[key] = counts.get(key, 0) + n

    def _commit_serialized(self, xid: str, scn: int, when: int, built: list[Any], knowns: list[Any], low: int,
                           open_count: int, mixed: bool, emitted: np.ndarray, i: int) -> Iterator[Event]:
        """``Dispatcher._commit`` for the native pass: Begin, one ChangeBatch, Commit with the resume state (the
        same checks and bookkeeping); ``emitted[i]`` set as its ChangeBatch goes out. ``built``: the pass's
        rows, and (``mixed``) in place of those it declined their items, parsed by the row path here."""
        d = self.d
        if not built or (d.resume is not None and d.resume.already_published(scn, xid)):
            return
        yield Begin(xid, when)
        if mixed:
            for j, got in enumerate(built):
                if len(got) == 6:  # an item: the native pass declined the row
                    built[j], knowns[j] = d.change_of(got, scn, xid), None
        emitted[i] = True
        yield ChangeBatch(knowns, built)
        yield self._commit(scn, xid, when, low, open_count)
