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
    ("vector(3)", "postgres", "bytea", b64_bytes),  # MySQL 9 VECTOR: its stored float32 bytes
    ("vector(3)", "duckdb", "blob", b64_bytes),
    ("vector(3)", "mysql", "blob", b64_bytes),
    ("vector(3)", "oracle", "blob", b64_bytes),
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
    from cdc.schema.sql_dialects import SQL_DIALECTS

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


def test_oracle_temporal_types_are_timestamps_and_nanoseconds_are_refused():
    """Oracle DATE (stream type datetime(0), readers/oracle/convert.py) is a timestamp in every target, never a
    date; TIMESTAMP(9) gets 6 digits and a value with digits below the microsecond is refused, not rounded."""
    import pytest

    want = {("datetime(0)", "postgres"): "timestamp(0)", ("datetime(0)", "duckdb"): "timestamp",
            ("datetime(0)", "mysql"): "datetime(0)", ("datetime(9)", "postgres"): "timestamp(6)",
            ("datetime(9)", "mysql"): "datetime(6)", ("datetime(9)", "oracle"): "timestamp(9)",
            ("timestamp(9) with time zone", "postgres"): "timestamptz(6)",
            ("timestamp(6) with time zone", "duckdb"): "timestamptz",
            ("timestamp(6) with time zone", "mysql"): "datetime(6)",
            ("timestamp(6) with time zone", "oracle"): "timestamp(6) with time zone",
            ("timestamp(6) with local time zone", "postgres"): "timestamp(6)",
            ("binary_double", "mysql"): "double", ("binary_float", "mysql"): "float",
            ("nchar", "mysql"): "varchar(2000)", ("char(4)", "mysql"): "char(4)", ("nchar(10)", "mysql"): "varchar(10)",
            ("varchar2(40)", "postgres"): "varchar(40)", ("number(12,2)", "postgres"): "numeric(12,2)",
            ("raw(16)", "mysql"): "varbinary(16)", ("number(38,0)", "duckdb"): "decimal(38,0)"}
    assert {k: target_type(*k) for k in want} == want
    assert converter("binary_double", "mysql") is None  # 'binary' in its name once made it bytes
    for dialect in ("postgres", "duckdb", "mysql", "oracle"):
        conv = converter("datetime(9)", dialect)
        with pytest.raises(ValueError, match="below the microsecond"):
            conv("2024-02-29T13:14:15.123456789")
        assert conv("2024-02-29T13:14:15.123456") is not None
    assert converter("timestamp(9) with time zone", "mysql")("2024-02-29T13:14:15.5Z") == "2024-02-29 13:14:15.5"
    assert converter("datetime(6)", "postgres") is None  # no per-value cost where no value can be too fine
