"""The binlog connection's byte read for the fast events (readers/mysql/reader.py, ``_Guarded.next_data``) against
its own ``_read_packet`` (pymysql's read, guarded) over the same bytes: the same event bytes, the same sequence
numbers afterwards, and the same error for a wrong sequence number, a server error packet, a cut connection; a
packet of 16 MiB or more is joined from its parts as pymysql joins it."""

from __future__ import annotations

import io

import pytest

from readers.mysql.binlog.inflate import Inflater
from readers.mysql.reader import _Guarded

XID = 0x10


def _packet(payload: bytes, seq: int) -> bytes:
    return len(payload).to_bytes(3, "little") + bytes([seq]) + payload


def _event(body: bytes, code: int = XID) -> bytes:
    """An OK byte and a 19-byte event header (its size field right) before ``body``."""
    header = (1).to_bytes(4, "little") + bytes([code]) + (7).to_bytes(4, "little") \
        + (19 + len(body)).to_bytes(4, "little") + (99).to_bytes(4, "little") + b"\x00\x00"
    return b"\x00" + header + body


def _conn(stream: bytes, seq: int = 1) -> _Guarded:
    """A guarded connection after its dump command, reading ``stream`` (no socket)."""
    c = object.__new__(_Guarded)
    c._rfile, c._sock = io.BufferedReader(io.BytesIO(stream)), None
    c._next_seq_id, c._read_timeout, c._current_timeout = seq, 30, 30
    c._inflater, c._pending, c._unread = Inflater(), [], None
    c.encoding, c._result, c.host, c.port = "utf8", None, "h", 1
    return c


def _outcomes(stream: bytes, reads: int, fast: bool) -> list:
    c = _conn(stream)
    out: list = []
    for _ in range(reads):
        try:
            out.append(c.next_data() if fast else c._read_packet()._data)
        except Exception as exc:  # noqa: BLE001 - the error is what is compared
            out.append((type(exc), str(exc)))
            break
    out.append(c._next_seq_id)
    return out


def _error_packet(code: int, text: str) -> bytes:
    return b"\xff" + code.to_bytes(2, "little") + b"#HY000" + text.encode()


EVENTS = [_event(b"x" * 8), _event(b"y" * 8), _event(bytes(range(40)), 0x1E)]
CASES = {
    "events": (b"".join(_packet(e, 1 + i) for i, e in enumerate(EVENTS)), 3),
    "wrong sequence": (_packet(EVENTS[0], 1) + _packet(EVENTS[1], 5), 2),
    "sequence 0 (server shutting down)": (_packet(EVENTS[0], 1) + _packet(EVENTS[1], 0), 2),
    "error packet": (_packet(EVENTS[0], 1) + _packet(_error_packet(1236, "binlog purged"), 2), 2),
    "other error packet": (_packet(_error_packet(1045, "denied"), 1), 1),
    "cut in a header": (_packet(EVENTS[0], 1) + b"\x05\x00", 2),
    "cut in a body": (_packet(EVENTS[0], 1)[:-3], 1),
    "16 MiB in two parts": (_packet(_event(b"z" * (0xFFFFFF - 20)), 1) + _packet(b"tail", 2) + _packet(EVENTS[1], 3), 2),
}


@pytest.mark.parametrize("case", CASES)
def test_next_data_reads_what_read_packet_reads(case):
    stream, reads = CASES[case]
    fast, library = _outcomes(stream, reads, True), _outcomes(stream, reads, False)
    assert fast == library
    assert case == "events" or "16 MiB" in case or isinstance(fast[-2], tuple)  # the error cases did raise


def test_next_data_leaves_a_handed_back_packet_to_read_packet():
    c = _conn(_packet(EVENTS[0], 1))
    c.unread(object())
    assert c.next_data() is None
    c._unread = None
    c._current_timeout = 5  # the read timeout not set yet: pymysql's read sets it
    assert c.next_data() is None
    c._current_timeout = 30
    assert c.next_data() == EVENTS[0]


class _FailingRaw(io.RawIOBase):
    """A socket's bytes, then the socket fails (a read timeout, a reset)."""

    def __init__(self, data: bytes, error: OSError) -> None:
        self.data, self.error = data, error

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if not self.data:
            raise self.error
        n = min(len(b), len(self.data))
        b[:n] = self.data[:n]
        self.data = self.data[n:]
        return n


@pytest.mark.parametrize("error", [TimeoutError("timed out"), ConnectionResetError(104, "reset by peer")])
@pytest.mark.parametrize("cut", [0, 2, 10])
def test_a_socket_error_is_the_same_error_either_way(error, cut):
    stream = _packet(EVENTS[0], 1) + _packet(EVENTS[1], 2)[:cut]
    outcomes = []
    for fast in (True, False):
        c = _conn(b"")
        c._rfile = io.BufferedReader(_FailingRaw(stream, error), buffer_size=8)
        closed = []
        c._force_close = lambda closed=closed: closed.append(True)
        got = []
        for _ in range(2):
            try:
                got.append(c.next_data() if fast else c._read_packet()._data)
            except Exception as exc:  # noqa: BLE001 - the error is what is compared
                got.append((type(exc), str(exc)))
                break
        outcomes.append((got, c._next_seq_id, bool(closed)))
    assert outcomes[0] == outcomes[1]
    assert isinstance(outcomes[0][0][-1], tuple) and outcomes[0][2]  # raised, and the connection was closed
