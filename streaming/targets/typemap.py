"""Source columns -> target column types, by their logical type (cdc.schema.logical), and value conversion.

Each target dialect gets a type that holds every value of the column's logical type (unsigned widened, DECIMAL
exact), and a converter for values whose stream form (see cdc.stream.events.Change) the target cannot take as is
(base64 binary -> bytes, zoned 'Z' text for MySQL). The maps switch on the family and sizes, never on the source's
spelling. Each target's map is in its package (``streaming/targets/<kind>/typemap.py``: LogicalType and the
declared text -> its column type); this module holds what they share. An unknown type (family ``other``) maps to
text, which holds the stream's JSON-ready value.

A column is given as a cdc.stream.events.Column (its ``logical``, or its kind's reading: cdc.registry.logical_of),
or as bare type text (a schema without logical types and no kind at hand: cdc.registry.guess_logical).

Oracle sources (``temporal: iso``, readers/oracle/convert.py) describe DATE as a wall clock of 0 digits and
TIMESTAMP(n) [WITH LOCAL TIME ZONE] as a wall clock of n digits; WITH TIME ZONE is an instant (UTC + 'Z'): a
timestamp column, never a date. n = 7..9 becomes 6 digits in PostgreSQL, DuckDB and MySQL, and a value with
digits below the microsecond is refused there (:func:`micro_timestamp`), never rounded or truncated.
"""

from __future__ import annotations

import base64
import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from cdc import registry
from cdc.schema.logical import LogicalType
from cdc.stream.events import Column

Converter = Callable[[Any], Any]
Source = Column | LogicalType | str  # a column, its logical type, or a bare type text (module doc)


def column_of(source: Source) -> tuple[LogicalType, str]:
    """(logical type, declared type text) of a source column (module doc)."""
    if isinstance(source, LogicalType):
        return source, ""
    if isinstance(source, str):
        return registry.guess_logical(source), source.strip().lower()
    return registry.logical_of(source), source.type


def micro_digits(precision: int) -> int:
    """Fraction digits of a target timestamp: PostgreSQL, DuckDB and MySQL hold microseconds (an
    Oracle TIMESTAMP(7..9) gets 6 and its values are checked by :func:`micro_timestamp`)."""
    return min(precision, 6)


@dataclass(frozen=True)
class TypeMap:
    """The types and value conversions of one target database.

    ``target_type``: (logical type, declared text) -> the target's column type;
    ``naive_text_timestamps``: timestamps are written as 'YYYY-MM-DD HH:MM:SS[.f]' text
    (the stream's 'T' and 'Z' go: MySQL parses nothing else);
    ``temporal_objects``: dates and timestamps are bound as Python date/datetime (Oracle
    parses ISO text only under matching NLS formats; a datetime binds as itself)."""

    target_type: Callable[[LogicalType, str], str]
    naive_text_timestamps: bool = False
    temporal_objects: bool = False


@functools.cache
def type_maps() -> dict[str, TypeMap]:
    """dialect -> its TypeMap: each target package that has one names it in ``TYPE_MAP`` (its
    ``typemap.py``, streaming/targets/__init__.py); a target without one (Parquet) keeps the stream's values."""
    from streaming.targets import type_map_specs

    return {kind: getattr(importlib.import_module(module), name) for kind, (module, name) in type_map_specs().items()}


def __getattr__(name: str) -> Any:
    if name == "TYPE_MAPS":
        return type_maps()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def target_type(source: Source, dialect: str) -> str:
    """The column type of ``source`` (a Column, its LogicalType or a type text: module doc) in ``dialect``."""
    return type_maps()[dialect].target_type(*column_of(source))


def b64_bytes(value: Any) -> Any:
    """Binary columns travel as base64 text in the stream; an Oracle RAW as its SQL_REDO text
    ``HEXTORAW('00ff')`` (base64-decoding that text would silently drop its non-base64 characters)."""
    if not isinstance(value, str):
        return value
    if value.startswith("HEXTORAW('") and value.endswith("')"):
        return bytes.fromhex(value[10:-2])
    return base64.b64decode(value, validate=True)


def _temporal(value: Any) -> Any:
    """'YYYY-MM-DD' -> date; 'YYYY-MM-DDTHH:MM:SS[.f][Z]' -> datetime ('Z': aware, UTC)."""
    if not isinstance(value, str):
        return value
    if len(value) == 10:
        return date.fromisoformat(value)
    return datetime.fromisoformat(value)


def _naive_ts(value: Any) -> Any:
    if isinstance(value, str) and "T" in value:
        return value.rstrip("Z").replace("T", " ")
    return value


def _int(value: Any) -> Any:
    """An integer beyond signed 64 bits arrives as decimal text from an Avro stream (cdc.stream.serde)."""
    return int(value) if isinstance(value, str) else value


def converter(source: Source, dialect: str) -> Converter | None:
    """A function turning the stream value into what the target column takes, or None."""
    types = type_maps().get(dialect)
    if types is None:  # parquet keeps the stream values as they are
        return None
    lt, _ = column_of(source)
    fn = _converter(lt, types)
    if lt.family in _TIMESTAMPS and (lt.precision or 0) > 6:  # Oracle TIMESTAMP(7..9)
        return micro_timestamp if fn is None else lambda v: fn(micro_timestamp(v))
    return fn


_TIMESTAMPS = ("timestamp", "timestamp_tz")


def _converter(lt: LogicalType, types: TypeMap) -> Converter | None:
    f = lt.family
    if f == "bit" or (f == "integer" and lt.unsigned and lt.length == 64):
        return _int  # MySQL would take the text of a BIT as its bytes
    if f in ("binary", "spatial", "vector"):
        return b64_bytes
    if types.naive_text_timestamps and f in _TIMESTAMPS:
        return _naive_ts
    if types.temporal_objects and f in _TIMESTAMPS + ("date",):
        return _temporal
    return None


def micro_timestamp(value: Any) -> Any:
    """Refuse an ISO timestamp with digits below the microsecond (an Oracle TIMESTAMP(7..9) value; the
    stream drops trailing zeros, so 7+ digits are never all zero). PostgreSQL, DuckDB and MySQL hold
    microseconds, Python's datetime too: rounding would change the value and truncating lose part of it,
    so the row is refused (the job stops, or the dead-letter table names column and value)."""
    if isinstance(value, str) and value[:1].isdigit():
        dot = value.find(".")
        if dot >= 0 and len(value.rstrip("Z")) - dot - 1 > 6:
            raise ValueError(f"{value!r} has digits below the microsecond, which the target cannot hold")
    return value
