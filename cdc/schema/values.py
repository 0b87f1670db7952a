"""Database value -> stream value: the ONE conversion every reader uses.

The stream carries JSON-ready values (cdc.stream.events.Change): int, float, str,
bool or None, and for the rest:

    DECIMAL / NUMERIC      text, no float rounding ('-1.50')
    FLOAT (MySQL float32)  the float32 value as a double (see select_expr)
    DATE                   'YYYY-MM-DD'
    DATETIME, timestamp    'YYYY-MM-DDTHH:MM:SS[.ffffff]' (wall clock)
    TIMESTAMP, timestamptz the same in UTC plus 'Z'
    TIME                   '[-]HH:MM:SS[.ffffff]', hours may exceed 24
    binary                 base64 (MySQL BINARY(n): all n bytes, trailing zero bytes kept)
    zero dates             None (MySQL '0000-00-00', '2024-00-10', TIMESTAMP 0: no such instant)
    JSON                   its text (compact when the database hands a parsed document)
    SET                    'a,b' in declaration order;  ENUM its label
    BIT                    an unsigned integer;  YEAR an integer (0 for YEAR 0000)
    GEOMETRY               base64 of MySQL's internal value: 4-byte little-endian SRID, then WKB

Both MySQL read paths land here: the binlog reader (readers/mysql/binlog/decode.py
picks a converter per TABLE_MAP column with the functions below) and every
path that reads rows with a DB-API driver (MySQL snapshots, compare repair,
the shadow source, the Oracle snapshot) through :func:`stream_value`.
Whichever library delivered a value (python-mysql-replication: timedelta,
set of labels, bit string, widened float32, parsed JSON; PyMySQL: the same
types from text, bytes for BIT, JSON text), the result is the same
(tests/unit/cdc/schema/test_values.py checks it property by property).

``kind`` is the fingerprint family of the column (cdc.compare.fingerprint:
int, bool, decimal, float, string, binary, date, datetime, timestamptz,
time, other) refined by :func:`value_kind` with the MySQL types whose values
differ between the two libraries: ``float32``, ``bit``, ``json``. A FLOAT
cannot be fixed after the fact: the server's text of it has 6 significant
digits (3.14159 for the float32 3.1415927), so a DB-API read selects it
through :func:`select_expr`, which the server widens to the exact double
the binlog holds. This module imports nothing from readers/ or streaming/.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Iterable
from datetime import date, datetime, timedelta, timezone
from datetime import time as dtime
from decimal import Decimal
from typing import Any

Converter = Callable[[Any], Any]


# ---- one function per value shape (the binlog decoder picks these per column) -----------------
def decimal_text(v: Any) -> str:
    if not isinstance(v, Decimal):
        raise TypeError("not a Decimal")
    return format(v, "f")


def float_value(v: Any) -> float:
    return float(v)


def date_text(v: Any) -> str:
    return v.isoformat()


def datetime_text(v: Any) -> str:
    if not isinstance(v, datetime):
        raise TypeError("not a datetime")
    return v.isoformat()


_EPOCH = datetime(1970, 1, 1)


def timestamp_text(v: Any) -> str | None:
    """MySQL TIMESTAMP from the binlog (a naive UTC datetime).

    The library turns the zero TIMESTAMP ('0000-00-00 00:00:00', stored as 0 seconds) into
    the epoch itself, which no TIMESTAMP can hold (the range starts at 00:00:01 UTC): None,
    as every other zero date."""
    if v == _EPOCH:
        return None
    return utc_text(v)


def year_value(v: Any) -> int:
    """MySQL YEAR from the binlog: the library adds 1900 to the stored byte, so YEAR 0000
    arrives as 1900 (never a YEAR value: the range is 1901..2155 and 0000)."""
    return 0 if v == 1900 else int(v)


def binary_padded(length: int) -> Converter:
    """MySQL BINARY(n): the binlog stores it without its trailing zero bytes; the value has n.

    The library hands an empty value (n zero bytes) as the str ''."""

    def convert(v: Any) -> str:
        raw = v.encode("latin-1") if isinstance(v, str) else bytes(v)
        return base64.b64encode(raw.ljust(length, b"\0")).decode("ascii")

    return convert


def utc_text(v: Any) -> str:
    """An instant: aware datetimes are moved to UTC; naive ones are UTC already (binlog, UTC sessions)."""
    if not isinstance(v, datetime):
        raise TypeError("not a datetime")
    if v.tzinfo is not None:
        v = v.astimezone(timezone.utc)
    return v.replace(tzinfo=None).isoformat() + "Z"


def time_text(v: Any) -> str:
    """MySQL TIME from a timedelta: sign, then hours (may exceed 24), minutes, seconds, microseconds.

    Works on the total number of microseconds: a negative timedelta keeps its fraction in a
    positive ``microseconds`` field (-1.25 s is days=-1, seconds=86398, microseconds=750000).
    """
    if not isinstance(v, timedelta):
        raise TypeError("not a timedelta")
    us = v.days * 86_400_000_000 + v.seconds * 1_000_000 + v.microseconds
    sign = "-" if us < 0 else ""
    secs, frac = divmod(abs(us), 1_000_000)
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    return f"{sign}{h:02d}:{m:02d}:{s:02d}" + (f".{frac:06d}" if frac else "")


def base64_text(v: Any) -> str:
    return base64.b64encode(bytes(v)).decode("ascii")


def text_or_base64(v: Any) -> Any:
    """Character columns arrive as str, binary ones as bytes."""
    if isinstance(v, str):
        return v
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode("ascii")
    raise TypeError("neither text nor bytes")


def json_text(v: Any) -> str:
    """A parsed document (MySQL binlog) as compact text, numbers as MySQL prints them (:func:`mysql_double`, a
    DECIMAL with its scale), so that the text equals the server's own once its ', ' and ': ' are closed up; text
    (MariaDB, where JSON is LONGTEXT) as is."""
    if isinstance(v, str):
        return v
    return _json_compact(v)


def json_doc_text(v: Any) -> str:
    """MySQL JSON read as text (PyMySQL): the server's spaced text -> the compact text of json_text (the number
    tokens kept as the server printed them)."""
    if isinstance(v, (bytes, bytearray)):
        v = v.decode("utf-8")
    return _json_compact(json.loads(v, parse_float=_NumberToken))


class _NumberToken(str):
    """A JSON number token kept as written (json.loads' parse_float)."""


def mysql_double(v: float) -> str:
    """A double inside a MySQL JSON document as MySQL prints it: the shortest digits that read back as the same
    double; fixed-point from 1e-15 up to below 1e15 (an integral value with '.0', '-0.0' kept), otherwise
    'd.ddd' 'e' exponent ('1e20', '1.5e-16'). Checked against MySQL 9.7's own output
    (tests/unit/cdc/schema/test_json_numbers.py)."""
    r = repr(v)
    if "e" not in r and abs(v) < 1e15 or not math.isfinite(v):  # Python's repr is MySQL's text there (0.0, -0.0)
        return r
    sign = "-" if v < 0 else ""
    t = Decimal(r.lstrip("-")).as_tuple()
    digits = "".join(map(str, t.digits)).rstrip("0") or "0"
    decpt = len(t.digits) + int(t.exponent)  # the value is 0.<digits> x 10^decpt
    n = len(digits)
    if decpt >= -14 and (decpt <= 15 or n > decpt):
        if decpt <= 0:
            return f"{sign}0.{'0' * -decpt}{digits}"
        if decpt >= n:
            return f"{sign}{digits}{'0' * (decpt - n)}.0"
        return f"{sign}{digits[:decpt]}.{digits[decpt:]}"
    return f"{sign}{digits[0]}{'.' + digits[1:] if n > 1 else ''}e{decpt - 1}"


def _json_compact(v: Any) -> str:
    """One value of a parsed document as compact JSON text (json_text); the library gives strings as bytes."""
    if isinstance(v, str):  # a _NumberToken is printed as the server wrote it; any other text is a JSON string
        return str.__str__(v) if isinstance(v, _NumberToken) else _json_string(v)
    if isinstance(v, bytes):
        return _json_string(v.decode("utf-8"))
    if v is None or isinstance(v, bool):
        return "null" if v is None else "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return mysql_double(v)
    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, dict):
        return "{" + ",".join(f"{_json_compact(k)}:{_json_compact(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(_json_compact(x) for x in v) + "]"
    raise TypeError(f"a JSON document holds a {type(v).__name__}: {v!r}")


_json_string = json.encoder.encode_basestring  # what json.dumps(s, ensure_ascii=False) writes for a string


def bit_int(v: Any) -> int:
    """BIT: the binlog library gives a string of bits, PyMySQL big-endian bytes."""
    if isinstance(v, str):
        return int(v, 2)
    if isinstance(v, (bytes, bytearray)):
        return int.from_bytes(v, "big")
    return int(v)


def set_text(order: Iterable[str]) -> Converter:
    """SET: the binlog library gives a set of labels; text already comes in declaration order."""
    rank = {name: i for i, name in enumerate(order or ())}

    def convert(v: Any) -> str:
        return ",".join(sorted(v, key=rank.__getitem__)) if isinstance(v, (set, frozenset)) else str(v)

    return convert


# ---- rows read with a DB-API driver ------------------------------------------------------------
def value_kind(type_text: str, family: str, dialect: str) -> str:
    """The conversion kind of a column: its family, refined by ``dialect``'s compare dialect where its driver
    hands some types differently (MySQL FLOAT, BIT, JSON, VECTOR: cdc.compare.dialects.mysql_compare, which owns
    those catalog spellings). ``type_text``: the catalog's type (MySQL COLUMN_TYPE)."""
    from cdc.compare.dialects import compare_dialect  # the compare dialects import this module's helpers

    return compare_dialect(dialect).value_kind(type_text, family)  # type: ignore[arg-type]


_BY_KIND: dict[str, Converter] = {"bit": bit_int, "json": json_doc_text}
_DATES = frozenset({"date", "datetime", "timestamptz"})


def select_expr(quoted: str, kind: str) -> str:
    """How a DB-API read selects a column of ``kind`` (``quoted``: its quoted name).

    MySQL FLOAT as ``col + 0e0``: the server widens the float32 exactly to a double and prints
    that in full, where the column's own text has only 6 significant digits. MySQL 9 VECTOR as
    ``CAST(col AS BINARY)``: its stored float32 bytes, as the binlog carries them (PyMySQL cannot fetch the
    VECTOR type itself: it decodes it as ASCII text)."""
    if kind == "vector":
        return f"CAST({quoted} AS BINARY)"
    return f"({quoted} + 0e0)" if kind == "float32" else quoted


def stream_value_is_identity(kind: str) -> bool:
    """Whether ``stream_value(v, kind)`` is ``v`` itself for every v of type int, str, float, bool or None
    (a reader may then skip the call for such values)."""
    return kind not in _BY_KIND and kind not in _DATES


def stream_value(v: Any, kind: str) -> Any:
    """One value read with a DB-API driver (PyMySQL, psycopg, duckdb, oracledb) as the stream carries it."""
    if v is None:
        return None
    special = _BY_KIND.get(kind)
    if special is not None:
        return special(v)
    if isinstance(v, str) and kind in _DATES:
        return None  # PyMySQL hands a zero date ('0000-00-00', '2024-00-10') as its text: the binlog's None
    if isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, Decimal):  # an integer column held as a decimal (PostgreSQL numeric(20,0)) stays an int
        return int(v) if kind == "int" and v == v.to_integral_value() else format(v, "f")
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64_text(v)
    if isinstance(v, datetime):
        return utc_text(v) if v.tzinfo is not None or kind == "timestamptz" else v.isoformat()
    if isinstance(v, date):
        return v.isoformat()
    if isinstance(v, timedelta):
        return time_text(v)
    if isinstance(v, dtime):
        return v.isoformat()
    return str(v)
