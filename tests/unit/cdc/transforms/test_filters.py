"""Row filters (``filter:`` expressions parsed by sqlglot, ``filter_function``): evaluation with SQL's NULL
logic, refusals at config load, both images of an update, snapshots, and the SQL the compare renders."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cdc.stream.events import TableId
from cdc.transforms.config import TransformsConfig
from cdc.transforms.errors import TransformError
from cdc.transforms.expressions import Expression
from cdc.transforms.mapper import SourceTransforms
from readers.mysql.config import MySqlSourceConfig
from tests.unit.cdc.transforms.test_mapper import SCHEMA


def _t(**rule):
    return SourceTransforms("src", TransformsConfig.model_validate({"tables": [{"match": "shop.*"} | rule]}))


@pytest.mark.parametrize(("text", "row", "passes"), [
    ("id > 10", {"id": 11}, True),
    ("id > 10", {"id": 10}, False),
    ("id > 10", {"id": None}, False),  # NULL: not TRUE
    ("NOT id > 10", {"id": None}, False),  # NOT NULL is NULL
    ("id > 10 OR name = 'x'", {"id": None, "name": "x"}, True),
    ("id > 10 AND name = 'x'", {"id": None, "name": "y"}, False),
    ("name IS NULL", {"name": None}, True),
    ("name IS NOT NULL", {"name": None}, False),
    ("name IN ('a', 'b')", {"name": "b"}, True),
    ("name NOT IN ('a', NULL)", {"name": "b"}, False),  # NULL in the list: NULL, not TRUE
    ("id BETWEEN 2 AND 4", {"id": 4}, True),
    ("email LIKE '%@example.com'", {"email": "a@example.com"}, True),
    ("email LIKE 'a_c'", {"email": "abbc"}, False),
    ("email NOT LIKE 'a_c'", {"email": "abbc"}, True),  # sqlglot: one Like node with negate=True
    ("email NOT LIKE 'a%'", {"email": "abc"}, False),
    ("email NOT LIKE 'a%'", {"email": None}, False),  # NULL NOT LIKE: NULL, not TRUE
    ("UPPER(name) = 'BOB'", {"name": "bob"}, True),
    ("name = 'BOB'", {"name": "bob"}, False),  # exact (case-sensitive), documented
    ("LENGTH(card) >= 4", {"card": "1234"}, True),
    ("COALESCE(card, 'none') = 'none'", {"card": None}, True),
    ("score * 2 > 5", {"score": "2.6"}, True),  # a DECIMAL arrives as text: compared as a number
    ("id % 2 = 0 AND -id < 0", {"id": 4}, True),
    ("created >= '2024-01-01'", {"created": "2024-03-01T10:00:00"}, True),  # temporal: ISO text
])
def test_expression(text, row, passes):
    assert Expression(text, "here").matches(row) is passes


@pytest.mark.parametrize("text", ["id = (SELECT 1)", "SLEEP(1) = 0", "id IS TRUE", "id >", "name REGEXP 'x'"])
def test_unsupported_or_broken_expressions_refused_at_load(text):
    with pytest.raises(ValidationError, match="filter"):
        TransformsConfig.model_validate({"tables": [{"match": "shop.*", "filter": text}]})


def test_filter_and_function_exclusive_and_function_path_checked():
    with pytest.raises(ValidationError, match="not both"):
        TransformsConfig.model_validate({"tables": [{"match": "a.b", "filter": "id > 1", "filter_function": "m:f"}]})
    with pytest.raises(ValidationError, match="package.module:function"):
        TransformsConfig.model_validate({"tables": [{"match": "a.b", "filter_function": "no colon"}]})


def test_filter_on_a_column_the_table_lacks_stops_the_source_even_for_a_glob():
    with pytest.raises(TransformError, match="column region: the filter reads a column the table does not have"):
        _t(filter="region = 'eu'").mapper(SCHEMA)


def test_update_moving_across_the_filter_is_a_delete_or_an_insert():
    m = _t(filter="score > 5", columns={"email": {"mask": "null"}}).mapper(SCHEMA)
    hi, lo = {"id": 1, "email": "e", "score": 9}, {"id": 1, "email": "e", "score": 1}
    assert m.change("c", None, hi)[0] == "c" and m.change("c", None, lo) is None
    assert m.change("d", hi, None)[0] == "d" and m.change("d", lo, None) is None
    assert m.change("u", hi, hi)[0] == "u" and m.change("u", lo, lo) is None
    op, before, after = m.change("u", hi, lo)  # leaves the filter: delete of the (shaped) before image
    assert (op, after) == ("d", None) and before["id"] == 1 and before["email"] is None
    op, before, after = m.change("u", lo, hi)  # enters it: insert of the after image
    assert (op, before) == ("c", None) and after["score"] == 9 and after["email"] is None


def test_filter_reads_the_clear_value_of_a_masked_column(tmp_path):
    (tmp_path / "h").write_bytes(b"k" * 32)
    t = SourceTransforms("src", TransformsConfig.model_validate({"hash_key_file": str(tmp_path / "h"), "tables": [
        {"match": "shop.customers", "filter": "email LIKE '%@corp.example'", "columns": {"email": {"mask": "hash"}}}]}))
    m = t.mapper(SCHEMA)
    op, _, after = m.change("c", None, {"id": 1, "email": "a@corp.example"})
    assert op == "c" and len(after["email"]) == 64 and m.change("c", None, {"id": 2, "email": "b@x.org"}) is None
    assert [r["id"] for r in m.rows([{"id": 1, "email": "a@corp.example"}, {"id": 2, "email": "x@y"}])] == [1]


def keep_even(row):
    return row["id"] % 2 == 0


def raises(row):
    raise RuntimeError(f"boom {row}")


def test_filter_function_by_import_path():
    m = _t(filter_function=f"{__name__}:keep_even").mapper(SCHEMA)
    assert m.change("c", None, {"id": 2}) is not None and m.change("c", None, {"id": 3}) is None
    with pytest.raises(TransformError, match="cannot be imported"):
        _t(filter_function=f"{__name__}:missing").mapper(SCHEMA)
    bad = _t(filter_function=f"{__name__}:raises").mapper(SCHEMA)
    with pytest.raises(TransformError, match="raised RuntimeError") as err:
        bad.change("c", None, {"id": 1, "ssn": "SECRET"})
    assert "SECRET" not in str(err.value)  # the row is never shown


def test_compare_renders_the_filter_and_refuses_a_function():
    from cdc.compare.errors import CompareError
    from cdc.compare.transformed import filter_sql

    warnings: list[str] = []
    sql = filter_sql(_t(filter="score > 5 AND name LIKE 'a%'"), TableId("shop", "customers"), warnings)
    assert sql == "(`score` > 5 AND `name` LIKE 'a%') IS TRUE" and "score > 5" in warnings[0]
    assert filter_sql(_t(exclude=["notes"]), TableId("shop", "customers"), []) == ""
    with pytest.raises(CompareError, match="filter_function"):
        filter_sql(_t(filter_function=f"{__name__}:keep_even"), TableId("shop", "customers"), [])


def test_computed_columns_follow_the_moved_ones_in_their_type_stream_form():
    m = _t(exclude=["notes"], computed={
        "label": {"expr": "CONCAT(UPPER(name), '/', SUBSTRING(card, -4))", "type": "varchar(20)"},
        "half": {"expr": "score / 3", "type": "decimal(8,2)"},
        "big": {"expr": "IF(score > 10, 1, 0)", "type": "tinyint"}}).mapper(SCHEMA)
    assert [c.name for c in m.schema.columns][-3:] == ["label", "half", "big"]
    assert m.schema.columns[-2].logical.family == "decimal" and m.schema.columns[-1].logical.family == "integer"
    out = m.row({"id": 1, "name": "ann", "card": "4111-1234", "score": "20.00", "notes": "x"})
    assert (out["label"], out["half"], out["big"]) == ("ANN/1234", "6.67", 1) and "notes" not in out
    assert m.row({"id": 2, "name": None, "card": "1", "score": None})["label"] is None  # CONCAT with NULL


def test_computed_column_refusals():
    with pytest.raises(ValidationError, match="a computed column is one of"):  # checked by the MySQL source's config
        MySqlSourceConfig.model_validate({"name": "s", "kind": "mysql", "hosts": ["127.0.0.1:3306"], "user": "u",
                                          "password": "p", "tables": ["a.*"], "transforms": {"tables": [
                                              {"match": "a.b", "computed": {"c": {"expr": "1", "type": "date"}}}]}})
    with pytest.raises(TransformError, match="cannot take the name of a source column"):
        _t(computed={"name": {"expr": "1", "type": "int"}}).mapper(SCHEMA)
    with pytest.raises(TransformError, match="column nope: computed column c reads"):
        _t(computed={"c": {"expr": "nope + 1", "type": "int"}}).mapper(SCHEMA)
    with pytest.raises(TransformError, match="column notes: computed column c reads a masked or left-out"):
        _t(exclude=["notes"], computed={"c": {"expr": "LENGTH(notes)", "type": "int"}}).mapper(SCHEMA)
    with pytest.raises(TransformError, match="column name: computed column c reads a masked or left-out"):
        _t(columns={"name": {"mask": "null"}}, computed={"c": {"expr": "name", "type": "text"}}).mapper(SCHEMA)
    m = _t(computed={"c": {"expr": "CONCAT(name, name)", "type": "varchar(4)"}}).mapper(SCHEMA)
    with pytest.raises(TransformError, match="longer than its type's 4 characters") as err:
        m.row({"id": 1, "name": "SECRET"})
    assert "SECRET" not in str(err.value)
