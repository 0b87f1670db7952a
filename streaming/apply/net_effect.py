"""Net effect of a run of row changes: what the target must do, per table.

This is the log compaction of the counting algorithm (seed paper 001): a run
of changes in ``sequence`` order reduces, per primary key, to the first
before-image and the last after-image:

    insert ... delete            -> nothing
    insert ... update*           -> insert of the last after-image
    update* / update ... delete  -> update to the last image / delete
    key update (pk changes)      -> delete of the old key + insert of the new

Tables without a primary key keep a count per full row (a multiset): each
insert counts +1, each delete -1, an update is -1 old / +1 new; the result
deletes or inserts ``|count|`` copies.

The result keeps the order in which tables were first touched, so the
engine can apply deletes before inserts across tables.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from streaming.errors import BadRecord

Row = dict[str, Any]


@dataclass(slots=True)
class DataChange:
    """One decoded data record of the stream."""

    sequence: int
    table: str  # source table, db.table
    op: str  # c, u, d, r (t is handled by the engine as a barrier)
    before: Row | None
    after: Row | None
    commit_ts_ms: int | None = None
    offset: int | None = None


@dataclass(slots=True)
class TableNet:
    """The net effect on one table.

    Keyed tables: ``deletes`` are before-images of keys to delete; ``upserts``
    after-images to insert or replace; ``replaced`` the before-images of rows
    that ``upserts`` replace (for views). Keyless tables: ``deletes`` and
    ``upserts`` are multisets of full rows (a row repeated n times)."""

    table: str
    key: tuple[str, ...]
    deletes: list[Row] = field(default_factory=list)
    upserts: list[Row] = field(default_factory=list)
    replaced: list[Row] = field(default_factory=list)
    delete_src: list[DataChange] = field(default_factory=list)  # change that produced each delete
    upsert_src: list[DataChange] = field(default_factory=list)  # ... each upsert
    changes: int = 0  # input row changes that went into this net effect

    @property
    def keyless(self) -> bool:
        return not self.key


_NONE = object()


def net_effect(changes: Iterable[DataChange], keys: dict[str, tuple[str, ...]]) -> dict[str, TableNet]:
    """Reduce ``changes`` (in sequence order) to one TableNet per table.

    ``keys`` gives each table's primary-key columns (empty tuple: keyless).
    Raises BadRecord when a keyed change lacks a key value.
    """
    keyed: dict[str, dict[tuple, list]] = {}
    counted: dict[str, dict[bytes, list]] = {}
    touched: dict[str, int] = {}
    for ch in changes:
        touched[ch.table] = touched.get(ch.table, 0) + 1
        pk = keys.get(ch.table, ())
        if pk:
            _net_keyed(keyed.setdefault(ch.table, {}), ch, pk)
        else:
            _net_counted(counted.setdefault(ch.table, {}), ch)
    out: dict[str, TableNet] = {}
    for table, n in touched.items():
        pk = keys.get(table, ())
        net = TableNet(table, pk, changes=n)
        if pk:
            for initial, current, src in keyed[table].values():
                if current is None:
                    if initial is not None and initial is not _NONE:
                        net.deletes.append(initial)
                        net.delete_src.append(src)
                elif initial is None or initial is _NONE:
                    net.upserts.append(current)
                    net.upsert_src.append(src)
                elif initial != current:
                    net.upserts.append(current)
                    net.upsert_src.append(src)
                    net.replaced.append(initial)
        else:
            for row, count, src in counted[table].values():
                if count < 0:
                    net.deletes.extend([row] * -count)
                    net.delete_src.extend([src] * -count)
                elif count > 0:
                    net.upserts.extend([row] * count)
                    net.upsert_src.extend([src] * count)
        out[table] = net
    return out


def _key_of(row: Row, pk: tuple[str, ...], ch: DataChange) -> tuple:
    try:
        key = (row[pk[0]],) if len(pk) == 1 else tuple([row[c] for c in pk])
    except KeyError as exc:
        raise BadRecord(f"change to {ch.table} lacks primary-key column {exc.args[0]!r}", table=ch.table,
                        key=None, sequence=ch.sequence, column=exc.args[0], value=row) from None
    if None in key:
        raise BadRecord(f"change to {ch.table} has a NULL primary-key value", table=ch.table,
                        key=dict(zip(pk, key)), sequence=ch.sequence, value=row)
    return key


def _net_keyed(state: dict[tuple, list], ch: DataChange, pk: tuple[str, ...]) -> None:
    # state[key] = [initial image (None: did not exist, _NONE: unknown), current image or None, last change]
    if ch.op in ("c", "r"):
        if ch.after is None:
            raise BadRecord(f"insert into {ch.table} without an after-image", table=ch.table, key=None,
                            sequence=ch.sequence, value=None)
        _touch(state, _key_of(ch.after, pk, ch), _NONE if ch.op == "r" else None, ch.after, ch)
    elif ch.op == "d":
        if ch.before is None:
            raise BadRecord(f"delete from {ch.table} without a before-image", table=ch.table, key=None,
                            sequence=ch.sequence, value=None)
        _touch(state, _key_of(ch.before, pk, ch), ch.before, None, ch)
    elif ch.op == "u":
        if ch.before is None or ch.after is None:
            raise BadRecord(f"update of {ch.table} lacks its before- or after-image", table=ch.table,
                            key=None, sequence=ch.sequence, value=ch.after or ch.before)
        old, new = _key_of(ch.before, pk, ch), _key_of(ch.after, pk, ch)
        if old == new:
            _touch(state, new, ch.before, ch.after, ch)
        else:  # a key update: the old key goes away, the new key appears
            _touch(state, old, ch.before, None, ch)
            _touch(state, new, None, ch.after, ch)
    else:
        raise BadRecord(f"unknown op {ch.op!r} for {ch.table}", table=ch.table, key=None,
                        sequence=ch.sequence, value=ch.op)


def _touch(state: dict[tuple, list], key: tuple, initial: Any, current: Row | None, ch: DataChange) -> None:
    entry = state.get(key)
    if entry is None:
        state[key] = [initial, current, ch]
    else:
        entry[1] = current
        entry[2] = ch


def _net_counted(state: dict[bytes, list], ch: DataChange) -> None:
    def add(row: Row | None, n: int) -> None:
        if row is None:
            raise BadRecord(f"change to keyless table {ch.table} lacks its row image", table=ch.table,
                            key=None, sequence=ch.sequence, value=None)
        ident = orjson.dumps(row, option=orjson.OPT_SORT_KEYS)
        entry = state.get(ident)
        if entry is None:
            state[ident] = [row, n, ch]
        else:
            entry[1] += n
            entry[2] = ch

    if ch.op in ("c", "r"):
        add(ch.after, 1)
    elif ch.op == "d":
        add(ch.before, -1)
    elif ch.op == "u":
        add(ch.before, -1)
        add(ch.after, 1)
    else:
        raise BadRecord(f"unknown op {ch.op!r} for {ch.table}", table=ch.table, key=None,
                        sequence=ch.sequence, value=ch.op)


# ---- the same reduction on columns (the apply engine's fast path) -----------------------------
ABSENT, UNKNOWN, PRESENT = 0, 1, 2  # what a key's first change says about the row before the run


@dataclass(slots=True)
class ColumnNet:
    """The net effect on one keyed table, as positions into the run's records.

    ``deletes``: records whose before-image is a row to delete; ``upserts``:
    records whose after-image is a row to insert or replace; ``replaced``:
    records whose before-image is the row an upsert replaces (for views);
    ``inserts``: per upsert, True when the key did not exist before the run
    (the first change of the key inserted it), so no row can conflict;
    ``delete_last``/``upsert_last``: the record of each key's last change
    (names the culprit). Keys appear in the order they were first touched."""

    deletes: Any
    upserts: Any
    replaced: Any
    inserts: Any
    delete_last: Any
    upsert_last: Any
    changes: int = 0


def net_effect_columns(ops: Any, key: Any, bkey: Any, before: Any, after: Any) -> ColumnNet:
    """Reduce one keyed table's run of records (in sequence order) to a ColumnNet.

    ``ops`` is a numpy array of op letters (c, r, u, d); ``key`` the primary
    key of each record as JSON text (after-image; before-image for a delete),
    ``bkey`` the before-image key of an update that moves the key (else
    null), ``before``/``after`` the images as JSON text (pyarrow arrays).
    Keys are compared as text: one publisher writes a key's values the same
    way every time. Same outcome as :func:`net_effect`, except that an
    unchanged row is recognised by equal JSON text. Raises ValueError when a
    record lacks a key or an image its op needs (the engine then takes the
    record-by-record path, which names the record)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    m = len(ops)
    if m == 0:
        none = np.empty(0, np.int64)
        return ColumnNet(none, none, none, np.empty(0, bool), none, none, 0)
    is_c, is_r, is_d, is_u = ops == "c", ops == "r", ops == "d", ops == "u"
    if not (is_c | is_r | is_d | is_u).all():
        raise ValueError("unknown op in run")
    if key.null_count or pc.any(pc.match_substring(key, ":null")).as_py():
        raise ValueError("a record lacks a primary-key value")
    has_before = _valid(before)
    has_after = _valid(after)
    if ((is_c | is_r | is_u) & ~has_after).any() or ((is_d | is_u) & ~has_before).any():
        raise ValueError("a record lacks the row image its op needs")
    moved = is_u & _valid(bkey)
    moved_at = np.flatnonzero(moved)
    if len(moved_at) and pc.any(pc.match_substring(bkey.take(moved_at), ":null")).as_py():
        raise ValueError("a key update lacks an old primary-key value")
    # events: one per record on its key, plus the old key of each key update (the row goes away there)
    pos = np.arange(m, dtype=np.int64)
    ev_pos = np.concatenate([pos, moved_at])
    ev_rank = np.concatenate([2 * pos + 1, 2 * moved_at])  # a key update touches its old key first
    init = np.where(is_c | moved, ABSENT, np.where(is_r, UNKNOWN, PRESENT)).astype(np.int8)
    ev_init = np.concatenate([init, np.full(len(moved_at), PRESENT, np.int8)])
    ev_cur = np.concatenate([np.where(is_d, -1, pos), np.full(len(moved_at), -1, np.int64)])
    keys = pa.concat_arrays([_plain(key), _plain(bkey).take(moved_at)]) if len(moved_at) else _plain(key)
    # group events by key (sorted text), each group in stream order; sorting beats hashing here
    order = pc.sort_indices(pa.table({"k": keys, "r": ev_rank}), sort_keys=[("k", "ascending"), ("r", "ascending")])
    ks = keys.take(order)
    order = order.to_numpy()
    starts = np.flatnonzero(np.r_[True, pc.not_equal(ks[1:], ks[:-1]).to_numpy(zero_copy_only=False)])
    ends = np.r_[starts[1:], len(ks)] - 1
    first, last = order[starts], order[ends]
    touch = np.argsort(ev_rank[first], kind="stable")  # keys in first-touch order
    first, last = first[touch], last[touch]
    k_init, k_src, k_cur, k_last = ev_init[first], ev_pos[first], ev_cur[last], ev_pos[last]
    gone = (k_cur < 0) & (k_init == PRESENT)
    live = k_cur >= 0
    changed = live.copy()
    both = np.flatnonzero(live & (k_init == PRESENT))
    if len(both):
        same = pc.equal(before.take(k_src[both]), after.take(k_cur[both])).to_numpy(zero_copy_only=False)
        changed[both[same]] = False
    return ColumnNet(deletes=k_src[gone], upserts=k_cur[changed], replaced=k_src[changed & (k_init == PRESENT)],
                     inserts=k_init[changed] == ABSENT, delete_last=k_last[gone], upsert_last=k_last[changed],
                     changes=m)


def _valid(arr: Any) -> Any:
    import numpy as np
    import pyarrow.compute as pc

    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return pc.is_valid(arr).to_numpy(zero_copy_only=False)


def _plain(arr: Any) -> Any:
    return arr.combine_chunks() if hasattr(arr, "combine_chunks") else arr
