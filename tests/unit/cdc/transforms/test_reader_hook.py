"""The MySQL reader's transforms hook: a shaped table's natively decoded rows take the serialized path with the
mapper applied before any byte is made (records byte-identical to the Change path's, no clear value of a masked
or excluded column in them), its rows leave shaped, and a decode error or a dead letter shows no clear value of a
masked column."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from cdc.errors import DecodeError
from cdc.stream.events import Begin, Change, ChangeBatch, Commit, TableId, expand
from cdc.transforms.config import TransformsConfig
from cdc.transforms.mapper import SourceTransforms
from readers.mysql.binlog.decode import ConvertedRow, RowConverter
from readers.mysql.reader import MySqlSource
from tests.unit.cdc.publish.fakes import publisher
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


def _both(tmp_path, rule, cls, rows, row_no=0):
    """(the fast path's events, the Change path's events) of one rows event of a shaped table."""
    fast, conv = _source(tmp_path, rule)
    out = list(fast._changes(_event(cls, rows), T, "0-1-1", row_no, conv, None))
    slow, conv = _source(tmp_path, rule)
    slow._serialize = False  # the Change path (a source with a signal table; the Python rows pass alike)
    return out, list(slow._changes(_event(cls, rows), T, "0-1-1", row_no, conv, None))


def _published(events):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(time, "time", lambda: 1_700_000_000.5)
        pub, fake, _ = publisher()
        pub.publish(Begin("0-1-1", 0))
        for ev in events:
            pub.publish(ev)
        pub.publish(Commit("0-1-1", 0, {"gtid_set": "0-1-1"}, {"gtid": "0-1-1"}))
    return fake.records


RULE = {"match": "shop.*", "exclude": ["notes"], "columns": {"email": {"mask": "hash"}}}


def test_shaped_native_rows_take_the_fast_path_with_the_mapper_applied(tmp_path):
    rows = [{"before_values": ConvertedRow(ROW), "after_values": ConvertedRow(ROW | {"name": "Bo"})}]
    out, slow = _both(tmp_path, RULE, UpdateRowsEvent, rows)
    assert [type(c) for c in out] == [ChangeBatch] and [type(c) for c in slow] == [Change]
    c = next(out[0].changes())
    assert "notes" not in c.after and "notes" not in c.before and len(c.after["email"]) == 64
    assert c.after == slow[0].after and c.before == slow[0].before and c.source == slow[0].source
    assert c.after["name"] == "Bo" and c.schema == slow[0].schema
    assert [col.name for col in c.schema.columns] == ["id", "email", "name", "card", "ssn", "score"]
    for image in out[0].rows[0][1:]:  # the key, before, after and source bytes the publisher splices in
        assert CLEAR.encode() not in image and b"secret note" not in image


@pytest.mark.parametrize("cls,rows", [
    (WriteRowsEvent, [{"values": ConvertedRow(ROW | {"id": i})} for i in range(3)]),
    (DeleteRowsEvent, [{"values": ConvertedRow(ROW | {"id": i})} for i in range(3)]),
    (UpdateRowsEvent, [{"before_values": ConvertedRow(ROW | {"id": i}),
                        "after_values": ConvertedRow(ROW | {"id": i, "email": f"{i}{CLEAR}"})} for i in range(3)]),
])
def test_shaped_fast_path_records_are_byte_identical_to_the_change_path(tmp_path, cls, rows):
    rule = RULE | {"computed": {"big": {"expr": "score * 2", "type": "int"}}}
    out, slow = _both(tmp_path, rule, cls, rows, row_no=5)
    assert [type(c) for c in out] == [ChangeBatch]
    fast, python = _published(out), _published(slow)
    assert fast == python and sum(b"\"after\":" in v for _, v, _ in fast) == 3
    assert not any(CLEAR.encode() in (v or b"") + (k or b"") or b"secret note" in (v or b"")
                   for _, v, k in fast)


def test_shaped_fast_path_with_every_row_filtered_yields_nothing(tmp_path):
    out, slow = _both(tmp_path, {"match": "shop.*", "filter": "score > 5"}, WriteRowsEvent,
                      [{"values": ConvertedRow(ROW)}])
    assert out == [] and slow == []


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
    out = list(expand(src._changes(_event(WriteRowsEvent, rows), T, "0-1-1", 10, conv, None)))
    assert [(c.op, c.after["id"], c.source["row"]) for c in out] == [("c", 7, 10), ("c", 9, 11)]
    moves = [{"before_values": ConvertedRow(ROW | {"score": 9.0}), "after_values": ConvertedRow(ROW | {"score": 1.0})},
             {"before_values": ConvertedRow(ROW | {"score": 1.0}), "after_values": ConvertedRow(ROW | {"score": 2.0})},
             {"before_values": ConvertedRow(ROW | {"score": 1.0}), "after_values": ConvertedRow(ROW | {"score": 8.0})}]
    out = list(expand(src._changes(_event(UpdateRowsEvent, moves), T, "0-1-2", 0, conv, None)))
    assert [(c.op, c.before is None, c.after is None) for c in out] == [("d", False, True), ("c", True, False)]


@pytest.mark.parametrize("serialize", [True, False], ids=["serialized", "changes"])
@pytest.mark.parametrize("cls,rows", [
    (WriteRowsEvent, [{"values": ConvertedRow(ROW | {"id": i})} for i in range(3)]),
    (DeleteRowsEvent, [{"values": ConvertedRow(ROW | {"id": i})} for i in range(3)]),
    (UpdateRowsEvent, [{"before_values": ConvertedRow(ROW | {"id": i}),
                        "after_values": ConvertedRow(ROW | {"id": i, "email": f"{i}{CLEAR}"})} for i in range(3)]),
])
def test_rows_shaped_while_decoded_publish_the_change_paths_bytes(tmp_path, cls, rows, serialize):
    """Rows the C pass shaped while decoding (FastStream.shapes: ShapedRow images) are published as they are,
    serialized or as Changes, byte-identical to the clear rows through the mapper."""
    from readers.mysql.binlog.native_rows import shaped_rows

    op = "c" if cls is WriteRowsEvent else "d" if cls is DeleteRowsEvent else "u"
    fast, conv = _source(tmp_path, RULE)
    fast._serialize = serialize
    shaped = shaped_rows(rows, op, conv[1][3])
    assert shaped is not None
    out = list(fast._changes(_event(cls, shaped), T, "0-1-1", 5, conv, None))
    assert [type(c) for c in out] == ([ChangeBatch] if serialize else [Change] * 3)
    slow, conv = _source(tmp_path, RULE)
    slow._serialize = False
    python = list(slow._changes(_event(cls, rows), T, "0-1-1", 5, conv, None))
    assert _published(out) == _published(python)
    assert not any(CLEAR.encode() in (v or b"") + (k or b"") for _, v, k in _published(out))


def test_rows_shaped_for_a_table_with_no_mapper_stop_the_reader(tmp_path):
    from readers.mysql.binlog.native_rows import ShapedRow

    src, conv = _source(tmp_path, {"match": "shop.other", "exclude": ["notes"]})
    with pytest.raises(DecodeError):
        list(src._changes(_event(WriteRowsEvent, [{"values": ShapedRow(ROW)}]), T, "0-1-1", 0, conv, None))
