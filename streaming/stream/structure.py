"""The stream's structure over one micro-batch: where its whole, well-formed transactions end.

The apply engine calls :func:`first_violation` on a batch before it writes
anything of it. The rules are cdc.stream_structure's (the checker every reader
of the stream shares); this module feeds it a batch's columns: markers one by
one, data records in runs between markers (their count per table, their
``transaction.id``, ``total_order`` and writer ``epoch`` compared on whole
columns), so a batch of millions of rows costs a few numpy passes, not a Python
call per row.

Which records count: the batch's NEW records, as the engine's sequence rule
takes them (above the progress row's ``last_sequence`` and above every earlier
record of the batch); duplicates are not looked at. The check runs up to the
first gap in sequence only: the engine's gap check names a gap (with what the
progress row says), and nothing after a gap is applied anyway. A record that
does not decode (UNDECODABLE: no sequence, no table) inside a transaction is
counted as one row of it whose table is unknown (the transaction's per-table
counts are then not checked); the engine stops on it as a BadRecord, or
dead-letters it when so configured.

Each batch starts between transactions: the progress row (where the batch's
new records begin) only ever stands after an END, ABORTED, SCHEMA or HEARTBEAT,
or just before a BEGIN or SCHEMA (a DDL barrier on a target whose DDL commits).
"""

from __future__ import annotations

from typing import Any

from cdc.errors import StreamCorrupt
from cdc.stream.envelope import ABORTED, BEGIN, END, HEARTBEAT, SCHEMA
from cdc.stream.stream_structure import NOT_READ, StreamStructure
from streaming.stream.records import UNDECODABLE, Batch

try:  # compiled at install (pyproject ext-modules); without a C compiler every END is read here
    from streaming.stream._scan_native import ends_vouched as _ENDS_VOUCHED  # type: ignore[attr-defined]
except ImportError:
    _ENDS_VOUCHED = None


def first_violation(batch: Batch, last_sequence: int | None, topic: str,
                    epoch: int = 0) -> tuple[int, StreamCorrupt] | None:
    """None when the batch's new records keep the stream's structure (up to a gap, if any); else
    ``(cut, error)``: the records before position ``cut`` are whole transactions and items (what may be
    applied), the transaction or record the error names starts at ``cut``. ``epoch``: the highest writer
    epoch of the records applied before this batch (:func:`max_epoch`; 0: unknown)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = batch.n
    if not n:
        return None
    seq = batch.seq
    floor = np.maximum.accumulate(np.r_[last_sequence if last_sequence is not None else -1, seq])[:-1]
    fresh = seq > floor
    undecodable = seq == Batch.NO_SEQUENCE
    limit = _before_gap(seq, fresh, undecodable, last_sequence)
    upto = np.arange(n) < limit
    is_data = batch.is_data
    data = np.flatnonzero(fresh & is_data & upto)
    stops = np.flatnonzero(((fresh & ~is_data) | undecodable) & upto)
    if not len(stops) and not len(data):
        return None
    parts = batch.table.column("part").to_numpy()
    check = StreamStructure(topic, int(parts[0]), epoch)
    names, codes = batch.table_index()
    # data records in runs between stops: run k holds the data before stops[k] (and after stops[k-1])
    run_of = np.searchsorted(stops, data)
    counts = _RunCounts(names)  # run -> {table: count}
    first_of: dict[int, int] = {}  # run -> position of its first record
    if len(data):
        width = len(names) + 1
        keys, per_key = np.unique(run_of.astype(np.int64) * width + codes[data], return_counts=True)
        counts = _RunCounts(names, keys // width, keys % width, per_key)
        ids, at = np.unique(run_of, return_index=True)
        first_of = dict(zip(ids.tolist(), data[at].tolist()))
        # each data record names the transaction of the BEGIN it follows: find the first that does not
        kinds = batch.table.column("kind")
        is_begin = fresh & upto & pc.fill_null(pc.equal(kinds, BEGIN), False).to_numpy(zero_copy_only=False)
        begin_at = np.maximum.accumulate(np.where(is_begin, np.arange(n), -1))[data]
        inside = begin_at >= 0
        txids = batch.table.column("txid")
        same = pc.fill_null(pc.equal(txids.take(data[inside]), txids.take(begin_at[inside])), False)
        # ... and its place in it: total_order = the rows of the transaction up to it (a record that does not
        # decode counts as one; a record without total_order is not held to it)
        counted = np.cumsum((fresh & is_data & upto) | undecodable)
        place = counted[data[inside]] - counted[begin_at[inside]]
        order = batch.table.column("torder").take(data[inside])
        placed = pc.fill_null(pc.equal(order, pa.array(place, pa.int64())), True)
        # ... and its writer's epoch: the BEGIN's (a null epoch was not read: not held to it)
        epochs = batch.table.column("epoch")
        same_epoch = pc.fill_null(pc.equal(epochs.take(data[inside]), epochs.take(begin_at[inside])), True)
        foreign = data[inside][~(same.to_numpy(zero_copy_only=False) & placed.to_numpy(zero_copy_only=False)
                                 & same_epoch.to_numpy(zero_copy_only=False))]
    else:
        foreign = data
    if not len(foreign) and _plain_whole(batch, stops, counts, epoch):
        return None  # the common shape, held to every rule on whole columns
    runs = counts.as_dict()
    offsets = batch.offset
    begin_pos = 0

    def feed_run(run: int) -> None:
        tables = runs.get(run)
        if tables is None:
            return
        pos = first_of[run]
        if len(foreign):
            lo = int(stops[run - 1]) if run else -1
            hi = int(stops[run]) if run < len(stops) else n
            bad = foreign[(foreign > lo) & (foreign < hi)]
            if len(bad) and check.in_transaction:
                rec = batch.records_at(bad[:1])[0]
                before = int(np.count_nonzero((data > lo) & (data < bad[0])))
                check.rows(int(offsets[pos]), int(seq[pos]), before, None)
                # raises: a record of another transaction, out of its place, or of another writer
                check.row(rec.offset, rec.sequence, rec.tbl, rec.txid,
                          rec.torder if rec.torder is not None else NOT_READ, epoch=rec.epoch)
        check.rows(int(offsets[pos]), int(seq[pos]), sum(tables.values()), None if None in tables else tables)

    try:
        for k, (pos, rec) in enumerate(zip(stops.tolist(), batch.records_at(stops))):
            feed_run(k)
            if rec.kind == UNDECODABLE:
                if check.in_transaction:
                    check.rows(rec.offset, None, 1, None)
                continue
            if rec.kind == BEGIN:
                check.begin(rec.offset, rec.sequence, rec.txid, rec.epoch)
                begin_pos = pos
            elif rec.kind == END:
                meta = rec.meta_dict()
                check.end(rec.offset, rec.sequence, rec.txid, meta.get("event_count"), meta.get("data_collections"),
                          rec.epoch)
            elif rec.kind == ABORTED:
                check.aborted(rec.offset, rec.sequence, rec.txid, rec.epoch)
            elif rec.kind == SCHEMA:
                meta = rec.meta_dict()
                check.schema(rec.offset, rec.sequence, rec.tbl, meta.get("ddl"), meta.get("resume"), rec.epoch)
            else:
                check.record(rec.offset, rec.sequence, None, {"status": rec.kind}, rec.epoch)
        feed_run(len(stops))
    except StreamCorrupt as err:
        open_at = check.open_offset
        if open_at is not None:
            return begin_pos, err
        at = np.flatnonzero(offsets == err.fields.get("offset"))
        return (int(at[0]) if len(at) else 0), err
    return None


def plain_markers(batch: Batch, stops: Any) -> tuple[Any, Any] | None:
    """``(is_begin, is_end)`` (numpy masks over ``stops``) when the records at ``stops`` (positions in stream
    order) are only BEGIN and END markers taking turns from a BEGIN on, with HEARTBEATs between transactions
    only; None for anything else (an ABORTED, a SCHEMA, a record that does not decode, two BEGINs...)."""
    import numpy as np
    import pyarrow.compute as pc

    kinds = batch.table.column("kind").take(stops)
    is_begin = pc.fill_null(pc.equal(kinds, BEGIN), False).to_numpy(zero_copy_only=False)
    is_end = pc.fill_null(pc.equal(kinds, END), False).to_numpy(zero_copy_only=False)
    is_beat = pc.fill_null(pc.equal(kinds, HEARTBEAT), False).to_numpy(zero_copy_only=False)
    if not (is_begin | is_end | is_beat).all():
        return None
    marks = ~is_beat
    turn = np.cumsum(marks) - marks  # the BEGINs and ENDs before each record
    if not (is_begin[marks] == (turn[marks] % 2 == 0)).all() or (turn[is_beat] % 2).any():
        return None
    return is_begin, is_end


class _RunCounts:
    """The data records of each run (between two markers) per table, as whole columns: ``run``, ``code`` (into
    ``names``; ``len(names)``: no table) and ``count``, sorted by run then code."""

    def __init__(self, names: list, run: Any = None, code: Any = None, count: Any = None) -> None:
        import numpy as np

        empty = np.zeros(0, dtype=np.int64)
        self.names = names
        self.run = empty if run is None else run
        self.code = empty if code is None else code
        self.count = empty if count is None else count

    def tables(self, run: int) -> dict[str | None, int]:
        import numpy as np

        lo, hi = np.searchsorted(self.run, [run, run + 1]).tolist()
        return {(self.names[c] if c < len(self.names) else None): n
                for c, n in zip(self.code[lo:hi].tolist(), self.count[lo:hi].tolist())}

    def as_dict(self) -> dict[int, dict[str | None, int]]:
        out: dict[int, dict[str | None, int]] = {}
        for run, code, n in zip(self.run.tolist(), self.code.tolist(), self.count.tolist()):
            out.setdefault(run, {})[self.names[code] if code < len(self.names) else None] = n
        return out


def _plain_whole(batch: Batch, stops: Any, runs: _RunCounts, epoch: int) -> bool:
    """True when the batch's new records (``stops``: its markers, ``runs``: its data between them, per table,
    already found to name their BEGIN's transaction, place and epoch) keep every rule of cdc.stream.stream_structure
    in the stream's usual shape: BEGIN, its own data, its END (same id, ``event_count`` and ``data_collections``
    equal to the data between them), HEARTBEATs between transactions, writer epochs equal within a transaction and
    never decreasing across them. False when any of that does not hold, or the batch holds anything else: the
    record-by-record check then decides (and names the record). Never False for True: only a shortcut."""
    import numpy as np
    import pyarrow.compute as pc

    marks = plain_markers(batch, stops)
    if marks is None:
        return False
    is_begin, is_end = marks
    n_stops = len(stops)
    if (runs.code >= len(runs.names)).any():  # a data record without its table
        return False
    # data only before an END, or after a last BEGIN still open
    if not is_end[runs.run[runs.run < n_stops]].all():
        return False
    if (runs.run >= n_stops).any() and (not len(stops) or not is_begin[np.flatnonzero(is_begin | is_end)[-1]]):
        return False
    begins, ends = stops[is_begin], stops[is_end]
    b_of_e = begins[:len(ends)]  # the BEGIN of each END (they take turns)
    table = batch.table
    txids = table.column("txid")
    end_txids = txids.take(ends)
    if end_txids.null_count or not pc.all(pc.fill_null(pc.equal(txids.take(b_of_e), end_txids), False)).as_py():
        return False
    epochs = table.column("epoch").take(stops)
    if epochs.null_count not in (0, len(stops)):
        return False
    if not epochs.null_count:
        e = np.asarray(epochs.to_numpy(zero_copy_only=False), dtype=np.int64)
        nonzero = e[e != 0]
        if (e < 0).any() or (e[is_begin][:len(ends)] != e[is_end]).any() \
                or (nonzero < np.maximum.accumulate(np.r_[epoch, nonzero])[:-1]).any():
            return False
    if not len(ends):
        return True
    metas = table.column("meta").take(ends).to_pylist()
    if None in metas:
        return False
    run_at = np.flatnonzero(is_end)  # the data run closed by each END (its place among the stops)
    # the usual transaction, of one table: its count and table per END (-1: none or several tables)
    tables_in = np.bincount(runs.run, minlength=n_stops + 1)
    first_in = np.searchsorted(runs.run, run_at)
    single = tables_in[run_at] == 1
    at = np.where(single, first_in, 0)
    end_counts = np.where(single, runs.count[at] if len(runs.count) else 0, -1).tolist()
    end_names = [runs.names[c] if len(runs.names) else "" for c in (runs.code[at] if len(runs.code) else at).tolist()]
    vouched = _ENDS_VOUCHED or (lambda _m, _c, _n, i: i)
    j = vouched(metas, end_counts, end_names, 0)
    while j < len(metas):  # an END the C loop does not vouch for: decided here, as record by record would
        if not _end_holds(metas[j], runs.tables(int(run_at[j]))):
            return False
        j = vouched(metas, end_counts, end_names, j + 1)
    return True


def _end_holds(meta: str, counted: dict[str | None, int]) -> bool:
    """An END's value (``meta``) says the data between it and its BEGIN: ``counted``, per table."""
    import orjson

    from cdc.stream.stream_structure import _collections

    meta = orjson.loads(meta)
    if type(meta) is not dict:
        return False
    said, collections = meta.get("event_count"), meta.get("data_collections")
    if len(counted) == 1 and type(collections) is list and len(collections) == 1:
        # the usual transaction, of one table: its count and its one data collection, compared directly
        (name, k), = counted.items()
        one = collections[0]
        return type(said) is int and said == k and type(one) is dict and one.get("data_collection") == name \
            and type(one.get("event_count")) is int and one["event_count"] == k
    if type(said) is not int or said != sum(counted.values()):
        return False
    return _collections(collections) == {t: k for t, k in counted.items() if k}


def max_epoch(batch: Batch, upto: int | None = None) -> int:
    """The highest writer epoch of the batch's first ``upto`` records (all: None); 0 when none was read."""
    import pyarrow.compute as pc

    n = batch.n if upto is None else min(upto, batch.n)
    if not n:
        return 0
    top = pc.max(batch.table.column("epoch").slice(0, n)).as_py()
    return int(top) if top is not None and top > 0 else 0


def applied_epoch(batch: Batch, last_sequence: int) -> int:
    """The highest writer epoch of the batch's records at or below ``last_sequence`` (what a progress row at
    that sequence covers); 0 when none was read."""
    import numpy as np

    if not batch.n:
        return 0
    epochs = np.asarray(batch.table.column("epoch").fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    covered = (batch.seq <= last_sequence) & (batch.seq != Batch.NO_SEQUENCE)
    return int(epochs[covered].max()) if covered.any() else 0


def stale_duplicate(batch: Batch, last_sequence: int | None, topic: str, epoch: int) -> StreamCorrupt | None:
    """A record the sequence rule would drop as a replay of what the target holds (at or below
    ``last_sequence``, or below a record of the batch before it) while its writer epoch is HIGHER than every
    epoch applied up to it (``epoch``: the target's, from its progress row): the target holds an older writer's
    record under that sequence, and the newer writer's must not be dropped as its duplicate. None when there is
    none, or when the target's epoch is unknown (0: a progress row written before epochs)."""
    import numpy as np

    if not batch.n or not epoch:
        return None
    seq = batch.seq
    valid = seq != Batch.NO_SEQUENCE
    floor = np.maximum.accumulate(np.r_[last_sequence if last_sequence is not None else -1, seq])[:-1]
    fresh = seq > floor
    epochs = np.asarray(batch.table.column("epoch").fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    held = np.maximum.accumulate(np.r_[epoch, np.where(fresh & valid, epochs, 0)])[:-1]  # applied before each
    bad = np.flatnonzero(valid & ~fresh & (epochs > held))
    if not len(bad):
        return None
    i = int(bad[0])
    offsets = batch.table.column("offset").to_numpy(zero_copy_only=False)
    parts = batch.table.column("part").to_numpy(zero_copy_only=False)
    from cdc.stream.stream_structure import WAY_BACK

    return StreamCorrupt(
        f"{topic}[{int(parts[i])}]: a record of writer epoch {int(epochs[i])} at offset {int(offsets[i])}, sequence "
        f"{int(seq[i])}, is not a duplicate of what was applied under that sequence (writer epoch {int(held[i])} "
        f"or lower): a newer writer never re-uses an older one's sequence, so the record applied there was an older "
        f"writer's, written after the newer one took the stream; nothing from this point on is applied. {WAY_BACK}",
        topic=topic, partition=int(parts[i]), offset=int(offsets[i]), sequence=int(seq[i]), epoch=int(epochs[i]),
        previous_epoch=int(held[i]))


def _before_gap(seq: Any, fresh: Any, undecodable: Any, last_sequence: int | None) -> int:
    """The position of the first new record after a jump in sequence (the batch's length when none). A hole
    with an UNDECODABLE record in it is no jump: that record carries the missing sequence."""
    import numpy as np

    idx = np.flatnonzero(fresh)
    if not len(idx):
        return len(seq)
    expected = last_sequence + 1 if last_sequence is not None else 1
    if seq[idx[0]] != expected and not undecodable[:idx[0]].any():
        return int(idx[0])
    for j in np.flatnonzero(np.diff(seq[idx]) != 1).tolist():
        lo, hi = int(idx[j]), int(idx[j + 1])
        if not undecodable[lo + 1:hi].any():
            return hi
    return len(seq)


def prefix_offsets(batch: Batch, cut: int, end_offsets: dict[str, Any] | None) -> dict[str, Any] | None:
    """The end offsets of the batch's first ``cut`` records (the shape the job passes: ``{"next": {part:
    offset}, "topic", "stream"}``), or None when they cannot be told (no end offsets, several partitions)."""
    if end_offsets is None or cut <= 0:
        return None
    parts = batch.table.column("part").to_numpy()
    if (parts != parts[0]).any():
        return None
    return {**end_offsets, "next": {str(int(parts[0])): int(batch.offset[cut - 1]) + 1}}
