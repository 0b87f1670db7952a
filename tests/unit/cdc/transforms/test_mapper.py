"""The column-mapper hook: config errors, shaped schemas and rows, the refusals."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cdc.schema.logical import LogicalType
from cdc.stream.events import Column, TableId, TableSchema
from cdc.transforms.config import TransformsConfig
from cdc.transforms.errors import TransformError
from cdc.transforms.mapper import SourceTransforms
from cdc.transforms.masks import decrypt
from readers.mysql.types import logical_type

T = TableId("shop", "customers")


def _col(name, type_, nullable=True):
    return Column(name, type_, nullable, None, logical_type(type_))


SCHEMA = TableSchema(T, (_col("id", "int", False), _col("email", "varchar(100)"), _col("notes", "text"),
                         _col("name", "varchar(40)"), _col("card", "varchar(19)"), _col("ssn", "char(11)"),
                         _col("score", "double")), ("id",))


@pytest.fixture()
def keys(tmp_path):
    (tmp_path / "h").write_bytes(b"k" * 32)
    (tmp_path / "a").write_text("ab" * 32)
    return {"hash_key_file": str(tmp_path / "h"), "encryption_key_file": str(tmp_path / "a")}


def _transforms(keys, **rule):
    return SourceTransforms("src", TransformsConfig.model_validate(keys | {"tables": [{"match": "shop.customers"}
                                                                                      | rule]}))


def test_shaped_schema_and_row(keys):
    t = _transforms(keys, exclude=["notes"], columns={"email": {"mask": "hash"}, "name": {"mask": "truncate",
                    "length": 1}, "card": {"mask": "keep_last", "length": 4}, "ssn": {"mask": "encrypt"},
                    "score": {"mask": "null"}})
    m = t.mapper(SCHEMA)
    cols = {c.name: c for c in m.schema.columns}
    assert list(cols) == ["id", "email", "name", "card", "ssn", "score"]  # notes absent
    assert cols["email"].type == "varchar(64)" and cols["email"].logical == LogicalType("string", length=64)
    assert cols["name"].logical.length == 1 and cols["card"].type == "varchar(19)"
    assert cols["ssn"].logical.family == "string" and cols["ssn"].logical.length > 11
    assert cols["score"].nullable and m.schema.primary_key == ("id",)
    raw = {"id": 7, "email": "PII-SECRET-123@example.com", "notes": "secret note", "name": "Alice",
           "card": "4111111111111234", "ssn": "123-45-6789", "score": 1.5}
    out = m.row(raw)
    assert raw["email"] == "PII-SECRET-123@example.com"  # the reader's dict is left as it was
    assert "notes" not in out and out["id"] == 7 and len(out["email"]) == 64 and out["name"] == "A"
    assert out["card"] == "************1234" and out["score"] is None
    assert decrypt(out["ssn"], bytes.fromhex("ab" * 32)) == "123-45-6789"
    assert "PII-SECRET" not in repr(out) and "secret note" not in repr(out)
    assert t.mapper(SCHEMA) is m  # one mapper per shape
    assert m.row(None) is None


def test_unmatched_table_has_no_mapper(keys):
    t = _transforms(keys, exclude=["notes"])
    assert t.mapper(TableSchema(TableId("shop", "orders"), SCHEMA.columns, ("id",))) is None
    assert not SourceTransforms("src", None) and SourceTransforms("src", None).mapper(SCHEMA) is None


def test_include_keeps_only_named_columns_and_the_key_must_be_in_it(keys):
    m = _transforms(keys, include=["id", "name"]).mapper(SCHEMA)
    assert [c.name for c in m.schema.columns] == ["id", "name"]
    with pytest.raises(TransformError, match="primary key column cannot be left out"):
        _transforms(keys, include=["name"]).mapper(SCHEMA)


def test_key_column_only_hashed(keys):
    assert _transforms(keys, columns={"id": {"mask": "hash"}}).mapper(SCHEMA).row({"id": 1})["id"] != 1
    with pytest.raises(TransformError, match="shop.customers column id: a primary key column can only be hashed"):
        _transforms(keys, columns={"id": {"mask": "encrypt"}}).mapper(SCHEMA)
    with pytest.raises(TransformError, match="primary key column cannot be left out"):
        _transforms(keys, exclude=["id"]).mapper(SCHEMA)
    windowed = SourceTransforms("src", TransformsConfig.model_validate(
        keys | {"tables": [{"match": "shop.*", "columns": {"id": {"mask": "hash"}}}]}), key_window=True)
    with pytest.raises(TransformError, match="signal_table"):
        windowed.mapper(SCHEMA)


def test_a_dropped_column_stops_with_the_way_back(keys):
    t = _transforms(keys, columns={"email": {"mask": "hash"}})
    gone = TableSchema(T, tuple(c for c in SCHEMA.columns if c.name != "email"), ("id",))
    with pytest.raises(TransformError) as err:
        t.mapper(gone)
    text = str(err.value)
    assert "shop.customers column email" in text and "Way back" in text and "restart" in text
    # a glob rule shapes the columns each table has
    glob = SourceTransforms("src", TransformsConfig.model_validate(
        keys | {"tables": [{"match": "shop.*", "columns": {"email": {"mask": "hash"}}}]}))
    assert [c.name for c in glob.mapper(gone).schema.columns] == [c.name for c in gone.columns]


def test_a_mask_on_a_family_it_cannot_shape(keys):
    with pytest.raises(TransformError, match="mask truncate cannot shape a double column"):
        _transforms(keys, columns={"score": {"mask": "truncate", "length": 2}}).mapper(SCHEMA)


@pytest.mark.parametrize(("raw", "match"), [
    ({"tables": [{"match": "a.b", "columns": {"x": {"mask": "hash"}}}]}, "hash_key_file"),
    ({"tables": [{"match": "a.b", "columns": {"x": {"mask": "encrypt"}}}]}, "encryption_key_file"),
    ({"tables": [{"match": "a.b", "columns": {"x": {"mask": "rot13"}}}]}, "rot13"),
    ({"tables": [{"match": "a.b", "columns": {"x": {"mask": "truncate"}}}]}, "length"),
    ({"tables": [{"match": "a.b", "include": ["x"], "exclude": ["y"]}]}, "include or exclude"),
    ({"tables": [{"match": "a.b", "exclude": ["x"], "columns": {"x": {"mask": "null"}}}]}, "masked and not moved"),
    ({"tables": [{"match": "ab"}]}, "db.table"),
])
def test_config_errors(raw, match):
    with pytest.raises(ValidationError, match=match):
        TransformsConfig.model_validate(raw)


def test_config_errors_name_key_and_file(tmp_path):
    from cdc.config.loader import load_config

    path = tmp_path / "cdc.yaml"
    path.write_text("kafka: {bootstrap_servers: 'x:1'}\nsources:\n- name: s\n  kind: mysql\n  hosts: [h]\n"
                    "  user: u\n  password: p\n  tables: [a.b]\n  transforms:\n    tables:\n"
                    "    - match: a.b\n      columns: {c: {mask: nope}}\n")
    with pytest.raises(Exception) as err:
        load_config(path)
    assert "transforms" in str(err.value) and str(path) in str(err.value)
