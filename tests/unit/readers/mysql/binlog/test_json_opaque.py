"""readers/mysql/binlog/json_opaque.py: a date, time or binary string inside a MySQL JSON document (an opaque
value in the binary JSON of the binlog) reads as the text MySQL's ``CAST(doc AS CHAR)`` prints (the texts below
are MySQL 9.7.4's for the same values), and the document becomes the stream's JSON text (was: a DecodeError,
the library's ``datetime`` is no JSON)."""

from __future__ import annotations

import struct

import pytest
from pymysqlreplication import json_binary
from pymysqlreplication.constants import FIELD_TYPE as T

from cdc.schema.values import json_text
from readers.mysql.binlog import json_opaque


def _datetime(y, mo, d, h=0, mi=0, s=0, us=0) -> bytes:
    """MySQL's packed temporal int64 of a date and time (little-endian)."""
    whole = (((y * 13 + mo) << 5 | d) << 17) | (h << 12 | mi << 6 | s)
    return struct.pack("<q", (whole << 24) + us)


def _time(negative, h, mi, s, us=0) -> bytes:
    v = ((h << 12 | mi << 6 | s) << 24) + us
    return struct.pack("<q", -v if negative else v)


def _opaque(field_type: int, payload: bytes) -> bytes:
    return bytes([field_type, len(payload)]) + payload


def _array(*opaques: bytes) -> bytes:
    """A small JSON array of opaque values: count, size, one (type, offset) entry each, then the values."""
    head = 4 + 3 * len(opaques)
    entries, values = b"", b""
    for o in opaques:
        entries += bytes([json_binary.JSONB_TYPE_OPAQUE]) + struct.pack("<H", head + len(values))
        values += o
    return struct.pack("<HH", len(opaques), head + len(values)) + entries + values


@pytest.mark.parametrize(("field_type", "payload", "text"), [
    (T.DATE, _datetime(2024, 2, 29), "2024-02-29"),
    (T.DATETIME, _datetime(2024, 1, 1, 10, 0, 0, 500000), "2024-01-01 10:00:00.500000"),
    (T.TIMESTAMP, _datetime(2038, 1, 19, 3, 14, 7, 999000), "2038-01-19 03:14:07.999000"),
    (T.TIME, _time(True, 12, 0, 1, 500000), "-12:00:01.500000"),
    (T.TIME, _time(False, 838, 59, 59), "838:59:59.000000"),
    (T.VARCHAR, b"ab", "base64:type15:YWI="),
    (T.BIT, b"\x05", "base64:type16:BQ=="),
])
def test_an_opaque_value_reads_as_mysql_prints_it(field_type, payload, text):
    json_opaque.install()
    doc = json_binary.parse_json(json_binary.JSONB_TYPE_OPAQUE, _opaque(field_type, payload))
    assert json_text(doc) == f'"{text}"'  # a document that is one opaque value: a JSON string


def test_a_document_holding_dates_and_times_is_json_text():
    json_opaque.install()
    raw = _array(_opaque(T.DATE, _datetime(2026, 12, 6)), _opaque(T.DATETIME2, _datetime(2026, 12, 6, 14, 20, 36)),
                 _opaque(T.TIME2, _time(False, 14, 20, 36)))
    doc = json_binary.parse_json(json_binary.JSONB_TYPE_SMALL_ARRAY, raw)
    assert json_text(doc) == '["2026-12-06","2026-12-06 14:20:36.000000","14:20:36.000000"]'
