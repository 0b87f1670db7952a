"""The Oracle reader's transforms hook (readers/oracle/shaping.py): what it does to each kind of event, and where
it fails closed rather than let a clear value pass."""

from __future__ import annotations

import pytest

from cdc.stream.events import Change, ChangeBatch, Column, SchemaChange, TableId, TableSchema
from cdc.transforms.errors import TransformError
from readers.oracle.config import OracleSourceConfig
from readers.oracle.shaping import Shaping
from readers.oracle.types import logical_type

T = TableId("APP", "CUSTOMERS")
SCHEMA = TableSchema(T, tuple(Column(n, t, n != "ID", None, logical_type(t)) for n, t in
                              [("ID", "number(10)"), ("EMAIL", "varchar2(80)"), ("NOTE", "varchar2(200)")]), ("ID",))
ROW = {"ID": "7", "EMAIL": "CLEAR@x", "NOTE": "CLEAR NOTE"}


@pytest.fixture
def shaping(tmp_path):
    (tmp_path / "h").write_bytes(b"k" * 32)
    return Shaping(OracleSourceConfig(name="ora", dsn="simulator", tables=["APP.*"], transforms={
        "hash_key_file": str(tmp_path / "h"),
        "tables": [{"match": "app.customers", "exclude": ["NOTE"], "columns": {"EMAIL": {"mask": "hash"}},
                    "filter": "ID < 100", "computed": {"ID2": {"expr": "ID * 2", "type": "number(12)"}}}]}))


def test_a_change_is_filtered_and_shaped(shaping):
    out = shaping.change(Change(T, "c", None, dict(ROW), {"scn": 1}, SCHEMA))
    assert set(out.after) == {"ID", "EMAIL", "ID2"} and out.after["ID2"] == "14" and len(out.after["EMAIL"]) == 64
    assert [c.name for c in out.schema.columns] == ["ID", "EMAIL", "ID2"]
    assert out.schema.columns[1].masked == "hash" and out.schema.columns[1].type == "varchar2(64)"
    assert shaping.change(Change(T, "c", None, {**ROW, "ID": "700"}, {}, SCHEMA)) is None  # the filter
    moved = shaping.change(Change(T, "u", dict(ROW), {**ROW, "ID": "700"}, {}, SCHEMA))
    assert moved.op == "d" and moved.after is None and moved.before["ID"] == "7"


def test_a_truncate_is_never_filtered_and_other_tables_pass(shaping):
    out = shaping.change(Change(T, "t", None, None, {}, SCHEMA))
    assert out.op == "t" and "NOTE" not in [c.name for c in out.schema.columns]
    other = Change(TableId("APP", "OTHER"), "c", None, dict(ROW), {}, TableSchema(TableId("APP", "OTHER"),
                                                                                  SCHEMA.columns, ("ID",)))
    assert shaping.change(other) is other


def test_schema_changes_and_their_table_actions_are_shaped(shaping):
    sc = shaping.schema_change(SchemaChange(T, "alter table ...", SCHEMA, 0, None,
                                            [{"op": "create", "table": str(T), "schema": SCHEMA.to_json()}]))
    assert [c.name for c in sc.schema.columns] == ["ID", "EMAIL", "ID2"]
    assert [c["name"] for c in sc.tables[0]["schema"]["columns"]] == ["ID", "EMAIL", "ID2"]
    assert sc.tables[0]["schema"]["columns"][1]["masked"] == "hash"


def test_fails_closed_on_a_serialized_row_or_an_unknown_definition_of_a_shaped_table(shaping):
    row = (b"c", b"7", b"null", b'{"ID":"7","EMAIL":"CLEAR@x"}', b"}")
    with pytest.raises(TransformError, match="native pass must decline"):
        shaping.batch(ChangeBatch([(T, SCHEMA)], [row]))
    with pytest.raises(TransformError, match="no known definition"):
        shaping.change(Change(T, "c", None, dict(ROW), {}, None))
    kept = shaping.batch(ChangeBatch([None, None], [Change(T, "c", None, dict(ROW), {}, SCHEMA),
                                                    Change(T, "c", None, {**ROW, "ID": "700"}, {}, SCHEMA)]))
    assert len(kept) == 1 and kept.rows[0].after["ID"] == "7"


def test_a_shaped_tables_statement_is_not_shown(shaping):
    from cdc.errors import DecodeError
    from readers.oracle.convert import Converter

    conv = Converter({"APP.CUSTOMERS.EMAIL": "int"}, "redo_text", shaped=shaping.shaped)
    with pytest.raises(DecodeError) as err:
        conv(Change(T, "c", None, dict(ROW), {"scn": 5}, SCHEMA))
    assert "CLEAR" not in str(err.value) and "EMAIL" in str(err.value)


def test_oracle_config_refuses_a_computed_type_it_cannot_carry():
    with pytest.raises(ValueError, match="computed column X type 'date'"):
        OracleSourceConfig(name="ora", dsn="simulator", tables=["APP.*"], transforms={
            "tables": [{"match": "APP.T", "computed": {"X": {"expr": "ID", "type": "date"}}}]})
