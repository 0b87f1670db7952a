"""Turn python-mysql-replication row values into JSON-ready values.

The conversions themselves live in cdc.schema.values (the one conversion shared
with snapshots, compare repair and the shadow source; its docstring lists
the value shapes); this module picks one per binlog column type.

Converters are chosen once per TABLE_MAP (see :func:`row_converter`), so
the per-row cost is one loop over the columns that need converting; ints
and text pass through untouched. Anything unexpected raises DecodeError
naming table, column, position and value, and the stream stops there.
"""

from __future__ import annotations

from typing import Any

from pymysqlreplication.constants import FIELD_TYPE as T

from cdc.schema.values import (
    Converter,
    base64_text,
    binary_padded,
    bit_int,
    date_text,
    datetime_text,
    decimal_text,
    float_value,
    json_text,
    set_text,
    text_or_base64,
    time_text,
    timestamp_text,
    year_value,
)
from readers.mysql.binlog.vector import VECTOR
from readers.mysql.errors import DecodeError, UnknownColumnType

_INTS = {T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG}
_TEXT_OR_BINARY = {T.VARCHAR, T.VAR_STRING, T.STRING, T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB}


def converter_for(column: Any) -> Converter | None:
    """The converter of one TABLE_MAP column, None when values pass as they are.

    Raises UnknownColumnType (without position: the caller adds it) for a
    type code this reader does not know.
    """
    t = column.type
    if t in _INTS:
        return None
    if t == T.YEAR:
        return year_value
    if t in (T.NEWDECIMAL, T.DECIMAL):
        return decimal_text
    if t in (T.FLOAT, T.DOUBLE):
        return float_value
    if t in (T.DATE, T.NEWDATE):
        return date_text
    if t in (T.DATETIME, T.DATETIME2):
        return datetime_text
    if t in (T.TIMESTAMP, T.TIMESTAMP2):
        return timestamp_text  # the binlog holds UTC: the library hands a naive UTC datetime
    if t in (T.TIME, T.TIME2):
        return time_text
    if t == T.STRING and (getattr(column, "character_set_name", None) or "").lower() == "binary":
        return binary_padded(column.max_length)  # BINARY(n)
    if t in _TEXT_OR_BINARY or t == T.ENUM:
        return text_or_base64
    if t == T.SET:
        return set_text(column.set_values)
    if t == T.JSON:
        return json_text
    if t == T.BIT:
        return bit_int
    if t in (T.GEOMETRY, VECTOR):  # VECTOR: its stored float32 bytes (readers/mysql/binlog/vector.py)
        return base64_text
    raise UnknownColumnType("unknown column type", column=column.name, type_code=t)


class ConvertedRow(dict):
    """A row image whose values are already the stream's: the native rows pass (readers/mysql/binlog/native_rows.py)
    decodes and converts in one step, and :class:`RowConverter` hands such a row on untouched."""

    __slots__ = ()


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
        """Convert ``row`` in place and return it; DecodeError names table/column/position/value.

        A :class:`ConvertedRow` (the native pass) is returned as it is."""
        if row.__class__ is ConvertedRow:
            return row
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
