"""What the MySQL reader declares to the Debezium encoding (cdc/debezium): the fields of its ``source`` block
after the common ones, as Debezium's MySqlSourceInfoStructMaker writes them
(https://debezium.io/documentation/reference/stable/connectors/mysql.html, "source metadata"). The core
reaches it through cdc.registry.debezium_source_fields."""

from __future__ import annotations

from cdc.debezium.connect_schema import connect_field as _f

SOURCE_FIELDS = [_f("string", "table"), _f("int64", "server_id", False), _f("string", "gtid"),
                 _f("string", "file", False), _f("int64", "pos", False), _f("int32", "row", False),
                 _f("int64", "thread"), _f("string", "query")]
