"""DuckDB's column type of a source column's logical type: PostgreSQL's (streaming/targets/postgres/typemap.py)
in DuckDB's names, a 64-bit unsigned integer as ubigint, and a decimal beyond DECIMAL(38) as the stream's exact text.
"""

from __future__ import annotations

import re

from cdc.schema.logical import LogicalType
from streaming.targets.postgres.typemap import postgres_type
from streaming.targets.typemap import TypeMap


def duckdb_type(lt: LogicalType, text: str) -> str:
    if (lt.family == "integer" and lt.length == 64 and lt.unsigned) or (lt.family == "bit" and lt.length == 64):
        return "ubigint"
    pg = re.sub(r"^(timestamptz|timestamp|time)\(\d+\)$", r"\1", postgres_type(lt, text))
    if pg.startswith("numeric"):
        digits = (lt.precision or 0) if lt.family == "decimal" else 0
        if pg == "numeric" or digits > 38:
            return "varchar"  # DuckDB DECIMAL holds 38 digits: the stream's exact text instead
        return pg.replace("numeric", "decimal")
    return {"bytea": "blob", "jsonb": "varchar", "text": "varchar", "double precision": "double"}.get(pg, pg)


TYPE_MAP = TypeMap(duckdb_type)
