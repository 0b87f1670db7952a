"""Type conversion to JSON-ready values, and the errors that name where a value failed."""

from __future__ import annotations

import datetime as dt
import decimal
import pickle
from types import SimpleNamespace as NS

import pytest
from pymysqlreplication.constants import FIELD_TYPE as T

from readers.mysql.binlog.decode import RowConverter
from readers.mysql.errors import DecodeError, UnknownColumnType
from readers.mysql.schema import type_text


def col(name, type_, **kw):
    return NS(name=name, type=type_, unsigned=kw.pop("unsigned", False), **kw)


def test_values_become_json_ready():
    cols = [col("i", T.LONG), col("d", T.NEWDECIMAL), col("f", T.DOUBLE), col("dt", T.DATETIME2),
            col("ts", T.TIMESTAMP2), col("day", T.DATE), col("t", T.TIME2), col("b", T.VARCHAR),
            col("s", T.SET, set_values=["p", "q", "r"]), col("bit", T.BIT), col("j", T.JSON), col("y", T.YEAR)]
    row = {"i": 5, "d": decimal.Decimal("12.50"), "f": 1.5, "dt": dt.datetime(2024, 1, 2, 3, 4, 5, 6),
           "ts": dt.datetime(2024, 1, 2, 3, 4, 5), "day": dt.date(2024, 2, 29),
           "t": -dt.timedelta(hours=838, microseconds=5), "b": b"\x00\xff", "s": {"r", "p"}, "bit": "101",
           "j": {b"k": [1, b"v"]}, "y": 2024}
    out = RowConverter("db.t", cols)(dict(row), "f:4")
    assert out == {"i": 5, "d": "12.50", "f": 1.5, "dt": "2024-01-02T03:04:05.000006", "ts": "2024-01-02T03:04:05Z",
                   "day": "2024-02-29", "t": "-838:00:00.000005", "b": "AP8=", "s": "p,r", "bit": 5,
                   "j": '{"k":[1,"v"]}', "y": 2024}


def test_nulls_pass_through():
    assert RowConverter("db.t", [col("d", T.NEWDECIMAL)])({"d": None}, "f:4") == {"d": None}


def test_bad_value_names_table_column_position_value():
    conv = RowConverter("db.t", [col("when", T.DATETIME2)])
    with pytest.raises(DecodeError) as info:
        conv({"when": "not a date"}, "mariadb-bin.000001:1234 gtid 0-1-9")
    err = info.value
    assert (err.table, err.column, err.position) == ("db.t", "when", "mariadb-bin.000001:1234 gtid 0-1-9")
    assert "not a date" in err.value
    assert pickle.loads(pickle.dumps(err)).column == "when"


def test_unknown_column_type_is_refused():
    with pytest.raises(UnknownColumnType) as info:
        RowConverter("db.t", [col("x", 200)])
    assert info.value.column == "x" and info.value.table == "db.t"


@pytest.mark.parametrize("column, text", [
    (col("a", T.LONGLONG, unsigned=True), "bigint unsigned"),
    (col("a", T.NEWDECIMAL, precision=10, decimals=2), "decimal(10,2)"),
    (col("a", T.DATETIME2, fsp=6), "datetime(6)"),
    (col("a", T.VARCHAR, max_length=80, character_set_name="utf8mb4"), "varchar(20)"),
    (col("a", T.VARCHAR, max_length=8, character_set_name="binary"), "varbinary(8)"),
    (col("a", T.ENUM, enum_values=["", "x", "y"]), "enum('x','y')"),
    (col("a", T.BLOB, length_size=2, character_set_name="utf8mb4"), "text"),
])
def test_type_text_from_table_map(column, text):
    assert type_text(column) == text
