"""Transaction-metadata records against Debezium's MySQL documentation (golden/mysql_transaction_doc.json
cites the page), and their Connect schemas against Debezium's SchemaFactory."""

from __future__ import annotations

import json
from pathlib import Path

from cdc.debezium.tx_metadata import KEY_SCHEMA, VALUE_SCHEMA, begin, end, transaction_topic

GOLDEN = json.loads((Path(__file__).parent / "golden" / "mysql_transaction_doc.json").read_text())
TXID = "0e4d5dcd-a33b-11ea-80f1-02010a22a99e:10"


def test_begin_and_end_are_the_documented_values_keyed_by_the_transaction_id():
    b = begin("cdc.s1.transaction", TXID, 1486500577125)
    e = end("cdc.s1.transaction", TXID, 1486500577691, {"s1.a": 1, "s2.a": 1})
    assert b.value == GOLDEN["begin"] and e.value == GOLDEN["end"]
    assert b.key == e.key == {"id": TXID} and b.topic == "cdc.s1.transaction"
    assert b.key_schema is KEY_SCHEMA and e.value_schema is VALUE_SCHEMA
    assert transaction_topic("cdc", "shop") == "cdc.shop.transaction"


def test_the_connect_schemas_are_debeziums():
    assert KEY_SCHEMA["name"] == "io.debezium.connector.common.TransactionMetadataKey"
    assert VALUE_SCHEMA["name"] == "io.debezium.connector.common.TransactionMetadataValue"
    fields = {f["field"]: f for f in VALUE_SCHEMA["fields"]}
    assert list(fields) == ["status", "id", "event_count", "data_collections", "ts_ms"]
    assert fields["event_count"]["optional"] and fields["data_collections"]["optional"]
    assert not fields["ts_ms"]["optional"] and fields["data_collections"]["items"]["name"] == "event.collection"
