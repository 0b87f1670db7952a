"""Debezium's schema-change topic (``kafka.debezium.schema_change_topic: true``).

Shape from the MySQL connector documentation, "Schema change topic"
(https://debezium.io/documentation/reference/stable/connectors/mysql.html#mysql-schema-change-topic),
schemas from Debezium's SchemaFactory (``io.debezium.connector.<connector>.SchemaChangeKey`` /
``SchemaChangeValue``, ``io.debezium.connector.schema.Change`` / ``Table`` / ``Column``):

- topic ``<kafka.topic_prefix>.<source>`` (Debezium: ``topic.prefix`` itself; ``<prefix>.<source>`` is
  our per-source topic prefix, see cdc.debezium.tx_metadata);
- key ``{databaseName}``; value ``{source, ts_ms, databaseName, schemaName, ddl, tableChanges: [{type:
  CREATE|ALTER|DROP, id: '"db"."table"', table: {defaultCharsetName, primaryKeyColumnNames, columns:
  [{name, jdbcType, nativeType, typeName, typeExpression, charsetName, length, scale, position, optional,
  autoIncremented, generated, comment, defaultValueExpression, enumValues}], comment}}]}``.

Built from what a SCHEMA record of the ordered stream holds (cdc.stream.events.SchemaChange / TableSchema: the
DDL text, and each column's name, type text, nullability and default). ``defaultValueExpression`` is the
column's default as the SCHEMA record carries it, SQL text (a literal such as ``'std'`` or ``0``, or an
expression such as ``current_timestamp()``), null where the column has none or the reader did not read the
catalog. What a SCHEMA record does not hold is left as its Connect schema allows: ``charsetName``,
``defaultCharsetName`` and ``comment`` null, ``autoIncremented`` and ``generated`` false; ``source`` has the table, database, connector and
commit time but no binlog file/pos or SCN (a SchemaChange does not carry them: required position fields
are 0 / empty). MySQL: ``databaseName`` is the database, ``schemaName`` null; Oracle: ``schemaName`` is
the schema and ``databaseName`` the source's name (the PDB name is not known here).
"""

from __future__ import annotations

import functools
import re
import time
from typing import Any

from cdc import registry
from cdc.debezium.connect_schema import source_schema
from cdc.debezium.record import ConnectRecord
from cdc.stream.events import TableId, TableSchema

KEY_SCHEMA_NAME, VALUE_SCHEMA_NAME = "io.debezium.connector.{}.SchemaChangeKey", "io.debezium.connector.{}.SchemaChangeValue"


def _f(type_: str, name: str, optional: bool = True, **extra: Any) -> dict[str, Any]:
    return {"type": type_, "optional": optional, **extra, "field": name}


_STRINGS = {"type": "array", "items": {"type": "string", "optional": False}}
COLUMN_SCHEMA = {
    "type": "struct", "optional": False, "name": "io.debezium.connector.schema.Column", "version": 1, "fields": [
        _f("string", "name", False), _f("int32", "jdbcType", False), _f("int32", "nativeType"),
        _f("string", "typeName", False), _f("string", "typeExpression"), _f("string", "charsetName"),
        _f("int32", "length"), _f("int32", "scale"), _f("int32", "position", False), _f("boolean", "optional"),
        _f("boolean", "autoIncremented"), _f("boolean", "generated"), _f("string", "comment"),
        _f("string", "defaultValueExpression"), {**_STRINGS, "optional": True, "field": "enumValues"}]}
TABLE_SCHEMA = {
    "type": "struct", "optional": True, "name": "io.debezium.connector.schema.Table", "version": 1, "fields": [
        _f("string", "defaultCharsetName"), {**_STRINGS, "optional": True, "field": "primaryKeyColumnNames"},
        {"type": "array", "items": COLUMN_SCHEMA, "optional": False, "field": "columns"},
        _f("string", "comment")]}
CHANGE_SCHEMA = {
    "type": "struct", "optional": False, "name": "io.debezium.connector.schema.Change", "version": 1, "fields": [
        _f("string", "type", False), _f("string", "id", False), {**TABLE_SCHEMA, "field": "table"}]}


def schema_change_topic(prefix: str, source: str) -> str:
    return f"{prefix}.{source}"


@functools.cache  # one object per connector: the JSON and registry encoders cache by schema object
def key_schema(connector: str) -> dict[str, Any]:
    return {"type": "struct", "optional": False, "name": KEY_SCHEMA_NAME.format(connector), "version": 1,
            "fields": [_f("string", "databaseName", False)]}


@functools.cache
def value_schema(connector: str) -> dict[str, Any]:
    return {"type": "struct", "optional": False, "name": VALUE_SCHEMA_NAME.format(connector), "version": 1,
            "fields": [source_schema(connector), _f("int64", "ts_ms", False), _f("string", "databaseName"),
                       _f("string", "schemaName"), _f("string", "ddl"),
                       {"type": "array", "items": CHANGE_SCHEMA, "optional": False, "field": "tableChanges"}]}


def change_type(ddl: str | None, schema: TableSchema | None, known: bool) -> str:
    """CREATE, ALTER or DROP, from the DDL's first word. A definition without DDL text (the publisher saw the
    table's rows change shape) is a CREATE the first time, an ALTER when a definition was published before."""
    if schema is None:
        return "DROP"
    head = (ddl or "").lstrip().split(None, 1)[:1]
    if not head:
        return "ALTER" if known else "CREATE"
    return "CREATE" if head[0].upper() == "CREATE" else "ALTER"


def type_fields(type_name: str, jdbc: int, args: str | None, enum: bool) -> dict[str, Any]:
    """The type fields of a ``Column`` (jdbcType, typeName, typeExpression, length, scale, enumValues) from what
    a reader read of its type text (readers/<kind>/debezium.py ``column_type``): Debezium's upper-case type name,
    its java.sql.Types code, the text in the parentheses, and whether those are enum/set labels."""
    length = scale = None
    enum_values = None
    if enum:
        enum_values = [v.replace("''", "'") for v in re.findall(r"'((?:[^']|'')*)'", args or "")]
    elif args:
        parts = [p.strip() for p in args.split(",")]
        if parts[0].lstrip("-").isdigit():
            length = int(parts[0])
        if len(parts) > 1 and parts[1].lstrip("-").isdigit():
            scale = int(parts[1])
    return {"jdbcType": jdbc, "typeName": type_name, "typeExpression": type_name, "length": length, "scale": scale,
            "enumValues": enum_values}


def column(col: Any, position: int, kind: str = "mysql") -> dict[str, Any]:
    """One ``io.debezium.connector.schema.Column`` from a cdc.stream.events.Column of a ``kind`` source (its
    reader declares the type fields: cdc.registry.debezium_column_type)."""
    t = registry.debezium_column_type(kind)(col.type.strip().lower())
    return {"name": col.name, "jdbcType": t["jdbcType"], "nativeType": None, "typeName": t["typeName"],
            "typeExpression": t["typeExpression"], "charsetName": None, "length": t["length"], "scale": t["scale"],
            "position": position, "optional": bool(col.nullable), "autoIncremented": False, "generated": False,
            "comment": None, "defaultValueExpression": col.default, "enumValues": t["enumValues"]}


def table_change(table: TableId, ddl: str | None, schema: TableSchema | None, known: bool,
                 kind: str = "mysql") -> dict[str, Any]:
    """One ``tableChanges`` item; a dropped table carries its id and no ``table``."""
    item: dict[str, Any] = {"type": change_type(ddl, schema, known), "id": f'"{table.db}"."{table.table}"', "table": None}
    if schema is not None:
        item["table"] = {"defaultCharsetName": None, "primaryKeyColumnNames": list(schema.primary_key),
                         "columns": [column(c, i, kind) for i, c in enumerate(schema.columns, 1)], "comment": None}
    return item


def table_changes(tables: list[dict[str, Any]], kind: str = "mysql") -> list[dict[str, Any]]:
    """The tableChanges of a table-level DDL, one per captured table it touched, as Debezium's MySQL parser
    reports them: CREATE for a created table, DROP for a dropped one or one renamed out of the captured
    tables, ALTER (the new id) for a table renamed within them, into them or replaced at an online schema
    change cut-over."""
    out = []
    for a in tables:
        op, name = a.get("op"), a.get("table") or ""
        raw = a.get("schema")
        schema = TableSchema.from_json(raw) if raw is not None else None
        change = "CREATE" if op == "create" else "DROP" if op in ("drop", "rename_out") or schema is None else "ALTER"
        item = table_change(TableId.parse(name), None, schema if change != "DROP" else None, True, kind)
        item["type"] = change
        out.append(item)
    return out


def source_block(connector: str, source_name: str, table: TableId | None, ts_ms: int) -> dict[str, Any]:
    """The ``source`` payload: every field of the connector's Source schema, null where unknown, and the
    required position fields 0 / empty (see the module doc)."""
    known = {"version": "cdc-1", "connector": connector, "name": source_name, "ts_ms": ts_ms, "snapshot": "false",
             "db": table.db if table is not None else "", "schema": table.db if table is not None else "",
             "table": table.table if table is not None else None}
    zero = {"string": "", "int64": 0, "int32": 0}
    return {f["field"]: known.get(f["field"], None if f["optional"] else zero.get(f["type"]))
            for f in source_schema(connector)["fields"]}


def schema_change(topic: str, connector: str, source_name: str, table: TableId | None, ddl: str | None,
                  schema: TableSchema | None, ts_ms: int, *, known: bool = False,
                  now_ms: int | None = None, tables: list[dict[str, Any]] | None = None) -> ConnectRecord:
    """The schema-change record of one DDL or table definition (``ts_ms``: its time at the source;
    ``known``: a definition of the table was published before, see :func:`change_type`; ``tables``: what a
    CREATE/DROP/RENAME did to the captured tables, cdc.stream.events.SchemaChange.tables: one tableChanges item
    per table, see :func:`table_changes`)."""
    kind = "oracle" if connector == "oracle" else "mysql"
    if kind == "oracle":
        database, schema_name = source_name, table.db if table is not None else None
    else:
        database, schema_name = (table.db if table is not None else ""), None
    value = {"source": source_block(connector, source_name, table, ts_ms),
             "ts_ms": int(time.time() * 1000) if now_ms is None else now_ms,
             "databaseName": database, "schemaName": schema_name, "ddl": ddl,
             "tableChanges": (table_changes(tables, kind) if tables is not None else
                              [table_change(table, ddl, schema, known, kind)] if table is not None else [])}
    return ConnectRecord(topic, key_schema(connector), {"databaseName": database}, value_schema(connector), value)
