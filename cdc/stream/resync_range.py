"""The resync range record: how a resync chunk tells a consumer which target rows to delete.

A resync (``cdc snapshot --resync``) reads a table in primary-key chunks under watermarks, like an
incremental snapshot (readers/mysql/incremental.py), and each chunk transaction ends with ONE extra
data record of ``op: "x"``. Its ``source.resync`` field is the JSON text of::

    {"key": ["a", "b"], "after": [1, 7] | null, "through": [1, 900] | null, "keep": [[1, 8], [1, 9], ...]}

Meaning, applied at the record's place in the stream (after the chunk's ``op: r`` rows of the same
transaction, before anything later): delete every row of the table whose primary key lies in the range
``after < key <= through`` (lexicographic over the key columns; ``after`` null: from the first key,
``through`` null: to the last) and is not one of ``keep``.

Why this makes the table equal to the source: the chunk read covers exactly that range of the source,
between the LOW and HIGH watermarks. ``keep`` holds the keys the read returned plus every key the
stream changed between the watermarks (before and after images). A key in the range and not in
``keep`` was absent from the source when the chunk was read and was not changed until HIGH: it is
absent at HIGH, which is where the record sits in the stream. Keys in ``keep`` are right already (the
chunk's row, or the stream's own change); keys changed after HIGH are changed by later records.

Key columns must be integers: the range is cut in the source's key order and tested in the target's,
and only integers order the same in every database (a text key's order depends on its collation).
Values beyond signed 64 bits may travel as decimal text: :func:`int_key` reads both.

Consumers that do not know ``op: "x"`` stop on it (the apply engine, the Debezium per-table topics,
the lake targets): a table must never be left with rows the source no longer has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from cdc.errors import CdcError, Terminal
from cdc.schema.logical import LogicalType

OP = "x"


class ResyncRangeError(CdcError, Terminal):
    """A resync range record that does not decode, or that a consumer cannot apply (``table``, ``why``)."""


def integer_key(types: list[LogicalType]) -> bool:
    """Every key column's logical type (cdc.schema.logical, the reader's reading of its type) is an integer."""
    return bool(types) and all(t.family == "integer" for t in types)


def int_key(values: list[Any]) -> tuple[int, ...]:
    """A key as a tuple of ints (an integer beyond 64 bits may be decimal text)."""
    return tuple(int(v) for v in values)


@dataclass(frozen=True, slots=True)
class ResyncRange:
    """``after < key <= through`` (None: open end) with ``keep``: the keys not to delete."""

    key: tuple[str, ...]
    after: tuple[int, ...] | None
    through: tuple[int, ...] | None
    keep: frozenset[tuple[int, ...]]

    def to_text(self) -> str:
        return orjson.dumps({"key": list(self.key), "after": None if self.after is None else list(self.after),
                             "through": None if self.through is None else list(self.through),
                             "keep": sorted(list(k) for k in self.keep)}).decode()

    @classmethod
    def from_text(cls, text: str | None, table: str) -> ResyncRange:
        """Parse ``source.resync``; a record that does not hold a valid range raises ResyncRangeError."""
        try:
            d = orjson.loads(text) if text else None
            key = tuple(d["key"])
            n = len(key)

            def bound(v: Any) -> tuple[int, ...] | None:
                if v is None:
                    return None
                if len(v) != n:
                    raise ValueError(f"bound {v} does not have {n} values")
                return int_key(v)

            keep = frozenset(int_key(k) for k in d["keep"])
            if not n or any(len(k) != n for k in keep) or not all(isinstance(c, str) for c in key):
                raise ValueError("key columns and keep keys do not match")
            return cls(key, bound(d["after"]), bound(d["through"]), keep)
        except (TypeError, KeyError, ValueError, orjson.JSONDecodeError) as exc:
            raise ResyncRangeError(f"resync range record of {table} does not decode ({exc}): source.resync must "
                                   "be the JSON text of {key, after, through, keep} with integer keys",
                                   table=table, why=str(exc)) from None

    def contains(self, key: tuple[int, ...]) -> bool:
        """``after < key <= through`` (tuples compare lexicographically, as the source's key order)."""
        return (self.after is None or key > self.after) and (self.through is None or key <= self.through)

    def doomed(self, target_keys: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
        """The keys of ``target_keys`` (read from the target) in the range and not kept: the ones to delete."""
        return [k for k in target_keys if self.contains(k) and k not in self.keep]


def range_sql(quote: Any, param: str, key: tuple[str, ...], after: tuple | None,
              through: tuple | None) -> tuple[str, list[Any]]:
    """A WHERE condition (and its parameters) selecting ``after < key <= through`` in any SQL dialect:
    the lexicographic comparison written out column by column (Oracle has no row-value comparison)."""
    parts: list[str] = []
    params: list[Any] = []
    for bound, strict_op, last_op in ((after, ">", ">"), (through, "<", "<=")):
        if bound is None:
            continue
        ors: list[str] = []
        for i in range(len(key)):
            eqs = [f"{quote(key[j])} = {param}" for j in range(i)]
            op = last_op if i == len(key) - 1 else strict_op
            ors.append("(" + " AND ".join(eqs + [f"{quote(key[i])} {op} {param}"]) + ")")
            params.extend(list(bound[:i]) + [bound[i]])
        parts.append("(" + " OR ".join(ors) + ")")
    return (" AND ".join(parts) or "1 = 1"), params
