"""PostgreSQL's column type of a source column's logical type (cdc.schema.logical; the shared conversions are in
streaming/targets/typemap.py). Unsigned integers widen to the next type, a 64-bit unsigned one to numeric(20,0);
MySQL TIME (beyond a time of day) is an interval; binary and spatial values are bytea.
"""

from __future__ import annotations

from cdc.schema.logical import LogicalType
from streaming.targets.typemap import TypeMap, micro_digits


def postgres_type(lt: LogicalType, text: str) -> str:
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
        return f"timestamp({micro_digits(lt.precision)})" if lt.precision is not None else "timestamp"
    if f == "timestamp_tz":  # stream: UTC + 'Z'
        return f"timestamptz({micro_digits(lt.precision)})" if lt.precision is not None else "timestamptz"
    if f == "time":  # MySQL TIME spans -838:59:59.999999 .. 838:59:59.999999
        return "interval"
    if f == "year":
        return "smallint"
    if f == "bit":  # the stream carries BIT(n) as an unsigned integer
        return "bigint" if (lt.length or 1) < 64 else "numeric(20,0)"
    if f in ("binary", "spatial", "vector"):  # a MySQL 9 VECTOR: its stored float32 bytes
        return "bytea"
    if f == "json":
        return "jsonb"
    if f == "boolean":
        return "boolean"
    return "text"


TYPE_MAP = TypeMap(postgres_type)
