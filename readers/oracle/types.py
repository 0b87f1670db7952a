"""Oracle type text, as the reader writes it in schema records (readers/oracle/columns.py, and convert.py's
``iso`` spelling) -> cdc.schema.logical.LogicalType. The one place that reads Oracle's spellings.

- NUMBER(p,s) is a decimal of p digits at scale s; a bare NUMBER any number of digits at any scale
  (precision and scale None); FLOAT (a NUMBER subtype in Oracle) stays single precision as the schema
  record has always treated it.
- DATE holds a date and a time to the second: a wall-clock ``timestamp`` of 0 fraction digits (``iso``
  writes it ``datetime(0)``); TIMESTAMP(n) a wall clock of n digits (default 6); WITH TIME ZONE an instant
  the stream carries in UTC; WITH LOCAL TIME ZONE the session's wall clock of an instant.
- CHAR/NCHAR are padded (``fixed``); an unsized VARCHAR2/NVARCHAR2/NCHAR/RAW (a reader that did not read
  ALL_TAB_COLUMNS' sizes) has no length: the widest of its kind.
- NCHAR/NVARCHAR2/NCLOB are ``subtype="national"``; CLOB/NCLOB/LONG/XMLTYPE and BLOB/BFILE/LONG RAW are
  large objects (``subtype="lob"``; NCLOB is national).
- RAW values travel as SQL_REDO's ``HEXTORAW('..')`` text, BINARY_FLOAT/DOUBLE values as SQL_REDO's number
  text (``stream_form``).
"""

from __future__ import annotations

import re
from dataclasses import replace

from cdc.schema.logical import LogicalType

_TYPE = re.compile(r"^([a-z0-9_ ]+?)\s*(?:\(([^)]*)\))?$")
_TS = re.compile(r"^timestamp\s*(?:\((\d)\))?(?:\s+with (local )?time zone)?$")
_INTERVAL = re.compile(r"^interval\b")
_CLOBS = ("clob", "nclob", "long", "xmltype")
_BLOBS = ("blob", "bfile", "long raw")


def _int(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.lstrip("-").isdigit() else None


def logical_type(type_text: str) -> LogicalType:
    """The logical type of one Oracle column type text (module doc); an unknown name is ``other``."""
    return replace(_read(type_text), dialect="oracle")


def _read(type_text: str) -> LogicalType:
    text = type_text.strip().lower()
    ts = _TS.match(text)
    if ts is not None:
        digits = int(ts.group(1)) if ts.group(1) else 6
        if " with " in text:
            return LogicalType("timestamp_tz", precision=digits, time_zone="local" if ts.group(2) else "utc")
        return LogicalType("timestamp", precision=digits)
    if _INTERVAL.match(text):
        return LogicalType("interval")
    m = _TYPE.match(text)
    base, args = (m.group(1).strip(), m.group(2)) if m else (text, None)
    if base == "number":
        p, _, s = (args or "").replace(" ", "").partition(",")
        if _int(p) is None:
            return LogicalType("decimal")
        return LogicalType("decimal", precision=_int(p), scale=_int(s) or 0)
    if base == "integer":
        return LogicalType("decimal", precision=38, scale=0)
    if base in ("float", "binary_float"):
        return LogicalType("float", stream_form="text" if base == "binary_float" else None)
    if base == "binary_double":
        return LogicalType("double", stream_form="text")
    if base in ("date", "datetime"):  # datetime(n): the ``iso`` spelling of DATE and TIMESTAMP(n)
        return LogicalType("timestamp", precision=0 if base == "date" else (_int(args) if args else 6))
    if base in ("varchar2", "nvarchar2", "char", "nchar", "varchar"):
        return LogicalType("string", length=_int(args), fixed=base in ("char", "nchar"),
                           subtype="national" if base in ("nchar", "nvarchar2") else None)
    if base in _CLOBS:
        return LogicalType("string", subtype="national" if base == "nclob" else "lob")
    if base == "raw":
        return LogicalType("binary", length=_int(args), stream_form="hextoraw")
    if base in _BLOBS:
        return LogicalType("binary", subtype="lob")
    if base == "json":
        return LogicalType("json")
    if base == "vector":
        return LogicalType("vector")
    return LogicalType("other")
