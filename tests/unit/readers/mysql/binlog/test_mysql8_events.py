"""MySQL 8 events on real server bytes (tests/fixtures/mysql8/README.md says where each file came from).

Each recorded event is decoded twice: by readers.mysql.binlog.mysql8_events directly, and through
python-mysql-replication's own parser (BinLogPacketWrapper, the object its BinLogStreamReader builds
for every packet), rows included, with the table map from the same bytes.
"""

from __future__ import annotations

import datetime as dt
import struct
import zlib
from decimal import Decimal
from pathlib import Path

import pytest
from pymysql.protocol import MysqlPacket
from pymysqlreplication import event as ev
from pymysqlreplication import row_event as rows
from pymysqlreplication.packet import BinLogPacketWrapper

from readers.mysql.binlog import mysql8_events as m8
from readers.mysql.binlog.inflate import Inflater
from readers.mysql.errors import PayloadUndecodable, TaggedGtidUndecodable
from readers.mysql.position import GtidSet
from readers.mysql.schema import schema_from_table_map

FIXTURES = Path(__file__).parents[4] / "fixtures" / "mysql8"
EVENTS = [ev.QueryEvent, ev.XidEvent, ev.GtidEvent, ev.RotateEvent, ev.FormatDescriptionEvent, rows.TableMapEvent,
          rows.WriteRowsEvent, rows.UpdateRowsEvent, rows.DeleteRowsEvent, m8.GtidTaggedLogEvent]


@pytest.fixture(autouse=True)
def library_as_shipped():
    """These tests read recorded bytes through the library's own decoders: the reader's row decoders
    (readers/mysql/binlog/fastrows.py, installed process-wide once the reader is imported) are set aside."""
    from pymysqlreplication.row_event import RowsEvent, TableMapEvent

    from readers.mysql.binlog import fastrows

    saved = [(RowsEvent, n, RowsEvent.__dict__[n]) for n in ("_read_column_data", "_RowsEvent__read_time2",
                                                              "_fetch_rows")]
    saved.append((TableMapEvent, "__init__", TableMapEvent.__dict__["__init__"]))
    fastrows.uninstall()
    yield
    for cls, name, value in saved:
        setattr(cls, name, value)


def binlog_events(name: str) -> list[bytes]:
    """The events of a recorded binlog file, each with its header and CRC32."""
    data = (FIXTURES / name).read_bytes()
    assert data[:4] == b"\xfebin"
    out, pos = [], 4
    while pos < len(data):
        size = struct.unpack_from("<I", data, pos + 9)[0]
        out.append(data[pos:pos + size])
        pos += size
    assert pos == len(data)
    return out


def of_type(events: list[bytes], code: int) -> list[bytes]:
    return [e for e in events if e[4] == code]


class _ControlConnection:
    """What BinLogPacketWrapper asks of the stream's control connection for these events (no query is sent:
    every table map here carries its column names, or the test asks for none)."""

    charset = "utf8mb4"

    def _get_dbms(self) -> str:
        return "mysql"


def parse(event: bytes, table_map: dict, version=(8, 0, 32)):
    """One event (header + body + CRC32) through the library's parser, as its stream reader does."""
    m8.install()
    packet = MysqlPacket(b"\x00" + event, "utf8")  # the OK byte that starts every binlog network packet
    parsed = BinLogPacketWrapper(packet, table_map, _ControlConnection(), version, True, EVENTS, None, None, None,
                                 None, False, False, True, True, False).event
    assert parsed is None or parsed._is_event_valid, "the library checked the CRC32"
    return parsed


# -- the compressed transaction payload ---------------------------------------------------------------------
def test_inner_events_carry_no_checksum_while_the_binlog_does():
    events = binlog_events("transaction_compression.000001")
    fde, payload = events[0], of_type(events, m8.TRANSACTION_PAYLOAD_EVENT)[0]
    assert fde[-5] == 1, "the binlog was written with binlog_checksum=CRC32"
    assert zlib.crc32(payload[:-4]).to_bytes(4, "little") == payload[-4:]
    inner = m8.payload_events(payload[19:-4])
    for e in inner:
        assert struct.unpack_from("<I", e, 9)[0] == len(e), "the header's length covers the event, no CRC after it"
        assert zlib.crc32(e[:-4]).to_bytes(4, "little") != e[-4:]
        assert struct.unpack_from("<I", e, 13)[0] == 0, "inner events have no log position"


def test_recorded_payload_decodes_to_its_events_and_rows():
    events = binlog_events("transaction_compression.000001")
    payload = of_type(events, m8.TRANSACTION_PAYLOAD_EVENT)[0]
    header = m8.payload_header(payload[19:-4])
    assert (header.compression_name, header.uncompressed_size, header.payload_size) == ("ZSTD", 179, 124)
    inner = m8.payload_events(payload[19:-4])
    assert [e[4] for e in inner] == [2, 19, 30, 16]  # Query BEGIN, Table_map, Write_rows_v2, Xid
    assert sum(map(len, inner)) == 179
    table_map: dict = {}
    parsed = [parse(m8.checksummed(e), table_map) for e in inner]
    assert [type(p) for p in parsed] == [ev.QueryEvent, rows.TableMapEvent, rows.WriteRowsEvent, ev.XidEvent]
    assert parsed[0].query == "BEGIN"
    assert (parsed[1].schema, parsed[1].table) == ("test", "tb1")
    assert [r["values"] for r in parsed[2].rows] == [{"UNKNOWN_COL0": 1}]  # binlog_row_metadata=MINIMAL: no names
    assert parsed[3].xid == 462


def test_recorded_go_mysql_payload_decodes_insert_update_delete():
    """A MySQL 8.0.27 payload (zstd bytes only; the TLV header before them is written here in the server's
    encoding, since the corpus kept only the compressed bytes)."""
    zst = (FIXTURES / "go-mysql-8.0.27-payload.zst").read_bytes()
    body = bytes([2, 1, 0, 3, 3, 0xFC]) + (2442).to_bytes(2, "little") + bytes([1, 3, 0xFC]) \
        + len(zst).to_bytes(2, "little") + b"\x00" + zst
    inner = m8.payload_events(body)
    assert [e[4] for e in inner] == [2, 19, 30, 19, 31, 19, 32, 16]
    table_map: dict = {}
    parsed = [parse(m8.checksummed(e), table_map, (8, 0, 27)) for e in inner]
    assert (parsed[1].schema, parsed[1].table) == ("compression_test", "large_data")
    (written,) = parsed[2].rows
    assert written["values"]["UNKNOWN_COL0"] == 2 and len(written["values"]["UNKNOWN_COL1"]) == 640
    assert written["values"]["UNKNOWN_COL2"] == dt.datetime(2025, 3, 28, 9, 54, 29)
    updates = [(r["before_values"]["UNKNOWN_COL0"], r["after_values"]["UNKNOWN_COL1"]) for r in parsed[4].rows]
    assert updates == [(1, "updated"), (2, "updated")]
    assert [(r["values"]["UNKNOWN_COL0"], r["values"]["UNKNOWN_COL1"]) for r in parsed[6].rows] == [(1, "updated")]
    assert isinstance(parsed[7], ev.XidEvent)


def test_the_readers_inflater_splices_the_recorded_payload_at_its_position():
    """The reader's own path (readers/mysql/binlog/inflate.py, fed the whole recorded binlog as the dump sends it):
    the payload's inner events come out checksummed, at the payload event's end position, and decode."""
    events = binlog_events("transaction_compression.000001")
    outer = of_type(events, m8.TRANSACTION_PAYLOAD_EVENT)[0]
    end = struct.unpack_from("<I", outer, 13)[0]
    assert end == 431  # the offset of the Rotate event after it in the file
    inflater = Inflater(m8.payload_events)
    packets = [p for e in events for p in inflater.packets(b"\x00" + e)]
    assert inflater.checksum and inflater.compressed_events == 1
    assert [p[5] for p in packets if p[5] != m8.TRANSACTION_PAYLOAD_EVENT] == [p[5] for p in packets]
    table_map: dict = {}
    parsed = [parse(p[1:], table_map) for p in packets]
    inner = [p for p in parsed if p is not None and p.packet.log_pos == end]
    assert [type(p) for p in inner] == [ev.QueryEvent, rows.TableMapEvent, rows.WriteRowsEvent, ev.XidEvent]
    assert [r["values"] for r in inner[2].rows] == [{"UNKNOWN_COL0": 1}]


def test_uncompressed_payload_is_returned_as_is():
    inner = m8.payload_events(of_type(binlog_events("transaction_compression.000001"), 40)[0][19:-4])
    plain = b"".join(inner)
    body = bytes([2, 3, 0xFC, 0xFF, 0x00, 1, 3, 0xFC]) + len(plain).to_bytes(2, "little") + b"\x00" + plain
    assert m8.payload_header(body).compression_name == "NONE"
    assert m8.payload_events(body) == inner


def _body(events_name="transaction_compression.000001") -> bytes:
    return of_type(binlog_events(events_name), 40)[0][19:-4]


@pytest.mark.parametrize("mangle, what", [
    (lambda b: b[:2] + b"\x07" + b[3:], "compression type"),               # compression 7: not ZSTD, not NONE
    (lambda b: b[:-10], "payload size"),                                    # truncated event
    (lambda b: b[:10] + bytes([b[10] ^ 0xFF]) + b[11:], "zstd stream"),     # garbled zstd frame
    (lambda b: b[:5] + b"\xb4" + b[6:], "uncompressed size"),              # header says 180, stream gives 179
    (lambda b: b[:5] + b"\xb2" + b[6:], "uncompressed size"),              # header says 178
    (lambda b: b[:3] + b"\x03\x09\xfe" + (1 << 40).to_bytes(8, "little") + b[6:], "uncompressed size"),  # 1 TiB
    (lambda b: b[:6] + b[9:], "header fields missing"),                     # no payload size field
    (lambda b: b[:1], "ends inside"),                                       # header cut short
])
def test_broken_payloads_raise_a_terminal_error_naming_what(mangle, what):
    body = _body()
    assert body[:10].hex() == "0201000301b301017c00"  # compression ZSTD, uncompressed 179, payload 124, end
    with pytest.raises(PayloadUndecodable) as info:
        m8.payload_events(mangle(body))
    assert what == info.value.what or what in str(info.value)


def test_inner_event_running_past_the_payload_is_refused():
    inner = m8.payload_events(_body())
    plain = b"".join(inner)[:-5]  # the Xid event cut
    body = bytes([2, 3, 0xFC, 0xFF, 0x00, 1, 3, 0xFC]) + len(plain).to_bytes(2, "little") + b"\x00" + plain
    with pytest.raises(PayloadUndecodable, match="inner event 3 .type 16. says 27 bytes"):
        m8.payload_events(body)


# -- tagged GTIDs -------------------------------------------------------------------------------------------
UUID = "55778904-0299-11f1-b1b8-4ef0c4956feb"


def test_recorded_tagged_gtid_event_decodes():
    (raw,) = of_type(binlog_events("binlog_transaction_with_GTID_TAG.000001"), m8.TAGGED_GTID_EVENT)
    fields = m8.decode_tagged_gtid(raw[19:-4])
    assert fields.gtid == f"{UUID}:mytag:3"
    assert (fields.last_committed, fields.sequence_number, fields.transaction_length) == (0, 1, 296)
    assert fields.immediate_server_version == fields.original_server_version == 90600
    assert fields.original_commit_timestamp == fields.immediate_commit_timestamp == 1770368687207196
    assert GtidSet.of(fields.gtid) == GtidSet.parse(f"{UUID}:mytag:3")


def test_tagged_gtid_through_the_library_with_its_rows():
    events = binlog_events("binlog_transaction_with_GTID_TAG.000001")
    table_map: dict = {}
    parsed = [parse(e, table_map, (9, 6, 0)) for e in events[2:]]  # after the FDE and Previous_gtids
    gtid, begin, tmap, write, xid, _rotate = parsed
    assert isinstance(gtid, m8.GtidTaggedLogEvent)
    assert gtid.gtid == f"{UUID}:mytag:3" and (gtid.sid, gtid.tag, gtid.gno) == (UUID, "mytag", 3)
    assert gtid.timestamp == struct.unpack_from("<I", events[2])[0] == 1770368687  # header time, as GtidEvent
    assert begin.query == "BEGIN" and (tmap.schema, tmap.table) == ("test", "orders")
    assert [r["values"] for r in write.rows] == [{"UNKNOWN_COL0": 3, "UNKNOWN_COL1": 100,
                                                   "UNKNOWN_COL2": Decimal("250.00")}]
    assert isinstance(xid, ev.XidEvent)


def test_recorded_tagged_previous_gtids_is_the_set_the_server_wrote():
    (raw,) = of_type(binlog_events("binlog_transaction_with_GTID_TAG.000001"), 35)
    body = raw[19:-4]
    decoded = GtidSet.decode(body)
    assert str(decoded) == f"{UUID}:1-13:mytag:1-2"
    assert decoded.encode() == body


def _tagged_body() -> bytes:
    (raw,) = of_type(binlog_events("binlog_transaction_with_GTID_TAG.000001"), m8.TAGGED_GTID_EVENT)
    return raw[19:-4]


def test_resume_from_a_tagged_set_sends_what_the_server_writes_for_it():
    """The library's stream reader encodes its start set with the class install() puts in place: for the set the
    recorded server had executed, that is byte for byte the server's own encoding (its Previous_gtids body)."""
    import pymysqlreplication.binlogstream as stream

    (raw,) = of_type(binlog_events("binlog_transaction_with_GTID_TAG.000001"), 35)
    m8.install()
    start = stream.GtidSet(f"{UUID}:1-13:MyTag:1-2")
    assert start.encoded() == raw[19:-4] and start.encoded_length == len(raw) - 23
    from pymysqlreplication.gtid import GtidSet as LibraryGtidSet

    untagged = f"3e11fa47-71ca-11e1-9e33-c80aa9429562:5,{UUID}:1-13"  # uuid order: the library keeps the text's
    assert stream.GtidSet(untagged).encoded() == LibraryGtidSet(untagged).encoded()


def _resized(body: bytes) -> bytes:
    """``body`` with its message size (byte 1, one varlen byte) set to its length."""
    assert len(body) < 128
    return body[:1] + bytes([len(body) << 1]) + body[2:]


@pytest.mark.parametrize("make, what", [
    (lambda b: b"\x04" + b[1:], "serialization version"),                       # version 2
    (lambda b: b[:20], "message size"),                                          # says 60 bytes, holds 20
    (lambda b: _resized(b[:20]), "truncated inside the uuid"),                   # cut inside the uuid
    (lambda b: _resized(b[:2] + b"\x18" + b[3:] + b"\x18\x00"), "non-ignorable field 12"),  # a newer server's
    (lambda b: b"\x02\x0a\x00\x00\x00", "lacks its uuid, gno, tag"),            # flags only
])
def test_broken_tagged_gtid_raises_naming_what(make, what):
    with pytest.raises(TaggedGtidUndecodable, match=what):
        m8.decode_tagged_gtid(make(_tagged_body()))


def test_unknown_ignorable_trailing_field_is_skipped():
    body = _resized(_tagged_body() + b"\x18\x00")  # field 12, ignorable (last non-ignorable id stays 0)
    assert m8.decode_tagged_gtid(body).gtid == f"{UUID}:mytag:3"


def test_varlen_integers_match_the_documented_examples():
    # libs/mysql/serialization/readme.md: 65535 unsigned is 00000111 11111111 11111011 (big-endian display)
    assert m8._Reader(bytes([0b11111011, 0b11111111, 0b00000111])).unsigned("x") == 65535
    assert m8._Reader(bytes([0b11110011, 0b11111111, 0b00001111])).signed("x") == 65535
    assert m8._Reader(bytes([0b11101011, 0b11111111, 0b00001111])).signed("x") == -65535
    assert m8._Reader(bytes([0b11111011, 0b11111111, 0b00001111])).signed("x") == -65536
    assert m8._Reader(b"\xff" + (2**64 - 1).to_bytes(8, "little")).unsigned("x") == 2**64 - 1


# -- invisible columns ----------------------------------------------------------------------------------------
def test_invisible_columns_are_in_the_table_map_and_the_rows():
    """MySQL 8.0.26, ``t1`` with invisible columns f1, f2, f6 (COLUMN_VISIBILITY metadata, binlog_row_metadata=FULL):
    the binlog carries them like any column, and so does the schema the reader builds from the table map."""
    events = binlog_events("binlog-invisible-columns.000001")
    table_map: dict = {}
    parsed = [parse(e, table_map, (8, 0, 26)) for e in events]
    maps = [p for p in parsed if isinstance(p, rows.TableMapEvent)]
    assert maps[0].optional_metadata.visibility_list == [False, False, True, True, True, False]
    schema = schema_from_table_map(maps[0].get_table())
    assert [c.name for c in schema.columns] == ["f1", "f2", "f3", "f4", "f5", "f6"]
    written = [r["values"] for p in parsed if isinstance(p, rows.WriteRowsEvent) for r in p.rows]
    assert written[0] == {"f1": 1, "f2": 2, "f3": -3, "f4": "4", "f5": b"\x05", "f6": 6000000000}
    (update,) = [r for p in parsed if isinstance(p, rows.UpdateRowsEvent) for r in p.rows]
    assert (update["after_values"]["f1"], update["after_values"]["f2"]) == (111, 222)
