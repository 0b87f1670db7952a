"""The fingerprint family of a database's type text by the spellings databases share (cdc.compare.fingerprint
renders each family). A spelling of one database (MySQL's TINYTEXT, Oracle's VARCHAR2) is its compare dialect's
(``own_types``, cdc/compare/dialects/), read before these."""

from __future__ import annotations

import re

from cdc.compare.columns import Family

_INT = re.compile(r"^(tiny|small|medium|big)?int(eger)?\b|^(int[248]|hugeint|ubigint|uinteger|usmallint|utinyint|"
                  r"uhugeint|serial|bigserial|smallserial|year)\b")
_PREC = re.compile(r"\((\d+)(?:\s*,\s*(\d+))?\)")


def common_family(t: str, scale: int | None, plain_timestamp: Family) -> tuple[Family, int | None] | None:
    """(family, scale) of the lower-cased type text ``t`` by the spellings all databases share; None
    when they do not name it (the dialect then may: cdc.compare.dialects). ``plain_timestamp``: the
    family of a bare ``timestamp`` (MySQL: an instant stored in UTC, 'timestamptz'; PostgreSQL/DuckDB:
    wall-clock time, 'datetime')."""
    m = _PREC.search(t)
    if t in ("boolean", "bool"):
        return "bool", None
    if _INT.match(t):
        return "int", None
    if t.startswith(("decimal", "numeric", "number", "dec(", "fixed")):
        if scale is None and m and m.group(2) is not None:
            scale = int(m.group(2))
        return "decimal", scale
    if t.startswith(("float", "real")):
        return "float", 6  # single precision: compared at 6 significant digits (fingerprint)
    if t.startswith("double"):
        return "float", 15
    if t.startswith(("char", "character", "text", "nvarchar", "string", "enum", "set", "bpchar", "name")):
        return "string", None
    if t.startswith(("binary", "blob", "bytea", "raw", "bytes")):
        return "binary", None
    if t == "date":
        return "date", None
    if t.startswith(("timestamp with time zone", "timestamptz", "timestamp(")) and "with time zone" in t \
            or t in ("timestamptz", "timestamp with time zone"):
        return "timestamptz", _frac(m, scale)
    if t.startswith("timestamp") and not t.startswith("timestamp without"):
        return plain_timestamp, _frac(m, scale)
    if t.startswith(("datetime", "timestamp without", "timestamp_ns", "timestamp_ms", "timestamp_s")):
        return "datetime", _frac(m, scale)
    if t.startswith(("time", "interval")):
        return "time", _frac(m, scale)
    return None


def _frac(m: re.Match | None, scale: int | None) -> int | None:
    if scale is not None:
        return scale
    return int(m.group(1)) if m else 0
