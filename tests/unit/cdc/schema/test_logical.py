"""Logical column types: the readers' parsers, the SCHEMA record's additive field, and old streams without it."""

from __future__ import annotations

import pytest

from cdc import registry
from cdc.schema.logical import LogicalType, LogicalTypeError
from cdc.stream.events import Column, TableId, TableSchema
from readers.mysql.types import logical_type as mysql_type
from readers.oracle.types import logical_type as oracle_type


@pytest.mark.parametrize("text,want", [
    ("bigint unsigned", LogicalType("integer", length=64, unsigned=True)),
    ("tinyint(1)", LogicalType("integer", length=8)),
    ("decimal(10,2)", LogicalType("decimal", precision=10, scale=2)),
    ("decimal", LogicalType("decimal", precision=10, scale=0)),
    ("varchar(20)", LogicalType("string", length=20)),
    ("char(3)", LogicalType("string", length=3, fixed=True)),
    ("mediumtext", LogicalType("string", length=16_777_215, subtype="lob")),
    ("blob", LogicalType("binary", length=65_535, subtype="lob")),
    ("datetime(6)", LogicalType("timestamp", precision=6)),
    ("timestamp", LogicalType("timestamp_tz", time_zone="utc")),  # precision None: declared none
    ("datetime", LogicalType("timestamp")),
    ("datetime(0)", LogicalType("timestamp", precision=0)),
    ("datetime(9)", LogicalType("other")),  # MySQL holds microseconds
    ("enum('a','it''s')", LogicalType("enum", values=("a", "it's"))),
    ("point", LogicalType("spatial", subtype="point")),
    ("geometry_of_the_future", LogicalType("other")),
])
def test_mysql_spellings(text: str, want: LogicalType) -> None:
    assert mysql_type(text) == want


@pytest.mark.parametrize("text,want", [
    ("varchar2(40)", LogicalType("string", length=40)),
    ("number(12,2)", LogicalType("decimal", precision=12, scale=2)),
    ("number", LogicalType("decimal")),
    ("date", LogicalType("timestamp", precision=0)),
    ("datetime(0)", LogicalType("timestamp", precision=0)),
    ("timestamp(9) with time zone", LogicalType("timestamp_tz", precision=9, time_zone="utc")),
    ("timestamp with local time zone", LogicalType("timestamp_tz", precision=6, time_zone="local")),
    ("raw(16)", LogicalType("binary", length=16, stream_form="hextoraw")),
    ("nvarchar2(10)", LogicalType("string", length=10, subtype="national")),
    ("nchar(3)", LogicalType("string", length=3, fixed=True, subtype="national")),
    ("nclob", LogicalType("string", subtype="national")),
    ("clob", LogicalType("string", subtype="lob")),
    ("binary_double", LogicalType("double", stream_form="text")),
])
def test_oracle_spellings(text: str, want: LogicalType) -> None:
    assert oracle_type(text) == want


def test_each_reader_names_the_dialect_it_read_and_equality_ignores_it() -> None:
    assert mysql_type("int").dialect == "mysql" and oracle_type("number").dialect == "oracle"
    assert mysql_type("int") == LogicalType("integer", length=32)
    assert mysql_type("int").to_json() == {"family": "integer", "length": 32, "dialect": "mysql"}
    assert LogicalType.from_json(mysql_type("int").to_json()).dialect == "mysql"
    assert registry.guess_logical("varchar2(4)").dialect == "oracle"  # MySQL's parser does not know it
    assert registry.guess_logical("date").dialect == "mysql"


def test_the_schema_json_carries_the_logical_type_and_reads_it_back() -> None:
    col = Column("name", "varchar2(40)", False, None, oracle_type("varchar2(40)"))
    schema = TableSchema(TableId("HR", "EMP"), (col,), ("name",))
    obj = schema.to_json()
    assert obj["columns"][0] == {"name": "name", "type": "varchar2(40)", "nullable": False,
                                 "logical": {"family": "string", "length": 40, "dialect": "oracle"}}
    back = TableSchema.from_json(obj)
    assert back.columns[0].logical == col.logical and back == schema


def test_a_schema_written_before_the_field_is_rebuilt_by_the_source_kinds_parser() -> None:
    old = {"table": "shop.t", "columns": [{"name": "id", "type": "bigint unsigned", "nullable": False}],
           "primary_key": ["id"]}
    col = TableSchema.from_json(old).columns[0]
    assert col.logical is None
    assert registry.logical_of(col, "mysql") == LogicalType("integer", length=64, unsigned=True)
    assert TableSchema.from_json(old).to_json() == old  # no logical: the bytes of an old schema unchanged


def test_bad_input_names_what_is_wrong() -> None:
    with pytest.raises(LogicalTypeError, match="unknown logical type family 'texty'"):
        LogicalType("texty")
    with pytest.raises(LogicalTypeError, match="unknown fields"):
        LogicalType.from_json({"family": "string", "size": 3})
    with pytest.raises(KeyError, match="source kind 'db2' declares no type parser"):
        registry.type_parser("db2")
