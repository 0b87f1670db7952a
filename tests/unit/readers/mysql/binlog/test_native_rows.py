"""The native rows pass publishes byte for byte what the Python path publishes.

A rows event's body is generated from a generated table (every column type the reader
decodes, with its TABLE_MAP metadata) and generated values, encoded as the server writes
them (NULLs, negative and long DECIMALs, fractional temporal values, zero and impossible
dates, JSON, BIT, SET/ENUM, BINARY shorter than its width, text in several character sets).
The same bytes are read twice through the library's RowsEvent: once by the Python path
(readers/mysql/binlog/fastrows.py + the library + RowConverter), once with the native pass in
front; the row images, as orjson writes them into records, must be equal -- or both paths
must raise the same error. Without the compiled module both reads take the Python path and the
comparisons hold trivially; ``test_a_compiled_module_loads`` fails when a ``_rows_native*.so`` was
built but does not import.
"""

from __future__ import annotations

import importlib
import struct
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from types import SimpleNamespace

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymysql.protocol import MysqlPacket
from pymysqlreplication.column import Column
from pymysqlreplication.constants import BINLOG
from pymysqlreplication.constants import FIELD_TYPE as T
from pymysqlreplication.packet import BinLogPacketWrapper
from pymysqlreplication.row_event import DeleteRowsEvent, RowsEvent, UpdateRowsEvent, WriteRowsEvent

from readers.mysql.binlog import fastrows, native_rows
from readers.mysql.binlog.decode import ConvertedRow, RowConverter

_DEC = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_FRAC = (0, 1, 1, 2, 2, 3, 3)


# ---- encoders: a value as the server writes it into a row image --------------------------------------------
def _decimal(precision: int, scale: int, negative: bool, int_digits: str, frac_digits: str) -> bytes:
    integral = precision - scale
    ip = int_digits.rjust(integral, "0")[-integral:] if integral else ""
    fp = frac_digits.ljust(scale, "0")[:scale]
    ci = integral % 9
    out = b""
    if ci:
        out += int(ip[:ci]).to_bytes(_DEC[ci], "big")
    for i in range(ci, integral, 9):
        out += int(ip[i:i + 9]).to_bytes(4, "big")
    for i in range(0, scale - scale % 9, 9):
        out += int(fp[i:i + 9]).to_bytes(4, "big")
    if scale % 9:
        out += int(fp[scale - scale % 9:]).to_bytes(_DEC[scale % 9], "big")
    b = bytearray(out)
    if negative:
        b = bytearray(x ^ 0xFF for x in b)
    b[0] ^= 0x80
    return bytes(b)


def _frac(us: int, fsp: int) -> bytes:
    n = _FRAC[fsp]
    if not n:
        return b""
    v = us // 10 ** (6 - fsp)
    if fsp % 2:
        v *= 10
    return v.to_bytes(n, "big")


def _time2(negative: bool, h: int, m: int, s: int, us: int, fsp: int) -> bytes:
    n = _FRAC[fsp]
    frac = int.from_bytes(_frac(us, fsp), "big") if n else 0
    v = ((h << 12 | m << 6 | s) << 8 * n) | frac
    return ((-v if negative else v) + (0x800000 << 8 * n)).to_bytes(3 + n, "big")


def _json_scalar(draw) -> tuple[int, bytes]:
    kind = draw(st.sampled_from(["lit", "i16", "i32", "i64", "dbl", "str"]))
    if kind == "lit":
        return 4, bytes([draw(st.sampled_from([0, 1, 2]))])
    if kind == "i16":
        return 5, struct.pack("<h", draw(st.integers(-2 ** 15, 2 ** 15 - 1)))
    if kind == "i32":
        return 7, struct.pack("<i", draw(st.integers(-2 ** 31, 2 ** 31 - 1)))
    if kind == "i64":
        return 9, struct.pack("<q", draw(st.integers(-2 ** 63, 2 ** 63 - 1)))
    if kind == "dbl":
        return 11, struct.pack("<d", draw(st.floats(allow_nan=False, allow_infinity=False)))
    raw = draw(st.text(max_size=20)).encode()
    return 12, bytes([len(raw)]) + raw  # lengths below 128: one varlen byte


@st.composite
def _json(draw) -> bytes:
    shape = draw(st.sampled_from(["scalar", "array", "object"]))
    if shape == "scalar":
        t, body = _json_scalar(draw)
        return bytes([t]) + body
    n = draw(st.integers(0, 4))
    vals = [draw(st.integers(-2 ** 15, 2 ** 15 - 1)) for _ in range(n)]
    if shape == "array":  # small array of inlined INT16s
        size = 4 + 3 * n
        return bytes([2]) + struct.pack("<HH", n, size) + b"".join(b"\x05" + struct.pack("<h", v) for v in vals)
    keys = sorted({draw(st.text("abcxyz", min_size=1, max_size=4)) for _ in range(n)})
    n = len(keys)
    key_start = 4 + 4 * n + 3 * n
    size = key_start + sum(len(k) for k in keys)
    entries, off = b"", key_start
    for k in keys:
        entries += struct.pack("<HH", off, len(k))
        off += len(k)
    values = b"".join(b"\x05" + struct.pack("<h", v) for v in vals[:n])
    return bytes([0]) + struct.pack("<HH", n, size) + entries + values + "".join(keys).encode()


def _pascal(raw: bytes, lenbytes: int) -> bytes:
    return len(raw).to_bytes(lenbytes, "little") + raw


_CHARSETS = ["utf8mb4", "utf8mb3", "latin1", "binary", "ascii", None]


@st.composite
def column_and_values(draw, i: int):
    """(Column, strategy of encoded non-NULL values) for column ``c{i}``."""
    kind = draw(st.sampled_from(["int", "float", "double", "year", "decimal", "date", "datetime", "datetime2",
                                 "timestamp", "timestamp2", "time", "time2", "varchar", "char", "binary", "blob",
                                 "geometry", "json", "enum", "set", "bit"]))
    name = f"c{i}"
    if kind == "int":
        t, w = draw(st.sampled_from([(T.TINY, 1), (T.SHORT, 2), (T.INT24, 3), (T.LONG, 4), (T.LONGLONG, 8)]))
        col = Column(type=t, name=name, unsigned=draw(st.booleans()))
        return col, st.binary(min_size=w, max_size=w)
    if kind in ("float", "double"):
        t, fmt = (T.FLOAT, "<f") if kind == "float" else (T.DOUBLE, "<d")
        return Column(type=t, name=name, unsigned=False), st.floats(
            allow_nan=False, width=32 if kind == "float" else 64).map(lambda f: struct.pack(fmt, f))
    if kind == "year":
        return Column(type=T.YEAR, name=name, unsigned=False), st.binary(min_size=1, max_size=1)
    if kind == "decimal":
        p = draw(st.integers(1, 65))
        s = draw(st.integers(0, min(30, p)))
        digits = st.text("0123456789", max_size=70)
        return Column(type=T.NEWDECIMAL, name=name, unsigned=False, precision=p, decimals=s), st.builds(
            lambda neg, a, b: _decimal(p, s, neg, a or "0", b), st.booleans(), digits, digits)
    if kind == "date":
        return Column(type=T.DATE, name=name, unsigned=False), st.builds(
            lambda y, m, d: (y << 9 | m << 5 | d).to_bytes(3, "little"),
            st.integers(0, 9999), st.integers(0, 12), st.integers(0, 31))
    if kind == "datetime":
        return Column(type=T.DATETIME, name=name, unsigned=False), st.builds(
            lambda y, mo, d, h, mi, s: (y * 10 ** 10 + mo * 10 ** 8 + d * 10 ** 6 + h * 10 ** 4 + mi * 100 + s
                                        ).to_bytes(8, "little"),
            st.integers(0, 9999), st.integers(0, 12), st.integers(0, 31), st.integers(0, 23), st.integers(0, 59),
            st.integers(0, 59))
    if kind in ("datetime2", "timestamp2", "time2"):
        fsp = draw(st.integers(0, 6))
        us = st.integers(0, 999_999)
        if kind == "datetime2":
            def dt2(y, mo, d, h, mi, s, u):
                packed = 1 << 39 | (y * 13 + mo) << 22 | d << 17 | h << 12 | mi << 6 | s
                return packed.to_bytes(5, "big") + _frac(u, fsp)
            values = st.builds(dt2, st.integers(0, 9999), st.integers(0, 12), st.integers(0, 31),
                               st.integers(0, 23), st.integers(0, 59), st.integers(0, 59), us)
            t = T.DATETIME2
        elif kind == "timestamp2":
            values = st.builds(lambda s, u: s.to_bytes(4, "big") + _frac(u, fsp),
                               st.one_of(st.just(0), st.integers(0, 2 ** 31 - 1)), st.one_of(st.just(0), us))
            t = T.TIMESTAMP2
        else:
            values = st.builds(lambda n, h, m, s, u: _time2(n, h, m, s, u, fsp), st.booleans(),
                               st.integers(0, 838), st.integers(0, 59), st.integers(0, 59), us)
            t = T.TIME2
        return Column(type=t, name=name, unsigned=False, fsp=fsp), values
    if kind == "timestamp":
        return Column(type=T.TIMESTAMP, name=name, unsigned=False), st.one_of(
            st.just(b"\0\0\0\0"), st.binary(min_size=4, max_size=4))
    if kind == "time":
        return Column(type=T.TIME, name=name, unsigned=False), st.integers(0, 8385959).map(
            lambda v: v.to_bytes(3, "little"))
    if kind in ("varchar", "char", "binary", "blob"):
        cs = "binary" if kind == "binary" else draw(st.sampled_from(_CHARSETS))
        if kind == "blob":
            lenbytes = draw(st.integers(1, 4))
            col = Column(type=T.BLOB, name=name, unsigned=False, length_size=lenbytes, character_set_name=cs)
            maxlen = 300
        else:
            maxlen = draw(st.integers(1, 400))
            lenbytes = 2 if maxlen > 255 else 1
            col = Column(type=T.VARCHAR if kind == "varchar" else T.STRING, name=name, unsigned=False,
                         max_length=maxlen, character_set_name=cs)
        limit = min(maxlen, 255 if lenbytes == 1 else 300)
        if cs in ("binary", None) or draw(st.booleans()):
            raw = st.binary(max_size=limit)
        else:
            enc = {"latin1": "cp1252", "ascii": "ascii"}.get(cs, "utf-8")
            raw = st.text(max_size=limit // 4).map(lambda s: s.encode(enc, "ignore"))
        return col, raw.map(lambda b: _pascal(b, lenbytes))
    if kind == "geometry":
        return Column(type=T.GEOMETRY, name=name, unsigned=False, length_size=4), st.binary(max_size=40).map(
            lambda b: _pascal(b, 4))
    if kind == "json":
        return Column(type=T.JSON, name=name, unsigned=False, length_size=4), st.one_of(
            st.just(b"\0\0\0\0"), _json().map(lambda d: _pascal(d, 4)))
    if kind in ("enum", "set"):
        labels = draw(st.lists(st.text("abcdefgh", min_size=1, max_size=5), min_size=1, max_size=12, unique=True))
        size = draw(st.sampled_from([1, 2] if kind == "enum" else [1, 2, 3, 4, 8]))
        if kind == "enum":
            col = Column(type=T.ENUM, name=name, unsigned=False, size=size, enum_values=[""] + labels)
            return col, st.integers(0, len(labels) + 1).map(lambda v: v.to_bytes(size, "little"))
        col = Column(type=T.SET, name=name, unsigned=False, size=size, set_values=labels)
        return col, st.binary(min_size=size, max_size=size)
    bits = draw(st.integers(1, 64))
    nbytes = (bits + 7) // 8
    return Column(type=T.BIT, name=name, unsigned=False, bits=bits, bytes=nbytes), st.binary(
        min_size=nbytes, max_size=nbytes)


def _bitmap(bits: list[bool]) -> bytes:
    return sum(1 << i for i, b in enumerate(bits) if b).to_bytes((len(bits) + 7) // 8, "little")


@st.composite
def rows_event(draw):
    """(event class, event type, columns, bitmaps, body bytes)."""
    ncols = draw(st.integers(1, 8))
    specs = [draw(column_and_values(i)) for i in range(ncols)]
    columns = [c for c, _ in specs]
    flavour = draw(st.sampled_from(["mariadb", "mysql"]))  # MariaDB logs v1 rows events, MySQL v2
    cls = draw(st.sampled_from([WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent]))
    v2 = flavour == "mysql"
    event_type = {WriteRowsEvent: BINLOG.WRITE_ROWS_EVENT_V2 if v2 else BINLOG.WRITE_ROWS_EVENT_V1,
                  UpdateRowsEvent: BINLOG.UPDATE_ROWS_EVENT_V2 if v2 else BINLOG.UPDATE_ROWS_EVENT_V1,
                  DeleteRowsEvent: BINLOG.DELETE_ROWS_EVENT_V2 if v2 else BINLOG.DELETE_ROWS_EVENT_V1}[cls]
    full = draw(st.booleans()) or draw(st.booleans())  # the reader accepts full images; the pass reads any
    nimg = 2 if cls is UpdateRowsEvent else 1
    bitmaps = [_bitmap([True] * ncols if full else draw(st.lists(st.booleans(), min_size=ncols, max_size=ncols)))
               for _ in range(nimg)]
    body = b""
    for _ in range(draw(st.integers(1, 4))):
        for bm in bitmaps:
            present = [i for i in range(ncols) if bm[i // 8] >> (i % 8) & 1]
            nulls = [draw(st.integers(0, 4)) == 0 for _ in present]
            body += _bitmap(nulls) if present else b""
            for i, null in zip(present, nulls, strict=True):
                if not null:
                    body += draw(specs[i][1])
    return cls, event_type, columns, tuple(bitmaps), body


def _event(cls, event_type, columns, bitmaps, body):
    """A RowsEvent over ``body`` as the library builds it after reading the event header (checksum after it)."""
    ev = object.__new__(cls)
    wrapper = object.__new__(BinLogPacketWrapper)
    wrapper.read_bytes = 0
    wrapper._BinLogPacketWrapper__data_buffer = b""
    wrapper.packet = MysqlPacket(b"HEADER" + body + b"CRC!", "utf8")
    wrapper.packet.advance(6)
    ev.packet = wrapper
    ev.event_type, ev.event_size = event_type, len(body)
    ev.table_id, ev.table_map = 7, {7: SimpleNamespace(columns=columns)}
    ev.columns, ev.number_of_columns = columns, len(columns)
    ev.columns_present_bitmap = bitmaps[0]
    if len(bitmaps) > 1:
        ev.columns_present_bitmap2 = bitmaps[1]
    ev._ignore_decode_errors, ev.complete, ev.schema, ev.table = False, True, "db", "t"
    ev._RowsEvent__rows, ev._RowsEvent__none_sources, ev._ctl_connection = None, {}, None
    return ev


def _published(native: bool, cls, event_type, columns, bitmaps, body):
    """What the reader publishes of the event's row images (orjson bytes), or the error it raises."""
    fastrows.install(native=native)
    try:
        ev = _event(cls, event_type, columns, bitmaps, body)
        try:
            rows = ev.rows
            convert = RowConverter("db.t", columns)
            keys = ("before_values", "after_values") if cls is UpdateRowsEvent else ("values",)
            images = [convert(r[k], "f:1") for r in rows for k in keys]
        except Exception as exc:  # noqa: BLE001 - both paths must fail alike
            return ("error", type(exc).__name__, str(exc)), None
        return orjson.dumps(images), images
    finally:
        fastrows.install()


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(rows_event())
def test_native_rows_publish_what_the_python_path_publishes(event):
    python, _ = _published(False, *event)
    native, _ = _published(True, *event)
    assert native == python


def _one(columns, values: list[bytes], cls=WriteRowsEvent, event_type=BINLOG.WRITE_ROWS_EVENT_V1):
    bitmaps = (_bitmap([True] * len(columns)),)
    body = _bitmap([False] * len(columns)) + b"".join(values)
    python, _ = _published(False, cls, event_type, columns, bitmaps, body)
    native, images = _published(True, cls, event_type, columns, bitmaps, body)
    assert native == python
    return native, images


def test_values_are_the_streams_and_the_native_pass_decoded_them():
    cols = [Column(type=T.NEWDECIMAL, name="d", unsigned=False, precision=65, decimals=30),
            Column(type=T.DATETIME2, name="t", unsigned=False, fsp=6),
            Column(type=T.DATE, name="z", unsigned=False),
            Column(type=T.TIME2, name="tm", unsigned=False, fsp=2),
            Column(type=T.STRING, name="b", unsigned=False, max_length=4, character_set_name="binary"),
            Column(type=T.SET, name="s", unsigned=False, size=1, set_values=["a", "b", "c"]),
            Column(type=T.BIT, name="bit", unsigned=False, bits=10, bytes=2)]
    _, images = _one(cols, [_decimal(65, 30, True, "12345678901234567890123456789012345", "5" * 30),
                         (1 << 39 | (2024 * 13 + 2) << 22 | 29 << 17 | 23 << 12 | 59 << 6 | 58).to_bytes(5, "big")
                         + (123456).to_bytes(3, "big"),
                         b"\0\0\0", _time2(True, 0, 0, 1, 250000, 2), _pascal(b"\x01", 1), b"\x05", b"\x03\xff"])
    assert type(images[0]) is (ConvertedRow if native_rows.NATIVE else dict)
    assert images[0] == {"d": "-12345678901234567890123456789012345." + "5" * 30, "t": "2024-02-29T23:59:58.123456",
                         "z": None, "tm": "-00:00:01.250000", "b": "AQAAAA==", "s": "a,c", "bit": 1023}


@pytest.mark.skipif(not native_rows.NATIVE, reason="the native pass is not compiled here")
def test_native_rows_stay_out_of_the_cyclic_collector_until_a_container_goes_in():
    """Rows of atomic values are untracked (a big transaction's rows made every collection walk them); a dict
    tracks itself again when a container is put in it, so nothing that could hold a cycle stays untracked."""
    import gc

    cols = [Column(type=T.LONG, name="i", unsigned=False), Column(type=T.VARCHAR, name="v", unsigned=False,
                                                                   max_length=10, character_set_name="utf8mb4")]
    _, images = _one(cols, [(7).to_bytes(4, "little"), _pascal("é".encode(), 1)])
    assert images[0] == {"i": 7, "v": "é"} and not gc.is_tracked(images[0])
    images[0]["x"] = [images[0]]
    assert gc.is_tracked(images[0])


def test_an_impossible_date_takes_the_python_path_which_raises():
    cols = [Column(type=T.DATE, name="d", unsigned=False)]
    published, _ = _one(cols, [(2023 << 9 | 2 << 5 | 30).to_bytes(3, "little")])
    assert published[:2] == ("error", "ValueError")  # the library's date(2023, 2, 30), on both paths


def test_a_compiled_module_loads():
    """Without a C compiler the Python path is legitimate; a built module that does not import is not."""
    here = Path(native_rows.__file__).parent
    built = sorted({p for suffix in (".so", ".pyd", *EXTENSION_SUFFIXES) for p in here.glob(f"_rows_native*{suffix}")})
    if not built or native_rows.NATIVE:
        return
    try:
        importlib.import_module("readers.mysql.binlog._rows_native")
        why = "it imports now, but did not when native_rows was imported"
    except Exception as exc:  # noqa: BLE001
        why = repr(exc)
    pytest.fail(f"{[p.name for p in built]} built next to native_rows.py but native_rows.NATIVE is False: {why}")


def test_without_the_compiled_module_every_event_takes_the_python_path(monkeypatch):
    monkeypatch.setattr(native_rows, "_rows_native", None)
    monkeypatch.setattr(native_rows, "NATIVE", False)
    cols = [Column(type=T.NEWDECIMAL, name="d", unsigned=False, precision=8, decimals=2)]
    try:
        fastrows.install()
        assert RowsEvent._fetch_rows is not native_rows.fetch_rows
        assert not fastrows.native_installed()
    finally:
        monkeypatch.undo()
        fastrows.install()
    monkeypatch.setattr(native_rows, "_rows_native", None)
    assert native_rows.plan_for(cols) is None  # fetch_rows itself also hands every event to the library
    ev = _event(WriteRowsEvent, BINLOG.WRITE_ROWS_EVENT_V1, cols, (b"\x01",), b"\x00" + _decimal(8, 2, True, "5", "25"))
    native_rows.fetch_rows(ev)
    assert [type(r["values"]) for r in ev.rows] == [dict]
    assert RowConverter("db.t", cols)(ev.rows[0]["values"], "f:1") == {"d": "-5.25"}
