"""The few events every transaction carries, read from the packet bytes without the library's event objects.

A small OLTP transaction is four or five binlog events: its GTID (MySQL: then a QUERY ``BEGIN``), one TABLE_MAP
per table, the rows events, and the XID that commits it. python-mysql-replication builds a packet wrapper and an
event object for each (with its control connection asked for the server kind every time); for a transaction of a
few rows that is most of the reader's work. :class:`FastStream` (the library's ``BinLogStreamReader``) reads
each packet first and decodes these kinds itself (:func:`decode`) into small objects with the fields the reader
uses; every other event goes to the library unchanged, as the same packet:

* MariaDB GTID (``0xA2``): sequence number, domain, flags; the GTID ``domain-server_id-seq``. A GTID event of an
  XA transaction (flags ``FL_PREPARED_XA``/``FL_COMPLETED_XA``) goes to the library, whose event the reader refuses
  or passes as before.
* MySQL GTID (``0x21``): the GTID ``uuid:gno`` as the library prints it. Tagged (``0x2A``) and anonymous (``0x22``)
  GTIDs go to the library.
* MySQL QUERY (``0x02``) whose statement is exactly ``BEGIN``: the thread id. Any other statement, and any query
  event whose post-header is not the 13 bytes this layout reads, goes to the library.
* XID (``0x10``): the commit, with its timestamp and position.
* TABLE_MAP (``0x13``) whose bytes (body without header and checksum: table id, names, types, metadata,
  nullability, optional metadata) were parsed by the library before on this stream: the library's Table for them
  is put back in the stream's table map, as the library does for every TABLE_MAP. A definition changed by DDL
  has other bytes and goes to the library, which parses it and fills the cache. Only while readers/mysql/binlog/fastrows.py
  keeps its own TABLE_MAP cache (``install(table_map_cache=False)`` turns both off).
* WRITE/UPDATE/DELETE rows events (v1 ``0x17``-``0x19``, v2 ``0x1E``-``0x20`` with no extra data) of a table
  in the stream's table map whose columns the native rows pass plans (readers/mysql/binlog/native_rows.py):
  decoded by that C pass straight from the packet into the library's own event class (:func:`fast_rows`,
  with the fields the reader reads), without the library's packet wrapper and event constructor. Only
  while the native pass is installed (``fastrows.install(native=True)``), on a stream without table or
  schema filters; the C pass refusing any value, a rows event whose post-header length is not the one this
  layout reads, a column count that does not fit one byte or differs from the table's, or bytes that do not
  add up: the library's path, as before.

The C step readers/mysql/binlog/_events_native.c makes :meth:`FastStream.decoded`'s decisions first, condition for
condition, and builds the same objects; where it declines (None), ``decoded`` decides (and where that is None, the
library): tests/unit/readers/mysql/binlog/test_events_native.py holds the two together equal to ``decoded`` alone.

Fail closed: a packet that is not an OK binlog packet, shorter than its kind needs, or of any kind or flag
not named above goes to the library (and from there to the reader's rule for events it does not decode,
readers/mysql/binlog/binlog_events.py). Nothing is dropped here. A stream with an end position or start timestamp,
or not connected yet, is the library's alone.
"""

from __future__ import annotations

from typing import Any

from pymysql.connections import MysqlPacket
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import DeleteRowsEvent, RowsEvent, TableMapEvent, UpdateRowsEvent, WriteRowsEvent

from readers.mysql.binlog import fastrows, native_rows
from readers.mysql.binlog.decode import ConvertedRow
from readers.mysql.binlog.inflate import INFLATED

QUERY_EVENT, XID_EVENT, TABLE_MAP_EVENT, GTID_LOG_EVENT, MARIADB_GTID_EVENT = 0x02, 0x10, 0x13, 0x21, 0xA2
_MARIADB_XA = 0x40 | 0x80  # FL_PREPARED_XA, FL_COMPLETED_XA
_DECODED = frozenset({QUERY_EVENT, XID_EVENT, GTID_LOG_EVENT, MARIADB_GTID_EVENT})  # what decode() may decode
_TABLE_MAPS_MAX = 1024  # cached definitions per stream; cleared whole beyond that
_CACHED = fastrows._table_map_init  # the TABLE_MAP fast path runs while fastrows' TABLE_MAP cache is installed
# rows event code -> (the library's class, post-header length, row image keys)
_ROWS = {0x17: (WriteRowsEvent, 8, ("values",)), 0x18: (UpdateRowsEvent, 8, ("before_values", "after_values")),
         0x19: (DeleteRowsEvent, 8, ("values",)), 0x1E: (WriteRowsEvent, 10, ("values",)),
         0x1F: (UpdateRowsEvent, 10, ("before_values", "after_values")), 0x20: (DeleteRowsEvent, 10, ("values",))}


class FastPacket:
    """What the reader reads of a rows event's packet: its binlog position and the server that logged it."""

    __slots__ = ("log_pos", "server_id")

    def __init__(self, log_pos: int, server_id: int) -> None:
        self.log_pos, self.server_id = log_pos, server_id


def fast_rows(data: Any, checksum: bool, table_map: dict[int, Any], post_header_lengths: Any,
              shapes: dict[int, tuple[Any, tuple]] | None = None) -> Any:
    """The rows event in binlog packet ``data`` as the library's event object with its rows decoded by the
    native pass, or None when it is not one the module docstring names (nothing read, nothing changed).
    ``shapes``: table id -> (its Table, the mask plan the reader registered for it, native_rows.decode_masks):
    the rows of that very Table come shaped (ShapedRow images)."""
    spec = _ROWS.get(data[5])
    if spec is None:
        return None
    cls, post_header, keys = spec
    code = data[5]
    if post_header_lengths and len(post_header_lengths) >= code and post_header_lengths[code - 1] != post_header:
        return None
    n = len(data)
    end = n - 4 if checksum else n
    p = 20 + post_header
    if n < 20 or data[0] != 0 or int.from_bytes(data[10:14], "little") != n - 1 or p >= end:
        return None
    if post_header == 10 and data[28:30] != b"\x02\x00":  # v2 extra data: only its own length, no more
        return None
    table_id = int.from_bytes(data[20:26], "little")
    table = table_map.get(table_id)
    columns = data[p]
    if table is None or columns >= 251:
        return None
    plan = table.__dict__.get("_cdc_native", False)  # the plan native_rows keeps on the Table, once per TABLE_MAP
    if plan is False:
        plan = table.__dict__["_cdc_native"] = native_rows.plan_for(table.columns)
    if plan is None or len(plan) != columns:
        return None
    width = (columns + 7) // 8
    p += 1
    bitmap = bytes(data[p:p + width])
    bitmaps: tuple = (bitmap,)
    p += width
    if len(keys) == 2:
        bitmaps = (bitmap, bytes(data[p:p + width]))
        p += width
    if p > end:
        return None
    shape = shapes.get(table_id) if shapes else None
    if shape is not None and shape[0] is table:
        rows = native_rows._rows_native.decode(data, p, end, plan, bitmaps, native_rows.ShapedRow, keys, shape[1])
    else:
        rows = native_rows._rows_native.decode(data, p, end, plan, bitmaps, ConvertedRow, keys)
    if rows is None:
        return None
    ev = cls.__new__(cls)  # the library's class (the reader's isinstance tests), not its constructor
    ev.event_type, ev.timestamp, ev.event_size = code, int.from_bytes(data[1:5], "little"), end - 20
    ev.packet = FastPacket(int.from_bytes(data[14:18], "little"), int.from_bytes(data[6:10], "little"))
    ev.table_map, ev.table_id, ev.schema, ev.table = table_map, table_id, table.schema, table.table
    ev.columns, ev.number_of_columns, ev.flags = table.columns, columns, int.from_bytes(data[26:28], "little")
    ev.columns_present_bitmap = bitmaps[0]
    if len(bitmaps) == 2:
        ev.columns_present_bitmap2 = bitmaps[1]
    ev.complete, ev._processed, ev.is_partial_json_update = True, True, False
    ev._RowsEvent__rows = rows
    return ev


class FastGtid:
    """A transaction's GTID. ``flags``: MariaDB's GTID flags; 1 for MySQL (the library's GtidEvent has none,
    the reader reads 1 for it)."""

    __slots__ = ("flags", "gtid", "log_pos", "timestamp")

    def __init__(self, gtid: str, timestamp: int, flags: int, log_pos: int) -> None:
        self.gtid, self.timestamp, self.flags, self.log_pos = gtid, timestamp, flags, log_pos


class FastXid:
    """The XID event that commits a transaction."""

    __slots__ = ("log_pos", "timestamp")

    def __init__(self, timestamp: int, log_pos: int) -> None:
        self.timestamp, self.log_pos = timestamp, log_pos


class FastBegin:
    """A QUERY event ``BEGIN`` (MySQL): the thread that ran the transaction."""

    __slots__ = ("log_pos", "thread", "timestamp")

    def __init__(self, thread: int, timestamp: int, log_pos: int) -> None:
        self.thread, self.timestamp, self.log_pos = thread, timestamp, log_pos


class FastTableMap:
    """A TABLE_MAP seen before on this stream: its table id and NULL-ability bitmap (the Table is in the
    stream's table map)."""

    __slots__ = ("log_pos", "null_bitmask", "table_id")

    def __init__(self, table_id: int, null_bitmask: Any, log_pos: int) -> None:
        self.table_id, self.null_bitmask, self.log_pos = table_id, null_bitmask, log_pos


def _uuid(sid: bytes) -> str:
    h = sid.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def decode(data: bytes, mariadb: bool, checksum: bool, query_post_header: int) -> FastGtid | FastXid | FastBegin | None:
    """The GTID, XID or BEGIN event in binlog packet ``data`` (the OK byte, the 19-byte header, the body, the
    CRC32 when ``checksum``), or None when it is none of those as described in the module docstring.
    ``query_post_header``: the QUERY post-header length the format description declared (13 when it declared
    none)."""
    n = len(data)
    if n < 20 or data[0] != 0:
        return None
    code = data[5]
    end = n - 4 if checksum else n  # the body ends before the CRC32
    if int.from_bytes(data[10:14], "little") != n - 1:  # event_size: the packet holds exactly one event
        return None
    if code == XID_EVENT:
        if end - 20 != 8:
            return None
        return FastXid(int.from_bytes(data[1:5], "little"), int.from_bytes(data[14:18], "little"))
    if code == MARIADB_GTID_EVENT:
        if not mariadb or end - 20 < 13 or data[32] & _MARIADB_XA:
            return None
        seq = int.from_bytes(data[20:28], "little")
        domain = int.from_bytes(data[28:32], "little")
        server_id = int.from_bytes(data[6:10], "little")
        return FastGtid(f"{domain}-{server_id}-{seq}", int.from_bytes(data[1:5], "little"), data[32],
                        int.from_bytes(data[14:18], "little"))
    if code == GTID_LOG_EVENT:
        if mariadb or end - 20 < 42:  # flags, uuid, gno, logical clock: what the library reads for 5.7+
            return None
        return FastGtid(f"{_uuid(data[21:37])}:{int.from_bytes(data[37:45], 'little')}",
                        int.from_bytes(data[1:5], "little"), 1, int.from_bytes(data[14:18], "little"))
    if code == QUERY_EVENT:
        if mariadb or query_post_header != 13 or end - 20 < 13 + 6:
            return None
        schema_len = data[28]
        status_len = int.from_bytes(data[31:33], "little")
        if data[29:31] != b"\x00\x00":  # error code: not a plain BEGIN
            return None
        q = 33 + status_len + schema_len
        if q >= end or data[q] != 0 or data[q + 1:end] != b"BEGIN":
            return None
        return FastBegin(int.from_bytes(data[20:24], "little"), int.from_bytes(data[1:5], "little"),
                         int.from_bytes(data[14:18], "little"))
    return None


def _load_native() -> Any:
    """readers/mysql/binlog/_events_native.c set up with this module's classes; None when it is not built (or the
    native rows pass is not): fetchone then decodes in Python alone."""
    try:
        from readers.mysql.binlog import _events_native  # type: ignore[attr-defined]
    except ImportError:
        return None
    if native_rows._rows_native is None:
        return None
    _events_native.setup({"FastGtid": FastGtid, "FastXid": FastXid, "FastBegin": FastBegin,
                          "FastTableMap": FastTableMap, "FastPacket": FastPacket, "rows": _ROWS,
                          "decode": native_rows._rows_native.decode, "ConvertedRow": ConvertedRow,
                          "ShapedRow": native_rows.ShapedRow, "RowsEvent": RowsEvent,
                          "fetch_rows": native_rows.fetch_rows, "TableMapEvent": TableMapEvent, "cached_init": _CACHED,
                          "inflated": INFLATED})
    return _events_native


_native = _load_native()


class FastStream(BinLogStreamReader):
    """``BinLogStreamReader`` whose ``fetchone`` decodes the per-transaction events itself (module docstring).

    Its connection must be readers.mysql.reader's guarded connection, which takes back an unread packet
    (``unread``) and hands it to the library's ``fetchone`` next; its ``next_data`` gives the next packet's bytes
    read and checked as its ``_read_packet`` does, without a packet object (one is made for what goes to the
    library).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._table_maps: dict[bytes, tuple[int, Any, Any]] = {}  # TABLE_MAP body -> (table id, Table, null bitmap)
        # table id -> (Table, mask plan): the reader's shaped tables whose rows fast_rows shapes while decoding
        self.shapes: dict[int, tuple[Any, tuple]] = {}
        # (connection, has unread, has read_failed, has next_data): what fetchone asks of the stream's connection,
        # asked again only when the library made a new one (a reconnect)
        self._conn_kind: tuple[Any, bool, bool, bool] = (None, False, False, False)

    def _fast_rows_ok(self) -> bool:
        """Rows events may take fast_rows: the native pass installed, no table or schema filter to apply."""
        return (RowsEvent._fetch_rows is native_rows.fetch_rows and self._BinLogStreamReader__only_tables is None
                and self._BinLogStreamReader__ignored_tables is None and self._BinLogStreamReader__only_schemas is None
                and self._BinLogStreamReader__ignored_schemas is None and not self._BinLogStreamReader__ignore_decode_errors)

    def _library_fetchone(self) -> Any:
        """The library's next event, without its packet's link back to it: the packet <-> event cycle would
        keep each event and its rows alive until the cyclic collector's next pass (with a big transaction's
        rows untracked by the native pass, a rare one), so memory grew with the events read since."""
        ev = super().fetchone()
        wrapper = getattr(ev, "packet", None)
        if wrapper is not None and getattr(wrapper, "event", None) is ev:
            wrapper.event = None
        return ev

    def fetchone(self) -> Any:
        if (not self._BinLogStreamReader__connected_stream or not self._BinLogStreamReader__connected_ctl
                or self.end_log_pos or self.skip_to_timestamp):
            return self._library_fetchone()
        conn = self._stream_connection
        kind = self._conn_kind
        if kind[0] is not conn:
            kind = self._conn_kind = (conn, hasattr(conn, "unread"), hasattr(conn, "read_failed"),
                                      hasattr(conn, "next_data"))
        if not kind[1]:
            return self._library_fetchone()
        pkt = data = ev = None  # a packet object only for an event handed back to the library
        if _native is not None and kind[2]:  # a packet the socket's buffer holds, in C
            try:
                data = _native.next(self, conn)
            except OSError as exc:
                raise conn.read_failed(exc) from exc
            if data is not None and type(data) is not bytes:
                return data  # its event
        if data is None:
            data = conn.next_data() if kind[3] else None  # the bytes alone, no packet object
            if data is None:
                pkt = conn._read_packet()
                data = pkt._data
            ev = _native.event(self, data) if _native is not None else None  # the same decisions in C
        if ev is None:
            ev = self.decoded(data)
            if ev is None:  # the library's, as the same packet
                return self._library_event(MysqlPacket(data, conn.encoding) if pkt is None else pkt, data)
        return ev

    def decoded(self, data: bytes) -> Any:
        """What this module decodes from binlog packet ``data`` below the library (the module docstring): a
        FastTableMap of a TABLE_MAP it has cached, a rows event of fast_rows, a FastGtid, FastXid or FastBegin,
        with the stream's ``log_pos`` moved to its end; None, with nothing changed, for the library's.
        readers/mysql/binlog/_events_native.c makes the same decisions (event()), which fetchone asks first."""
        n = len(data)
        if n <= 20:
            return None
        code = data[5]
        checksum = self._BinLogStreamReader__use_checksum
        if code == TABLE_MAP_EVENT:
            key = self._table_map_key(data)
            known = self._table_maps.get(key) if key is not None else None
            if known is None:
                return None
            log_pos = int.from_bytes(data[14:18], "little")
            if log_pos:
                self.log_pos = log_pos
            self.table_map[known[0]] = known[1]
            return FastTableMap(known[0], known[2], log_pos)
        if code in _ROWS:
            if not self._fast_rows_ok():
                return None
            fast = fast_rows(data, checksum, self.table_map, self._BinLogStreamReader__post_header_lengths,
                             self.shapes)
            log_pos = fast.packet.log_pos if fast is not None else 0
        elif code in _DECODED:
            lengths = self._BinLogStreamReader__post_header_lengths
            fast = decode(data, self.is_mariadb, checksum,
                          lengths[QUERY_EVENT - 1] if lengths and len(lengths) >= QUERY_EVENT else 13)
            log_pos = fast.log_pos if fast is not None else 0
        else:
            return None
        if log_pos:
            self.log_pos = log_pos
        return fast

    def _library_event(self, pkt: Any, data: bytes) -> Any:
        """The library's event of packet ``pkt`` (``data`` its bytes); a TABLE_MAP it parsed is cached for next time
        (the Table the library put in the stream's table map, by the event's bytes)."""
        conn = self._stream_connection
        conn.unread(pkt)
        ev = self._library_fetchone()
        if type(ev) is TableMapEvent and ev.packet.packet is pkt and self.table_map.get(ev.table_id) is not None:
            key = self._table_map_key(data)
            if key is not None:
                if len(self._table_maps) >= _TABLE_MAPS_MAX:
                    self._table_maps.clear()
                self._table_maps[key] = (ev.table_id, self.table_map[ev.table_id], ev.null_bitmask)
        return ev

    def _table_map_key(self, data: bytes) -> bytes | None:
        """The cache key of TABLE_MAP packet ``data`` (its body without header and checksum), or None while the
        cache is off or the packet is not one whole OK event."""
        n = len(data)
        if n <= 20 or data[0] != 0 or int.from_bytes(data[10:14], "little") != n - 1 \
                or TableMapEvent.__init__ is not _CACHED:
            return None
        return bytes(data[20:n - 4 if self._BinLogStreamReader__use_checksum else n])
