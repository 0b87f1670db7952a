"""Read a table back from a target as stream values, and check them one by one against the source.

A target's DB-API value goes through cdc.schema.values.stream_value with the SOURCE column's kind, the same
conversion the readers use, so a value equals the source's stream value exactly when the target
holds the source's value. Two documented representational rules apply: FLOAT is compared as the
float32 it is (a PostgreSQL ``real`` reads back as the shortest decimal of that float32), and
CHAR(n) without its trailing pad spaces (PostgreSQL ``char(n)`` pads on output; MySQL strips).
"""

from __future__ import annotations

import json
import struct
from typing import Any

from cdc.compare.shapes import classify
from cdc.schema.values import select_expr, stream_value, value_kind


def kinds(schema) -> dict[str, str]:
    """Stream-value kinds of the source columns (cdc.schema.values.value_kind)."""
    return {c.name: value_kind(c.type, classify(c.type, None, "mysql")[0], "mysql") for c in schema.columns}


def comparable(v: Any, kind: str, source_type: str, raw: bool = True) -> Any:
    """``v`` as a stream value (``raw``: a target's DB-API value, else already one) for comparison.

    MySQL JSON (kind ``json``) as the parsed document: a PostgreSQL ``jsonb`` reads back parsed, and each
    target prints its own key order and spacing."""
    if kind == "json":
        return json.loads(v) if isinstance(v, (str, bytes)) else v
    if raw:
        v = stream_value(v, kind)
    if v is None:
        return None
    if kind == "float32":
        return struct.unpack("<f", struct.pack("<f", v))[0]
    if source_type.lower().startswith("char(") and isinstance(v, str):
        return v.rstrip(" ")
    return v


def mismatches(want: dict[Any, dict], got: dict[Any, dict], schema, where: str, raw: bool = True) -> list[str]:
    """Every (row, column) whose target value differs from the source's stream value, named.

    ``raw``: ``got`` holds DB-API values of a database; False: stream values already (Parquet)."""
    k, types = kinds(schema), {c.name: c.type for c in schema.columns}
    out = []
    if sorted(want) != sorted(got):
        out.append(f"{where}: keys {sorted(got)} != source keys {sorted(want)}")
    for key in sorted(set(want) & set(got)):
        for col, wv in want[key].items():
            a = comparable(wv, k[col], types[col], raw=False)
            b = comparable(got[key].get(col), k[col], types[col], raw=raw)
            if a != b:
                out.append(f"{where} id={key} {col} ({types[col]}): target {b!r} != source {a!r}")
    return out


def read_target(target, schema, table: str = "types") -> dict[Any, dict]:
    """{id: row} of an open SQL target (a streaming.targets Target), every source column."""
    cols = [c.name for c in schema.columns]

    def sel(c) -> str:
        q = target.quote(c.name)
        if target.dialect == "mysql" and c.type.startswith("float"):
            return select_expr(q, "float32")  # the column's own text has 6 digits
        if target.dialect == "duckdb" and target.column_type(c.type).startswith("timestamptz"):
            return f"timezone('UTC', {q})"  # DuckDB hands TIMESTAMPTZ to Python only through pytz
        if target.dialect == "postgres" and c.type.lower() == "json":
            return f"{q}::text"  # as the other targets hand it: psycopg would parse a jsonb string to a bare str
        return q

    cur = target.execute(f"SELECT {', '.join(sel(c) for c in schema.columns)} FROM {target.qualified(table)}")
    rows = cur.fetchall()
    target.commit()
    return {r[0]: dict(zip(cols, r)) for r in rows}
