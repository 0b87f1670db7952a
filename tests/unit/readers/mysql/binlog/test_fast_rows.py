"""readers/mysql/binlog/fastevents.fast_rows: a small rows event decoded by the native pass straight from its
packet, into the library's own event class with what the reader reads; anything it does not vouch for is None
(the library's path)."""

from __future__ import annotations

import struct
import zlib
from types import SimpleNamespace

import pytest
from pymysqlreplication.constants import FIELD_TYPE as T
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from readers.mysql.binlog.decode import ConvertedRow
from readers.mysql.binlog.fastevents import fast_rows
from readers.mysql.binlog.native_rows import NATIVE


def test_the_c_pass_is_compiled_here():
    assert NATIVE, "make venv compiles readers/mysql/binlog/_rows_native.c; fast_rows needs it"


def _table():
    cols = [SimpleNamespace(name="id", type=T.LONG, unsigned=False),
            SimpleNamespace(name="a", type=T.VARCHAR, max_length=40, character_set_name="utf8mb4")]
    return SimpleNamespace(schema="db", table="t", columns=cols)


def _row(i: int, a: bytes) -> bytes:
    return b"\x00" + struct.pack("<i", i) + bytes([len(a)]) + a  # null bitmap, INT, VARCHAR


def _packet(code: int, body_rows: bytes, table_id: int = 7, ncols: int = 2, v2_extra: bytes = b"\x02\x00",
            checksum: bool = True) -> bytes:
    post = table_id.to_bytes(6, "little") + b"\x01\x00" + (v2_extra if code >= 0x1E else b"")
    bitmaps = b"\x03" * (2 if code in (0x18, 0x1F) else 1)
    body = post + bytes([ncols]) + bitmaps + body_rows
    size = 19 + len(body) + (4 if checksum else 0)
    header = struct.pack("<IBIIIH", 1700000000, code, 42, size, 999, 0)
    event = header + body
    return b"\x00" + event + (struct.pack("<I", zlib.crc32(event)) if checksum else b"")


@pytest.mark.parametrize("code, cls", [(0x17, WriteRowsEvent), (0x19, DeleteRowsEvent), (0x1E, WriteRowsEvent)])
def test_write_and_delete_rows_decode_to_the_library_class(code, cls):
    tables = {7: _table()}
    ev = fast_rows(_packet(code, _row(5, b"xy") + _row(-1, b"")), True, tables, None)
    assert type(ev) is cls
    assert (ev.schema, ev.table, ev.table_id, ev.number_of_columns) == ("db", "t", 7, 2)
    assert (ev.packet.log_pos, ev.packet.server_id, ev.timestamp, ev.event_type) == (999, 42, 1700000000, code)
    assert ev.columns_present_bitmap == b"\x03"
    assert [dict(r["values"]) for r in ev.rows] == [{"id": 5, "a": "xy"}, {"id": -1, "a": ""}]
    assert type(ev.rows[0]["values"]) is ConvertedRow


def test_update_rows_carry_both_images_and_bitmaps():
    ev = fast_rows(_packet(0x18, _row(5, b"xy") + _row(5, b"z")), True, {7: _table()}, None)
    assert type(ev) is UpdateRowsEvent and ev.columns_present_bitmap2 == b"\x03"
    assert [(dict(r["before_values"]), dict(r["after_values"])) for r in ev.rows] == [
        ({"id": 5, "a": "xy"}, {"id": 5, "a": "z"})]


def test_without_checksum():
    ev = fast_rows(_packet(0x17, _row(1, b"a"), checksum=False), False, {7: _table()}, None)
    assert [dict(r["values"]) for r in ev.rows] == [{"id": 1, "a": "a"}]


@pytest.mark.parametrize("packet, tables, lengths", [
    (_packet(0x17, _row(1, b"a"), table_id=8), {7: _table()}, None),  # table not in the map
    (_packet(0x17, _row(1, b"a"), ncols=3), {7: _table()}, None),  # column count differs from the table's
    (_packet(0x1E, _row(1, b"a"), v2_extra=b"\x05\x00\x01\x00\x00"), {7: _table()}, None),  # v2 extra data
    (_packet(0x17, _row(1, b"a")), {7: _table()}, [8] * 0x16 + [10]),  # a post-header length not this layout's
    (_packet(0x17, _row(1, b"a")[:-1]), {7: _table()}, None),  # truncated row: the C pass refuses
    (_packet(0x17, _row(1, b"\xff\xfe")), {7: _table()}, None),  # not UTF-8: the library decides
    (_packet(0x13, _row(1, b"a")), {7: _table()}, None),  # not a rows event
    (_packet(0x27, _row(1, b"a")), {7: _table()}, None),  # PARTIAL_UPDATE_ROWS: the library's
])
def test_what_the_fast_path_does_not_vouch_for_is_the_librarys(packet, tables, lengths):
    assert fast_rows(packet, True, tables, lengths) is None


def test_a_table_the_native_pass_cannot_plan_is_the_librarys():
    table = _table()
    table.columns[1] = SimpleNamespace(name="a", type=T.VAR_STRING, max_length=40, character_set_name=None)
    assert fast_rows(_packet(0x17, _row(1, b"a")), True, {7: table}, None) is None
    assert table._cdc_native is None  # decided once per TABLE_MAP


def _shape(tmp_path, table, **rule):
    """The mask plan the reader registers for ``table`` (native_rows.decode_masks of its mapper)."""
    from cdc.stream.events import Column, TableId, TableSchema
    from cdc.transforms.config import TransformsConfig
    from cdc.transforms.mapper import SourceTransforms
    from readers.mysql.binlog.native_rows import decode_masks
    from readers.mysql.types import logical_type

    (tmp_path / "k").write_bytes(b"a hash key of 32 bytes, or more.")
    schema = TableSchema(TableId("db", "t"), (Column("id", "int", False, None, logical_type("int")),
                                              Column("a", "varchar(40)", True, None, logical_type("varchar(40)"))),
                         ("id",))
    cfg = TransformsConfig.model_validate({"hash_key_file": str(tmp_path / "k"), "tables": [{"match": "db.t"} | rule]})
    mapper = SourceTransforms("s", cfg).mapper(schema)
    return mapper, decode_masks(mapper, table)


@pytest.mark.parametrize("rule", [{"columns": {"a": {"mask": "hash"}}}, {"exclude": ["a"]},
                                  {"columns": {"id": {"mask": "hash"}, "a": {"mask": "keep_last", "length": 1}}}])
def test_a_registered_shape_decodes_shaped_rows_equal_to_the_mappers(tmp_path, rule):
    from readers.mysql.binlog.native_rows import ShapedRow

    table = _table()
    mapper, masks = _shape(tmp_path, table, **rule)
    assert masks is not None
    packet = _packet(0x18, _row(5, "é-secret".encode()) + _row(5, b"") + _row(-1, b"x" * 70) + _row(-1, b"y"))
    clear = fast_rows(packet, True, {7: table}, None)
    shaped = fast_rows(packet, True, {7: table}, None, {7: (table, masks)})
    assert all(type(r[k]) is ShapedRow for r in shaped.rows for k in r)
    for s, c in zip(shaped.rows, clear.rows, strict=True):
        for k in c:
            assert list(s[k].items()) == list(mapper.row(c[k]).items())
            assert "é-secret" not in s[k].values()


def test_a_shape_registered_for_another_table_object_is_not_applied(tmp_path):
    table = _table()
    _, masks = _shape(tmp_path, table, exclude=["a"])
    ev = fast_rows(_packet(0x17, _row(1, b"a")), True, {7: table}, None, {7: (_table(), masks)})
    assert type(ev.rows[0]["values"]) is ConvertedRow and dict(ev.rows[0]["values"]) == {"id": 1, "a": "a"}


def test_a_mapper_the_c_pass_does_not_implement_registers_nothing(tmp_path):
    _, masks = _shape(tmp_path, _table(), computed={"b": {"expr": "id + 1", "type": "int"}})
    assert masks is None
