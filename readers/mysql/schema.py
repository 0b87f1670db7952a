"""Table definitions: from the binlog's TABLE_MAP (full row metadata) or from
information_schema (after a DDL), both as cdc.stream.events.TableSchema.

The TABLE_MAP is the truth for the rows that follow it (it is the shape the
row was written with, even when replaying an old binlog after later ALTERs),
so Change.schema always comes from it. information_schema is only read for
SchemaChange records, right after the DDL, for the table it named.

Type text is lower case without integer display widths (``int``, ``bigint
unsigned``, ``varchar(20)``, ``decimal(10,2)``, ``datetime(6)``) so the two
sources agree.
"""

from __future__ import annotations

import re
from typing import Any

from pymysqlreplication.constants import FIELD_TYPE as T

from cdc.stream.events import Column, TableId, TableSchema
from readers.mysql.binlog.vector import VECTOR
from readers.mysql.types import logical_type

_INT_NAMES = {T.TINY: "tinyint", T.SHORT: "smallint", T.INT24: "mediumint", T.LONG: "int", T.LONGLONG: "bigint"}
_BLOB_NAMES = {1: "tiny", 2: "", 3: "medium", 4: "long"}
_MB_MAXLEN = {"utf8mb4": 4, "utf8": 3, "utf8mb3": 3, "ucs2": 2, "utf16": 4, "utf32": 4, "binary": 1,
              "latin1": 1, "ascii": 1}
_DISPLAY_WIDTH = re.compile(r"^(tinyint|smallint|mediumint|int|bigint)\(\d+\)")


def _is_binary(col: Any) -> bool:
    return (getattr(col, "character_set_name", None) or "").lower() == "binary"


def _chars(col: Any) -> int:
    # The library names the charset of a utf8mb4 collation "utf8" (and latin1 "cp1252"),
    # so the collation's prefix is the reliable charset name: utf8mb4_general_ci -> utf8mb4.
    collation = (getattr(col, "collation_name", None) or "").lower()
    cs = collation.split("_", 1)[0] if collation else (getattr(col, "character_set_name", None) or "utf8mb4").lower()
    return col.max_length // _MB_MAXLEN.get(cs, 1)


def _quoted(values: Any) -> str:
    return ",".join("'" + str(v).replace("'", "''") + "'" for v in values)


def type_text(col: Any) -> str:
    """The SQL type of one TABLE_MAP column, as close to COLUMN_TYPE as the map allows."""
    t = col.type
    if t in _INT_NAMES:
        return _INT_NAMES[t] + (" unsigned" if col.unsigned else "")
    if t == T.NEWDECIMAL:
        return f"decimal({col.precision},{col.decimals})" + (" unsigned" if col.unsigned else "")
    if t in (T.FLOAT, T.DOUBLE):
        return ("float" if t == T.FLOAT else "double") + (" unsigned" if col.unsigned else "")
    if t in (T.DATETIME2, T.TIMESTAMP2, T.TIME2):
        base = {T.DATETIME2: "datetime", T.TIMESTAMP2: "timestamp", T.TIME2: "time"}[t]
        return f"{base}({col.fsp})" if getattr(col, "fsp", 0) else base
    simple = {T.DATE: "date", T.NEWDATE: "date", T.DATETIME: "datetime", T.TIMESTAMP: "timestamp",
              T.TIME: "time", T.YEAR: "year", T.JSON: "json", T.GEOMETRY: "geometry"}
    if t in simple:
        return simple[t]
    if t in (T.VARCHAR, T.VAR_STRING):
        return f"varbinary({col.max_length})" if _is_binary(col) else f"varchar({_chars(col)})"
    if t == T.STRING:
        return f"binary({col.max_length})" if _is_binary(col) else f"char({_chars(col)})"
    if t in (T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB):
        size = _BLOB_NAMES.get(getattr(col, "length_size", 2), "")
        return size + ("blob" if _is_binary(col) else "text")
    if t == T.ENUM:
        return f"enum({_quoted((col.enum_values or [''])[1:])})"
    if t == T.SET:
        return f"set({_quoted(col.set_values or ())})"
    if t == T.BIT:
        return f"bit({col.bits})"
    if t == VECTOR:  # MySQL 9 (readers/mysql/binlog/vector.py)
        return f"vector({col.dimensions})" if getattr(col, "dimensions", None) else "vector"
    return f"type#{t}"


def schema_from_table_map(table: Any, null_mask: bytes | None = None) -> TableSchema:
    """TableSchema of a pymysqlreplication ``Table`` (``BinLogStreamReader.table_map`` value).

    ``null_mask`` is the TABLE_MAP event's nullability bitmap (bit i: column i nullable).
    """
    cols = []
    for i, c in enumerate(table.columns):
        nullable = True if null_mask is None else bool(null_mask[i // 8] & (1 << (i % 8)))
        text = type_text(c)
        cols.append(Column(c.name, text, nullable, None, logical_type(text)))
    pk = tuple(c.name for c in table.columns if c.is_primary)
    return TableSchema(TableId(table.schema, table.table), tuple(cols), pk)


def schema_from_information_schema(conn: Any, db: str, table: str) -> TableSchema | None:
    """The table's current definition with column defaults (cdc.stream.events.Column.default), None when it no
    longer exists (DROP)."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY, COLUMN_DEFAULT, EXTRA, GENERATION_EXPRESSION"
            " FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s ORDER BY ORDINAL_POSITION",
            (db, table))
        rows = cur.fetchall()
        if not rows:
            return None
        cur.execute(
            "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA=%s"
            " AND TABLE_NAME=%s AND CONSTRAINT_NAME='PRIMARY' ORDER BY ORDINAL_POSITION", (db, table))
        pk = tuple(r[0] if not isinstance(r, dict) else r["COLUMN_NAME"] for r in cur.fetchall())
    mariadb = "mariadb" in str(getattr(conn, "get_server_info", lambda: "")()).lower()
    cols = []
    for r in rows:
        name, ctype, nullable, _, default, extra, generated = r if not isinstance(r, dict) else (
            r["COLUMN_NAME"], r["COLUMN_TYPE"], r["IS_NULLABLE"], r["COLUMN_KEY"], r["COLUMN_DEFAULT"],
            r["EXTRA"], r["GENERATION_EXPRESSION"])
        ctype = _DISPLAY_WIDTH.sub(r"\1", str(ctype).lower())
        cols.append(Column(name, ctype, nullable == "YES", default_text(default, extra, generated, ctype, mariadb),
                           logical_type(ctype)))
    return TableSchema(TableId(db, table), tuple(cols), pk)


_NUMERIC = ("tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "float", "double", "bit", "year")


def default_text(default: Any, extra: Any, generated: Any, ctype: str, mariadb: bool) -> str | None:
    """COLUMN_DEFAULT as cdc.stream.events.Column.default: a constant as a SQL literal, an expression as its text
    (a generated column: its expression in parentheses), None for no default or DEFAULT NULL.

    MariaDB (10.2.7+) already spells COLUMN_DEFAULT as SQL (``'std'``, ``NULL``, ``current_timestamp()``);
    MySQL gives a constant's bare value and marks expressions ``DEFAULT_GENERATED`` in EXTRA."""
    extra = str(extra or "").lower()
    if generated or "generated" in extra.replace("default_generated", "") or extra in ("virtual", "persistent",
                                                                                    "stored"):
        return f"({generated})" if generated else "(generated)"
    if default is None:
        return None
    text = default.decode() if isinstance(default, bytes) else str(default)
    if mariadb:
        return None if text == "NULL" else text
    if "default_generated" in extra or text.lower().startswith("current_timestamp"):
        return text.lower()
    if ctype.split("(")[0].split(" ")[0] in _NUMERIC or text.startswith("b'"):
        return text
    return "'" + text.replace("'", "''") + "'"
