"""Source columns -> Arrow types of the lakehouse targets (Delta, Iceberg), by their logical type
(cdc.schema.logical), and value conversion.

Each lake package names its own (``streaming/targets/<kind>/typemap.py`` ``ARROW_TYPE``: its smallest integer);
this module holds the shared reading and the value conversion. One Arrow type per source type, chosen to hold every value of it; both
formats store these (Delta: the Delta type of the same name, Iceberg: its
primitive type):

    source type                      Arrow (Delta / Iceberg)
    tinyint, smallint, year          int16 (Delta short) / int32 (Iceberg has no short)
    mediumint, int; smallint unsigned int32; unsigned: int64
    bigint                           int64; unsigned: decimal(20,0)
    bit(n)                           int64 (n < 64), else decimal(20,0) (the stream has its integer value)
    decimal(p,s), numeric, number    decimal128(p,s) (no precision: decimal(38,10))
    float, real / double             float32 / float64
    bool, boolean                    bool
    date                             date32
    datetime                         timestamp[us] without zone (Delta timestamp_ntz, Iceberg timestamp)
    timestamp (zoned, 'Z' values)    timestamp[us, UTC] (Delta timestamp, Iceberg timestamptz)
    binary, varbinary, blob, raw     binary (the stream's base64 decoded)
    char, varchar, text, json, time, enum, set, anything else   string

TIME stays text: MySQL TIME spans -838:59:59..838:59:59, outside either
format's time of day. Values arrive in their stream form (cdc.stream.events.Change:
DECIMAL and dates as text, binary as base64); ``to_arrow`` casts a column of
them, and a value that does not fit raises ValueError naming the column and
the value.
"""

from __future__ import annotations

import base64
import functools
import importlib
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cdc.schema.logical import LogicalType
from cdc.stream.events import TableSchema
from streaming.targets.typemap import Source, column_of


@functools.cache
def _arrow_types() -> dict[str, Callable[[LogicalType], pa.DataType]]:
    from streaming.targets import arrow_type_specs  # each lake package's typemap.py names its ARROW_TYPE

    return {kind: getattr(importlib.import_module(module), name) for kind, (module, name) in arrow_type_specs().items()}


def arrow_type(source: Source, fmt: str) -> pa.DataType:
    """The Arrow type of a source column (a Column, its LogicalType or a type text: streaming.targets.typemap)
    in the lake format ``fmt`` (a target kind whose package names an ``ARROW_TYPE``), by its logical type."""
    return _arrow_types()[fmt](column_of(source)[0])


def logical_arrow(lt: LogicalType, short: pa.DataType) -> pa.DataType:
    """The Arrow type of a logical type in a format whose smallest integer is ``short`` (the table in the
    module doc)."""
    f = lt.family
    if f == "year" or (f == "integer" and (lt.length == 8 or (lt.length == 16 and not lt.unsigned))):
        return short
    if f == "integer" and (lt.length or 64) <= 32:
        return pa.int64() if lt.unsigned and lt.length != 16 else pa.int32()
    if f == "integer":
        return pa.decimal128(20, 0) if lt.unsigned else pa.int64()
    if f == "bit":  # the stream carries a BIT as its integer value
        return pa.int64() if (lt.length or 1) < 64 else pa.decimal128(20, 0)
    if f == "decimal":
        if lt.precision is not None and lt.precision <= 38:
            return pa.decimal128(lt.precision, lt.scale or 0)
        return pa.decimal128(38, 10)
    if f == "float":
        return pa.float32()
    if f == "double":
        return pa.float64()
    if f == "boolean":
        return pa.bool_()
    if f == "date":
        return pa.date32()
    if f == "timestamp" or (f == "timestamp_tz" and lt.time_zone == "local"):
        return pa.timestamp("us")
    if f == "timestamp_tz":
        return pa.timestamp("us", tz="UTC")
    if f == "binary":
        return pa.binary()
    return pa.string()


def arrow_schema(schema: TableSchema, fmt: str) -> pa.Schema:
    key = set(schema.primary_key)
    return pa.schema([pa.field(c.name, arrow_type(c, fmt), nullable=c.nullable and c.name not in key)
                      for c in schema.columns])


def to_arrow(values: pa.Array, target: pa.DataType, column: str, table: str) -> pa.Array:
    """Cast a column of stream values (any JSON-ready form, or their text) to ``target``.

    Raises ValueError naming table, column and the first value that does not convert."""
    if values.type == target:
        return values
    try:
        if (pa.types.is_binary(target) or pa.types.is_large_binary(target)) \
                and (_is_text(values.type) or pa.types.is_null(values.type)):
            return pa.array([None if v is None else base64.b64decode(v) for v in values.to_pylist()], target)
        if pa.types.is_timestamp(target) and target.tz is None and _is_text(values.type):
            values = pc.replace_substring_regex(values, "Z$", "")  # a DATETIME never has a zone; tolerate one
        if _is_text(target) and not _is_text(values.type):
            if pa.types.is_boolean(values.type) or pa.types.is_integer(values.type) or pa.types.is_floating(values.type):
                return pc.cast(values, target)
            return pa.array([None if v is None else str(v) for v in values.to_pylist()], target)
        return pc.cast(values, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError, TypeError) as exc:
        bad = _first_bad(values, target)
        raise ValueError(f"{table}.{column}: value {bad!r} does not convert to {target}: "
                         f"{str(exc).splitlines()[0]}") from None


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _first_bad(values: pa.Array, target: pa.DataType) -> Any:
    for v in values.to_pylist():
        if v is None:
            continue
        try:
            pc.cast(pa.array([v]), target)
        except Exception:  # noqa: BLE001 - looking for the culprit
            return v
    return None


def rows_to_table(rows: Sequence[dict[str, Any]], schema: pa.Schema, table: str) -> pa.Table:
    """Stream row dicts -> an Arrow table of ``schema`` (columns a row lacks are NULL)."""
    arrays = []
    for f in schema:
        raw = [r.get(f.name) for r in rows]
        try:
            arr = pa.array(raw)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):  # mixed forms (an int and a text): as text
            arr = pa.array([None if v is None else str(v) for v in raw], pa.string())
        arrays.append(to_arrow(arr, f.type, f.name, table))
    return pa.Table.from_arrays(arrays, schema=_nullable(schema))


def _nullable(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_nullable(True) for f in schema])


def json_to_table(images: pa.Array, schema: pa.Schema, table: str, duck: Any, check: bool = True) -> pa.Table:
    """JSON row images (pyarrow strings) -> an Arrow table of ``schema``, through an in-process DuckDB.

    Raises ValueError (``check``) when an image has a column outside ``schema``."""
    import orjson

    names = schema.names
    spec = orjson.dumps({c: "VARCHAR" for c in names}).decode().replace("'", "''")
    fields = ", ".join('s."' + c.replace('"', '""') + '"' for c in names)
    quoted = ", ".join("'" + c.replace("'", "''") + "'" for c in names)
    extra = f", NOT list_has_all([{quoted}]::VARCHAR[], json_keys(j)) AS _extra" if check else ""
    src = pa.table({"j": images})  # noqa: F841 - DuckDB reads it by name
    out = duck.sql(f"SELECT {fields}{extra} FROM (SELECT j, json_transform(j, '{spec}') AS s FROM src)").to_arrow_table()
    if check and len(out) and pc.any(out.column("_extra")).as_py():
        raise ValueError(f"a row image of {table} has columns outside {names}")
    arrays = []
    for i, f in enumerate(schema):
        col = out.column(i).combine_chunks()
        if pa.types.is_boolean(f.type):  # JSON true/false and 0/1 both arrive as text
            col = pc.if_else(pc.is_in(col, pa.array(["true", "1"])), True,
                             pc.if_else(pc.is_null(col), pa.scalar(None, pa.bool_()), False))
        arrays.append(to_arrow(col, f.type, f.name, table))
    return pa.Table.from_arrays(arrays, schema=_nullable(schema))
