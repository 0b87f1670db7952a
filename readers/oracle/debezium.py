"""What the Oracle reader declares to the Debezium encoding (cdc/debezium): the fields of its ``source`` block
after the common ones, as Debezium's OracleSourceInfoStructMaker writes them
(https://debezium.io/documentation/reference/stable/connectors/oracle.html). The core reaches it through
cdc.registry.debezium_source_fields."""

from __future__ import annotations

from cdc.debezium.connect_schema import connect_field as _f

SOURCE_FIELDS = [_f("string", "schema", False), _f("string", "table", False), _f("string", "txId"),
                 _f("string", "scn"), _f("string", "commit_scn"), _f("string", "lcr_position"), _f("string", "rs_id"),
                 _f("int32", "ssn"), _f("int32", "redo_thread"), _f("string", "user_name"), _f("string", "redo_sql"),
                 _f("string", "row_id")]
