"""The rows of a MySQL/MariaDB rows event decoded natively, straight to the values the stream carries.

The Python path turns a rows event into records in two steps: the binlog library
(with readers/mysql/binlog/fastrows.py) decodes each value into a Python object (Decimal,
datetime, timedelta, set, bit string, ...), then readers/mysql/binlog/decode.py's
RowConverter turns that into the stream's value (cdc/schema/values.py: text, base64, ...).
The C module ``_rows_native`` (readers/mysql/binlog/_rows_native.c, compiled when the
package is installed) does both in one pass over the event's bytes and hands back
row images of type :class:`~readers.mysql.binlog.decode.ConvertedRow`, which RowConverter
passes through untouched. The published records are byte for byte the same
(tests/unit/readers/mysql/binlog/test_native_rows.py holds it to that over generated schemas
and values; tests/integration/test_mysql_native_rows.py on a real MariaDB).

Where the two could differ, the Python path decides, for the whole event:

* a table whose TABLE_MAP the plan here does not cover (a column without a name,
  a type code the library itself cannot decode, an ENUM/SET without its labels,
  a fractional precision outside 0..6) -- decided once per TABLE_MAP;
* a PARTIAL_UPDATE_ROWS event (MySQL partial JSON), ``ignore_decode_errors``, or
  an event whose byte count does not match the table's columns;
* a value outside its type's valid range (an impossible date, a DECIMAL digit
  group above 999,999,999, a negative fraction), a text that does not decode in
  its character set, a JSON document the library cannot read, a truncated row: the
  C pass returns None and the library decodes the event as it always did (and
  raises what it always raised, which the reader turns into a DecodeError).

A shaped table (cdc/transforms) whose mapper has a ``native`` plan (column selection and the masks hash,
truncate, keep_last, replace, null) is shaped in C too: :func:`shaped_rows` runs the C pass's ``shape`` over the
decoded rows of a rows event, one call per event (or, on the reader's own stream, the C pass shapes them while
it decodes them: ``decode_masks``, readers/mysql/binlog/fastevents.py ``FastStream.shapes``), giving
:class:`ShapedRow` images that hold exactly what the
mapper's ``row()`` gives (tests/unit/readers/mysql/binlog/test_native_masks.py), HMAC-SHA256 by the C pass's own
SHA-256 (readers/mysql/binlog/_sha256.h). A mapper with a filter, a computed or an encrypted column, an image
that is not the C pass's, or a value with no mask text: None, and the mapper shapes in Python. A ShapedRow is
never shaped again; a clear image is never taken for one.

Without the compiled module (no C compiler where the package was installed)
:data:`NATIVE` is False and every event takes the Python path. ``fastrows.install()``
installs :func:`fetch_rows` as the library's ``RowsEvent._fetch_rows``; the rows it
returns have no ``none_sources`` entry (the reader never reads it).
"""

from __future__ import annotations

import codecs
from typing import Any

from pymysqlreplication.constants import BINLOG
from pymysqlreplication.constants import FIELD_TYPE as T
from pymysqlreplication.json_binary import parse_json
from pymysqlreplication.row_event import RowsEvent

from cdc.schema.values import json_text, text_or_base64
from readers.mysql.binlog.decode import ConvertedRow
from readers.mysql.binlog.vector import VECTOR

try:
    from readers.mysql.binlog import _rows_native  # type: ignore[attr-defined]
except ImportError:  # not compiled here: the Python path for every event
    _rows_native = None

NATIVE = _rows_native is not None
_KEYS = {
    BINLOG.WRITE_ROWS_EVENT_V1: ("values",), BINLOG.WRITE_ROWS_EVENT_V2: ("values",),
    BINLOG.DELETE_ROWS_EVENT_V1: ("values",), BINLOG.DELETE_ROWS_EVENT_V2: ("values",),
    BINLOG.UPDATE_ROWS_EVENT_V1: ("before_values", "after_values"),
    BINLOG.UPDATE_ROWS_EVENT_V2: ("before_values", "after_values"),
}
_WIDTH = {T.TINY: 1, T.SHORT: 2, T.INT24: 3, T.LONG: 4, T.LONGLONG: 8}
_ORIGINAL = RowsEvent._fetch_rows  # the library's own, taken before fastrows.install() replaces it


def _k(name: str) -> int:
    return getattr(_rows_native, name) if _rows_native is not None else 0


def _json_document(raw: bytes) -> str:
    """A MySQL binary JSON value as the reader publishes it: the library's parse, then cdc.schema.values.json_text
    (a JSON ``null`` document parses to None: it is the text ``null``, as the snapshot and compare read it; SQL
    NULL never reaches here, the null bitmap says it)."""
    if not raw:  # MySQL reads an empty binary value as the JSON null literal
        return "null"
    doc = parse_json(raw[0], raw[1:])
    return "null" if doc is None else json_text(doc)


def _text(c: Any, lenbytes: int) -> tuple:
    """A character/binary column: the library decodes it in its character set (bytes when Python has no
    codec for it); RowConverter pads BINARY(n) and writes bytes as base64."""
    name = c.character_set_name
    if name is None:
        codec: str | None = "utf-8"  # the library's default: bytes.decode()
    else:
        try:
            codec = codecs.lookup(RowsEvent.charset_to_encoding(name)).name
        except LookupError:
            codec = None  # the library keeps the bytes
    if c.type == T.STRING and name is not None and name.lower() == "binary" and codec is None:
        return (c.name, _k("K_BINARY"), lenbytes, c.max_length, None)
    if codec is None:
        return (c.name, _k("K_B64"), lenbytes, 0, None)
    if codec == "utf-8":
        return (c.name, _k("K_UTF8"), lenbytes, 0, None)
    return (c.name, _k("K_CODEC"), lenbytes, 0, codec)


def _column(c: Any) -> tuple | None:
    """One column's (name, kind, a, b, obj) for the C pass; None when the Python path must decode it."""
    t = c.type
    if t in _WIDTH:
        return (c.name, _k("K_UINT") if c.unsigned else _k("K_INT"), _WIDTH[t], 0, None)
    if t in (T.FLOAT, T.DOUBLE):
        return (c.name, _k("K_FLOAT") if t == T.FLOAT else _k("K_DOUBLE"), 0, 0, None)
    if t == T.YEAR:
        return (c.name, _k("K_YEAR"), 0, 0, None)
    if t == T.NEWDECIMAL:
        if not 0 < c.precision <= 65 or not 0 <= c.decimals <= min(30, c.precision):
            return None
        return (c.name, _k("K_DECIMAL"), c.precision, c.decimals, None)
    if t in (T.DATE, T.DATETIME, T.TIMESTAMP, T.TIME):
        kind = {T.DATE: "K_DATE", T.DATETIME: "K_DATETIME", T.TIMESTAMP: "K_TIMESTAMP", T.TIME: "K_TIME"}[t]
        return (c.name, _k(kind), 0, 0, None)
    if t in (T.DATETIME2, T.TIMESTAMP2, T.TIME2):
        fsp = getattr(c, "fsp", None) or 0
        if fsp not in range(7):
            return None
        kind = {T.DATETIME2: "K_DATETIME2", T.TIMESTAMP2: "K_TIMESTAMP2", T.TIME2: "K_TIME2"}[t]
        return (c.name, _k(kind), fsp, 0, None)
    if t in (T.VARCHAR, T.STRING):
        return _text(c, 2 if c.max_length > 255 else 1)
    if t == T.BLOB:
        return _text(c, c.length_size)
    if t in (T.GEOMETRY, VECTOR):  # VECTOR: its stored float32 bytes (readers/mysql/binlog/vector.py)
        return (c.name, _k("K_B64"), c.length_size, 0, None)
    if t == T.JSON:
        return (c.name, _k("K_CALL"), c.length_size, 0, _json_document)
    if t == T.ENUM:
        if not c.enum_values or c.size not in range(1, 9):
            return None
        try:
            labels = tuple(text_or_base64(v) for v in c.enum_values)
        except TypeError:
            return None
        return (c.name, _k("K_ENUM"), c.size, 0, labels)
    if t == T.SET:
        labels = tuple(c.set_values or ())
        if not labels or len(labels) > 64 or c.size not in range(1, 9) or len(set(labels)) != len(labels) \
                or not all(isinstance(v, str) for v in labels):
            return None
        return (c.name, _k("K_SET"), c.size, 0, labels)
    if t == T.BIT:
        if not 1 <= c.bytes <= 8:
            return None
        end = c.bits if c.bytes == 1 else (c.bits % 8 or 8)
        return (c.name, _k("K_BIT"), c.bytes, end, None)
    return None  # VAR_STRING, NEWDATE, old DECIMAL, ...: the library's own code (which raises for them)


def plan_for(columns: list[Any]) -> tuple | None:
    """The C pass's plan for a TABLE_MAP's columns, or None when a column needs the Python path."""
    if _rows_native is None:
        return None
    plan = []
    for c in columns:
        if not c.name:
            return None
        p = _column(c)
        if p is None:
            return None
        plan.append(p)
    return tuple(plan)


def native_rows(ev: Any) -> list[dict[str, Any]] | None:
    """The rows of rows event ``ev`` decoded by the C pass (the packet advanced past them), or None (untouched)."""
    keys = _KEYS.get(ev.event_type)
    if keys is None or ev._ignore_decode_errors or not ev.complete:
        return None
    table = ev.table_map.get(ev.table_id)
    if table is None:
        return None
    plan = table.__dict__.get("_cdc_native", False)  # once per TABLE_MAP (its Table object)
    if plan is False:
        plan = table.__dict__["_cdc_native"] = plan_for(table.columns)
    if plan is None or len(plan) != ev.number_of_columns:
        return None
    wrapper = ev.packet
    if wrapper._BinLogPacketWrapper__data_buffer:  # bytes pushed back by a decoder: not ours to read around
        return None
    raw = wrapper.packet
    start = raw._position
    end = start + ev.event_size - wrapper.read_bytes
    if end > len(raw._data):
        return None
    bitmaps = (ev.columns_present_bitmap,) if len(keys) == 1 else (ev.columns_present_bitmap,
                                                                    ev.columns_present_bitmap2)
    rows = _rows_native.decode(raw._data, start, end, plan, bitmaps, ConvertedRow, keys)
    if rows is not None:
        wrapper.advance(end - start)
    return rows


class ShapedRow(dict):
    """A row image the C pass shaped with a table's mapper (masked values, no excluded column): the stream's
    values, never shaped again."""

    __slots__ = ()


_OP_KEYS = {"c": ("values",), "d": ("values",), "u": ("before_values", "after_values")}
_ACTIONS = {"keep": "S_KEEP", "drop": "S_DROP", "hash": "S_HASH", "truncate": "S_TRUNCATE",
            "keep_last": "S_KEEP_LAST", "replace": "S_REPLACE", "null": "S_NULL"}


def mask_plan(native: tuple | None) -> tuple | None:
    """The C pass's shape plan of a mapper's ``native`` plan (None: not compiled here, or a mask it lacks)."""
    if _rows_native is None or native is None or not hasattr(_rows_native, "shape"):  # a module built before it
        return None
    plan = []
    for name, what, arg in native:
        if what not in _ACTIONS:
            return None
        if what == "hash":
            arg = _rows_native.hmac_key(bytes(arg))
        elif what == "replace":
            arg = str(arg)
        elif what in ("truncate", "keep_last"):
            arg = int(arg)
        plan.append((name, _k(_ACTIONS[what]), arg))
    return tuple(plan)


def decode_masks(mapper: Any, table: Any) -> tuple | None:
    """The mask plan under which the C pass shapes a table's rows while it decodes them (the ``masks`` of
    ``_rows_native.decode``): ``mapper``'s, when its columns are the TABLE_MAP's, in order; else None."""
    plan = table.__dict__.get("_cdc_native", False)
    if plan is False:
        plan = table.__dict__["_cdc_native"] = plan_for(table.columns)
    masks = mapper.fast.get("mysql_native", False)
    if masks is False:
        masks = mapper.fast["mysql_native"] = mask_plan(mapper.native)
    if plan is None or masks is None or [m[0] for m in masks] != [p[0] for p in plan]:
        return None
    return masks


def shaped_rows(rows: list[dict[str, Any]], op: str, mapper: Any) -> list[dict[str, Any]] | None:
    """The rows of one rows event (op ``c``/``u``/``d``) with every image shaped by ``mapper`` in C (new dicts: the
    clear ``rows`` are left as they were), or None: the mapper shapes them in Python (see the module docstring)."""
    plan = mapper.fast.get("mysql_native", False)  # once per mapper (a table shape)
    if plan is False:
        plan = mapper.fast["mysql_native"] = mask_plan(mapper.native)
    if plan is None:
        return None
    return _rows_native.shape(rows, _OP_KEYS[op], plan, ConvertedRow, ShapedRow)


def fetch_rows(self: Any) -> None:
    """``RowsEvent._fetch_rows`` with the native pass first, the library's own (``_ORIGINAL``) otherwise."""
    rows = native_rows(self)
    if rows is None:
        _ORIGINAL(self)
    else:
        self.is_partial_json_update = False
        self._RowsEvent__rows = rows

