"""Debezium's record format for the per-table topics (``kafka.per_table_topics``, options ``kafka.debezium``).

- record.py: one source change -> ConnectRecord(s) (key/value schemas and payloads, headers), the
  interface the JSON and Avro encodings share; ``json_bytes`` is the JSON encoding;
- connect_schema.py: the Kafka Connect schemas (key, row, envelope, source blocks);
- encodings.py: column types -> Connect types and value encodings (temporal / decimal modes).

The ordered change stream (``<prefix>.<source>.changes``) does not use this package: its records are
cdc.envelope's.
"""
