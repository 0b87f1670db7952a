"""Every record kind of cdc.stream.envelope survives encode/decode in JSON and Avro."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.errors import CdcError
from cdc.stream import envelope
from cdc.stream.events import Change, Column, TableId, TableSchema
from cdc.stream.serde import get_serde, get_serdes, get_table_key_serde, load_schema_text, schema_id

T = TableId("shop", "orders")
SCHEMA = TableSchema(T, (Column("id", "int", False), Column("note", "varchar(20)")), ("id",))


def records() -> list[tuple[dict | None, dict]]:
    ch = Change(T, "u", {"id": 1, "note": None, "f": 1.5, "ok": True}, {"id": 1, "note": "x", "f": -2.25, "ok": False},
                {"gtid": "u:5", "file": "b.000001", "pos": 4, "row": 0}, SCHEMA)
    key, value = envelope.data_record(ch, sequence=7, source_name="s", connector="mysql", txid="u:5",
                                      commit_ts_ms=1000, total_order=1, data_collection_order=1, now_ms=1001)
    return [
        (key, value),
        (None, envelope.begin_record(6, "u:5", 1000)),
        (None, envelope.end_record(8, "u:5", 1000, {"shop.orders": 1}, {"gtid_set": "u:1-5", "x": [1, {"y": None}]},
                                   {"gtid": "u:5"})),
        (None, envelope.aborted_record(9, "u:6", 1002)),
        ({"table": "shop.orders"}, envelope.schema_record(10, "shop.orders", "ALTER TABLE orders ADD c INT", SCHEMA,
                                                          1003, {"gtid_set": "u:1-6"})),
        (None, envelope.schema_record(11, None, "DROP DATABASE x", None, 1004, None)),
        (None, envelope.heartbeat_record(12, 1005, {"gtid_set": "u:1-6"})),
        (None, envelope.heartbeat_record(13, 1006, None)),
    ]


@pytest.mark.parametrize("encoding", ["json", "avro"])
def test_every_record_kind_round_trips(encoding):
    ks, vs = get_serdes(encoding)
    for key, value in records():
        assert vs.decode(vs.encode(value)) == value
        if key is not None:
            assert ks.decode(ks.encode(key)) == key


def test_avro_confluent_framing_names_the_shipped_schema():
    vs = get_serde("avro")
    data = vs.encode(records()[1][1])
    assert data[0] == 0
    assert struct.unpack(">I", data[1:5])[0] == schema_id(load_schema_text("change_value"))
    plain = get_serde("avro", "plain")
    assert plain.encode(records()[1][1]) == data[5:]
    assert plain.decode(data[5:]) == records()[1][1]


def test_avro_rejects_what_does_not_fit_with_a_clear_error():
    vs = get_serde("avro")
    _, value = records()[0]
    value = dict(value, after={"id": {2, 70}})  # (ints beyond 64 bits travel as text: test_avro_wide_ints)
    with pytest.raises(CdcError, match="change_value"):
        vs.encode(value)
    with pytest.raises(CdcError, match="magic byte"):
        vs.decode(b"\x07abc")


def test_unknown_encoding_names_the_key():
    with pytest.raises(CdcError) as e:
        get_serdes("xml")
    assert e.value.key == "kafka.encoding"


scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20))


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=10), scalars, max_size=6))
def test_heterogeneous_rows_round_trip_in_avro(row):
    vs = get_serde("avro")
    value = {"sequence": 1, "before": None, "after": row, "op": "c", "ts_ms": 1, "source": {"db": "d"},
             "transaction": {"id": "t", "total_order": 1, "data_collection_order": 1}}
    assert vs.decode(vs.encode(value)) == value
    tk = get_table_key_serde("avro")
    assert tk.decode(tk.encode(row)) == row


def _fastavro_bytes(serde, value) -> bytes:
    import io

    import fastavro
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, serde.parsed, value)
    return buf.getvalue()


def test_hand_written_avro_encoder_matches_fastavro_byte_for_byte():
    ks, vs = get_serdes("avro", "plain")
    for key, value in records():
        as_text = {k: (__import__("json").dumps(v) if k in ("position", "resume", "schema") and v is not None else v)
                   for k, v in value.items()}
        expected = _fastavro_bytes(vs, as_text)
        assert vs.encode(value) == expected or vs.decode(vs.encode(value)) == vs.decode(expected)
        if key is not None:
            assert ks.encode(key) == _fastavro_bytes(ks, {"table": key.get("table"), "key": key.get("key")})


def test_avro_rejects_values_outside_the_event_model():
    vs = get_serde("avro")
    _, value = records()[0]
    with pytest.raises(CdcError, match="after.x"):
        vs.encode(dict(value, after={"x": b"bytes"}))
