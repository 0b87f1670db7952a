"""Kafka Connect schemas of Debezium records, in JsonConverter's JSON form (``schemas.enable=true``).

For one table (cdc.stream.events.TableSchema) :class:`TableSchemas` holds the key schema (``<topic>.Key``: the
primary-key columns; None for a table without one, whose records have a null key, as Debezium's), the
row schema (``<topic>.Value``) and the envelope (``<topic>.Envelope``: before, after, source, transaction,
op, ts_ms, ts_us, ts_ns), plus each column's value encoding (from its logical type: cdc.schema.logical). Field order and attribute order are those of
Debezium 3.x as JsonConverter writes them (a captured MariaDB record of Debezium 3.5.2 is the reference in
tests/unit/cdc/debezium/); the source block's fields are the reader's declaration (readers/<kind>/debezium.py:
MySqlSourceInfoStructMaker's and OracleSourceInfoStructMaker's): https://debezium.io/documentation/reference/stable/connectors/mysql.html
("source metadata") and .../oracle.html.
"""

from __future__ import annotations

import re
from typing import Any

from cdc import registry
from cdc.debezium.encodings import Codec, codec
from cdc.stream.events import TableSchema

SNAPSHOT_ENUM = {"type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
                 "parameters": {"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,"
                                           "false,incremental"},
                 "default": "false", "field": "snapshot"}


def connect_field(type_: str, name: str, optional: bool = True) -> dict[str, Any]:
    """One field schema of a Connect struct (readers declare their ``source`` fields with it)."""
    return {"type": type_, "optional": optional, "field": name}


_f = connect_field


_COMMON = [_f("string", "version", False), _f("string", "connector", False), _f("string", "name", False),
           _f("int64", "ts_ms", False), SNAPSHOT_ENUM, _f("string", "db", False), _f("string", "sequence"),
           _f("int64", "ts_us"), _f("int64", "ts_ns")]

TRANSACTION = {"type": "struct", "fields": [_f("string", "id", False), _f("int64", "total_order", False),
                                            _f("int64", "data_collection_order", False)],
               "optional": True, "name": "event.block", "version": 1, "field": "transaction"}


def source_schema(connector: str) -> dict[str, Any]:
    """The ``source`` field's schema: io.debezium.connector.<connector>.Source, the common fields followed by
    the ones the source kind declares (cdc.registry.debezium_source_fields: readers/<kind>/debezium.py)."""
    return {"type": "struct", "fields": _COMMON + registry.debezium_source_fields(connector), "optional": False,
            "name": f"io.debezium.connector.{connector}.Source", "version": 1, "field": "source"}


def schema_name(topic: str) -> str:
    """Debezium's schema names are Avro names: characters outside [A-Za-z0-9_.] become '_'."""
    name = re.sub(r"[^A-Za-z0-9_.]", "_", topic)
    return "_" + name if name[:1].isdigit() else name


MASKED_PARAMETER = "__cdc.masked"


def _marked(field: dict[str, Any], column: Any) -> dict[str, Any]:
    """A row field's schema with the ``__cdc.masked`` parameter (the mask's name) when the source's transforms
    mask the column (cdc.stream.events.Column.masked): its values are not the source's. Placed among the
    field's Connect parameters, as Debezium places ``__debezium.source.column.type``."""
    if column.masked is None:
        return field
    out = {k: v for k, v in field.items() if k != "field"}
    out["parameters"] = {**(field.get("parameters") or {}), MASKED_PARAMETER: column.masked}
    out["field"] = field["field"]
    return out


class TableSchemas:
    """The Connect schemas and column encodings of one table's per-table topic (see the module doc)."""

    __slots__ = ("codecs", "envelope", "key", "key_columns", "row", "topic")

    def __init__(self, table: TableSchema, topic: str, connector: str, temporal: str, decimal: str) -> None:
        self.topic = topic
        name = schema_name(topic)
        self.codecs: dict[str, Codec] = {c.name: codec(registry.logical_of(c, connector), connector, temporal, decimal)
                                         for c in table.columns}
        columns = {c.name: c for c in table.columns}
        self.key_columns = tuple(table.primary_key)
        self.key: dict[str, Any] | None = None
        if self.key_columns:
            self.key = {"type": "struct",
                        "fields": [_marked(self.codecs[k].schema(False, k), columns[k]) for k in self.key_columns
                                   if k in columns],
                        "optional": False, "name": f"{name}.Key"}
        row_fields = [_marked(self.codecs[c.name].schema(c.nullable and c.name not in self.key_columns, c.name), c)
                      for c in table.columns]
        self.row = {"type": "struct", "fields": row_fields, "optional": True, "name": f"{name}.Value"}
        self.envelope = {
            "type": "struct",
            "fields": [{**self.row, "field": "before"}, {**self.row, "field": "after"}, source_schema(connector),
                       TRANSACTION, _f("string", "op", False), _f("int64", "ts_ms"), _f("int64", "ts_us"),
                       _f("int64", "ts_ns")],
            "optional": False, "name": f"{name}.Envelope", "version": 2}
