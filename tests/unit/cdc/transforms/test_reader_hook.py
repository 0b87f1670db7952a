"""The MySQL reader's transforms hook: a shaped table never takes the serialized (native) path, its rows leave
shaped, and a decode error or a dead letter shows no clear value of a masked column."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pymysqlreplication.row_event import UpdateRowsEvent, WriteRowsEvent

from cdc.errors import DecodeError
from cdc.stream.events import Change, ChangeBatch, TableId
from cdc.transforms.config import TransformsConfig
from cdc.transforms.mapper import SourceTransforms
from readers.mysql.binlog.decode import ConvertedRow, RowConverter
from readers.mysql.reader import MySqlSource
from tests.unit.cdc.transforms.test_mapper import SCHEMA

T = TableId("shop", "customers")
CLEAR = "PII-SECRET-123@example.com"


def _source(tmp_path, rule):
    (tmp_path / "h").write_bytes(b"k" * 32)
    src = object.__new__(MySqlSource)
    cfg = TransformsConfig.model_validate({"hash_key_file": str(tmp_path / "h"), "tables": [rule]})
    src.transforms = SourceTransforms("s", cfg)
    src._serialize, src._dead_letter, src._table_schemas = True, None, {}
    src.metrics = SimpleNamespace(event_read=lambda *a: None)
    tmap = object()
    src._stream = SimpleNamespace(log_file="bin.1", table_map={1: tmap})
    mapper = src.transforms.mapper(SCHEMA)
    converters = {1: (tmap, RowConverter(str(T), []), SCHEMA if mapper is None else mapper.schema, mapper)}
    return src, converters


def _event(cls, rows):
    ev = object.__new__(cls)
    ev.table_id, ev.packet = 1, SimpleNamespace(log_pos=4, server_id=9)
    ev._RowsEvent__rows = rows
    return ev


ROW = {"id": 1, "email": CLEAR, "notes": "secret note", "name": "Al", "card": "1", "ssn": "x", "score": 1.0}


def test_unshaped_native_rows_are_serialized(tmp_path):
    src, conv = _source(tmp_path, {"match": "shop.other", "exclude": ["notes"]})
    out = list(src._changes(_event(WriteRowsEvent, [{"values": ConvertedRow(ROW)}]), T, "0-1-1", 0, conv, None))
    assert type(out[0]) is ChangeBatch  # the control: the fast path is taken when nothing is shaped


def test_shaped_native_rows_decline_the_fast_path(tmp_path):
    src, conv = _source(tmp_path, {"match": "shop.*", "exclude": ["notes"], "columns": {"email": {"mask": "hash"}}})
    rows = [{"before_values": ConvertedRow(ROW), "after_values": ConvertedRow(ROW | {"name": "Bo"})}]
    out = list(src._changes(_event(UpdateRowsEvent, rows), T, "0-1-1", 0, conv, None))
    assert [type(c) for c in out] == [Change]
    c = out[0]
    assert "notes" not in c.after and "notes" not in c.before and len(c.after["email"]) == 64
    assert CLEAR not in repr(c) and "secret note" not in repr(c) and c.after["name"] == "Bo"
    assert [col.name for col in c.schema.columns] == ["id", "email", "name", "card", "ssn", "score"]


def test_decode_error_and_dead_letter_hide_masked_values(tmp_path):
    src, conv = _source(tmp_path, {"match": "shop.*", "columns": {"email": {"mask": "hash"}}})

    def boom(v):
        raise ValueError(f"bad {v}")
    tmap, _, schema, mapper = conv[1]
    convert = RowConverter(str(T), [])
    convert.todo = (("email", boom),)
    conv[1] = (tmap, convert, schema, mapper)
    ev = _event(WriteRowsEvent, [{"values": dict(ROW)}])
    with pytest.raises(DecodeError) as err:
        list(src._changes(ev, T, "0-1-1", 0, conv, None))
    assert CLEAR not in str(err.value) and err.value.fields["column"] == "email"
    letters = []
    src._dead_letter = lambda exc, raw: letters.append((str(exc), raw))
    ev = _event(WriteRowsEvent, [{"values": dict(ROW)}])
    assert list(src._changes(ev, T, "0-1-1", 0, conv, None)) == []
    assert letters and CLEAR not in repr(letters) and "secret note" not in repr(letters)


def test_filtered_rows_are_not_yielded_and_take_no_row_number(tmp_path):
    src, conv = _source(tmp_path, {"match": "shop.*", "filter": "score > 5"})
    rows = [{"values": ConvertedRow(ROW | {"id": i, "score": float(i)})} for i in (1, 7, 2, 9)]
    out = list(src._changes(_event(WriteRowsEvent, rows), T, "0-1-1", 10, conv, None))
    assert [(c.op, c.after["id"], c.source["row"]) for c in out] == [("c", 7, 10), ("c", 9, 11)]
    moves = [{"before_values": ConvertedRow(ROW | {"score": 9.0}), "after_values": ConvertedRow(ROW | {"score": 1.0})},
             {"before_values": ConvertedRow(ROW | {"score": 1.0}), "after_values": ConvertedRow(ROW | {"score": 2.0})},
             {"before_values": ConvertedRow(ROW | {"score": 1.0}), "after_values": ConvertedRow(ROW | {"score": 8.0})}]
    out = list(src._changes(_event(UpdateRowsEvent, moves), T, "0-1-2", 0, conv, None))
    assert [(c.op, c.before is None, c.after is None) for c in out] == [("d", False, True), ("c", True, False)]
