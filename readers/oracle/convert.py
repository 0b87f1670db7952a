"""Oracle value conversions: the ``temporal`` encoding and the optional ``conversions``.

``temporal: iso`` (the default) turns the SQL_REDO text of every DATE and
TIMESTAMP column into the stream's ISO encodings (cdc/schema/values.py), the same
as MySQL's, and describes those columns with the stream's types in the
schema records (:func:`stream_schema`):

    DATE                          datetime(0)   'YYYY-MM-DDTHH:MM:SS' (wall clock)
    TIMESTAMP(n)                  datetime(n)   the same plus the fraction
    TIMESTAMP(n) WITH LOCAL TZ    datetime(n)   the wall clock LogMiner writes (no zone in the text)
    TIMESTAMP(n) WITH TIME ZONE   (kept)        the instant in UTC plus 'Z'

The fraction is canonical, so the snapshot and LogMiner paths agree whatever
digits each wrote: none when zero, else 6 digits (Python's isoformat), or 7
to 9 when the value has digits below the microsecond (all kept, never
rounded). ``temporal: redo_text`` keeps the SQL_REDO text and Oracle's type
names (the encoding before this option existed).

``conversions`` maps ``SCHEMA.TABLE.COLUMN`` (``*`` allowed for schema and
table) to ``text|int|decimal|float|date|timestamp``; they run after the
temporal step and take either encoding. A value that does not convert raises
DecodeError naming table, column and value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cdc.errors import DecodeError
from cdc.stream.events import Change, Column, TableSchema
from readers.oracle.types import logical_type


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

# ---- temporal: iso ----------------------------------------------------------------------------
_DATE_REDO = re.compile(r"TO_DATE\('(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)', 'YYYY-MM-DD HH24:MI:SS'\)")
_WALL = re.compile(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:\.(\d{0,9}))?")
_ZONED = re.compile(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:\.(\d{0,9}))? ?(?:([+-])(\d\d?):(\d\d)|([A-Za-z_/+\-0-9]+))")
_TS = re.compile(r"timestamp(?:\((\d)\))?( with local time zone| with time zone)?")


def _fraction(digits: str | None) -> str:
    """Canonical fraction: '' when zero, else 6 digits, or up to 9 when below the microsecond."""
    d = (digits or "").rstrip("0")
    return "" if not d else "." + (d.ljust(6, "0") if len(d) <= 6 else d)


def iso_temporal(v: Any) -> Any:
    """A DATE/TIMESTAMP value as SQL_REDO shows it -> the stream's ISO text (module docstring).

    ``TO_DATE('2024-02-29 13:14:15', 'fmt')`` and ``TO_TIMESTAMP('.. .1234567')`` -> wall clock;
    ``TO_TIMESTAMP_TZ('.. -06:00')`` (or a region name) -> UTC plus 'Z'. Raises ValueError on any
    other shape (a BC date, an unknown region): never a half-converted value."""
    if not isinstance(v, str):
        return v
    m = _DATE_REDO.fullmatch(v)  # fast path: a DATE under the session's NLS_DATE_FORMAT (readers/oracle/session.py)
    if m is not None:
        return f"{m[1]}T{m[2]}"
    arg = _fn_arg(v)
    if v.startswith("TO_TIMESTAMP_TZ("):
        m = _ZONED.fullmatch(arg)
        if m is None:
            raise ValueError(f"not a TIMESTAMP WITH TIME ZONE text: {v!r}")
        day, clock, digits, sign, hh, mm, region = m.groups()
        wall = datetime.fromisoformat(f"{day}T{clock}")
        if region is not None:
            try:
                utc = wall.replace(tzinfo=ZoneInfo(region)).utcoffset()
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone region in {v!r}") from None
        else:
            utc = timedelta(hours=int(hh), minutes=int(mm)) * (-1 if sign == "-" else 1)
        return (wall - utc).isoformat() + _fraction(digits) + "Z"
    if v.startswith(("TO_DATE(", "TO_TIMESTAMP(")) or v == arg:
        m = _WALL.fullmatch(arg)
        if m is None:
            raise ValueError(f"not a DATE/TIMESTAMP text: {v!r}")
        return f"{m.group(1)}T{m.group(2)}{_fraction(m.group(3))}"
    raise ValueError(f"not a DATE/TIMESTAMP text: {v!r}")


def stream_type(oracle_type: str) -> str:
    """Oracle's type text (lower case, with its size: readers/oracle/columns.py) -> the schema record's, for ``iso``."""
    t = oracle_type.strip().lower()
    if t == "date":
        return "datetime(0)"
    m = _TS.fullmatch(t)
    if m is None:
        return t
    n = m.group(1) or "6"
    return f"timestamp({n}) with time zone" if m.group(2) == " with time zone" else f"datetime({n})"


def stream_schema(schema: TableSchema | None, temporal: str) -> TableSchema | None:
    """The schema record of an Oracle table under ``temporal`` (``redo_text``: unchanged)."""
    if schema is None or temporal != "iso":
        return schema
    cols = []
    for c in schema.columns:
        text = stream_type(c.type)
        cols.append(Column(c.name, text, c.nullable, c.default, logical_type(text)))
    return TableSchema(schema.table, tuple(cols), schema.primary_key)


def default_text(raw: object) -> str | None:
    """ALL_TAB_COLUMNS.DATA_DEFAULT (a LONG: the DEFAULT clause's text as typed, often with trailing blanks
    or a newline) as cdc.stream.events.Column.default: ``'std'``, ``0``, ``SYSDATE``, ``sys_guid()``...; None for
    no default or ``DEFAULT NULL``. cdc.schema.evolution.default_value tells a constant (a quoted literal, a
    number: existing rows are backfilled) from an expression (the apply stops with a way back)."""
    if raw is None:
        return None
    text = (raw.decode() if isinstance(raw, bytes) else str(raw)).strip()
    return None if not text or text.upper() == "NULL" else text


def _temporal_columns(schema: TableSchema | None) -> list[str]:
    """Columns of a stream schema (after :func:`stream_schema`) whose values :func:`iso_temporal` converts."""
    if schema is None:
        return []
    return [c.name for c in schema.columns if c.type.startswith(("datetime(", "timestamp("))]


class Converter:
    """Applied to every Change of an Oracle source (LogMiner and snapshot alike), in place.

    ``temporal``: ``iso`` converts the DATE/TIMESTAMP columns of the Change's (stream) schema; a
    Change without a schema is left as SQL_REDO shows it. Then ``conversions``."""

    def __init__(self, conversions: dict[str, str], temporal: str = "iso",
                 shaped: Callable[[str, str], bool] | None = None) -> None:
        """``shaped(owner, table)``: True for a table the source's transforms shape: a value that does not
        convert is then not shown in the error (it may be a masked column's clear value)."""
        self.rules = [(tuple(k.upper().split(".")), _CONVERT[v]) for k, v in conversions.items()]
        self.temporal = temporal
        self.shaped = shaped
        self._cache: dict[tuple[str, str], tuple[Any, list[tuple[str, Callable]]]] = {}

    def _for(self, db: str, table: str, schema: TableSchema | None) -> list[tuple[str, Callable]]:
        out: list[tuple[str, Callable]] = []
        if self.temporal == "iso":
            out += [(c, iso_temporal) for c in _temporal_columns(schema)]
        for (s, t, c), fn in self.rules:
            if s in ("*", db) and t in ("*", table):
                out.append((c, fn))
        return out

    def temporal_only(self, db: str, table: str, schema: TableSchema | None) -> tuple[str, ...] | None:
        """The columns ``temporal: iso`` converts in this table when that is all this converter does to it
        (the native pass of readers/oracle/columnar/redo_json.py does it), None when other conversions apply."""
        rules = self._for(db, table, schema)
        return tuple(c for c, _ in rules) if all(fn is iso_temporal for _, fn in rules) else None

    def __call__(self, change: Change) -> None:
        key = (change.table.db, change.table.table)
        known = self._cache.get(key)
        if known is None or known[0] is not change.schema:  # a new table, or its schema changed (DDL)
            known = self._cache[key] = (change.schema, self._for(*key, change.schema))
        rules = known[1]
        if not rules:
            return
        for image in (change.before, change.after):
            if not image:
                continue
            for col, fn in rules:
                v = image.get(col)
                if v is None:
                    continue
                try:
                    image[col] = fn(v)
                except (ValueError, InvalidOperation) as exc:
                    if self.shaped is not None and self.shaped(*key):
                        raise DecodeError(f"cannot convert a value of {change.table}.{col} (not shown: the table "
                                          "is shaped by sources[].transforms)", table=str(change.table),
                                          column=col, position=change.source.get("scn")) from None
                    raise DecodeError(f"cannot convert {change.table}.{col} value {v!r}: {exc}",
                                      table=str(change.table), column=col, value=v,
                                      position=change.source.get("scn")) from None
