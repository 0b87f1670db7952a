"""MySQL 9 ``VECTOR`` columns in the binlog, which python-mysql-replication 1.0.17 does not know.

Read off a real MySQL 9.7.4 server (tests/integration/test_mysql97_features.py):

- the TABLE_MAP gives the column type 242 (``MYSQL_TYPE_VECTOR``) one metadata byte, the length of its
  length prefix (4), as a BLOB has; the library reads no byte for an unknown type, which would shift the
  metadata of every later column, so :func:`install` reads it;
- the TABLE_MAP's optional metadata carries a field of type 13 (``VECTOR_DIMENSIONALITY``: one packed
  integer per VECTOR column) that the library's enum rejects (``13 is not a valid MetadataFieldType``),
  failing every event of the table; :func:`install` takes that field out before the library parses the rest
  and keeps the dimensions on the event (``vector_dimensions``) and on each VECTOR column (``dimensions``);
- MySQL lists a VECTOR column among the character columns of the optional metadata's DEFAULT_CHARSET and
  COLUMN_CHARSET fields (its character set: binary), which the library counts over its own list of character
  types: without VECTOR there, every character column after a VECTOR took the character set of the one before
  it (a utf8mb4 VARCHAR after a VECTOR came out binary, as base64), so :func:`install` adds VECTOR to that list;
- a row value is a 4-byte little-endian length and the stored bytes (float32 little-endian, dimension
  x 4 bytes). The reader publishes it as those bytes (base64 in the ordered stream, as BINARY), so nothing is
  rounded: the row passes (native_rows, fastrows) read it like a BLOB.
"""

from __future__ import annotations

from typing import Any

from pymysqlreplication import row_event
from pymysqlreplication.column import Column

VECTOR = 242  # MYSQL_TYPE_VECTOR (MySQL 9.0+)
VECTOR_DIMENSIONALITY = 13  # the optional-metadata field type
_CHECKSUM_LEN = 4


def _lenenc(raw: bytes, pos: int) -> tuple[int, int]:
    """A packed (length-encoded) integer of the TABLE_MAP optional metadata at ``pos``: (value, next pos)."""
    first = raw[pos]
    if first < 251:
        return first, pos + 1
    width = {252: 2, 253: 3, 254: 8}.get(first)
    if width is None or pos + 1 + width > len(raw):
        raise ValueError(f"bad packed integer 0x{first:02x} at byte {pos} of the TABLE_MAP optional metadata")
    return int.from_bytes(raw[pos + 1:pos + 1 + width], "little"), pos + 1 + width


def split_vector_dimensionality(raw: bytes) -> tuple[bytes, list[int]]:
    """The optional-metadata TLVs without the VECTOR_DIMENSIONALITY field, and that field's dimensions."""
    kept, dims, pos = bytearray(), [], 0
    while pos < len(raw):
        start = pos
        kind = raw[pos]
        length, pos = _lenenc(raw, pos + 1)
        end = pos + length
        if end > len(raw):
            raise ValueError(f"optional metadata field {kind} of {length} bytes runs past the TABLE_MAP")
        if kind == VECTOR_DIMENSIONALITY:
            at = pos
            while at < end:
                value, at = _lenenc(raw, at)
                dims.append(value)
        else:
            kept += raw[start:end]
        pos = end
    return bytes(kept), dims


_ORIGINAL_COLUMN = Column._Column__parse_column_definition
_ORIGINAL_OPTIONAL = row_event.TableMapEvent._get_optional_meta_data
_ORIGINAL_CHARACTER = row_event.TableMapEvent._is_character_column


def _parse_column_definition(self: Column, column_type: int, packet: Any) -> None:
    _ORIGINAL_COLUMN(self, column_type, packet)
    if column_type == VECTOR:
        self.length_size = packet.read_uint8()


def _get_optional_meta_data(self: Any) -> Any:
    packet = self.packet
    left = packet.bytes_to_read() - _CHECKSUM_LEN
    if left <= 0:
        return _ORIGINAL_OPTIONAL(self)
    kept, self.vector_dimensions = split_vector_dimensionality(packet.read(left))
    # the kept fields go back through the wrapper's buffer; the library loops while the underlying packet
    # has more than the checksum left, so for this parse count what is left of the buffer instead
    packet.unread(kept)
    start = packet.read_bytes
    packet.bytes_to_read = lambda: len(kept) - (packet.read_bytes - start) + _CHECKSUM_LEN
    try:
        meta = _ORIGINAL_OPTIONAL(self)
    finally:
        del packet.bytes_to_read
    vectors = [c for c in self.columns if c.type == VECTOR]
    for column, dims in zip(vectors, self.vector_dimensions):
        column.dimensions = dims  # readers/mysql/schema.py: type_text "vector(N)"
    return meta


def _is_character_column(column_type: int, dbms: str = "mysql") -> bool:
    """The library's test of a column with an entry in the charset fields, VECTOR included (MySQL lists it)."""
    return column_type == VECTOR or _ORIGINAL_CHARACTER(column_type, dbms=dbms)


def install() -> None:
    """Teach the library's TABLE_MAP the VECTOR column, its optional-metadata field and its entry in the
    charset fields. Idempotent."""
    Column._Column__parse_column_definition = _parse_column_definition
    row_event.TableMapEvent._get_optional_meta_data = _get_optional_meta_data
    row_event.TableMapEvent._is_character_column = staticmethod(_is_character_column)
