"""Value encodings of cdc.debezium.encodings that the golden files do not pin down by themselves."""

from __future__ import annotations

import base64

import pytest

from cdc.debezium.encodings import codec
from readers.mysql.types import logical_type as my
from readers.oracle.types import logical_type as ora


def _unscaled(b64: str) -> int:
    return int.from_bytes(base64.b64decode(b64), "big", signed=True)


def test_precise_decimals_keep_all_65_digits():
    """Decimal.scaleb would round to 28 digits: DECIMAL(65,30) must keep every digit."""
    text = "-12345678901234567890123456789012345.123456789012345678901234567891"[:67]
    convert = codec(my("decimal(65,30)"), "mysql", "iso", "precise").convert
    assert _unscaled(convert(text)) == -int(text.replace("-", "").replace(".", "").ljust(65, "0"))
    number = codec(ora("number"), "oracle", "iso", "precise").convert("12345678901234567890123456789012345678")
    assert number["scale"] == 0 and _unscaled(number["value"]) == 12345678901234567890123456789012345678


def test_java_biginteger_bytes():
    """BigInteger.toByteArray(): minimal two's complement, e.g. 128 -> 00 80, -128 -> 80, 255 -> 00 ff."""
    convert = codec(my("decimal(5,0)"), "mysql", "iso", "precise").convert
    assert [base64.b64decode(convert(v)) for v in ("128", "-128", "255", "0", "-1")] == \
        [b"\x00\x80", b"\x80", b"\x00\xff", b"\x00", b"\xff"]


def test_more_fraction_digits_than_the_scale_is_refused():
    with pytest.raises(ValueError, match="more than 2 fraction digits"):
        codec(my("decimal(10,2)"), "mysql", "iso", "precise").convert("1.005")


def test_time_beyond_a_day_and_negative():
    micro = codec(my("time(6)"), "mysql", "adaptive_micros", "string").convert
    assert micro("838:59:59.000000") == 3020399000000 and micro("-00:00:01.250000") == -1250000


def test_mysql_vector_is_debeziums_float_vector():
    """MySQL 9 VECTOR: Debezium 3's io.debezium.data.FloatVector, an array of float32 (the stream carries the
    stored little-endian float32 bytes as base64); in ``iso`` the stream's value as is."""
    import struct

    from cdc.debezium.avro import avro_datum, avro_schema

    c = codec(my("vector(3)"), "mysql", "adaptive_micros", "precise")
    assert c.schema(True, "v") == {"type": "array", "items": {"type": "float32", "optional": False},
                                   "optional": True, "name": "io.debezium.data.FloatVector", "version": 1,
                                   "field": "v"}
    stored = base64.b64encode(struct.pack("<3f", 1.5, -2.25, 0.1)).decode()
    assert c.convert(stored) == [1.5, -2.25, struct.unpack("<f", struct.pack("<f", 0.1))[0]]
    assert c.convert(None) is None
    with pytest.raises(ValueError, match="not a whole number of float32"):
        c.convert(base64.b64encode(b"\x00" * 5).decode())
    assert avro_schema(c.schema(True, "v")) == ["null", {"type": "array", "items": {"type": "float"},
                                                         "connect.version": 1,
                                                         "connect.name": "io.debezium.data.FloatVector"}]
    assert avro_datum(c.schema(True, "v"), [1.5, -2.25]) == [1.5, -2.25]
    assert codec(my("vector(3)"), "mysql", "iso", "precise").convert is None
