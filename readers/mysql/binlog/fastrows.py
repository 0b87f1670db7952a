"""A leaner row decoder for python-mysql-replication's RowsEvent (same results, less work).

The library decodes every column through one long if/elif chain, looking the
column up in the table map again and testing bitmaps bit by bit. Here the
present/NULL bitmaps become integers once per row and the common fixed
types (integers, floats, UTF-8 VARCHAR/CHAR) are read directly; every other
type, and every unusual case (partial JSON updates, missing column names,
ignore_decode_errors), goes to the library's own code, so values are
identical. ``install()`` / ``uninstall()`` switch it on and off for the whole
process; the reader installs it, ``cdc bench mysql`` uninstalls it while it
measures the library's raw loop. ``install()`` also puts the native rows pass
(readers/mysql/binlog/native_rows.py: C, decoding and converting in one step) in front
of it when that module was compiled; ``install(native=False)`` leaves it out.
It also keeps one parsed TABLE_MAP per definition (see "TABLE_MAP cache" below),
so a table's Table object, and the plans cached on it, outlive the transaction.

Two corrections ride along: the library decodes a negative TIME with a
fraction wrong (it complements the seconds but not the fraction: -00:00:01.25
comes out as -1.75 s), so ``install()`` also replaces its TIME2 reader with
:func:`time2_from_bytes`, which reads the value the way the server writes
it; and it returns None (NULL) for an empty SET, which the plan here reads
as the empty set.
"""

from __future__ import annotations

import datetime as dt
import struct
import threading
from collections import OrderedDict
from typing import Any

from pymysqlreplication.constants import BINLOG
from pymysqlreplication.constants import FIELD_TYPE as T
from pymysqlreplication.event import BinLogEvent
from pymysqlreplication.packet import BinLogPacketWrapper
from pymysqlreplication.row_event import RowsEvent, TableMapEvent

from readers.mysql.binlog.vector import VECTOR

_ORIGINAL = RowsEvent._read_column_data
_ORIGINAL_TIME2 = RowsEvent._RowsEvent__read_time2
_ORIGINAL_FETCH = RowsEvent._fetch_rows
_ORIGINAL_TABLE_MAP = TableMapEvent.__init__
_ORIGINAL_JSON = BinLogPacketWrapper.read_binary_json
_UTF8 = {"utf8", "utf-8", "utf8mb4", "utf8mb3"}
_FIXED = {
    T.TINY: (1, struct.Struct("<b"), struct.Struct("<B")),
    T.SHORT: (2, struct.Struct("<h"), struct.Struct("<H")),
    T.LONG: (4, struct.Struct("<i"), struct.Struct("<I")),
    T.LONGLONG: (8, struct.Struct("<q"), struct.Struct("<Q")),
    T.FLOAT: (4, struct.Struct("<f"), struct.Struct("<f")),
    T.DOUBLE: (8, struct.Struct("<d"), struct.Struct("<d")),
}
_STRINGS = (T.VARCHAR, T.STRING)


def _plan(columns: list[Any]) -> tuple | None:
    """Per-column (name, kind, arg) once per table map; None when the fast path does not apply."""
    plan = []
    for c in columns:
        if not c.name:
            return None
        fixed = _FIXED.get(c.type)
        if fixed is not None:
            size, signed, unsigned = fixed
            plan.append((c.name, 1, size, (unsigned if c.unsigned else signed).unpack))
        elif c.type in _STRINGS and (c.character_set_name or "").lower() in _UTF8:
            plan.append((c.name, 2, 2 if c.max_length > 255 else 1, None))
        elif c.type == T.SET and c.set_values:
            plan.append((c.name, 3, c.size, tuple(c.set_values)))
        elif c.type == VECTOR:  # its stored float32 bytes (readers/mysql/binlog/vector.py)
            plan.append((c.name, 4, c.length_size, None))
        else:
            plan.append((c.name, 0, 0, None))
    return tuple(plan)


def _read_column_data(self: Any, cols_bitmap: bytes, row_image_type: Any = None) -> dict[str, Any]:
    if self.event_type == BINLOG.PARTIAL_UPDATE_ROWS_EVENT or self._ignore_decode_errors:
        return _ORIGINAL(self, cols_bitmap, row_image_type)
    columns = self.columns
    table = self.table_map[self.table_id]
    plan = table.__dict__.get("_cdc_plan", False)  # cached on the Table of this TABLE_MAP
    if plan is False:
        plan = table.__dict__["_cdc_plan"] = _plan(columns)
    if plan is None:
        return _ORIGINAL(self, cols_bitmap, row_image_type)
    self.is_partial_json_update = False
    present = int.from_bytes(cols_bitmap, "little")
    null_bytes = self.packet.read((present.bit_count() + 7) // 8)
    nulls = int.from_bytes(null_bytes, "little")
    read = self.packet.read
    slow = self._RowsEvent__read_values_name
    values: dict[str, Any] = {}
    idx = 0
    for i, (name, kind, size, unpack) in enumerate(plan):
        if not (present >> i) & 1:
            values[name] = None  # MINIMAL row image: column absent
            continue
        if (nulls >> idx) & 1:
            values[name] = None
        elif kind == 1:
            values[name] = unpack(read(size))[0]
        elif kind == 2:
            values[name] = read(int.from_bytes(read(size), "little")).decode("utf-8")
        elif kind == 3:  # SET: the library turns the empty set into None, i.e. NULL
            mask = int.from_bytes(read(size), "little")
            values[name] = {label for b, label in enumerate(unpack) if mask >> b & 1}
        elif kind == 4:
            values[name] = read(int.from_bytes(read(size), "little"))
        else:
            c = columns[i]
            values[name] = slow(c, null_bytes, idx, False, cols_bitmap, c.unsigned, i)
        idx += 1
    return values


_FRAC_BYTES = (0, 1, 1, 2, 2, 3, 3)  # by fsp
_FRAC_UNIT_US = (1, 10_000, 100, 1)  # by fraction bytes: hundredths, ten-thousandths, microseconds


def time2_from_bytes(raw: bytes) -> dt.timedelta:
    """A TIME2 value (3 bytes + 0..3 fraction bytes, big-endian) as a timedelta.

    The server stores ``(hms << 8*n | fraction) + offset`` where hms packs hour (10 bits),
    minute (6) and second (6), and a negative value is the two's complement of the WHOLE
    number, fraction included (MariaDB/MySQL my_time_packed_to_binary).
    """
    n = len(raw) - 3
    v = int.from_bytes(raw, "big") - (0x800000 << (8 * n))
    a = -v if v < 0 else v
    hms, frac = a >> (8 * n), a & ((1 << (8 * n)) - 1)
    t = dt.timedelta(hours=(hms >> 12) & 0x3FF, minutes=(hms >> 6) & 0x3F, seconds=hms & 0x3F,
                     microseconds=frac * _FRAC_UNIT_US[n])
    return -t if v < 0 else t


def _read_time2(self: Any, column: Any) -> dt.timedelta:
    return time2_from_bytes(self.packet.read(3 + _FRAC_BYTES[column.fsp or 0]))


# -- TABLE_MAP cache ------------------------------------------------------------------------------------------
# Every transaction starts with a TABLE_MAP of each table it writes; the library parses each into new Column and
# Table objects, and everything cached on the Table (the plans here and in native_rows.py) is rebuilt with them.
# An event whose bytes (table id, names, types, metadata, nullability, optional metadata: the whole definition
# as logged) were seen before gets the Table parsed then: the same object while the definition is unchanged, a
# new one after any DDL that changes what the TABLE_MAP says. Bounded: the least recently seen maps go first.
_TABLE_MAPS: OrderedDict[tuple, dict[str, Any]] = OrderedDict()
_TABLE_MAPS_MAX = 512
_TABLE_MAPS_LOCK = threading.Lock()
_EVENT_KEYS = frozenset({"packet", "table_map", "event_type", "timestamp", "event_size", "_post_header_lengths",
                         "_ctl_connection", "mysql_version", "_ignore_decode_errors", "_verify_checksum",
                         "_is_event_valid", "complete", "dbms"})  # what BinLogEvent.__init__ sets: per event


def _table_map_init(self: Any, from_packet: Any, event_size: int, table_map: dict, ctl_connection: Any,
                    **kwargs: Any) -> None:
    raw = from_packet.packet
    if (kwargs.get("freeze_schema") or kwargs.get("verify_checksum") or kwargs.get("use_column_name_cache")
            or from_packet.read_bytes or from_packet._BinLogPacketWrapper__data_buffer):
        _ORIGINAL_TABLE_MAP(self, from_packet, event_size, table_map, ctl_connection, **kwargs)
        return
    start = raw._position
    BinLogEvent.__init__(self, from_packet, event_size, table_map, ctl_connection, **kwargs)
    key = (raw._data[start:start + event_size], self.dbms, repr([kwargs.get(k) for k in (
        "only_tables", "ignored_tables", "only_schemas", "ignored_schemas", "optional_meta_data")]))
    with _TABLE_MAPS_LOCK:  # several sources may read in threads of one process
        known = _TABLE_MAPS.get(key)
        if known is not None:
            _TABLE_MAPS.move_to_end(key)
    if known is None:
        _ORIGINAL_TABLE_MAP(self, from_packet, event_size, table_map, ctl_connection, **kwargs)
        if self._processed:
            with _TABLE_MAPS_LOCK:
                _TABLE_MAPS[key] = {k: v for k, v in self.__dict__.items() if k not in _EVENT_KEYS}
                if len(_TABLE_MAPS) > _TABLE_MAPS_MAX:
                    _TABLE_MAPS.popitem(last=False)
        return
    self.__dict__.update(known)
    table_map[self.table_id] = self.table_obj
    from_packet.advance(min(event_size, len(raw._data) - start))


def _read_binary_json(self: Any, size: int, is_partial: bool) -> Any:
    """The library's JSON read, but a JSON ``null`` document (and MySQL's empty binary value, which it reads as
    JSON null) is the text ``null``, not None: SQL NULL is the row's null bitmap, never read here."""
    v = _ORIGINAL_JSON(self, size, is_partial)
    return "null" if v is None and not is_partial else v


def install(native: bool = True, table_map_cache: bool = True) -> None:
    """The lean decoder and the TIME2 correction; with ``native`` (and the C module compiled) the native rows
    pass first for every rows event (readers/mysql/binlog/native_rows.py), this decoder for what it hands back; with
    ``table_map_cache`` one Table per TABLE_MAP definition (see above)."""
    from readers.mysql.binlog import native_rows

    RowsEvent._read_column_data = _read_column_data
    RowsEvent._RowsEvent__read_time2 = _read_time2
    BinLogPacketWrapper.read_binary_json = _read_binary_json
    RowsEvent._fetch_rows = native_rows.fetch_rows if native and native_rows.NATIVE else _ORIGINAL_FETCH
    TableMapEvent.__init__ = _table_map_init if table_map_cache else _ORIGINAL_TABLE_MAP


def uninstall() -> None:
    """The library exactly as shipped."""
    RowsEvent._read_column_data = _ORIGINAL
    RowsEvent._RowsEvent__read_time2 = _ORIGINAL_TIME2
    BinLogPacketWrapper.read_binary_json = _ORIGINAL_JSON
    RowsEvent._fetch_rows = _ORIGINAL_FETCH
    TableMapEvent.__init__ = _ORIGINAL_TABLE_MAP


def native_installed() -> bool:
    """True when rows events are decoded by the native pass (install(native=True) with the C module compiled)."""
    from readers.mysql.binlog import native_rows

    return RowsEvent._fetch_rows is native_rows.fetch_rows
