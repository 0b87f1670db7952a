"""Debezium's record format for the per-table topics (``kafka.per_table_topics``, options ``kafka.debezium``).

- record.py: one source change -> ConnectRecord(s) (key/value schemas and payloads, headers), the
  interface the JSON and Avro encodings share; ``json_bytes`` is the JSON encoding;
- connect_schema.py: the Kafka Connect schemas (key, row, envelope, source blocks);
- encodings.py: column types -> Connect types and value encodings (temporal / decimal modes).
- avro.py: Connect schemas and payloads -> Avro, as Confluent's AvroConverter does; schema_registry.py:
  those records through confluent-kafka's AvroSerializer and a Schema Registry (``kafka.avro_framing:
  schema_registry``);
- tx_metadata.py / schema_change.py: the transaction topic and the schema-change topic
  (``kafka.debezium.transaction_topic`` / ``schema_change_topic``), as ConnectRecords too.

The ordered change stream (``<prefix>.<source>.changes``) does not use this package: its records are
cdc.envelope's.
"""
