"""readers/mysql/binlog/vector.py: the VECTOR_DIMENSIONALITY field is taken out of a TABLE_MAP's optional
metadata, the other fields stay byte for byte (the bytes are the layout MySQL 9.7.4 writes); a VECTOR counts among
the columns of the charset fields, as MySQL writes them."""

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


@pytest.mark.parametrize("field", ["DEFAULT_CHARSET", "COLUMN_CHARSET"])
def test_a_text_column_after_a_vector_keeps_its_own_character_set(field):
    """MySQL lists a VECTOR among the charset fields' columns (character set 63, binary): the utf8mb4 VARCHAR
    after it must come out utf8mb4, not binary (it was published as base64 of its bytes)."""
    from pymysqlreplication.column import Column
    from pymysqlreplication.constants import FIELD_TYPE as T
    from pymysqlreplication.row_event import OptionalMetaData, TableMapEvent

    from readers.mysql.binlog import vector

    vector.install()
    event = object.__new__(TableMapEvent)  # the parts of a parsed TABLE_MAP that the charset fields use
    event.table_id, event.schema, event.table, event.dbms = 1, "db", "t", "mysql"
    event._TableMapEvent__optional_meta_data = True
    event.columns = [Column(type=T.LONG, unsigned=False, is_primary=False),
                     Column(type=vector.VECTOR, length_size=4, is_primary=False),
                     Column(type=T.VARCHAR, max_length=80, is_primary=False)]
    event.column_count = len(event.columns)
    meta = event.optional_metadata = OptionalMetaData()
    meta.column_name_list = ["id", "emb", "txt"]
    if field == "DEFAULT_CHARSET":  # default utf8mb4_0900_ai_ci, the first character column binary
        meta.charset_collation_list = event._parsed_column_charset_by_default_charset(
            255, {0: 63}, event._is_character_column)
    else:  # one collation per character column, in column order
        meta.charset_collation_list = event._parsed_column_charset_by_column_charset(
            [63, 255], event._is_character_column)
    event._sync_column_info()
    assert [getattr(c, "character_set_name", None) for c in event.columns[1:]] == ["binary", "utf8"]
