"""Target column types from the columns' logical types (#35 §3): the readers' marks (lob, national, a declared
precision) keep every type as the text-based maps gave it; a MySQL target passes a MySQL source's text through."""

from __future__ import annotations

import pytest

from cdc.schema.logical import LogicalType
from cdc.stream.events import Column
from readers.mysql.types import logical_type as mysql_type
from readers.oracle.types import logical_type as oracle_type
from streaming.targets.lake_types import arrow_type
from streaming.targets.typemap import converter, target_type


def _col(text: str, parse) -> Column:
    return Column("c", text, True, None, parse(text))


@pytest.mark.parametrize("text, dialect, want", [
    ("datetime", "postgres", "timestamp"), ("datetime(0)", "postgres", "timestamp(0)"),  # declared none vs 0
    ("timestamp", "oracle", "timestamp with time zone"), ("timestamp(0)", "oracle", "timestamp(0) with time zone"),
    ("text", "postgres", "text"), ("mediumtext", "oracle", "clob"), ("longblob", "duckdb", "blob"),  # lob: no length
    ("tinyint unsigned", "postgres", "smallint"), ("smallint unsigned", "oracle", "number(10)"),
    ("int unsigned", "duckdb", "bigint"), ("bigint unsigned", "duckdb", "ubigint"), ("bit(64)", "duckdb", "ubigint"),
    ("decimal(39,0)", "duckdb", "varchar"), ("time(3)", "postgres", "interval"), ("json", "oracle", "clob"),
    ("enum('a','b')", "postgres", "text"), ("point", "oracle", "blob"),
    ("int(10) unsigned zerofill", "mysql", "int(10) unsigned"), ("enum('a b','c')", "mysql", "enum('a b','c')"),
])
def test_mysql_columns(text, dialect, want):
    assert target_type(_col(text, mysql_type), dialect) == want


@pytest.mark.parametrize("text, dialect, want", [
    ("nchar(10)", "mysql", "varchar(10)"), ("char(10)", "mysql", "char(10)"), ("nchar(10)", "postgres", "varchar(10)"),
    ("char(10)", "postgres", "char(10)"), ("nvarchar2(20)", "oracle", "varchar2(20)"), ("clob", "mysql", "longtext"),
    ("clob", "postgres", "text"), ("number", "mysql", "decimal(38,10)"), ("number", "duckdb", "varchar"),
    ("datetime(0)", "mysql", "datetime(0)"), ("datetime(0)", "oracle", "timestamp(0)"),  # DATE: a wall clock
    ("timestamp(6) with local time zone", "oracle", "timestamp(6)"), ("raw(16)", "oracle", "blob"),
    ("binary_float", "postgres", "real"), ("blob", "mysql", "blob"),
])
def test_oracle_columns(text, dialect, want):
    assert target_type(_col(text, oracle_type), dialect) == want


def test_the_mysql_pass_through_is_keyed_on_the_dialect_not_the_spelling():
    masked = Column("c", "varchar(8)", True, None, LogicalType("string", length=8))  # no reader: no dialect
    assert target_type(masked, "mysql") == "varchar(8)"
    assert target_type(Column("c", "geometry", True, None, mysql_type("geometry")), "mysql") == "geometry"
    assert converter(Column("c", "raw(4)", True, None, oracle_type("raw(4)")), "mysql")("HEXTORAW('00ff')") == b"\x00\xff"


def test_lake_types_by_logical_type():
    import pyarrow as pa

    assert arrow_type(_col("smallint unsigned", mysql_type), "delta") == pa.int32()
    assert arrow_type(_col("tinyint", mysql_type), "delta") == pa.int16()
    assert arrow_type(_col("tinyint", mysql_type), "iceberg") == pa.int32()
    assert arrow_type(_col("timestamp(6) with time zone", oracle_type), "delta") == pa.timestamp("us", tz="UTC")
    assert arrow_type(_col("datetime(0)", oracle_type), "iceberg") == pa.timestamp("us")
    assert arrow_type(_col("number", oracle_type), "delta") == pa.decimal128(38, 10)
