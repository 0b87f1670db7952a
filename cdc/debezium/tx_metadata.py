"""Debezium's transaction-metadata topic (``kafka.debezium.transaction_topic: true``).

Debezium writes one BEGIN and one END record per transaction to
``<topic.prefix>.transaction`` (MySQL connector documentation, "Transaction
metadata": https://debezium.io/documentation/reference/stable/connectors/mysql.html#mysql-transaction-metadata).
Ours is ``<kafka.topic_prefix>.<source>.transaction``: the per-table topics are
``<prefix>.<source>.<db>.<table>``, so ``<prefix>.<source>`` plays Debezium's
``topic.prefix`` for every Debezium-shaped topic of a source.

Key ``{"id": <transaction id>}``; value ``{status, id, event_count,
data_collections: [{data_collection, event_count}], ts_ms}`` (event_count and
data_collections null on BEGIN), with the Connect schemas Debezium's
SchemaFactory declares (``io.debezium.connector.common.TransactionMetadataKey``
/ ``TransactionMetadataValue``, item struct ``event.collection``), so any
encoding (JSON with or without schemas, Avro with a registry) renders them.
The ordered change stream keeps its inline BEGIN/END markers regardless.
"""

from __future__ import annotations

from typing import Any

from cdc.debezium.record import ConnectRecord

KEY_SCHEMA: dict[str, Any] = {
    "type": "struct", "optional": False, "name": "io.debezium.connector.common.TransactionMetadataKey", "version": 1,
    "fields": [{"type": "string", "optional": False, "field": "id"}]}
_COLLECTION = {"type": "struct", "optional": True, "name": "event.collection", "version": 1, "fields": [
    {"type": "string", "optional": False, "field": "data_collection"},
    {"type": "int64", "optional": False, "field": "event_count"}]}
VALUE_SCHEMA: dict[str, Any] = {
    "type": "struct", "optional": False, "name": "io.debezium.connector.common.TransactionMetadataValue",
    "version": 1, "fields": [
        {"type": "string", "optional": False, "field": "status"},
        {"type": "string", "optional": False, "field": "id"},
        {"type": "int64", "optional": True, "field": "event_count"},
        {"type": "array", "items": _COLLECTION, "optional": True, "field": "data_collections"},
        {"type": "int64", "optional": False, "field": "ts_ms"}]}


def transaction_topic(prefix: str, source: str) -> str:
    return f"{prefix}.{source}.transaction"


def begin(topic: str, txid: str, ts_ms: int) -> ConnectRecord:
    """The BEGIN record of transaction ``txid`` (``ts_ms``: its commit time at the source)."""
    return ConnectRecord(topic, KEY_SCHEMA, {"id": txid}, VALUE_SCHEMA,
                         {"status": "BEGIN", "id": txid, "event_count": None, "data_collections": None,
                          "ts_ms": ts_ms})


def end(topic: str, txid: str, ts_ms: int, counts: dict[str, int]) -> ConnectRecord:
    """The END record: ``counts`` maps each table (``db.table``, Debezium's data collection id) to its
    number of data records in the transaction, in first-seen order."""
    return ConnectRecord(topic, KEY_SCHEMA, {"id": txid}, VALUE_SCHEMA,
                         {"status": "END", "id": txid, "event_count": sum(counts.values()),
                          "data_collections": [{"data_collection": t, "event_count": n} for t, n in counts.items()],
                          "ts_ms": ts_ms})
