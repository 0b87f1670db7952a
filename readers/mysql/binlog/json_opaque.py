"""MySQL JSON documents holding opaque values (a DATE, DATETIME, TIMESTAMP, TIME or binary string inside a JSON
document: ``JSON_OBJECT('at', NOW())``), read from the binlog as MySQL prints them.

python-mysql-replication 1.0.17 reads such a value as a Python ``datetime`` (a DATE too), a ``time`` without its
sign, and a TIMESTAMP or a binary string as its bytes decoded with errors ignored. The reader publishes a
document as compact JSON text (cdc.schema.values.json_text), which cannot hold a ``datetime``: the event stopped
with a DecodeError. :func:`install` replaces the library's opaque read with one that gives the text MySQL's own
``CAST(doc AS CHAR)`` prints, so the binlog path, the snapshot path (which reads MySQL's text) and `cdc compare`
hold the same string:

- DATE ``"2024-02-29"``; DATETIME and TIMESTAMP ``"2024-02-29 12:34:56.500000"`` (always six fraction digits);
  TIME ``"-01:02:03.000000"`` (signed, hours up to 838);
- DECIMAL as before, a ``Decimal`` (the document's text carries it as a JSON number);
- any other type (a binary or character string cast to JSON, BIT, ...) ``"base64:type<N>:<base64 of the
  bytes>"``, N the MySQL field type.
"""

from __future__ import annotations

import base64
from typing import Any

from pymysqlreplication import json_binary
from pymysqlreplication.constants import FIELD_TYPE as T
from pymysqlreplication.util.bytes import decode_decimal, decode_variable_length, is_data_short, parse_int64

_ORIGINAL_OPAQUE = json_binary.parse_opaque
_DATES = {T.DATE, T.NEWDATE}
_DATETIMES = {T.DATETIME, T.DATETIME2, T.TIMESTAMP, T.TIMESTAMP2}
_TIMES = {T.TIME, T.TIME2}


def _packed(data: bytes) -> tuple[bool, int, int]:
    """(negative, the whole seconds part, microseconds) of MySQL's packed temporal int64."""
    v = parse_int64(data)
    a = -v if v < 0 else v
    return v < 0, a >> 24, a % (1 << 24)


def datetime_text(data: bytes, date_only: bool) -> str:
    _, whole, micros = _packed(data)
    ymd, hms = whole >> 17, whole % (1 << 17)
    ym = ymd >> 5
    day = f"{ym // 13:04d}-{ym % 13:02d}-{ymd % 32:02d}"
    if date_only:
        return day
    return f"{day} {hms >> 12:02d}:{(hms >> 6) % 64:02d}:{hms % 64:02d}.{micros:06d}"


def time_text(data: bytes) -> str:
    negative, whole, micros = _packed(data)
    hour, minute, second = (whole >> 12) % (1 << 10), (whole >> 6) % 64, whole % 64
    return f"{'-' if negative else ''}{hour:02d}:{minute:02d}:{second:02d}.{micros:06d}"


def parse_opaque(data: bytes) -> Any:
    """One opaque JSON value (field type byte, packed length, payload) as MySQL prints it (module docstring); a
    text as bytes, as the library gives a JSON string (so a document that is one opaque value is a JSON string
    too, not bare text)."""
    if is_data_short(data, 1):
        return None
    field_type = data[0]
    length, n = decode_variable_length(data[1:])
    payload = data[1 + n:1 + n + length]
    if field_type in (T.NEWDECIMAL, T.DECIMAL):
        return decode_decimal(payload)
    if field_type in _DATES or field_type in _DATETIMES:
        return datetime_text(payload, date_only=field_type in _DATES).encode()
    if field_type in _TIMES:
        return time_text(payload).encode()
    return f"base64:type{field_type}:{base64.b64encode(payload).decode()}".encode()


def install() -> None:
    """Make the library's JSON parse (both row passes call it) read opaque values as MySQL prints them.
    Idempotent."""
    json_binary.parse_opaque = parse_opaque
