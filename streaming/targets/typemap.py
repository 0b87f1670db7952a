"""Source columns -> target column types, by their logical type (cdc.schema.logical), and value conversion.

Each target dialect gets a type that holds every value of the column's logical type (unsigned widened, DECIMAL
exact), and a converter for values whose stream form (see cdc.stream.events.Change) the target cannot take as is
(base64 binary -> bytes, zoned 'Z' text for MySQL). The maps switch on the family and sizes, never on the source's
spelling; a MySQL target of a MySQL source takes the source's declared text as it is (``dialect``: the pass-through
of decision #35 b). An unknown type (family ``other``) maps to text, which holds the stream's JSON-ready value.

A column is given as a cdc.stream.events.Column (its ``logical``, or its kind's reading: cdc.registry.logical_of),
or as bare type text (a schema without logical types and no kind at hand: cdc.registry.guess_logical).

Oracle sources (``temporal: iso``, readers/oracle/convert.py) describe DATE as a wall clock of 0 digits and
TIMESTAMP(n) [WITH LOCAL TIME ZONE] as a wall clock of n digits; WITH TIME ZONE is an instant (UTC + 'Z'): a
timestamp column, never a date. n = 7..9 becomes 6 digits in PostgreSQL, DuckDB and MySQL, and a value with
digits below the microsecond is refused there (:func:`micro_timestamp`), never rounded or truncated.
"""

from __future__ import annotations

import base64
import re
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


def _pg(lt: LogicalType, text: str) -> str:
    f = lt.family
    if f == "integer":
        bits = lt.length or 64
        if bits == 8:
            return "smallint"
        if bits == 16:
            return "integer" if lt.unsigned else "smallint"
        if bits <= 32:
            return "bigint" if lt.unsigned else "integer"
        return "numeric(20,0)" if lt.unsigned else "bigint"
    if f == "decimal":
        return "numeric" if lt.precision is None else f"numeric({lt.precision},{lt.scale or 0})"
    if f == "float":
        return "real"
    if f == "double":
        return "double precision"
    if f == "string" and lt.subtype != "lob" and lt.length is not None:
        return f"char({lt.length})" if lt.fixed and lt.subtype != "national" else f"varchar({lt.length})"
    if f == "date":
        return "date"
    if f == "timestamp" or (f == "timestamp_tz" and lt.time_zone == "local"):
        return f"timestamp({_micro_digits(lt.precision)})" if lt.precision is not None else "timestamp"
    if f == "timestamp_tz":  # stream: UTC + 'Z'
        return f"timestamptz({_micro_digits(lt.precision)})" if lt.precision is not None else "timestamptz"
    if f == "time":  # MySQL TIME spans -838:59:59.999999 .. 838:59:59.999999
        return "interval"
    if f == "year":
        return "smallint"
    if f == "bit":  # the stream carries BIT(n) as an unsigned integer
        return "bigint" if (lt.length or 1) < 64 else "numeric(20,0)"
    if f in ("binary", "spatial"):
        return "bytea"
    if f == "json":
        return "jsonb"
    if f == "boolean":
        return "boolean"
    return "text"


def _duckdb(lt: LogicalType, text: str) -> str:
    if (lt.family == "integer" and lt.length == 64 and lt.unsigned) or (lt.family == "bit" and lt.length == 64):
        return "ubigint"
    pg = re.sub(r"^(timestamptz|timestamp|time)\(\d+\)$", r"\1", _pg(lt, text))
    if pg.startswith("numeric"):
        digits = (lt.precision or 0) if lt.family == "decimal" else 0
        if pg == "numeric" or digits > 38:
            return "varchar"  # DuckDB DECIMAL holds 38 digits: the stream's exact text instead
        return pg.replace("numeric", "decimal")
    return {"bytea": "blob", "jsonb": "varchar", "text": "varchar", "double precision": "double"}.get(pg, pg)


def _mysql(lt: LogicalType, text: str) -> str:
    """A MySQL/MariaDB source's declared text as it is (its own dialect); any other source's logical type in
    MySQL's types (an Oracle CHAR/NCHAR without a length: VARCHAR(2000); NCHAR(n): VARCHAR(n), which keeps its
    blank padding where a MySQL CHAR strips it)."""
    f = lt.family
    if lt.dialect == "mysql" and text:
        return _NOTES.sub("", text)
    if f == "string":
        if lt.subtype == "lob" or (lt.subtype == "national" and lt.length is None and not lt.fixed):
            return "longtext"
        if lt.fixed:
            if lt.length is None:
                return "varchar(2000)"
            return f"varchar({lt.length})" if lt.subtype == "national" else f"char({lt.length})"
        return f"varchar({lt.length or 255})"
    if f == "decimal":
        return "decimal(38,10)" if lt.precision is None else f"decimal({lt.precision},{lt.scale or 0})"
    if f == "binary":
        if lt.subtype == "lob":
            return "blob"
        return f"binary({lt.length or 1})" if lt.fixed else f"varbinary({lt.length or 2000})"
    if f in ("float", "double"):
        return f
    if f in ("timestamp", "timestamp_tz"):  # zoned: the UTC wall clock
        return f"datetime({_micro_digits(lt.precision)})" if lt.precision is not None else "datetime"
    if f == "integer":
        name = {8: "tinyint", 16: "smallint", 24: "mediumint", 32: "int"}.get(lt.length or 64, "bigint")
        return name + (" unsigned" if lt.unsigned else "")
    if f in ("date", "json", "year"):
        return f
    if f == "boolean":
        return "tinyint(1)"
    if f == "time":
        return f"time({_micro_digits(lt.precision)})" if lt.precision is not None else "time"
    if f == "bit":
        return f"bit({lt.length or 1})"
    if f == "spatial":
        return lt.subtype or "geometry"
    return text or "longtext"


_NOTES = re.compile(r"\s+zerofill\b|\s+(character set|charset|collate)\s.*$")  # not part of a column's type


def _oracle(lt: LogicalType, text: str) -> str:
    f = lt.family
    if f == "timestamp" or (f == "timestamp_tz" and lt.time_zone == "local"):
        return f"timestamp({lt.precision})" if lt.precision is not None else "timestamp"
    if f == "timestamp_tz":
        return (f"timestamp({lt.precision})" if lt.precision is not None else "timestamp") + " with time zone"
    pg = _pg(lt, text)
    if pg == "interval":
        return "varchar2(20)"
    if f == "decimal" and (lt.precision or 0) > 38:
        return f"varchar2({lt.precision + 2})"  # NUMBER keeps 38 significant digits: the exact text
    if pg.startswith("numeric"):
        return pg.replace("numeric", "number")
    return {"smallint": "number(5)", "integer": "number(10)", "bigint": "number(19)", "real": "binary_float",
            "double precision": "binary_double", "text": "clob", "bytea": "blob", "jsonb": "clob",
            "boolean": "number(1)", "date": "date"}.get(pg, pg.replace("varchar(", "varchar2("))


def _micro_digits(precision: int) -> int:
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


TYPE_MAPS = {
    "postgres": TypeMap(_pg),
    "duckdb": TypeMap(_duckdb),
    "mysql": TypeMap(_mysql, naive_text_timestamps=True),
    "oracle": TypeMap(_oracle, temporal_objects=True),
}


def target_type(source: Source, dialect: str) -> str:
    """The column type of ``source`` (a Column, its LogicalType or a type text: module doc) in ``dialect``."""
    return TYPE_MAPS[dialect].target_type(*column_of(source))


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
    types = TYPE_MAPS.get(dialect)
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
    if f in ("binary", "spatial"):
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
