"""Integers beyond signed 64 bits in an Avro stream (issue #14).

Fault injected: BIGINT UNSIGNED 18446744073709551615 and BIT(64) 2^63 in a row image. The Avro
encoder used to stop the source ("does not fit the Avro schema (long)"); now the value travels as
its decimal text, decodes as that text, and every target's converter takes it back as the integer
(MySQL would otherwise read the text of a BIT as its bytes).
"""

from __future__ import annotations

from cdc.stream import envelope
from cdc.stream.events import Change, Column, TableId, TableSchema
from cdc.stream.serde import get_serde
from streaming.targets.typemap import converter

T = TableId("db", "wide")
SCHEMA = TableSchema(T, (Column("id", "int", False), Column("u", "bigint unsigned"), Column("b", "bit(64)")), ("id",))


def test_wide_ints_travel_as_text_and_targets_take_them_back():
    row = {"id": 1, "u": 2**64 - 1, "b": 2**63}
    ch = Change(T, "c", None, row, {"gtid": "0-1-5", "file": "b.000001", "pos": 4, "row": 0}, SCHEMA)
    _, value = envelope.data_record(ch, sequence=7, source_name="s", connector="mysql", txid="0-1-5",
                                    commit_ts_ms=1000, total_order=1, data_collection_order=1, now_ms=1001)
    serde = get_serde("avro")
    after = serde.decode(serde.encode(value))["after"]
    assert after == {"id": 1, "u": "18446744073709551615", "b": "9223372036854775808"}
    assert get_serde("json").decode(get_serde("json").encode(value))["after"] == row  # JSON keeps the int
    for dialect in ("postgres", "duckdb", "mysql", "oracle"):
        assert converter("bigint unsigned", dialect)(after["u"]) == 2**64 - 1
        assert converter("bit(64)", dialect)(after["b"]) == 2**63
        assert converter("bit(64)", dialect)(5) == 5
