"""What the Oracle reader declares to the Debezium encoding (cdc/debezium): the fields of its ``source`` block
after the common ones, as Debezium's OracleSourceInfoStructMaker writes them
(https://debezium.io/documentation/reference/stable/connectors/oracle.html). The core reaches it through
cdc.registry.debezium_source_fields; the schema-change topic's column types through
cdc.registry.debezium_column_type."""

from __future__ import annotations

import re
from typing import Any

from cdc.debezium.connect_schema import connect_field as _f
from cdc.debezium.schema_change import type_fields

SOURCE_FIELDS = [_f("string", "schema", False), _f("string", "table", False), _f("string", "txId"),
                 _f("string", "scn"), _f("string", "commit_scn"), _f("string", "lcr_position"), _f("string", "rs_id"),
                 _f("int32", "ssn"), _f("int32", "redo_thread"), _f("string", "user_name"), _f("string", "redo_sql"),
                 _f("string", "row_id")]

_TYPE = re.compile(r"^([a-z0-9_ ]+?)\s*(?:\(([^)]*)\))?\s*(with (?:local )?time zone)?$")
# java.sql.Types and oracle.jdbc.OracleTypes code per type, as Debezium's Oracle DDL parser assigns them
# (``datetime(n)``: the reader's ``iso`` spelling of DATE and TIMESTAMP(n))
JDBC_TYPES = {
    "number": 2, "integer": 4, "float": 6, "date": 91, "datetime": 93, "timestamp": 93, "char": 1, "varchar": 12,
    "varchar2": 12, "nvarchar2": -9, "nchar": -15, "clob": 2005, "nclob": 2011, "raw": -3, "blob": 2004,
    "json": 1111, "binary_float": 100, "binary_double": 101,
}
_TIMESTAMP_TZ, _TIMESTAMP_LTZ = -101, -102  # OracleTypes


def column_type(type_text: str) -> dict[str, Any]:
    """The type fields of a Debezium schema-change ``Column`` (cdc.debezium.schema_change.type_fields) of one
    Oracle type text (lower case), as Debezium's Oracle DDL parser reports them."""
    m = _TYPE.match(type_text)
    base, args, suffix = (m.group(1), m.group(2), m.group(3)) if m else (type_text, None, None)
    jdbc = JDBC_TYPES.get(base, 1111)
    if suffix:
        jdbc = _TIMESTAMP_LTZ if "local" in suffix else _TIMESTAMP_TZ
    return type_fields(" ".join(p for p in (base, suffix) if p).upper(), jdbc, args, False)
