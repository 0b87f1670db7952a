"""What the MySQL reader declares to the Debezium encoding (cdc/debezium): the fields of its ``source`` block
after the common ones, as Debezium's MySqlSourceInfoStructMaker writes them
(https://debezium.io/documentation/reference/stable/connectors/mysql.html, "source metadata"). The core
reaches it through cdc.registry.debezium_source_fields; the schema-change topic's column types through
cdc.registry.debezium_column_type."""

from __future__ import annotations

import re
from typing import Any

from cdc.debezium.connect_schema import connect_field as _f
from cdc.debezium.schema_change import type_fields

SOURCE_FIELDS = [_f("string", "table"), _f("int64", "server_id", False), _f("string", "gtid"),
                 _f("string", "file", False), _f("int64", "pos", False), _f("int32", "row", False),
                 _f("int64", "thread"), _f("string", "query")]

_TYPE = re.compile(r"^([a-z0-9_ ]+?)\s*(?:\(([^)]*)\))?\s*(unsigned)?\s*(zerofill)?$")
# java.sql.Types code per type, as Debezium's MySQL DDL parser assigns them
JDBC_TYPES = {
    "bit": -7, "tinyint": -6, "smallint": 5, "mediumint": 4, "int": 4, "integer": 4, "bigint": -5,
    "decimal": 3, "dec": 3, "numeric": 2, "fixed": 3, "float": 6, "double": 8, "double precision": 8, "real": 8,
    "bool": 16, "boolean": 16, "date": 91, "time": 92, "datetime": 93, "timestamp": 93, "year": 4,
    "char": 1, "varchar": 12, "tinytext": 12, "text": 12, "mediumtext": 12, "longtext": 12,
    "binary": -2, "varbinary": -3, "tinyblob": 2004, "blob": 2004, "mediumblob": 2004, "longblob": 2004,
    "enum": 1, "set": 1, "json": 1111, "geometry": 1111, "point": 1111,
}


def column_type(type_text: str) -> dict[str, Any]:
    """The type fields of a Debezium schema-change ``Column`` (cdc.debezium.schema_change.type_fields) of one
    MySQL/MariaDB type text (lower case), as Debezium's MySQL DDL parser reports them."""
    m = _TYPE.match(type_text)
    base, args, suffix = (m.group(1), m.group(2), m.group(3)) if m else (type_text, None, None)
    name = base.upper() + (" UNSIGNED" if suffix else "")
    return type_fields(name, JDBC_TYPES.get(base, 1111), args, base in ("enum", "set"))
