"""Optional value conversions for Oracle changes (default: the literal SQL_REDO text).

``conversions`` maps ``SCHEMA.TABLE.COLUMN`` (``*`` allowed for schema and
table) to ``text|int|decimal|float|date|timestamp``. A value that does not
convert raises DecodeError naming table, column and value.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc.errors import DecodeError
from cdc.events import Change


def _fn_arg(v: str) -> str:
    """``TO_DATE('2024-01-02 03:04:05', 'fmt')`` -> ``2024-01-02 03:04:05``."""
    if "('" in v:
        start = v.index("('") + 2
        return v[start:v.index("'", start)]
    return v


def _date(v: str) -> str:
    return _fn_arg(v)[:10]


def _timestamp(v: str) -> str:
    text = _fn_arg(v).rstrip(".")
    return text.replace(" ", "T", 1)


_CONVERT: dict[str, Callable[[str], Any]] = {
    "text": str, "int": int, "float": float, "decimal": lambda v: str(Decimal(v)),
    "date": _date, "timestamp": _timestamp,
}


class Converter:
    def __init__(self, conversions: dict[str, str]) -> None:
        self.rules = [(tuple(k.upper().split(".")), _CONVERT[v]) for k, v in conversions.items()]
        self._cache: dict[tuple[str, str], dict[str, Callable]] = {}

    def _for(self, db: str, table: str) -> dict[str, Callable]:
        out: dict[str, Callable] = {}
        for (s, t, c), fn in self.rules:
            if s in ("*", db) and t in ("*", table):
                out[c] = fn
        return out

    def __call__(self, change: Change) -> None:
        key = (change.table.db, change.table.table)
        rules = self._cache.get(key)
        if rules is None:
            rules = self._cache[key] = self._for(*key)
        for image in (change.before, change.after):
            if not image:
                continue
            for col, fn in rules.items():
                v = image.get(col)
                if v is None:
                    continue
                try:
                    image[col] = fn(v)
                except (ValueError, InvalidOperation):
                    raise DecodeError(f"cannot convert {change.table}.{col} value {v!r}", table=str(change.table),
                                      column=col, value=v, position=change.source.get("scn")) from None
