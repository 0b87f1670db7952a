"""Source column types (from SCHEMA records) -> target column types.

Source types are the reader's lower-case type text (``int``, ``bigint
unsigned``, ``varchar(20)``, ``decimal(10,2)``, ``datetime(6)``,
``number(10,0)``, ``varchar2(40)``...). Each target dialect gets a type that
holds every value of the source type (unsigned widened, DECIMAL exact), and
a converter for values whose stream form (see cdc.stream.events.Change) the target
cannot take as is (base64 binary -> bytes, zoned 'Z' text for MySQL).
Unknown types map to text, which holds the stream's JSON-ready value.

Oracle sources (``temporal: iso``, readers/oracle/convert.py) describe DATE as
``datetime(0)``, TIMESTAMP(n) [WITH LOCAL TIME ZONE] as ``datetime(n)`` (wall
clock) and keep ``timestamp(n) with time zone`` (UTC + 'Z'): a timestamp
column, never a date. n = 7..9 becomes 6 digits in PostgreSQL, DuckDB and
MySQL, and a value with digits below the microsecond is refused there
(:func:`micro_timestamp`), never rounded or truncated.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from cdc.schema.evolution import parse_type  # one reading of a source type for the type maps and the schema diff

Converter = Callable[[Any], Any]


def _pg(base: str, args: str | None, unsigned: bool) -> str:
    if base in ("tinyint", "smallint"):
        if base == "tinyint" and args == "1":
            return "smallint"
        return "integer" if unsigned and base == "smallint" else "smallint"
    if base in ("mediumint", "int", "integer"):
        return "bigint" if unsigned else "integer"
    if base == "bigint":
        return "numeric(20,0)" if unsigned else "bigint"
    if base in ("decimal", "numeric", "number"):
        return f"numeric({args})" if args else "numeric"
    if base in ("float", "real", "binary_float"):
        return "real"
    if base in ("double", "double precision", "binary_double"):
        return "double precision"
    if base in ("char", "varchar", "varchar2", "nvarchar2", "nchar", "character varying"):
        return f"varchar({args})" if args and base != "char" else ("text" if not args else f"char({args})")
    if base == "date":
        return "date"
    if base in ("datetime", "timestamp with local time zone"):
        return f"timestamp({_micro_digits(args)})" if args else "timestamp"
    if base == "timestamp with time zone":  # Oracle's zoned type (stream: UTC + 'Z')
        return f"timestamptz({_micro_digits(args)})" if args else "timestamptz"
    if base.startswith("timestamp"):
        return f"timestamptz({args})" if args and base == "timestamp" else "timestamptz"
    if base == "time":  # MySQL TIME spans -838:59:59.999999 .. 838:59:59.999999
        return "interval"
    if base in ("year",):
        return "smallint"
    if base == "bit":  # the stream carries BIT(n) as an unsigned integer
        return "bigint" if _bits(args) < 64 else "numeric(20,0)"
    if base in ("binary", "varbinary", "blob", "tinyblob", "mediumblob", "longblob", "raw") or base in SPATIAL:
        return "bytea"
    if base == "vector":  # MySQL 9 VECTOR(N): its stored bytes (N float32, little-endian), as the stream carries them
        return "bytea"
    if base in ("json",):
        return "jsonb"
    if base in ("bool", "boolean"):
        return "boolean"
    return "text"


def _duckdb(base: str, args: str | None, unsigned: bool) -> str:
    if (base == "bigint" and unsigned) or (base == "bit" and _bits(args) == 64):
        return "ubigint"
    pg = re.sub(r"^(timestamptz|timestamp|time)\(\d+\)$", r"\1", _pg(base, args, unsigned))
    if pg.startswith("numeric"):
        digits = int((args or "0").split(",")[0] or 0) if base in ("decimal", "numeric", "number") else 0
        if pg == "numeric" or digits > 38:
            return "varchar"  # DuckDB DECIMAL holds 38 digits: the stream's exact text instead
        return pg.replace("numeric", "decimal")
    return {"bytea": "blob", "jsonb": "varchar", "text": "varchar", "double precision": "double"}.get(pg, pg)


def _mysql(base: str, args: str | None, unsigned: bool) -> str:
    full = base + (f"({args})" if args else "") + (" unsigned" if unsigned else "")
    if base in ("varchar2", "nvarchar2"):
        return f"varchar({args or 255})"
    if base in ("char", "nchar") and not args:  # Oracle's CHAR/NCHAR (no length in DATA_TYPE); MySQL's is CHAR(1)
        return "varchar(2000)"
    if base == "nchar":  # only Oracle says nchar(n): VARCHAR keeps its blank padding (a MySQL CHAR strips it)
        return f"varchar({args})"
    if base == "number":
        return f"decimal({args})" if args else "decimal(38,10)"
    if base == "clob":
        return "longtext"
    if base == "raw":
        return f"varbinary({args or 2000})"
    if base == "vector":  # MySQL 9 VECTOR(N): its stored bytes (up to 16383 float32) in any MySQL/MariaDB target
        return "blob"
    if base in ("binary_float", "binary_double"):  # not MySQL types ('binary' in the name made them bytes)
        return "float" if base == "binary_float" else "double"
    if base in ("datetime", "timestamp with local time zone", "timestamp with time zone"):
        return f"datetime({_micro_digits(args)})" if args else "datetime"  # zoned: the UTC wall clock
    return full


def _oracle(base: str, args: str | None, unsigned: bool) -> str:
    if base in ("datetime", "timestamp with local time zone", "timestamp with time zone") and args:
        return f"timestamp({args})" + (" with time zone" if base == "timestamp with time zone" else "")
    pg = _pg(base, args, unsigned)
    if pg == "interval":
        return "varchar2(20)"
    if base in ("decimal", "numeric") and int((args or "0").split(",")[0] or 0) > 38:
        return f"varchar2({int(args.split(',')[0]) + 2})"  # NUMBER keeps 38 significant digits: the exact text
    if pg.startswith("time") and not pg.startswith("timestamp"):
        return "varchar2(20)"
    if pg.startswith("numeric"):
        return pg.replace("numeric", "number")
    return {"smallint": "number(5)", "integer": "number(10)", "bigint": "number(19)", "real": "binary_float",
            "double precision": "binary_double", "text": "clob", "bytea": "blob", "jsonb": "clob",
            "boolean": "number(1)", "date": "date", "time": "varchar2(20)"}.get(
        pg, re.sub(r"^timestamptz(\(\d+\))?$", r"timestamp\1 with time zone", pg.replace("varchar(", "varchar2(")))


SPATIAL = ("geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
           "geometrycollection", "geomcollection")


def _micro_digits(args: str) -> str:
    """Fraction digits of a target timestamp: PostgreSQL, DuckDB and MySQL hold microseconds (an
    Oracle TIMESTAMP(7..9) gets 6 and its values are checked by :func:`micro_timestamp`)."""
    return str(min(int(args), 6)) if args.isdigit() else args


def _bits(args: str | None) -> int:
    return int(args) if args and args.isdigit() else 1


@dataclass(frozen=True)
class TypeMap:
    """The types and value conversions of one target database.

    ``binary``: target types that take bytes (binary values travel as base64 text);
    ``naive_text_timestamps``: timestamps are written as 'YYYY-MM-DD HH:MM:SS[.f]' text
    (the stream's 'T' and 'Z' go: MySQL parses nothing else);
    ``temporal_objects``: dates and timestamps are bound as Python date/datetime (Oracle
    parses ISO text only under matching NLS formats; a datetime binds as itself)."""

    target_type: Callable[[str, str | None, bool], str]
    binary: Callable[[str], bool]
    naive_text_timestamps: bool = False
    temporal_objects: bool = False


TYPE_MAPS = {
    "postgres": TypeMap(_pg, lambda tt: tt == "bytea"),
    "duckdb": TypeMap(_duckdb, lambda tt: tt == "blob"),
    "mysql": TypeMap(_mysql, lambda tt: "binary" in tt or tt.endswith("blob") or tt.startswith(SPATIAL),
                     naive_text_timestamps=True),
    "oracle": TypeMap(_oracle, lambda tt: tt == "blob", temporal_objects=True),
}


def target_type(source_type: str, dialect: str) -> str:
    base, args, unsigned = parse_type(source_type)
    return TYPE_MAPS[dialect].target_type(base, args, unsigned)


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


def converter(source_type: str, dialect: str) -> Converter | None:
    """A function turning the stream value into what the target column takes, or None."""
    types = TYPE_MAPS.get(dialect)
    if types is None:  # parquet keeps the stream values as they are
        return None
    base, args, unsigned = parse_type(source_type)
    fn = _converter(source_type, types, base, unsigned, dialect)
    if base in _WALL_OR_ZONED and args and args.isdigit() and int(args) > 6:  # Oracle TIMESTAMP(7..9)
        return micro_timestamp if fn is None else lambda v: fn(micro_timestamp(v))
    return fn


_WALL_OR_ZONED = ("datetime", "timestamp with local time zone", "timestamp with time zone")


def _converter(source_type: str, types: TypeMap, base: str, unsigned: bool, dialect: str) -> Converter | None:
    if base == "bit" or (base == "bigint" and unsigned):
        return _int  # MySQL would take the text of a BIT as its bytes
    tt = target_type(source_type, dialect).lower()
    if types.binary(tt):
        return b64_bytes
    if types.naive_text_timestamps and tt.startswith(("datetime", "timestamp")):
        return _naive_ts
    if types.temporal_objects and tt.startswith(("date", "timestamp")):
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
