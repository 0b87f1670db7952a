"""The spill chunk format: typed msgpack in one checked frame per chunk. Reading it never runs code.

Spill files hold row data of open transactions (cdc.spill.store). They used to be pickles, and
unpickling a file someone could write runs whatever it says; msgpack decodes to plain values only.

FRAME (one per chunk file)::

    MAGIC (8 bytes) | payload length (8, big-endian) | BLAKE2b-128 of length + payload (16) | payload

A file that is shorter or longer than its frame says, or whose digest does not match, raises
:class:`ChunkCorrupt` naming the file, the chunk number and the byte offset where it went wrong; it
never decodes into rows.

VALUES round-trip exactly: None, bool, int of any size, float (NaN, infinities, -0.0 included),
str, bytes, Decimal, datetime (naive or with a UTC offset; a zone object comes back as its offset at
that instant, the same instant), date, time, timedelta, dicts with any such keys. One normalisation:
lists and tuples both come back as tuples (msgpack has one array type, and what the store holds are
row tuples; tagging lists apart costs 30x in encoding). A value of any other type is refused when
written (:class:`TypeError` naming the type), never written in a form that reads back differently.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from decimal import Decimal
from typing import Any

import msgpack

MAGIC = b"CDCSPL1\n"
HEADER = len(MAGIC) + 8 + 16

# msgpack extension codes; their payloads are ASCII text the standard library parses
_BIGINT, _DECIMAL, _DATETIME, _DATE, _TIME, _TIMEDELTA = range(1, 7)
_DECODE = {
    _BIGINT: int,
    _DECIMAL: lambda b: Decimal(b.decode()),
    _DATETIME: lambda b: dt.datetime.fromisoformat(b.decode()),
    _DATE: lambda b: dt.date.fromisoformat(b.decode()),
    _TIME: lambda b: dt.time.fromisoformat(b.decode()),
    _TIMEDELTA: lambda b: dt.timedelta(*map(int, b.split(b","))),
}


class ChunkCorrupt(ValueError):
    """A chunk file's bytes are not the frame that was written: ``what`` went wrong at ``offset``."""

    def __init__(self, what: str, offset: int) -> None:
        super().__init__(f"{what} (at byte offset {offset})")
        self.what, self.offset = what, offset


def _default(value: Any) -> msgpack.ExtType:
    """The types msgpack has no native form for (datetime before date: a datetime is a date)."""
    if isinstance(value, int):  # beyond 64 bits
        return msgpack.ExtType(_BIGINT, str(value).encode())
    if isinstance(value, Decimal):
        return msgpack.ExtType(_DECIMAL, str(value).encode())
    if isinstance(value, dt.datetime):
        return msgpack.ExtType(_DATETIME, value.isoformat().encode())
    if isinstance(value, dt.date):
        return msgpack.ExtType(_DATE, value.isoformat().encode())
    if isinstance(value, dt.time):
        return msgpack.ExtType(_TIME, value.isoformat().encode())
    if isinstance(value, dt.timedelta):
        return msgpack.ExtType(_TIMEDELTA, f"{value.days},{value.seconds},{value.microseconds}".encode())
    raise TypeError(f"a spilled row holds a value of type {type(value).__qualname__}, which the spill format "
                    f"does not carry: {value!r:.80}")


def _ext(code: int, data: bytes) -> Any:
    try:
        return _DECODE[code](data)
    except KeyError:
        raise ValueError(f"unknown value tag {code}") from None


def encode(chunk: list) -> bytes:
    """One chunk's frame (header + payload). Raises TypeError for a value the format does not carry."""
    return frame(msgpack.packb(chunk, default=_default, use_bin_type=True, datetime=False))


def frame(payload: bytes | memoryview) -> bytes:
    """``payload`` in one checked frame (header + payload); the Arrow IPC spill (readers.oracle.columnar.arrow_spill)
    frames its chunks so too."""
    length = len(payload).to_bytes(8, "big")
    digest = hashlib.blake2b(length, digest_size=16)
    digest.update(payload)
    return b"".join((MAGIC, length, digest.digest(), payload))


def unframe(data: bytes) -> memoryview:
    """The payload of one frame, checked (length and digest). Raises :class:`ChunkCorrupt`."""
    if data[:len(MAGIC)] != MAGIC[:len(data)]:
        raise ChunkCorrupt("not a spill chunk (wrong magic bytes)", 0)
    if len(data) < HEADER:
        raise ChunkCorrupt(f"truncated: {len(data)} bytes, shorter than the {HEADER}-byte header", len(data))
    length = int.from_bytes(data[8:16], "big")
    if len(data) != HEADER + length:
        what = "truncated" if len(data) < HEADER + length else "trailing bytes"
        raise ChunkCorrupt(f"{what}: the header announces {length} payload bytes, the file holds "
                           f"{len(data) - HEADER}", min(len(data), HEADER + length))
    payload = memoryview(data)[HEADER:]
    digest = hashlib.blake2b(data[8:16], digest_size=16)
    digest.update(payload)
    if digest.digest() != data[16:32]:
        raise ChunkCorrupt("digest mismatch: the payload is not what was written", HEADER)
    return payload


def decode(data: bytes) -> Any:
    """The chunk of one frame, checked before it is decoded. Raises :class:`ChunkCorrupt`."""
    payload = unframe(data)
    try:
        return msgpack.unpackb(payload, ext_hook=_ext, raw=False, use_list=False, strict_map_key=False,
                               timestamp=0)
    except (ValueError, msgpack.UnpackException) as exc:  # only reachable with a forged digest
        raise ChunkCorrupt(f"undecodable payload: {exc}", HEADER) from None
