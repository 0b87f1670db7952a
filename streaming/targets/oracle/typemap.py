"""Oracle's column type of a source column's logical type: PostgreSQL's (streaming/targets/postgres/typemap.py) in
Oracle's names, timestamps with their declared digits (Oracle holds 9), a decimal beyond NUMBER's 38 digits as its
exact text. Dates and timestamps are bound as Python objects.
"""

from __future__ import annotations

from cdc.schema.logical import LogicalType
from streaming.targets.postgres.typemap import postgres_type
from streaming.targets.typemap import TypeMap


def oracle_type(lt: LogicalType, text: str) -> str:
    f = lt.family
    if f == "timestamp" or (f == "timestamp_tz" and lt.time_zone == "local"):
        return f"timestamp({lt.precision})" if lt.precision is not None else "timestamp"
    if f == "timestamp_tz":
        return (f"timestamp({lt.precision})" if lt.precision is not None else "timestamp") + " with time zone"
    pg = postgres_type(lt, text)
    if pg == "interval":
        return "varchar2(20)"
    if f == "decimal" and (lt.precision or 0) > 38:
        return f"varchar2({lt.precision + 2})"  # NUMBER keeps 38 significant digits: the exact text
    if pg.startswith("numeric"):
        return pg.replace("numeric", "number")
    return {"smallint": "number(5)", "integer": "number(10)", "bigint": "number(19)", "real": "binary_float",
            "double precision": "binary_double", "text": "clob", "bytea": "blob", "jsonb": "clob",
            "boolean": "number(1)", "date": "date"}.get(pg, pg.replace("varchar(", "varchar2("))


TYPE_MAP = TypeMap(oracle_type, temporal_objects=True)
