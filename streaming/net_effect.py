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
