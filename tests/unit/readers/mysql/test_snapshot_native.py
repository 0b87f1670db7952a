"""The snapshot's C row decoder (readers/mysql/_snapshot_native.c) on hand-made packets: the values PyMySQL's
row decoder makes of the same payload, and the packets it leaves to PyMySQL (an error, a continued 16 MB
packet, a row that does not fit its columns, a sequence id out of order) or waits for (a cut packet).

Fault injected: a decoder that took a row of too few values for a complete one, swallowed an error packet,
or ran past the end of the result set would publish wrong snapshot rows or hang the next query."""

from __future__ import annotations

from decimal import Decimal

import pytest
from pymysql.connections import MysqlPacket, MySQLResult

from readers.mysql.snapshot_rows import Shape

native = pytest.importorskip("readers.mysql._snapshot_native")


def lenenc(b: bytes | None) -> bytes:
    if b is None:
        return b"\xfb"
    n = len(b)
    if n < 251:
        return bytes([n]) + b
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little") + b
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little") + b
    return b"\xfe" + n.to_bytes(8, "little") + b


def packet(seq: int, payload: bytes) -> bytes:
    return len(payload).to_bytes(3, "little") + bytes([seq]) + payload


EOF = b"\xfe\x00\x00\x02\x00"
SPECS = ((2, "ascii", int, True, None, False), (1, "utf8", None, False, None, False),
         (0, "", None, False, None, False), (2, "ascii", Decimal, False, str, True),
         (2, "ascii", float, False, None, False))
RAW = tuple((*s[:4], None, False) for s in SPECS)  # no post: PyMySQL's values themselves
VALUES = [
    (b"1", "tëxt".encode(), b"\x00\xff", b"-1.50", b"0.1"),
    (b"-9223372036854775808", b"", b"", b"0", b"-3.4e38"),
    (b"18446744073709551615", b"x" * 300, b"y" * 70000, b"99999999999999.999999", b"1e300"),
    (None, None, None, None, None),
]


def pymysql_rows(payloads: list[bytes]) -> list[tuple]:
    """What PyMySQL's own row decoder makes of the payloads, with the same converters."""
    result = MySQLResult(None)  # its row decoder reads only the converters
    result.converters = [(enc if codec else None, conv) for codec, enc, conv, *_ in SPECS]
    return [result._read_row_from_packet(MysqlPacket(p, "utf8")) for p in payloads]


def stream(rows: list[tuple], seq: int = 5) -> tuple[bytes, list[bytes]]:
    payloads = [b"".join(lenenc(v) for v in r) for r in rows]
    data = b"".join(packet((seq + i) % 256, p) for i, p in enumerate(payloads))
    return data + packet((seq + len(rows)) % 256, EOF), payloads


def test_rows_decode_as_pymysql_decodes_them_then_the_eof_ends_them():
    data, payloads = stream(VALUES)
    out: list = []
    pos, seq, status = native.rows(data, 0, RAW, 5, out)
    assert (pos, seq, status) == (len(data), 5 + len(VALUES) + 1, native.END)
    assert out == pymysql_rows(payloads)
    assert [type(v) for v in out[0]] == [int, str, bytes, Decimal, float]
    assert out[2][0] == 18446744073709551615 and out[1][0] == -9223372036854775808  # past 18 digits: int()


def test_named_rows_are_dicts_with_post_called_as_the_shape_says():
    data, payloads = stream(VALUES)
    names = ("i", "s", "b", "d", "f")
    out: list = []
    native.rows(data, 0, SPECS, 5, out, names)
    shape = Shape(names, [(s[4], s[5]) for s in SPECS])
    assert out == [shape.row(r) for r in pymysql_rows(payloads)]
    assert out[0]["d"] == "-1.50" and out[3] == dict.fromkeys(names)


def test_a_cut_packet_waits_for_more_bytes_at_its_start():
    data, _ = stream(VALUES)
    first = 4 + data[0]
    out: list = []
    assert native.rows(data[:first + 3], 0, SPECS, 5, out) == (first, 6, native.NEED)
    assert native.rows(data[:first + 3], first, SPECS, 6, out) == (first, 6, native.NEED)
    assert native.rows(data, first, SPECS, 6, out)[2] == native.END
    assert len(out) == len(VALUES)


@pytest.mark.parametrize("bad", [
    packet(6, b"\xff\x15\x04#42000boom"),  # an error packet
    packet(7, lenenc(b"1") + lenenc(b"a")),  # a sequence id out of order
    packet(6, lenenc(b"1") + lenenc(b"a")),  # too few values
    packet(6, b"".join(lenenc(v) for v in VALUES[0]) + b"\x00"),  # a byte after the last value
    packet(6, b"".join(lenenc(v) for v in VALUES[0][:4]) + b"\x05ab"),  # a value past the payload
    b"\xff\xff\xff\x06" + b"\x00" * 64,  # the first of a continued (16 MB) packet
])
def test_a_packet_it_does_not_vouch_for_is_left_to_pymysql(bad):
    data, _ = stream(VALUES[:1])
    first = 4 + data[0]
    out: list = []
    assert native.rows(data[:first] + bad, 0, SPECS, 5, out) == (first, 6, native.OTHER)
    assert len(out) == 1


def test_a_value_that_does_not_decode_raises_as_pymysql_does():
    data, _ = stream([(b"1", b"\xff\xfe", b"", b"0", b"0")])
    with pytest.raises(UnicodeDecodeError):
        native.rows(data, 0, SPECS, 5, [])
    data, _ = stream([(b"1x", b"", b"", b"0", b"0")])
    with pytest.raises(ValueError, match="invalid literal for int"):
        native.rows(data, 0, SPECS, 5, [])
