"""Compressed binlog events, turned into the plain events they stand for before the binlog library parses them.

Servers compress what they write to the binlog when told to, and send it to a replica as written:

* MariaDB ``log_bin_compress=ON``: a rows event or a statement longer than ``log_bin_compress_min_len``
  is written as ``*_ROWS_COMPRESSED_EVENT[_V1]`` (types 166-171) or ``QUERY_COMPRESSED_EVENT`` (165);
  shorter ones stay plain, so one transaction mixes both. Only the rows part (after the column bitmaps)
  or the statement text is compressed, behind a one-byte header: ``0x80 | algorithm << 4 | n`` followed by
  the uncompressed length in ``n`` big-endian bytes, then a zlib stream (MariaDB ``binlog_buf_compress``).
* MySQL 8.0.20+ ``binlog_transaction_compression=ON``: a transaction's events (everything between its
  GTID event and the end) travel inside one ``TRANSACTION_PAYLOAD_EVENT`` (type 40), zstd
  (readers/mysql/binlog/mysql8_events.py decodes the payload).

python-mysql-replication knows none of these; it would hand them back as unknown events, and a
reader that asked it for a fixed list of event classes never saw them. Here each such packet becomes
the packet(s) of the plain event(s) it holds: a plain rows or query event with the same header fields
(timestamp, server id, end position, flags), its size and checksum rewritten, so everything after
this layer (table maps, row decoding, positions) is the code that reads uncompressed binlogs.

Anything here that cannot be decoded (an algorithm other than zlib, a length that does not match, a
truncated event) raises :class:`CompressedEventError`: the reader stops before its checkpoint takes
the transaction.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable

from cdc.errors import CdcError
from readers.mysql.errors import CompressedEventError

QUERY_EVENT = 0x02
QUERY_COMPRESSED_EVENT = 0xA5
TRANSACTION_PAYLOAD_EVENT = 0x28
FORMAT_DESCRIPTION_EVENT = 0x0F
#: MariaDB compressed rows event type -> the plain type with the same layout
ROWS_COMPRESSED = {
    0xA6: 0x17, 0xA7: 0x18, 0xA8: 0x19,  # WRITE/UPDATE/DELETE_ROWS_COMPRESSED_EVENT_V1 -> *_ROWS_EVENT_V1
    0xA9: 0x1E, 0xAA: 0x1F, 0xAB: 0x20,  # WRITE/UPDATE/DELETE_ROWS_COMPRESSED_EVENT -> *_ROWS_EVENT_V2
}
_UPDATES = {0xA7, 0xAA}
_V2 = {0xA9, 0xAA, 0xAB}
COMPRESSED_TYPES = frozenset(ROWS_COMPRESSED) | {QUERY_COMPRESSED_EVENT, TRANSACTION_PAYLOAD_EVENT}
INFLATED = COMPRESSED_TYPES | {FORMAT_DESCRIPTION_EVENT}  # what the connection hands the Inflater (the FDE: its checksum)
EVENT_NAMES = {
    QUERY_COMPRESSED_EVENT: "QUERY_COMPRESSED_EVENT",
    0xA6: "WRITE_ROWS_COMPRESSED_EVENT_V1", 0xA7: "UPDATE_ROWS_COMPRESSED_EVENT_V1",
    0xA8: "DELETE_ROWS_COMPRESSED_EVENT_V1", 0xA9: "WRITE_ROWS_COMPRESSED_EVENT",
    0xAA: "UPDATE_ROWS_COMPRESSED_EVENT", 0xAB: "DELETE_ROWS_COMPRESSED_EVENT",
    TRANSACTION_PAYLOAD_EVENT: "TRANSACTION_PAYLOAD_EVENT",
}
_HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server_id, event_size, log_pos, flags
HEADER_LEN = 19
_MAX_RATIO = 1 << 12  # a zlib stream cannot inflate more than ~1032x; a bigger claimed length is garbage


def uncompress(buf: bytes, what: str) -> bytes:
    """The bytes behind a MariaDB compressed-binlog header (``binlog_buf_uncompress``)."""
    if not buf or buf[0] & 0x80 == 0:
        raise CompressedEventError(f"{what}: no compression header (first byte {buf[:1].hex() or 'missing'})",
                                   reason="header")
    algorithm, lenlen = (buf[0] & 0x70) >> 4, buf[0] & 0x07
    if algorithm != 0:
        raise CompressedEventError(f"{what}: compression algorithm {algorithm} is not zlib (0), the only one "
                                   "MariaDB writes", reason="algorithm")
    if not 1 <= lenlen <= 4 or len(buf) < 1 + lenlen:
        raise CompressedEventError(f"{what}: bad length-of-length {lenlen} in the compression header",
                                   reason="header")
    size = int.from_bytes(buf[1:1 + lenlen], "big")
    if size > _MAX_RATIO * max(len(buf), 64):
        raise CompressedEventError(f"{what}: claims {size} bytes uncompressed from {len(buf)}", reason="length")
    try:
        inflater = zlib.decompressobj()
        out = inflater.decompress(buf[1 + lenlen:], size + 1)
    except zlib.error as exc:
        raise CompressedEventError(f"{what}: zlib stream is corrupt: {exc}", reason="zlib") from None
    if len(out) != size or not inflater.eof:
        raise CompressedEventError(f"{what}: inflated to {len(out)} bytes, the header says {size}",
                                   reason="length")
    return out


def _packed_int_len(buf: bytes, at: int) -> tuple[int, int]:
    """(value, bytes used) of a length-encoded integer at ``at``."""
    first = buf[at]
    if first < 0xFB:
        return first, 1
    width = {0xFC: 2, 0xFD: 3, 0xFE: 8}.get(first)
    if width is None:
        raise CompressedEventError(f"bad length-encoded integer 0x{first:02x} at byte {at}", reason="header")
    return int.from_bytes(buf[at + 1:at + 1 + width], "little"), 1 + width


def _event(header: tuple, event_type: int, body: bytes, checksum: bool) -> bytes:
    """An event (OK byte, header, body, CRC32 when the stream carries checksums) with ``event_type``."""
    timestamp, _, server_id, _, log_pos, flags = header
    size = HEADER_LEN + len(body) + (4 if checksum else 0)
    raw = _HEADER.pack(timestamp, event_type, server_id, size, log_pos, flags) + body
    if checksum:
        raw += struct.pack("<I", zlib.crc32(raw))
    return b"\x00" + raw


def _rows(event_type: int, body: bytes, post_header_len: int) -> bytes:
    """A compressed rows event body -> the plain one: post-header, width, bitmaps, then the rows inflated."""
    at = post_header_len
    if event_type in _V2:  # extra data: its length includes its own 2 bytes
        at += max(2, int.from_bytes(body[at:at + 2], "little"))
    width, used = _packed_int_len(body, at)
    at += used + (width + 7) // 8 * (2 if event_type in _UPDATES else 1)
    if at > len(body):
        raise CompressedEventError(f"{EVENT_NAMES[event_type]} shorter ({len(body)} bytes) than its column bitmaps",
                                   reason="truncated")
    return body[:at] + uncompress(body[at:], EVENT_NAMES[event_type])


def _query(body: bytes) -> bytes:
    """A QUERY_COMPRESSED_EVENT body -> the plain query body (the statement text is what is compressed)."""
    if len(body) < 13:
        raise CompressedEventError("QUERY_COMPRESSED_EVENT shorter than its post-header", reason="truncated")
    db_len = body[8]
    status_len = int.from_bytes(body[11:13], "little")
    at = 13 + status_len + db_len + 1
    if at > len(body):
        raise CompressedEventError("QUERY_COMPRESSED_EVENT shorter than its status variables and database",
                                   reason="truncated")
    return body[:at] + uncompress(body[at:], "QUERY_COMPRESSED_EVENT")


class Inflater:
    """Turns each packet of a binlog dump into the packets of the plain events it holds.

    One per binlog connection. It follows the stream's FORMAT_DESCRIPTION_EVENT for the checksum
    setting and the rows events' post-header length. ``payload`` decodes a TRANSACTION_PAYLOAD_EVENT's
    body into its inner events (each header + body, no checksum); without one such an event is refused.
    """

    def __init__(self, payload: Callable[[bytes], list[bytes]] | None = None) -> None:
        self.checksum = False
        self.rows_post_header = 8
        self.payload = payload
        self.compressed_events = 0  # events inflated so far (for the metrics and the tests)

    def packets(self, data: bytes) -> list[bytes]:
        """``data``: one packet of the dump (OK byte + event). Returns it unchanged when plain."""
        if len(data) < 1 + HEADER_LEN or data[0] != 0:
            return [data]
        event_type = data[5]
        if event_type == FORMAT_DESCRIPTION_EVENT:
            self._format(data)
            return [data]
        if event_type not in COMPRESSED_TYPES:
            return [data]
        header = _HEADER.unpack_from(data, 1)
        end = len(data) - (4 if self.checksum else 0)
        body = data[1 + HEADER_LEN:end]
        where = f"end_log_pos {header[4]}"
        try:
            if event_type in ROWS_COMPRESSED:
                out = [_event(header, ROWS_COMPRESSED[event_type], _rows(event_type, body, self.rows_post_header),
                              self.checksum)]
            elif event_type == QUERY_COMPRESSED_EVENT:
                out = [_event(header, QUERY_EVENT, _query(body), self.checksum)]
            else:
                out = self._payload(header, body)
        except CompressedEventError as exc:
            raise CompressedEventError(f"{exc.message} ({where})", event_type=EVENT_NAMES[event_type],
                                       code=event_type, log_pos=header[4], **exc.fields) from None
        self.compressed_events += 1
        return out

    def _format(self, data: bytes) -> None:
        """Checksum algorithm (the FDE's byte before its own CRC) and the rows post-header length."""
        body = data[1 + HEADER_LEN:]
        if len(body) < 57 + 5:
            return
        self.checksum = body[-5] == 1  # BINLOG_CHECKSUM_ALG_CRC32
        lengths = body[57:-5]  # post-header length per event type, from type 1
        if len(lengths) >= 0x17:
            self.rows_post_header = lengths[0x17 - 1] or 8

    def _payload(self, header: tuple, body: bytes) -> list[bytes]:
        if self.payload is None:
            raise CompressedEventError("TRANSACTION_PAYLOAD_EVENT: no decoder for MySQL transaction payloads",
                                       reason="unsupported")
        try:
            inner_events = self.payload(body)
        except CdcError as exc:  # readers/mysql/binlog/mysql8_events.py: PayloadUndecodable
            raise CompressedEventError(f"TRANSACTION_PAYLOAD_EVENT: {exc.message}", reason="payload") from None
        out = []
        for inner in inner_events:
            if len(inner) < HEADER_LEN:
                raise CompressedEventError("TRANSACTION_PAYLOAD_EVENT: an inner event is shorter than a header",
                                           reason="truncated")
            timestamp, event_type, server_id, _, log_pos, flags = _HEADER.unpack_from(inner, 0)
            if event_type in COMPRESSED_TYPES:
                raise CompressedEventError("TRANSACTION_PAYLOAD_EVENT: a compressed event inside a payload",
                                           reason="nested")
            # inner events carry no position of their own: they take the payload's end position
            out.append(_event((timestamp, event_type, server_id, 0, log_pos or header[4], flags), event_type,
                              inner[HEADER_LEN:], self.checksum))
        return out
