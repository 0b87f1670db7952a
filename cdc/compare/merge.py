"""The linear sorted merge of two key-ordered (key, fingerprint) streams.

This is the MD5 shadow-table algorithm of seeds/000: two pointers walk two
result sets sorted by the same key, never backtracking, so the work is
O(m + n) comparisons of keys plus one comparison of fingerprints per common
key (instead of one comparison per column):

    key_s == key_t   fingerprints equal -> same; else -> 'different'
    key_s <  key_t   the source row has no partner -> 'missing' (in target)
    key_s >  key_t   the target row has no partner -> 'extra'   (in target)

Both inputs must be strictly increasing by key in Python's ordering; the
databases are asked to sort the same way (binary collation for strings).
A stream that is not raises OrderError naming the side and the keys, since
a silent disagreement in collation would report false differences.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

from cdc.compare.errors import OrderError

SAME, MISSING, EXTRA, DIFFERENT = "same", "missing", "extra", "different"


@dataclass(frozen=True, slots=True)
class Diff:
    kind: str  # missing | extra | different
    key: tuple
    source: Any = None  # the source side's fingerprint (or count, in multiset mode)
    target: Any = None


def norm_key_value(v: Any) -> Any:
    """One key value as the merge compares it, equal across drivers.

    Aware datetimes become naive UTC; memoryview/bytearray become bytes;
    integral Decimals become int (MySQL DECIMAL(10,0) vs PostgreSQL bigint).
    """
    if isinstance(v, datetime) and v.tzinfo is not None:
        return v.astimezone(timezone.utc).replace(tzinfo=None)
    if isinstance(v, (memoryview, bytearray)):
        return bytes(v)
    if isinstance(v, Decimal) and v == v.to_integral_value():
        return int(v)
    if isinstance(v, bool):
        return int(v)
    return v


def _checked(rows: Iterable[tuple], side: str, table: str) -> Iterator[tuple[tuple, Any]]:
    """Yield (key, value) from rows shaped (*key, value); raise OrderError on disorder."""
    prev: tuple | None = None
    for row in rows:
        key = tuple(norm_key_value(v) for v in row[:-1])
        if prev is not None:
            try:
                ordered = prev < key
            except TypeError:
                ordered = False
            if not ordered:
                raise OrderError(
                    f"{side} rows of {table} are not strictly increasing by key: {prev!r} then {key!r} "
                    "(duplicate key or a collation that sorts differently from binary order)",
                    table=table, side=side, previous=repr(prev), key=repr(key))
        prev = key
        yield key, row[-1]


def walk(source: Iterable[tuple], target: Iterable[tuple], table: str) -> Iterator[tuple[tuple, Any, Any]]:
    """Two pointers over both streams: yield (key, source value|None, target value|None)."""
    s_it = _checked(source, "source", table)
    t_it = _checked(target, "target", table)
    s = next(s_it, None)
    t = next(t_it, None)
    while s is not None and t is not None:
        if s[0] == t[0]:
            yield s[0], s[1], t[1]
            s = next(s_it, None)
            t = next(t_it, None)
        elif s[0] < t[0]:
            yield s[0], s[1], None
            s = next(s_it, None)
        else:
            yield t[0], None, t[1]
            t = next(t_it, None)
    while s is not None:  # target exhausted: the rest of the source has no partner
        yield s[0], s[1], None
        s = next(s_it, None)
    while t is not None:  # source exhausted: the rest of the target has no partner
        yield t[0], None, t[1]
        t = next(t_it, None)


def merge(source: Iterable[tuple], target: Iterable[tuple], table: str = "?",
          counter: list[int] | None = None) -> Iterator[Diff]:
    """Yield every difference between two sorted streams of (*key, fingerprint) rows.

    ``counter`` (optional, [source_rows, target_rows, same]) is updated in place,
    so callers can report totals and advance a progress bar without a second pass.
    """
    counts = counter if counter is not None else [0, 0, 0]
    for key, s, t in walk(source, target, table):
        if s is None:
            counts[1] += 1
            yield Diff(EXTRA, key, None, t)
        elif t is None:
            counts[0] += 1
            yield Diff(MISSING, key, s, None)
        else:
            counts[0] += 1
            counts[1] += 1
            if s == t:
                counts[2] += 1
            else:
                yield Diff(DIFFERENT, key, s, t)


def merge_multiset(source: Iterable[tuple], target: Iterable[tuple], table: str = "?",
                   counter: list[int] | None = None) -> Iterator[Diff]:
    """Merge for tables without a key: rows are (fingerprint, count) sorted by fingerprint.

    A fingerprint with more copies in the source than in the target is
    'missing' (source count, target count); fewer is 'extra'. There is no
    'different': without a key a changed row is one missing plus one extra.
    """
    counts = counter if counter is not None else [0, 0, 0]
    for key, s, t in walk(source, target, table):
        s_n, t_n = int(s or 0), int(t or 0)
        counts[0] += s_n
        counts[1] += t_n
        counts[2] += min(s_n, t_n)
        if s_n != t_n:
            yield Diff(MISSING if s_n > t_n else EXTRA, key, s_n, t_n)
