"""MySQL 8 binlog events that python-mysql-replication does not decode: the compressed transaction
payload (TRANSACTION_PAYLOAD_EVENT, type 40) and the tagged GTID (GTID_TAGGED_LOG_EVENT, type 42).

**TRANSACTION_PAYLOAD_EVENT** (``binlog_transaction_compression=ON``, MySQL 8.0.20+) carries a whole
transaction's events after its GTID event. Its body is a TLV header, then the payload::

    { field_type  field_length  value }*  0x00        every number a net_field_length (lenenc) integer
      1 = PAYLOAD_SIZE, 2 = COMPRESSION_TYPE (0 ZSTD, 255 NONE), 3 = UNCOMPRESSED_SIZE (absent for NONE)
    payload[PAYLOAD_SIZE]                             zstd frame(s), or the plain events for NONE

(mysql-server libs/mysql/binlog/event/codecs/binary.cpp, Transaction_payload::encode/decode). The
decompressed payload is the transaction's events back to back, each with its 19-byte common header.
Measured on the recorded bytes in tests/fixtures/mysql8/ (a MySQL 8.0.32 binlog written with
``binlog_checksum=CRC32`` and a MySQL 8.0.27 payload): **the inner events carry no CRC32** (each
event's length in its header covers header and body only, and no inner event ends with the CRC32 of
its bytes), and their ``log_pos`` (next position) is 0: only the enclosing event has a position and
a checksum. :func:`payload_events` returns them as they are; :func:`checksummed` frames one as a
checksummed stream's parser expects: header length + 4 and the CRC32 appended (python-mysql-replication,
told ``use_checksum``, takes the last 4 bytes of the header's length as the CRC32 and cuts a Query
event's text 4 bytes short without them; it also stops reading a table map's optional metadata 4 bytes
before the packet's end, so an inner event handed to it needs those 4 bytes either way).
The reader's inflater (readers/mysql/binlog/inflate.py) does both for a whole received payload event and
gives every inner event the enclosing event's ``log_pos``. The whole transaction is decompressed in memory (in 1 MiB reads, never
more than its stated size + 1 byte): a payload event is at most one binlog event (max_allowed_packet).

**GTID_TAGGED_LOG_EVENT** (MySQL 8.3+, written for a transaction whose GTID has a tag,
``uuid:tag:N``) is encoded in the mysql::serialization format (libs/mysql/serialization/readme.md):
a varlen serialization version (1), a varlen message size (the whole body), a varlen
last-non-ignorable field id, then ``field_id value`` pairs in the order of Gtid_event::define_fields
(control_events.h): 0 flags, 1 uuid (16 varlen bytes), 2 gno (signed), 3 tag (length + bytes),
4 last_committed (signed), 5 sequence_number (signed), 6 immediate_commit_timestamp (microseconds),
7 original_commit_timestamp, 8 transaction_length, 9 immediate_server_version,
10 original_server_version, 11 commit_group_ticket; 7, 10 and 11 are left out when they equal their
default. Varlen integers: the count of trailing one bits of the first byte + 1 is the byte count,
the remaining bits little-endian are the value; a signed value is zigzag-coded (sign in bit 0).

Every failure raises a Terminal error (PayloadUndecodable, TaggedGtidUndecodable) naming what was
wrong: nothing inside an event we cannot read is skipped. :func:`install` registers
:class:`GtidTaggedLogEvent` with python-mysql-replication and :class:`DumpGtidSet` for its
COM_BINLOG_DUMP_GTID request, so a checkpoint holding tagged GTIDs can be resumed from.
"""

from __future__ import annotations

import struct
import uuid as _uuid
import zlib
from dataclasses import dataclass
from typing import Any

import zstandard
from pymysqlreplication.event import BinLogEvent

from readers.mysql.errors import PayloadUndecodable, TaggedGtidUndecodable

TRANSACTION_PAYLOAD_EVENT = 40
TAGGED_GTID_EVENT = 42
HEADER_LEN = 19  # timestamp 4, type 1, server_id 4, event_size 4, log_pos 4, flags 2

ZSTD, NONE = 0, 255
_COMPRESSION = {ZSTD: "ZSTD", NONE: "NONE"}
_END, _PAYLOAD_SIZE, _COMPRESSION_TYPE, _UNCOMPRESSED_SIZE = 0, 1, 2, 3
_CHUNK = 1 << 20


# -- TRANSACTION_PAYLOAD_EVENT ---------------------------------------------------------------------
def _lenenc(body: bytes, pos: int, what: str) -> tuple[int, int]:
    """One net_field_length integer at ``pos``: (value, next pos)."""
    if pos >= len(body):
        raise PayloadUndecodable(f"transaction payload header ends inside {what}", what=what)
    first = body[pos]
    width = {0xFC: 2, 0xFD: 3, 0xFE: 8}.get(first)
    if width is None:
        if first == 0xFB or first == 0xFF:
            raise PayloadUndecodable(f"transaction payload header: {what} starts with 0x{first:02x}", what=what)
        return first, pos + 1
    if pos + 1 + width > len(body):
        raise PayloadUndecodable(f"transaction payload header ends inside {what}", what=what)
    return int.from_bytes(body[pos + 1:pos + 1 + width], "little"), pos + 1 + width


@dataclass(frozen=True)
class PayloadHeader:
    """The TLV fields of a TRANSACTION_PAYLOAD_EVENT body; ``start``: offset of the payload in the body."""

    payload_size: int
    compression: int
    uncompressed_size: int | None
    start: int

    @property
    def compression_name(self) -> str:
        return _COMPRESSION.get(self.compression, f"unknown ({self.compression})")


def payload_header(body: bytes) -> PayloadHeader:
    """Decode the TLV header. Unknown field types are skipped by their length (as the server does);
    a missing payload size or compression type, or a payload size past the body, raises."""
    pos, fields = 0, {}
    while True:
        ftype, pos = _lenenc(body, pos, "a field type")
        if ftype == _END:
            break
        length, pos = _lenenc(body, pos, f"the length of field {ftype}")
        if ftype in (_PAYLOAD_SIZE, _COMPRESSION_TYPE, _UNCOMPRESSED_SIZE):
            value, after = _lenenc(body, pos, f"the value of field {ftype}")
            if after - pos != length:
                raise PayloadUndecodable(f"transaction payload header: field {ftype} says {length} bytes, its value "
                                         f"takes {after - pos}", what="header field length")
            fields[ftype] = value
        elif pos + length > len(body):
            raise PayloadUndecodable(f"transaction payload header: field {ftype} runs past the event",
                                     what="header field length")
        pos += length
    if _PAYLOAD_SIZE not in fields or _COMPRESSION_TYPE not in fields:
        missing = [n for t, n in ((_PAYLOAD_SIZE, "payload size"), (_COMPRESSION_TYPE, "compression type"))
                   if t not in fields]
        raise PayloadUndecodable(f"transaction payload header lacks its {' and '.join(missing)}",
                                 what="header fields missing")
    header = PayloadHeader(fields[_PAYLOAD_SIZE], fields[_COMPRESSION_TYPE], fields.get(_UNCOMPRESSED_SIZE), pos)
    if header.payload_size != len(body) - pos:
        raise PayloadUndecodable(
            f"transaction payload: the header says {header.payload_size} payload bytes, the event holds "
            f"{len(body) - pos} (truncated or garbled event)", what="payload size",
            payload_size=header.payload_size, compression=header.compression_name)
    return header


def _inflate(payload: bytes, header: PayloadHeader) -> bytes:
    if header.compression == NONE:
        return payload
    if header.compression != ZSTD:
        raise PayloadUndecodable(
            f"transaction payload compressed with {header.compression_name}: this reader decodes ZSTD and NONE "
            "(binlog_transaction_compression writes ZSTD); a newer server's algorithm needs a newer reader",
            what="compression type", compression=header.compression_name)
    limit = header.uncompressed_size
    chunks: list[bytes] = []
    total = 0
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(payload, read_across_frames=True)
        # in bounded chunks: a garbled size field must not size a buffer; stop one byte past the stated size
        while limit is None or total <= limit:
            chunk = reader.read(_CHUNK)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        raw = b"".join(chunks)
    except zstandard.ZstdError as exc:
        raise PayloadUndecodable(f"transaction payload: the zstd stream does not decompress: {exc}",
                                 what="zstd stream", compression="ZSTD", payload_size=header.payload_size,
                                 uncompressed_size=limit) from exc
    if limit is not None and len(raw) != limit:
        raise PayloadUndecodable(
            f"transaction payload: the header says {limit} bytes uncompressed, the zstd stream gives "
            f"{'more' if len(raw) > limit else len(raw)}", what="uncompressed size", compression="ZSTD",
            payload_size=header.payload_size, uncompressed_size=limit)
    return raw


def payload_events(body: bytes) -> list[bytes]:
    """The events inside a TRANSACTION_PAYLOAD_EVENT, in order.

    ``body``: the event's bytes after its 19-byte common header, its CRC32 (if the binlog has one)
    already removed. Returns each inner event as raw bytes starting with its own 19-byte common
    header, without a checksum (inner events have none; see the module docstring). Raises
    PayloadUndecodable for an unknown compression type, a truncated or garbled payload, a size that
    does not add up, or an inner event whose length runs past the payload or is shorter than a header.
    """
    header = payload_header(bytes(body))
    raw = _inflate(bytes(body[header.start:]), header)
    events: list[bytes] = []
    pos = 0
    while pos < len(raw):
        if len(raw) - pos < HEADER_LEN:
            raise PayloadUndecodable(f"transaction payload: {len(raw) - pos} stray bytes after event {len(events)}",
                                     what="inner event header", compression=header.compression_name)
        size = struct.unpack_from("<I", raw, pos + 9)[0]
        if size < HEADER_LEN or pos + size > len(raw):
            raise PayloadUndecodable(
                f"transaction payload: inner event {len(events)} (type {raw[pos + 4]}) says {size} bytes, "
                f"{len(raw) - pos} are left", what="inner event length", compression=header.compression_name)
        events.append(raw[pos:pos + size])
        pos += size
    if not events:
        raise PayloadUndecodable("transaction payload holds no events", what="empty payload",
                                 compression=header.compression_name)
    return events


def checksummed(event: bytes) -> bytes:
    """An inner event framed as a ``binlog_checksum=CRC32`` stream frames every event: the length in its
    header grown by 4 and the CRC32 of the result appended (a parser told the stream has checksums takes
    the last 4 bytes of the header's length as the CRC32)."""
    framed = bytearray(event)
    struct.pack_into("<I", framed, 9, len(event) + 4)
    return bytes(framed) + struct.pack("<I", zlib.crc32(framed) & 0xFFFFFFFF)


# -- GTID_TAGGED_LOG_EVENT -------------------------------------------------------------------------
class _Reader:
    """Reads mysql::serialization varlen integers and strings from ``data``; errors name ``what``."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def _fail(self, what: str) -> TaggedGtidUndecodable:
        return TaggedGtidUndecodable(f"tagged GTID event: truncated inside {what} at byte {self.pos}", what=what)

    def unsigned(self, what: str) -> int:
        if self.pos >= len(self.data):
            raise self._fail(what)
        first = self.data[self.pos]
        count = 9 if first == 0xFF else (~first & (first + 1)).bit_length()  # trailing ones + 1
        if self.pos + count > len(self.data):
            raise self._fail(what)
        rest = int.from_bytes(self.data[self.pos + 1:self.pos + count], "little")
        self.pos += count
        if count == 9:
            return rest
        return (first >> count) | (rest << (8 - count))

    def signed(self, what: str) -> int:
        v = self.unsigned(what)
        return (v >> 1) ^ -(v & 1)

    def text(self, what: str) -> bytes:
        n = self.unsigned(f"the length of {what}")
        if self.pos + n > len(self.data):
            raise self._fail(what)
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out


_FIELDS = ("flags", "uuid", "gno", "tag", "last_committed", "sequence_number", "immediate_commit_timestamp",
           "original_commit_timestamp", "transaction_length", "immediate_server_version",
           "original_server_version", "commit_group_ticket")
_SIGNED = {"gno", "last_committed", "sequence_number"}
SERIALIZATION_VERSION = 1


@dataclass(frozen=True)
class TaggedGtid:
    """The fields of one GTID_TAGGED_LOG_EVENT body (timestamps in microseconds since the epoch)."""

    uuid: str
    tag: str
    gno: int
    flags: int
    last_committed: int
    sequence_number: int
    immediate_commit_timestamp: int
    original_commit_timestamp: int
    transaction_length: int
    immediate_server_version: int
    original_server_version: int

    @property
    def gtid(self) -> str:
        return f"{self.uuid}:{self.tag}:{self.gno}" if self.tag else f"{self.uuid}:{self.gno}"


def decode_tagged_gtid(body: bytes) -> TaggedGtid:
    """Decode a GTID_TAGGED_LOG_EVENT body (after the 19-byte header, checksum removed)."""
    r = _Reader(bytes(body))
    version = r.unsigned("the serialization version")
    if version != SERIALIZATION_VERSION:
        raise TaggedGtidUndecodable(f"tagged GTID event: serialization version {version}, this reader knows "
                                    f"{SERIALIZATION_VERSION}", what="serialization version")
    size = r.unsigned("the message size")
    if size > len(r.data):
        raise TaggedGtidUndecodable(f"tagged GTID event: the message says {size} bytes, the event holds "
                                    f"{len(r.data)}", what="message size")
    r.data = r.data[:size]
    last_non_ignorable = r.unsigned("the last non-ignorable field id")
    got: dict[str, Any] = {}
    while r.pos < len(r.data):
        fid = r.unsigned("a field id")
        if fid >= len(_FIELDS):
            if fid <= last_non_ignorable:
                raise TaggedGtidUndecodable(f"tagged GTID event: non-ignorable field {fid} is unknown to this "
                                            "reader (a newer server's event)", what=f"field {fid}")
            break  # ignorable fields of a newer server come last and cannot be sized: the GTID is read
        name = _FIELDS[fid]
        if name == "uuid":
            raw = [r.unsigned("the uuid") for _ in range(16)]
            if any(b > 255 for b in raw):
                raise TaggedGtidUndecodable("tagged GTID event: uuid byte out of range", what="uuid")
            got[name] = str(_uuid.UUID(bytes=bytes(raw)))
        elif name == "tag":
            got[name] = r.text("the tag").decode("ascii", "replace").lower()
        else:
            got[name] = r.signed(name) if name in _SIGNED else r.unsigned(name)
    missing = [n for n in ("uuid", "gno", "tag") if n not in got]
    if missing:
        raise TaggedGtidUndecodable(f"tagged GTID event lacks its {', '.join(missing)}", what="fields missing")
    if got["gno"] < 1:
        raise TaggedGtidUndecodable(f"tagged GTID event: transaction number {got['gno']} is below 1", what="gno")
    ts = got.get("immediate_commit_timestamp", 0)
    version_now = got.get("immediate_server_version", 0)
    return TaggedGtid(
        uuid=got["uuid"], tag=got["tag"], gno=got["gno"], flags=got.get("flags", 0),
        last_committed=got.get("last_committed", 0), sequence_number=got.get("sequence_number", 0),
        immediate_commit_timestamp=ts, original_commit_timestamp=got.get("original_commit_timestamp", ts),
        transaction_length=got.get("transaction_length", 0), immediate_server_version=version_now,
        original_server_version=got.get("original_server_version", version_now))


class GtidTaggedLogEvent(BinLogEvent):
    """python-mysql-replication event for GTID_TAGGED_LOG_EVENT (type 42): ``.gtid`` is ``uuid:tag:N``,
    ``.timestamp`` the header's commit time in seconds (as the library's GtidEvent), plus ``.sid``
    (the uuid text), ``.tag``, ``.gno``, ``.last_committed``, ``.sequence_number`` and ``.fields``
    (:class:`TaggedGtid`). Raises TaggedGtidUndecodable when the body does not decode."""

    def __init__(self, from_packet: Any, event_size: int, table_map: Any, ctl_connection: Any, **kwargs: Any) -> None:
        super().__init__(from_packet, event_size, table_map, ctl_connection, **kwargs)
        self.fields = decode_tagged_gtid(self.packet.read(event_size))
        self.sid, self.tag, self.gno = self.fields.uuid, self.fields.tag, self.fields.gno
        self.last_committed, self.sequence_number = self.fields.last_committed, self.fields.sequence_number
        self.commit_flag = bool(self.fields.flags & 1)

    @property
    def gtid(self) -> str:
        return self.fields.gtid

    def _dump(self) -> None:
        print(f"GTID_NEXT: {self.gtid}")

    def __repr__(self) -> str:
        return f'<GtidTaggedLogEvent "{self.gtid}">'


class DumpGtidSet:
    """Stands in for python-mysql-replication's ``GtidSet`` where its stream reader encodes ``auto_position`` for
    COM_BINLOG_DUMP_GTID: the library's own class rejects a tagged set (``uuid:1-5:tag:1-3``) as malformed,
    so a reader whose checkpoint holds a tagged GTID could not resume. Same bytes as the library's for an
    untagged set; the MySQL 8.3+ tagged format otherwise (readers.mysql.position.GtidSet.encode)."""

    def __init__(self, text: str) -> None:
        from readers.mysql.position import GtidSet

        self._bytes = GtidSet.parse(text).encode()

    @property
    def encoded_length(self) -> int:
        return len(self._bytes)

    def encoded(self) -> bytes:
        return self._bytes

    encode = encoded


def install() -> None:
    """Make python-mysql-replication build :class:`GtidTaggedLogEvent` for type 42 (it otherwise hands back a
    NotImplementedEvent) and encode the stream's start GTID set with :class:`DumpGtidSet` (tagged sets
    included). Idempotent; the reader must still ask for the class in ``only_events``."""
    from pymysqlreplication import binlogstream
    from pymysqlreplication.packet import BinLogPacketWrapper

    BinLogPacketWrapper._BinLogPacketWrapper__event_map[TAGGED_GTID_EVENT] = GtidTaggedLogEvent  # type: ignore[attr-defined]
    binlogstream.GtidSet = DumpGtidSet  # type: ignore[attr-defined,misc]  # only used for auto_position there
