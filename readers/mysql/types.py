"""MySQL/MariaDB type text (``COLUMN_TYPE``, or the same spelling built from a table map: readers/mysql/schema.py)
-> cdc.schema.logical.LogicalType. The one place that reads MySQL's spellings; the core reads the logical type.

MySQL's own defaults fill what the text leaves out: DECIMAL is DECIMAL(10,0), CHAR and BINARY hold one
character / byte, BIT one bit. A DATETIME/TIME/TIMESTAMP without digits has ``precision`` None (declared none,
which MySQL stores as 0 digits, but ``datetime`` and ``datetime(0)`` are two spellings a target keeps apart); more
than 6 digits is not a MySQL type (``other``). TEXT and BLOB types are ``subtype="lob"`` with their length. TIMESTAMP is an instant (the
stream carries it in UTC, 'Z'); DATETIME a wall clock. An unknown name is family ``other`` (its values
travel as text), never an error: the reader already decoded the values.
"""

from __future__ import annotations

import re
from dataclasses import replace

from cdc.schema.logical import LogicalType

_TYPE = re.compile(r"^([a-z0-9_ ]+?)\s*(?:\(([^)]*)\))?\s*(unsigned)?\s*(zerofill)?$")
_LABEL = re.compile(r"'((?:[^']|'')*)'")

_INT_BITS = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "integer": 32, "bigint": 64}
_TEXTS = {"tinytext": 255, "text": 65_535, "mediumtext": 16_777_215, "longtext": 4_294_967_295}
_BLOBS = {"tinyblob": 255, "blob": 65_535, "mediumblob": 16_777_215, "longblob": 4_294_967_295}
_SPATIAL = ("geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
            "geometrycollection", "geomcollection")


def _int(args: str | None, default: int | None) -> int | None:
    return int(args) if args and args.strip().isdigit() else default


def logical_type(type_text: str) -> LogicalType:
    """The logical type of one MySQL/MariaDB column type text (lower or upper case; charset notes dropped)."""
    return replace(_read(type_text), dialect="mysql")


def _fsp(args: str | None) -> int | None:
    return _int(args, None)


def _read(type_text: str) -> LogicalType:
    text = type_text.strip().lower().split(" character set")[0].split(" collate")[0]
    m = _TYPE.match(text)
    if m is None:
        base, args, unsigned = text, None, False
        if text.startswith(("enum(", "set(")):  # labels may hold ')' or blanks
            base, _, rest = text.partition("(")
            args = rest.removesuffix(")")
    else:
        base, args, unsigned = m.group(1).strip(), m.group(2), bool(m.group(3))
    if base in _INT_BITS:
        return LogicalType("integer", length=_INT_BITS[base], unsigned=unsigned)
    if base in ("decimal", "numeric", "dec", "fixed"):
        p, _, s = (args or "").replace(" ", "").partition(",")
        return LogicalType("decimal", precision=_int(p, 10), scale=_int(s, 0), unsigned=unsigned)
    if base in ("float", "real"):
        return LogicalType("float", unsigned=unsigned)
    if base in ("double", "double precision"):
        return LogicalType("double", unsigned=unsigned)
    if base in ("bool", "boolean"):
        return LogicalType("boolean")
    if base in ("char", "varchar"):
        return LogicalType("string", length=_int(args, 1 if base == "char" else None), fixed=base == "char")
    if base in _TEXTS:
        return LogicalType("string", length=_TEXTS[base], subtype="lob")
    if base in ("binary", "varbinary"):
        return LogicalType("binary", length=_int(args, 1 if base == "binary" else None), fixed=base == "binary")
    if base in _BLOBS:
        return LogicalType("binary", length=_BLOBS[base], subtype="lob")
    if base == "date":
        return LogicalType("date")
    if base in ("datetime", "timestamp", "time"):
        fsp = _fsp(args)
        if fsp is not None and fsp > 6:  # MySQL holds microseconds: not a MySQL type
            return LogicalType("other")
        if base == "timestamp":
            return LogicalType("timestamp_tz", precision=fsp, time_zone="utc")
        return LogicalType("timestamp" if base == "datetime" else "time", precision=fsp)
    if base == "year":
        return LogicalType("year")
    if base == "bit":
        return LogicalType("bit", length=_int(args, 1))
    if base == "json":
        return LogicalType("json")
    if base in ("enum", "set"):
        return LogicalType(base, values=tuple(v.replace("''", "'") for v in _LABEL.findall(args or "")))
    if base in _SPATIAL:
        return LogicalType("spatial", subtype=base)
    if base == "vector":
        return LogicalType("vector", length=_int(args, None))
    return LogicalType("other")
