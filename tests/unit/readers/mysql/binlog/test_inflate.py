"""readers/mysql/binlog/inflate.py on hand-built packets: MariaDB's compression header, rows and query bodies."""

from __future__ import annotations

import struct
import zlib

import pytest

from readers.mysql.binlog.inflate import Inflater, uncompress
from readers.mysql.errors import CompressedEventError


def compressed(data: bytes, lenlen: int | None = None, algorithm: int = 0) -> bytes:
    """MariaDB binlog_buf_compress: 0x80 | alg << 4 | lenlen, the length big-endian, the zlib stream."""
    lenlen = lenlen or max(1, (len(data).bit_length() + 7) // 8)
    return bytes([0x80 | algorithm << 4 | lenlen]) + len(data).to_bytes(lenlen, "big") + zlib.compress(data)


def packet(event_type: int, body: bytes, checksum: bool = True, log_pos: int = 4242) -> bytes:
    raw = struct.pack("<IBIIIH", 1700000000, event_type, 7, 19 + len(body) + (4 if checksum else 0), log_pos, 0) + body
    return b"\x00" + raw + (struct.pack("<I", zlib.crc32(raw)) if checksum else b"")


def fde(checksum: bool) -> bytes:
    """A FORMAT_DESCRIPTION_EVENT: version, server version, timestamp, header length, post-header lengths,
    checksum algorithm (+ its CRC, present either way as servers write it)."""
    lengths = bytes([56, 13, 0, 8, 0, 18, 0, 4, 4, 4, 4, 18, 0, 0, 95, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0, 10,
                     10, 10, 42, 42, 0, 18, 52])
    body = struct.pack("<H", 4) + b"10.11.9-MariaDB".ljust(50, b"\0") + struct.pack("<I", 0) + bytes([19]) + lengths
    return packet(0x0F, body + bytes([1 if checksum else 0]) + b"\0\0\0\0", checksum=False)


@pytest.mark.parametrize("size, lenlen", [(0, None), (1, None), (255, None), (256, None), (70_000, None),
                                          (70_000, 4), (3, 4)])
def test_uncompress_round_trips_every_length_width(size, lenlen):
    data = bytes(i % 251 for i in range(size))
    assert uncompress(compressed(data, lenlen), "x") == data


@pytest.mark.parametrize("bad, reason", [
    (b"", "header"), (b"\x01abc", "header"), (compressed(b"abc", algorithm=1), "algorithm"),
    (bytes([0x80]) + b"", "header"), (compressed(b"abcdef")[:-3], "length"), (compressed(b"abc")[:3] + b"xx", "zlib"),
    (bytes([0x81, 9]) + zlib.compress(b"abc"), "length"),  # says 9, holds 3
    (bytes([0x84]) + (2**31).to_bytes(4, "big") + zlib.compress(b"a"), "length"),
])
def test_uncompress_refuses_what_it_cannot_vouch_for(bad, reason):
    with pytest.raises(CompressedEventError) as err:
        uncompress(bad, "WRITE_ROWS_COMPRESSED_EVENT_V1")
    assert err.value.reason == reason and "WRITE_ROWS_COMPRESSED_EVENT_V1" in str(err.value)


@pytest.mark.parametrize("checksum", [True, False])
def test_rows_and_query_events_become_the_plain_ones(checksum):
    inf = Inflater()
    assert inf.packets(fde(checksum)) == [fde(checksum)] and inf.checksum is checksum
    rows = b"".join(struct.pack("<Bi", 0, i) for i in range(100))  # null bitmap + INT, per row
    head = (42).to_bytes(6, "little") + b"\x01\x00" + bytes([1]) + b"\xff"  # table id, flags, width 1, bitmap
    [plain] = inf.packets(packet(0xA6, head + compressed(rows), checksum))
    assert plain == packet(0x17, head + rows, checksum)
    update_head = head + b"\xff"  # UPDATE: before and after bitmaps
    [plain] = inf.packets(packet(0xA7, update_head + compressed(rows * 2), checksum))
    assert plain == packet(0x18, update_head + rows * 2, checksum)
    v2_head = (42).to_bytes(6, "little") + b"\x01\x00" + b"\x04\x00\xaa\xbb" + bytes([1]) + b"\xff"  # extra data
    [plain] = inf.packets(packet(0xAB, v2_head + compressed(rows), checksum))
    assert plain == packet(0x20, v2_head + rows, checksum)
    query = b"INSERT INTO t VALUES " + b"(1)," * 500 + b"(2)"
    qhead = struct.pack("<IIBHH", 9, 0, 4, 0, 3) + b"\x00\x01\x02" + b"shop\x00"  # status vars 3 bytes, db "shop"
    [plain] = inf.packets(packet(0xA5, qhead + compressed(query), checksum))
    assert plain == packet(0x02, qhead + query, checksum)
    assert inf.compressed_events == 4


def test_plain_and_error_packets_pass_untouched():
    inf = Inflater()
    for p in (packet(0x17, b"abc"), b"\xff\x15\x04#HY000 error", b"\xfe\x00\x00"):
        assert inf.packets(p) == [p]


def test_a_broken_compressed_event_names_the_event_and_its_position():
    with pytest.raises(CompressedEventError) as err:
        Inflater().packets(packet(0xA8, (1).to_bytes(6, "little") + b"\0\0" + b"\x01\xff" + b"\x80garbage"))
    assert err.value.event_type == "DELETE_ROWS_COMPRESSED_EVENT_V1" and err.value.log_pos == 4242
    assert "end_log_pos 4242" in str(err.value)


def test_a_transaction_payload_without_a_decoder_is_refused():
    with pytest.raises(CompressedEventError, match="TRANSACTION_PAYLOAD_EVENT"):
        Inflater().packets(packet(0x28, b"\x00" * 8))


def test_payload_inner_events_get_the_payload_position_and_the_stream_checksum():
    inner = [struct.pack("<IBIIIH", 1, 0x02, 7, 19 + 3, 0, 0) + b"abc",
             struct.pack("<IBIIIH", 1, 0x10, 7, 19 + 8, 0, 0) + (5).to_bytes(8, "little")]
    inf = Inflater(payload=lambda body: inner)
    inf.checksum = True
    out = inf.packets(packet(0x28, b"payload", log_pos=999))
    assert [p[5] for p in out] == [0x02, 0x10]
    assert all(struct.unpack_from("<I", p, 1 + 13)[0] == 999 for p in out)
    assert all(zlib.crc32(p[1:-4]) == struct.unpack("<I", p[-4:])[0] for p in out)
