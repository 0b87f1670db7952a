"""readers/mysql/binlog/vector.py: the VECTOR_DIMENSIONALITY field is taken out of a TABLE_MAP's optional
metadata, the other fields stay byte for byte (the bytes are the layout MySQL 9.7.4 writes)."""

from __future__ import annotations

import pytest

from readers.mysql.binlog.vector import split_vector_dimensionality


def test_the_dimensions_are_taken_out_and_the_rest_kept():
    names = bytes([4, 7, 2]) + b"id" + bytes([3]) + b"emb"  # COLUMN_NAME: "id", "emb"
    dims = bytes([13, 4, 3, 0xFC, 0x00, 0x08])  # VECTOR_DIMENSIONALITY: 3 and 2048 (packed 0xfc + 2 bytes)
    visibility = bytes([12, 1, 0xC0])
    kept, got = split_vector_dimensionality(names + visibility + dims)
    assert kept == names + visibility and got == [3, 2048]
    assert split_vector_dimensionality(names) == (names, [])


def test_a_field_running_past_the_event_is_an_error_naming_it():
    with pytest.raises(ValueError, match="optional metadata field 13 of 9 bytes"):
        split_vector_dimensionality(bytes([13, 9, 3]))


def test_a_vector_value_is_its_stored_bytes_on_the_native_and_the_python_path():
    import base64
    import struct

    from pymysqlreplication.column import Column

    from readers.mysql.binlog.vector import VECTOR
    from tests.unit.readers.mysql.binlog.test_native_rows import _one, _pascal

    raw = struct.pack("<3f", 1.0, -2.5, 7.25)
    cols = [Column(type=VECTOR, name="v", unsigned=False, length_size=4)]
    _, images = _one(cols, [_pascal(raw, 4)])  # _one: both paths publish the same bytes
    assert images[0] == {"v": base64.b64encode(raw).decode()}
