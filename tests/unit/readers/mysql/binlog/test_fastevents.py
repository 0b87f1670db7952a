"""readers/mysql/binlog/fastevents.py: the per-transaction events it decodes from packet bytes carry what the library's
events carry (recorded MySQL 8 binlogs; MariaDB GTID events built byte by byte), and every other event is left
to the library (None)."""

from __future__ import annotations

import struct
import zlib

import pytest
from pymysql.protocol import MysqlPacket
from pymysqlreplication import event as ev
from pymysqlreplication.packet import BinLogPacketWrapper

from readers.mysql.binlog import mysql8_events as m8
from readers.mysql.binlog.fastevents import FastBegin, FastGtid, FastXid, decode
from tests.unit.readers.mysql.binlog.test_mysql8_events import EVENTS, binlog_events, library_as_shipped, parse

__all__ = ["library_as_shipped"]  # its autouse fixture: the library's own decoders here too

RECORDED = ["binlog-invisible-columns.000001", "binlog_transaction_with_GTID_TAG.000001",
            "transaction_compression.000001"]


def _recorded(name: str) -> list[bytes]:
    """The file's events, and the events inside its compressed payloads as the inflater frames them (CRC32)."""
    out = []
    for e in binlog_events(name):
        out.append(e)
        if e[4] == m8.TRANSACTION_PAYLOAD_EVENT:
            out += [m8.checksummed(inner) for inner in m8.payload_events(e[19:-4])]
    return out


@pytest.mark.parametrize("name", RECORDED)
def test_recorded_mysql8_events_decode_as_the_library_reads_them(name):
    seen = set()
    for event in _recorded(name):
        fast = decode(b"\x00" + event, mariadb=False, checksum=True, query_post_header=13)
        lib = parse(event, {}) if event[4] != 0x13 and event[4] not in (0x1E, 0x1F, 0x20) else None
        if isinstance(lib, ev.GtidEvent):
            assert type(fast) is FastGtid and (fast.gtid, fast.timestamp, fast.flags) == (lib.gtid, lib.timestamp, 1)
            assert fast.log_pos == lib.packet.log_pos
        elif isinstance(lib, ev.XidEvent):
            assert type(fast) is FastXid and (fast.timestamp, fast.log_pos) == (lib.timestamp, lib.packet.log_pos)
        elif isinstance(lib, ev.QueryEvent) and lib.query == "BEGIN":
            assert type(fast) is FastBegin and fast.thread == lib.slave_proxy_id
            assert (fast.timestamp, fast.log_pos) == (lib.timestamp, lib.packet.log_pos)
        else:  # DDL, tagged GTID, anonymous GTID, payload, table maps, rows, rotate, FDE: the library's
            assert fast is None, (name, event[4])
            continue
        seen.add(type(fast))
    assert FastXid in seen and FastBegin in seen


def test_a_query_other_than_begin_or_a_mariadb_stream_leaves_mysql_events_to_the_library():
    events = _recorded("binlog-invisible-columns.000001")
    gtid = next(e for e in events if e[4] == 0x21)
    assert decode(b"\x00" + gtid, mariadb=True, checksum=True, query_post_header=13) is None
    begin = next(e for e in events if e[4] == 0x02 and e.endswith(b"BEGIN", 0, len(e) - 4))
    assert decode(b"\x00" + begin, mariadb=False, checksum=True, query_post_header=13) is not None
    assert decode(b"\x00" + begin, mariadb=False, checksum=True, query_post_header=14) is None
    assert decode(b"\x00" + begin[:-5], mariadb=False, checksum=True, query_post_header=13) is None  # size wrong
    commit = begin[:-9] + b"COMMIT"
    commit = commit[:9] + struct.pack("<I", len(commit) + 4) + commit[13:]
    commit += zlib.crc32(commit).to_bytes(4, "little")
    assert decode(b"\x00" + commit, mariadb=False, checksum=True, query_post_header=13) is None


class _MariaDB:
    charset = "utf8mb4"

    def _get_dbms(self) -> str:
        return "mariadb"


def _mariadb_event(code: int, body: bytes, server_id=7, log_pos=1234, checksum=True) -> bytes:
    size = 19 + len(body) + (4 if checksum else 0)
    e = struct.pack("<IBIIIH", 1_700_000_000, code, server_id, size, log_pos, 0) + body
    return e + zlib.crc32(e).to_bytes(4, "little") if checksum else e


def _library(event: bytes, checksum: bool):
    packet = MysqlPacket(b"\x00" + event, "utf8")
    return BinLogPacketWrapper(packet, {}, _MariaDB(), (10, 11, 0), checksum, [*EVENTS, ev.MariadbGtidEvent],
                               None, None, None, None, False, False, False, True, False).event


@pytest.mark.parametrize("checksum", [True, False])
@pytest.mark.parametrize("flags", [0x00, 0x01, 0x02 | 0x08, 0x20])
def test_mariadb_gtid_and_xid_decode_as_the_library_reads_them(checksum, flags):
    body = struct.pack("<QIB", 2**40 + 5, 3, flags) + (b"\x00" * 8 if flags & 0x02 else b"") + b"\x00" * 6
    gtid = _mariadb_event(0xA2, body, checksum=checksum)
    fast, lib = decode(b"\x00" + gtid, True, checksum, 13), _library(gtid, checksum)
    assert type(fast) is FastGtid and (fast.gtid, fast.flags, fast.timestamp) == (lib.gtid, lib.flags, lib.timestamp)
    assert fast.gtid == f"3-7-{2**40 + 5}" and fast.log_pos == 1234
    xid = _mariadb_event(0x10, struct.pack("<Q", 99), checksum=checksum)
    fast, lib = decode(b"\x00" + xid, True, checksum, 13), _library(xid, checksum)
    assert type(fast) is FastXid and (fast.timestamp, fast.log_pos) == (lib.timestamp, lib.packet.log_pos)


@pytest.mark.parametrize("xa_flag", [0x40, 0x80])
def test_a_mariadb_xa_gtid_is_left_to_the_library(xa_flag):
    body = struct.pack("<QIB", 5, 0, xa_flag) + struct.pack("<iBB", 1, 1, 0) + b"ab"
    assert decode(b"\x00" + _mariadb_event(0xA2, body), True, True, 13) is None


def test_short_or_foreign_packets_are_left_to_the_library():
    xid = _mariadb_event(0x10, struct.pack("<Q", 99))
    assert decode(b"\x00" + xid[:-1], True, True, 13) is None  # the header's size is not the packet's
    assert decode(b"\xff" + xid, True, True, 13) is None  # not an OK packet
    assert decode(b"\x00" + _mariadb_event(0x10, struct.pack("<Q", 99) + b"x"), True, True, 13) is None
    assert decode(b"\x00" + _mariadb_event(0xA2, b"\x00" * 12), True, True, 13) is None
    for code in (0x22, 0x2A, 0x26, 0x13, 0x17, 0x1E, 0x04, 0x0F, 0xA0, 0xA3, 0x1B, 0x28):
        assert decode(b"\x00" + _mariadb_event(code, b"\x00" * 60), True, True, 13) is None
        assert decode(b"\x00" + _mariadb_event(code, b"\x00" * 60), False, True, 13) is None
