"""Turn python-mysql-replication row values into JSON-ready values.

The contract is cdc.events.Change: int, float, str, bool or None; DECIMAL as
text (no float rounding), DATE 'YYYY-MM-DD', DATETIME
'YYYY-MM-DDTHH:MM:SS[.ffffff]', TIMESTAMP the same plus 'Z' (the binlog holds
UTC), TIME '[-]HH:MM:SS[.ffffff]' (hours may exceed 24), binary as base64,
JSON documents as their text, SET as 'a,b' in declaration order, ENUM as its
label, BIT as an unsigned integer, YEAR as an integer.

Converters are chosen once per TABLE_MAP (see :func:`row_converter`), so
the per-row cost is one loop over the columns that need converting; ints
and text pass through untouched. Anything unexpected raises DecodeError
naming table, column, position and value, and the stream stops there.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from collections.abc import Callable
from typing import Any

from pymysqlreplication.constants import FIELD_TYPE as T

from readers.mysql.errors import DecodeError, UnknownColumnType

Converter = Callable[[Any], Any]

_INTS = {T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG, T.YEAR}
_TEXT_OR_BINARY = {T.VARCHAR, T.VAR_STRING, T.STRING, T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB}


def _decimal(v: Any) -> str:
    if not isinstance(v, decimal.Decimal):
        raise TypeError("not a Decimal")
    return format(v, "f")


def _float(v: Any) -> float:
    return float(v)


def _date(v: Any) -> str:
    return v.isoformat()


def _datetime(v: Any) -> str:
    if not isinstance(v, dt.datetime):
        raise TypeError("not a datetime")
    return v.isoformat()


def _timestamp(v: Any) -> str:
    if not isinstance(v, dt.datetime):
        raise TypeError("not a datetime")
    return v.replace(tzinfo=None).isoformat() + "Z"


def _time(v: Any) -> str:
    if not isinstance(v, dt.timedelta):
        raise TypeError("not a timedelta")
    us = v.days * 86_400_000_000 + v.seconds * 1_000_000 + v.microseconds
    sign = "-" if us < 0 else ""
    us = abs(us)
    secs, frac = divmod(us, 1_000_000)
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    return f"{sign}{h:02d}:{m:02d}:{s:02d}" + (f".{frac:06d}" if frac else "")


def _text_or_binary(v: Any) -> Any:
    if isinstance(v, str):
        return v
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode("ascii")
    raise TypeError("neither text nor bytes")


def _json_doc(v: Any) -> str:
    if isinstance(v, str):  # MariaDB: JSON is LONGTEXT
        return v
    return json.dumps(_unbytes(v), separators=(",", ":"), ensure_ascii=False)


def _unbytes(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, dict):
        return {_unbytes(k): _unbytes(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_unbytes(x) for x in v]
    if isinstance(v, decimal.Decimal):
        return float(v)
    return v


def _bit(v: Any) -> int:
    return int(v, 2) if isinstance(v, str) else int(v)


def _binary(v: Any) -> str:
    return base64.b64encode(bytes(v)).decode("ascii")


def converter_for(column: Any) -> Converter | None:
    """The converter of one TABLE_MAP column, None when values pass as they are.

    Raises UnknownColumnType (without position: the caller adds it) for a
    type code this reader does not know.
    """
    t = column.type
    if t in _INTS:
        return None
    if t in (T.NEWDECIMAL, T.DECIMAL):
        return _decimal
    if t in (T.FLOAT, T.DOUBLE):
        return _float
    if t in (T.DATE, T.NEWDATE):
        return _date
    if t in (T.DATETIME, T.DATETIME2):
        return _datetime
    if t in (T.TIMESTAMP, T.TIMESTAMP2):
        return _timestamp
    if t in (T.TIME, T.TIME2):
        return _time
    if t in _TEXT_OR_BINARY or t == T.ENUM:
        return _text_or_binary
    if t == T.SET:
        order = {name: i for i, name in enumerate(column.set_values or ())}
        return lambda v: ",".join(sorted(v, key=order.__getitem__)) if isinstance(v, (set, frozenset)) else str(v)
    if t == T.JSON:
        return _json_doc
    if t == T.BIT:
        return _bit
    if t == T.GEOMETRY:
        return _binary
    raise UnknownColumnType("unknown column type", column=column.name, type_code=t)


class RowConverter:
    """Converts rows of one table (as decoded from one TABLE_MAP) in place."""

    __slots__ = ("table", "todo")

    def __init__(self, table: str, columns: list[Any]) -> None:
        self.table = table
        todo = []
        for c in columns:
            try:
                fn = converter_for(c)
            except UnknownColumnType as exc:
                raise UnknownColumnType(f"unknown column type {c.type} in {table}.{c.name}",
                                        table=table, column=c.name, type_code=c.type) from exc
            if fn is not None:
                todo.append((c.name, fn))
        self.todo = tuple(todo)

    def __call__(self, row: dict[str, Any], position: str) -> dict[str, Any]:
        """Convert ``row`` in place and return it; DecodeError names table/column/position/value."""
        for name, fn in self.todo:
            v = row[name]
            if v is not None:
                try:
                    row[name] = fn(v)
                except Exception as exc:  # noqa: BLE001 - every failure becomes a DecodeError
                    raise DecodeError(f"cannot decode {self.table}.{name} at {position}: {exc}",
                                      table=self.table, column=name, position=position,
                                      value=repr(v)[:200]) from None
        return row
