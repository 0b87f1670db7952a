"""readers/mysql/binlog/_events_native.c: FastStream.fetchone asks the C step first and its Python path
(FastStream.decoded) when C declines; the two together decide every packet exactly as the Python path alone:
the same event (type and every field), the same stream position and table map, None for the same packets.
Generated packets of every kind fetchone decodes, valid and damaged, on streams of every setting it reads."""

from __future__ import annotations

import struct
import zlib
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymysqlreplication.constants import FIELD_TYPE as T

from readers.mysql.binlog import fastevents, fastrows
from readers.mysql.binlog.fastevents import FastStream
from tests.unit.readers.mysql.binlog.test_fast_rows import _shape


def test_the_c_step_is_compiled_here():
    assert fastevents._native is not None, "make venv compiles readers/mysql/binlog/_events_native.c"


@pytest.fixture(autouse=True)
def _installed():
    fastrows.install(native=True, table_map_cache=True)
    yield
    fastrows.install()


def _table():
    cols = [SimpleNamespace(name="id", type=T.LONG, unsigned=False),
            SimpleNamespace(name="a", type=T.VARCHAR, max_length=40, character_set_name="utf8mb4")]
    return SimpleNamespace(schema="db", table="t", columns=cols)


def _event(code: int, body: bytes, checksum: bool, log_pos: int = 999, server_id: int = 42) -> bytes:
    size = 19 + len(body) + (4 if checksum else 0)
    event = struct.pack("<IBIIIH", 1_700_000_000, code, server_id, size, log_pos, 0) + body
    return b"\x00" + event + (struct.pack("<I", zlib.crc32(event)) if checksum else b"")


def _row(i: int, a: bytes) -> bytes:
    return b"\x00" + struct.pack("<i", i) + bytes([len(a)]) + a


def _rows_body(code: int, rows: list[bytes], table_id: int, ncols: int, extra: bytes) -> bytes:
    post = table_id.to_bytes(6, "little") + b"\x01\x00" + (extra if code >= 0x1E else b"")
    bitmaps = b"\x03" * (2 if code in (0x18, 0x1F) else 1)
    return post + bytes([ncols]) + bitmaps + b"".join(rows)


TABLE_MAP_BODY = b"\x07\x00\x00\x00\x00\x00\x01\x00\x02db\x00\x01t\x00\x02\x03\x0f\x02\xa0\x00\x02"


@st.composite
def packets(draw, checksum: bool):
    kind = draw(st.sampled_from(["xid", "mariadb_gtid", "mysql_gtid", "begin", "query", "table_map", "rows",
                                 "other"]))
    log_pos = draw(st.sampled_from([0, 4, 999, 2**32 - 1]))
    if kind == "xid":
        body = struct.pack("<Q", draw(st.integers(0, 2**64 - 1)))
        code = 0x10
    elif kind == "mariadb_gtid":
        flags = draw(st.sampled_from([0, 1, 0x40, 0x80, 0x08]))
        body = struct.pack("<QIB", draw(st.integers(0, 2**64 - 1)), draw(st.integers(0, 2**32 - 1)), flags) + \
            draw(st.binary(max_size=8))
        code = 0xA2
    elif kind == "mysql_gtid":
        body = b"\x01" + draw(st.binary(min_size=16, max_size=16)) + struct.pack("<Q", draw(st.integers(0, 2**63))) + \
            draw(st.binary(min_size=17, max_size=30))
        code = 0x21
    elif kind in ("begin", "query"):
        status = draw(st.binary(max_size=6))
        schema = draw(st.sampled_from([b"", b"db"]))
        query = b"BEGIN" if kind == "begin" else draw(st.sampled_from([b"COMMIT", b"BEGINX", b"BEGI", b"begin"]))
        body = struct.pack("<IIBHH", draw(st.integers(0, 2**32 - 1)), 0, len(schema),
                           draw(st.sampled_from([0, 0, 1])), len(status)) + status + schema + \
            draw(st.sampled_from([b"\x00", b"\x00", b"\x01"])) + query
        code = 0x02
    elif kind == "table_map":
        body = draw(st.sampled_from([TABLE_MAP_BODY, TABLE_MAP_BODY[:-1] + b"\x03"]))
        code = 0x13
    elif kind == "rows":
        code = draw(st.sampled_from([0x17, 0x18, 0x19, 0x1E, 0x1F, 0x20]))
        n = draw(st.integers(1, 3)) * (2 if code in (0x18, 0x1F) else 1)
        values = st.sampled_from([b"", b"xy", "é".encode(), b"xyz", b"\xff"])
        rows = [_row(draw(st.integers(-2**31, 2**31 - 1)), draw(values)) for _ in range(n)]
        body = _rows_body(code, rows, draw(st.sampled_from([7, 7, 8])), draw(st.sampled_from([2, 2, 3, 255])),
                          draw(st.sampled_from([b"\x02\x00", b"\x02\x00", b"\x05\x00\x01\x00\x00"])))
    else:
        code = draw(st.sampled_from([0x0F, 0x04, 0x22, 0x2A, 0x27, 0xA3]))
        body = draw(st.binary(max_size=40))
    data = bytearray(_event(code, body, checksum, log_pos=log_pos))
    damage = draw(st.sampled_from(["none"] * 6 + ["truncate", "flip", "ok_byte", "size"]))
    if damage == "truncate":
        del data[draw(st.integers(0, len(data) - 1)):]
    elif damage == "flip":
        i = draw(st.integers(0, len(data) - 1))
        data[i] ^= draw(st.integers(1, 255))
    elif damage == "ok_byte":
        data[0] = 0xFF
    elif damage == "size":
        data[10:14] = struct.pack("<I", len(data) - 1 + draw(st.sampled_from([-1, 1, 4])))
    return bytes(data)


def _stream(checksum: bool, mariadb: bool, lengths, filtered: bool, ignore_errors: bool, plan: str, cached: bool,
            table) -> FastStream:
    s = FastStream.__new__(FastStream)
    s._BinLogStreamReader__use_checksum = checksum
    s.is_mariadb = mariadb
    s._BinLogStreamReader__post_header_lengths = lengths
    s._BinLogStreamReader__only_tables = ["t"] if filtered else None
    s._BinLogStreamReader__ignored_tables = None
    s._BinLogStreamReader__only_schemas = None
    s._BinLogStreamReader__ignored_schemas = None
    s._BinLogStreamReader__ignore_decode_errors = ignore_errors
    s.table_map = {7: table}
    s.log_pos = 4
    s.shapes = {}
    s._table_maps = {}
    if cached:
        s._table_maps[TABLE_MAP_BODY] = (7, table, b"\x02")
    return s


def _plain(ev):
    """An event as comparable values: its type and every field (the rows' images with their types)."""
    if ev is None:
        return None
    if hasattr(ev, "__slots__") and not hasattr(ev, "__dict__"):
        return type(ev), tuple((k, getattr(ev, k)) for k in ev.__slots__)
    fields = {}
    for k, v in vars(ev).items():
        if k == "packet":
            v = (type(v), v.log_pos, v.server_id)
        elif k == "table_map":
            v = sorted(v)
        elif k == "_RowsEvent__rows":
            v = [{key: (type(img), list(img.items())) for key, img in row.items()} for row in v]
        elif k == "columns":
            v = [c.name for c in v]
        fields[k] = v
    return type(ev), sorted(fields.items())



LENGTHS = st.sampled_from([None, b"", bytes([0x38] * 0x14), bytes([13] * 0x20),
                           bytes([13] + [8] * 0x16 + [10] * 0x10), bytes([14] + [8] * 0x16 + [10] * 0x10),
                           bytes([13] + [9] * 0x16 + [10] * 0x10)])


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_c_then_python_decides_every_packet_as_python_alone(data):
    checksum = data.draw(st.booleans())
    config = {"checksum": checksum, "mariadb": data.draw(st.booleans()), "lengths": data.draw(LENGTHS),
              "filtered": data.draw(st.sampled_from([False, False, True])),
              "ignore_errors": data.draw(st.sampled_from([False, False, True])),
              "plan": data.draw(st.sampled_from(["made", "made", "made", "not yet", "none"])),
              "cached": data.draw(st.booleans())}
    fastrows.install(native=True, table_map_cache=data.draw(st.sampled_from([True, True, False])))
    packet = data.draw(packets(checksum))
    outcomes = []
    for use_c in (True, False):
        table = _table()
        if config["plan"] == "made":
            from readers.mysql.binlog.native_rows import plan_for
            table._cdc_native = plan_for(table.columns)
        elif config["plan"] == "none":
            table._cdc_native = None
        s = _stream(table=table, **config)
        ev = fastevents._native.event(s, packet) if use_c else None
        if ev is None:
            ev = s.decoded(packet)
        outcomes.append((_plain(ev), s.log_pos, sorted((k, v is table) for k, v in s.table_map.items())))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("attr", ["only_tables", "ignored_tables", "only_schemas", "ignored_schemas",
                                  "ignore_decode_errors"])
def test_a_stream_with_a_filter_or_ignoring_errors_leaves_rows_to_the_library(attr):
    from readers.mysql.binlog.native_rows import plan_for

    table = _table()
    table._cdc_native = plan_for(table.columns)
    s = _stream(checksum=True, mariadb=True, lengths=None, filtered=False, ignore_errors=False, plan="made",
                cached=False, table=table)
    rows = _event(0x17, _rows_body(0x17, [_row(1, b"a")], 7, 2, b""), True)
    assert fastevents._native.event(s, rows) is not None
    setattr(s, f"_BinLogStreamReader__{attr}", True if attr == "ignore_decode_errors" else ["x"])
    assert fastevents._native.event(s, rows) is None and s.decoded(rows) is None
    fastrows.install(native=False)  # the library's row decoder: rows are its own
    setattr(s, f"_BinLogStreamReader__{attr}", False if attr == "ignore_decode_errors" else None)
    assert fastevents._native.event(s, rows) is None and s.decoded(rows) is None


def test_every_kind_is_decoded_by_c_alone():
    """The packets a small transaction is made of do not fall back to Python (the C step covers them)."""
    from readers.mysql.binlog.native_rows import plan_for

    table = _table()
    table._cdc_native = plan_for(table.columns)
    s = _stream(checksum=True, mariadb=True, lengths=None, filtered=False, ignore_errors=False, plan="made",
                cached=True, table=table)
    gtid = _event(0xA2, struct.pack("<QIB", 5, 0, 0), True)
    rows = _event(0x17, _rows_body(0x17, [_row(1, b"a")], 7, 2, b""), True)
    for packet, kind in ((gtid, fastevents.FastGtid), (_event(0x13, TABLE_MAP_BODY, True), fastevents.FastTableMap),
                         (rows, fastevents.WriteRowsEvent), (_event(0x10, b"\x00" * 8, True), fastevents.FastXid)):
        assert type(fastevents._native.event(s, packet)) is kind
    s.is_mariadb = False
    begin = _event(0x02, struct.pack("<IIBHH", 9, 0, 0, 0, 0) + b"\x00BEGIN", True)
    assert type(fastevents._native.event(s, begin)) is fastevents.FastBegin
    mysql_gtid = _event(0x21, b"\x01" + bytes(range(16)) + struct.pack("<Q", 77) + b"\x00" * 17, True)
    got = fastevents._native.event(s, mysql_gtid)
    assert got.gtid == "00010203-0405-0607-0809-0a0b0c0d0e0f:77" == s.decoded(mysql_gtid).gtid


@pytest.mark.parametrize("same_table", [True, False])
def test_a_shaped_table_decodes_as_python_does(tmp_path, same_table):
    """Rows of the Table a shape was registered for come shaped; a shape registered for another Table object
    (a TABLE_MAP since) is not applied."""
    from readers.mysql.binlog.native_rows import ShapedRow, plan_for

    outcomes = []
    for use_c in (True, False):
        table = _table()
        table._cdc_native = plan_for(table.columns)
        _, masks = _shape(tmp_path, table, columns={"a": {"mask": "hash"}})
        s = _stream(checksum=True, mariadb=True, lengths=None, filtered=False, ignore_errors=False, plan="made",
                    cached=False, table=table)
        s.shapes = {7: (table if same_table else _table(), masks)}
        packet = _event(0x18, _rows_body(0x18, [_row(1, b"secret"), _row(1, b"other")], 7, 2, b""), True)
        ev = fastevents._native.event(s, packet) if use_c else s.decoded(packet)
        assert ev is not None
        assert (type(ev.rows[0]["after_values"]) is ShapedRow) is same_table
        outcomes.append(_plain(ev))
    assert outcomes[0] == outcomes[1]
    assert ("secret" not in repr(outcomes[0])) is same_table


def test_v2_extra_data_is_left_to_the_library():
    """A WRITE_ROWS v2 event with extra data (any length but its own two bytes): not read past, not decoded."""
    from readers.mysql.binlog.native_rows import plan_for

    table = _table()
    table._cdc_native = plan_for(table.columns)
    s = _stream(checksum=True, mariadb=True, lengths=None, filtered=False, ignore_errors=False, plan="made",
                cached=False, table=table)
    image = bytes([2]) + b"\x03" + _row(1, b"a")
    # two bytes of extra data that read like a column count and bitmap, then a row: decodable if read as no extra
    packet = _event(0x1E, (7).to_bytes(6, "little") + b"\x01\x00\x04\x00" + image, True)
    assert fastevents._native.event(s, packet) is None and s.decoded(packet) is None
    fine = _event(0x1E, (7).to_bytes(6, "little") + b"\x01\x00\x02\x00" + image, True)
    assert fastevents._native.event(s, fine) is not None


def _read_as_fetchone(s: FastStream, c, use_c: bool, reads: int) -> list:
    """What fetchone's read and decode give for ``reads`` packets of connection ``c`` (C first, or Python alone):
    each event as plain values (or the bytes the library would get), the error raised, the sequence number."""
    out: list = []
    for _ in range(reads):
        try:
            got = None
            if use_c:
                try:
                    got = fastevents._native.next(s, c)
                except OSError as exc:
                    raise c.read_failed(exc) from exc
            if got is None:
                got = c.next_data()
            if type(got) is bytes:
                got = s.decoded(got) or got
            out.append(_plain(got) if type(got) is not bytes else got)
        except Exception as exc:  # noqa: BLE001 - the error is what is compared
            out.append((type(exc), str(exc)))
            break
    return [*out, c._next_seq_id, s.log_pos]


def _cases() -> dict:
    """test_guarded_packets' streams, and one with a format description and a compressed rows event (which
    next_data hands to the Inflater: the C read must not take them)."""
    from tests.unit.readers.mysql.binlog.test_inflate import compressed, fde, packet
    from tests.unit.readers.mysql.test_guarded_packets import CASES, EVENTS, _packet

    rows = b"".join(struct.pack("<Bi", 0, i) for i in range(3))
    head = (42).to_bytes(6, "little") + b"\x01\x00" + bytes([1]) + b"\xff"
    parts = [fde(False), packet(0xA6, head + compressed(rows), checksum=False), EVENTS[0]]
    return {**CASES, "compressed": (b"".join(_packet(e, 1 + i) for i, e in enumerate(parts)), 3)}


CASES = _cases()


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("buffer_size", [8, 64, 8192])
def test_the_c_read_takes_packets_as_next_data_does(case, buffer_size):
    """The guarded connection's streams (events, wrong sequence numbers, error packets, cut connections, a packet
    of 16 MiB in parts, compressed events) through small and large socket buffers: the same events, errors and
    sequence numbers."""
    import io

    from tests.unit.readers.mysql.test_guarded_packets import _conn

    stream, reads = CASES[case]
    outcomes = []
    for use_c in (True, False):
        c = _conn(b"")
        c._rfile = io.BufferedReader(io.BytesIO(stream), buffer_size=buffer_size)
        c._force_close = lambda: None
        s = _stream(checksum=False, mariadb=True, lengths=None, filtered=False, ignore_errors=False, plan="made",
                    cached=False, table=_table())
        outcomes.append(_read_as_fetchone(s, c, use_c, reads))
    assert outcomes[0] == outcomes[1]


def test_the_c_read_leaves_a_handed_back_packet_or_pending_parts_to_python():
    from tests.unit.readers.mysql.test_guarded_packets import _conn

    s = _stream(checksum=False, mariadb=True, lengths=None, filtered=False, ignore_errors=False, plan="made",
                cached=False, table=_table())
    c = _conn(CASES["events"][0])
    c.unread(object())
    assert fastevents._native.next(s, c) is None
    c._unread, c._pending = None, [b"inflated part"]
    assert fastevents._native.next(s, c) is None
    c._pending, c._current_timeout = [], 5
    assert fastevents._native.next(s, c) is None
    c._current_timeout, c._inflater = 30, None
    assert fastevents._native.next(s, c) is None
    assert c._next_seq_id == 1 and c._rfile.read() == CASES["events"][0]  # nothing was read
