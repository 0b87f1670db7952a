"""MySQL/MariaDB's column type of a source column: a MySQL source's declared text as it is (the target speaks the
source's dialect), any other source's logical type in MySQL's types. Timestamps are written as naive text.
"""

from __future__ import annotations

import re

from cdc.schema.logical import LogicalType
from streaming.targets.typemap import TypeMap, micro_digits

_NOTES = re.compile(r"\s+zerofill\b|\s+(character set|charset|collate)\s.*$")  # not part of a column's type


def mysql_type(lt: LogicalType, text: str) -> str:
    """A MySQL/MariaDB source's declared text as it is (its own dialect); any other source's logical type in
    MySQL's types (an Oracle CHAR/NCHAR without a length: VARCHAR(2000); NCHAR(n): VARCHAR(n), which keeps its
    blank padding where a MySQL CHAR strips it)."""
    f = lt.family
    if f == "vector":  # MySQL 9 VECTOR as its stored float32 bytes (a MariaDB or MySQL 8 target has no VECTOR)
        return "blob"
    if lt.dialect == "mysql" and text:
        return _NOTES.sub("", text)
    if f == "string":
        if lt.subtype == "lob" or (lt.subtype == "national" and lt.length is None and not lt.fixed):
            return "longtext"
        if lt.fixed:
            if lt.length is None:
                return "varchar(2000)"
            return f"varchar({lt.length})" if lt.subtype == "national" else f"char({lt.length})"
        return f"varchar({lt.length or 255})"
    if f == "decimal":
        return "decimal(38,10)" if lt.precision is None else f"decimal({lt.precision},{lt.scale or 0})"
    if f == "binary":
        if lt.subtype == "lob":
            return "blob"
        return f"binary({lt.length or 1})" if lt.fixed else f"varbinary({lt.length or 2000})"
    if f in ("float", "double"):
        return f
    if f in ("timestamp", "timestamp_tz"):  # zoned: the UTC wall clock
        return f"datetime({micro_digits(lt.precision)})" if lt.precision is not None else "datetime"
    if f == "integer":
        name = {8: "tinyint", 16: "smallint", 24: "mediumint", 32: "int"}.get(lt.length or 64, "bigint")
        return name + (" unsigned" if lt.unsigned else "")
    if f in ("date", "json", "year"):
        return f
    if f == "boolean":
        return "tinyint(1)"
    if f == "time":
        return f"time({micro_digits(lt.precision)})" if lt.precision is not None else "time"
    if f == "bit":
        return f"bit({lt.length or 1})"
    if f == "spatial":
        return lt.subtype or "geometry"
    return text or "longtext"


TYPE_MAP = TypeMap(mysql_type, naive_text_timestamps=True)
