"""Per-target type maps: the column type and the value conversion of each target database."""

from __future__ import annotations

import pytest

from streaming.targets import typemap
from streaming.targets.typemap import _int, b64_bytes, converter, target_type


@pytest.mark.parametrize("source, dialect, ttype, conv", [
    ("varbinary(8)", "postgres", "bytea", b64_bytes),
    ("varbinary(8)", "duckdb", "blob", b64_bytes),
    ("varbinary(8)", "mysql", "varbinary(8)", b64_bytes),
    ("varbinary(8)", "oracle", "blob", b64_bytes),
    ("longblob", "mysql", "longblob", b64_bytes),  # was written as base64 text into the blob
    ("mediumblob", "mysql", "mediumblob", b64_bytes),
    ("longtext", "mysql", "longtext", None),
    ("datetime(6)", "mysql", "datetime(6)", "naive"),
    ("timestamp(3)", "mysql", "timestamp(3)", "naive"),
    ("timestamp(3)", "postgres", "timestamptz(3)", None),
    ("bigint unsigned", "postgres", "numeric(20,0)", _int),  # Avro streams carry >= 2^63 as text
    ("varchar(20)", "parquet", None, None),
])
def test_type_and_converter_per_target(source, dialect, ttype, conv):
    if ttype is not None:
        assert target_type(source, dialect) == ttype
    got = converter(source, dialect)
    if conv == "naive":
        assert got("2024-01-02T03:04:05.5Z") == "2024-01-02 03:04:05.5"
    else:
        assert got is conv


def test_every_sql_target_has_a_type_map():
    from cdc.sql_dialects import SQL_DIALECTS

    assert set(typemap.TYPE_MAPS) == set(SQL_DIALECTS)


def test_oracle_target_types_hold_every_mysql_value():
    """Issue #14 (Oracle target, unit level: no Oracle server here): types that hold each value, and
    temporal values bound as Python objects (ISO text would need matching NLS formats)."""
    from datetime import date, datetime, timezone

    want = {"bit(64)": "number(20,0)", "bigint unsigned": "number(20,0)", "time(6)": "varchar2(20)",
            "decimal(65,30)": "varchar2(67)", "decimal(38,2)": "number(38,2)", "float": "binary_float",
            "double": "binary_double", "year": "number(5)", "geometry": "blob", "binary(16)": "blob",
            "datetime(6)": "timestamp(6)", "timestamp(6)": "timestamp(6) with time zone", "date": "date"}
    assert {t: target_type(t, "oracle") for t in want} == want
    assert converter("date", "oracle")("2024-02-29") == date(2024, 2, 29)
    assert converter("datetime(6)", "oracle")("2024-02-29T01:02:03.000004") == datetime(2024, 2, 29, 1, 2, 3, 4)
    assert converter("timestamp(6)", "oracle")("2038-01-19T03:14:07.999999Z") == \
        datetime(2038, 1, 19, 3, 14, 7, 999999, tzinfo=timezone.utc)
    assert converter("bit(64)", "oracle")("18446744073709551615") == 2**64 - 1


def test_binary_values_decode_exactly_or_fail_loudly():
    """An Oracle RAW arrives as HEXTORAW('..') text: it used to be base64-decoded, which silently drops
    the characters outside the base64 alphabet and writes wrong bytes."""
    import binascii

    assert b64_bytes("HEXTORAW('00ff10')") == b"\x00\xff\x10"
    assert b64_bytes("AP8Q") == b"\x00\xff\x10"
    with pytest.raises(binascii.Error):
        b64_bytes("not base64!")
