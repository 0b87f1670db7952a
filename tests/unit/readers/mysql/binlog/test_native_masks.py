"""The C pass's shaping (readers/mysql/binlog/native_rows.py shaped_rows, _rows_native.c shape, _sha256.h) is the
mapper's ``row()`` byte for byte: HMAC-SHA256 against Python's hmac (SHA extensions and portable C alike), every
mask over hostile values (NULL, empty, multibyte, base64 of binary, integers at the limits), generated tables and
rules; and it declines (None: the mapper shapes in Python) whatever it does not implement, never handing back a
clear value of a masked or excluded column."""

from __future__ import annotations

import hashlib
import hmac
import random

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.stream.events import Column, TableId, TableSchema
from cdc.transforms.config import TransformsConfig
from cdc.transforms.errors import TransformError
from cdc.transforms.mapper import ALLOWED_FAMILIES, SourceTransforms
from readers.mysql.binlog import native_rows
from readers.mysql.binlog.decode import ConvertedRow
from readers.mysql.binlog.native_rows import ShapedRow, shaped_rows
from readers.mysql.types import logical_type

pytestmark = pytest.mark.skipif(not native_rows.NATIVE, reason="the C rows pass is not compiled here")
C = native_rows._rows_native
T = TableId("shop", "people")
KEY = b"0123456789abcdef-key-for-tests!!"
HOSTILE_TEXT = ["", "a", "é", "\U0001f600 emoji", "日本語テキスト", "x" * 55, "y" * 56, "z" * 64, "w" * 200,
                "tab\tnew\nline\"quote\\", "\x00nul", "QUJD", "AAEC/w=="]
HOSTILE_INT = [0, -1, 1, 2**63 - 1, -2**63, 2**64 - 1]


@pytest.fixture(params=[True, False], ids=["sha-ni", "portable"])
def compression(request):
    """Both compression functions (the SHA extensions only where the CPU has them)."""
    used = C.use_sha_ni(request.param)
    yield used
    C.use_sha_ni(True)


def test_hmac_is_pythons_over_every_length_and_key_size(compression):
    rnd = random.Random(7)
    for key in (b"", b"k", KEY, b"K" * 64, b"L" * 65, bytes(range(256))):
        states = C.hmac_key(key)
        for n in [*range(140), 1000, 4097]:
            msg = bytes(rnd.getrandbits(8) for _ in range(n))
            assert C.hmac_sha256_hex(states, msg) == hmac.new(key, msg, hashlib.sha256).hexdigest(), (len(key), n)


def _col(name, type_):
    return Column(name, type_, True, None, logical_type(type_))


SCHEMA = TableSchema(T, (_col("id", "bigint"), _col("email", "varchar(100)"), _col("notes", "text"),
                         _col("name", "varchar(40)"), _col("card", "varchar(19)"), _col("n", "int"),
                         _col("score", "double"), _col("kind", "enum('a','b')"), _col("raw", "varbinary(8)")),
                ("id",))


def _mapper(tmp_path, **rule):
    (tmp_path / "hash.key").write_bytes(KEY)
    cfg = TransformsConfig.model_validate({"hash_key_file": str(tmp_path / "hash.key"),
                                          "tables": [{"match": "shop.*"} | rule]})
    return SourceTransforms("s", cfg).mapper(SCHEMA)


EVERY_MASK = {"exclude": ["notes"], "columns": {
    "id": {"mask": "hash"}, "email": {"mask": "hash"}, "name": {"mask": "truncate", "length": 3},
    "card": {"mask": "keep_last", "length": 4}, "n": {"mask": "hash"}, "score": {"mask": "null"},
    "kind": {"mask": "replace", "value": "(gone) é"}}}


def _images(seed, count=40):
    rnd = random.Random(seed)
    text = HOSTILE_TEXT + [None]
    ints = HOSTILE_INT + [None]
    return [ConvertedRow({"id": rnd.choice(HOSTILE_INT), "email": rnd.choice(text), "notes": rnd.choice(text),
                          "name": rnd.choice(text), "card": rnd.choice(text), "n": rnd.choice(ints),
                          "score": rnd.choice([None, 0.5, -1e300]), "kind": rnd.choice(["a", "b", None]),
                          "raw": rnd.choice(["", "AAEC/w==", None])}) for _ in range(count)]


def _assert_same(shaped, clear, mapper):
    """Every shaped image is the mapper's row() of the clear one: the same values, keys in the same order,
    the same JSON bytes; no clear value of a masked or excluded column in it."""
    for s, c in zip(shaped, clear, strict=True):
        for key in c:
            want = mapper.row(c[key])
            assert type(s[key]) is ShapedRow and type(want) is dict
            assert list(s[key].items()) == list(want.items())
            assert orjson.dumps(s[key]) == orjson.dumps(want)
            assert not mapper.dropped & s[key].keys()
            for col in mapper.masked:
                v = c[key][col]
                if isinstance(v, str) and len(v) > 4:
                    assert s[key][col] != v


@pytest.mark.parametrize("op", "cud")
def test_every_mask_is_the_mappers_byte_for_byte(tmp_path, compression, op):
    m = _mapper(tmp_path, **EVERY_MASK)
    images = _images(op)
    rows = ([{"values": r} for r in images] if op != "u" else
            [{"before_values": images[i - 1], "after_values": r} for i, r in enumerate(images)])
    shaped = shaped_rows(rows, op, m)
    assert shaped is not None
    _assert_same(shaped, rows, m)
    assert rows[0][next(iter(rows[0]))] is not None and type(rows[0][next(iter(rows[0]))]) is ConvertedRow


COLUMNS = [c.name for c in SCHEMA.columns]
_FAMILY = {c.name: c.logical.family for c in SCHEMA.columns}
_MASKS = st.sampled_from([{"mask": "hash"}, {"mask": "truncate", "length": 0}, {"mask": "truncate", "length": 5},
                          {"mask": "keep_last", "length": 0}, {"mask": "keep_last", "length": 2},
                          {"mask": "replace", "value": ""}, {"mask": "replace", "value": "é*"}, {"mask": "null"}])


@st.composite
def _rules(draw):
    rule: dict = {"exclude": [], "columns": {}}
    for name in COLUMNS:
        if name == "id":
            if draw(st.booleans()):
                rule["columns"]["id"] = {"mask": "hash"}
            continue
        pick = draw(st.sampled_from(["keep", "drop", "mask"]))
        if pick == "drop":
            rule["exclude"].append(name)
        elif pick == "mask":
            mask = draw(_MASKS)
            allowed = ALLOWED_FAMILIES[mask["mask"]]
            if allowed is None or _FAMILY[name] in allowed:
                rule["columns"][name] = mask
    return rule


_VALUES = {"id": st.sampled_from(HOSTILE_INT), "n": st.one_of(st.none(), st.integers(-2**63, 2**64 - 1)),
           "score": st.one_of(st.none(), st.floats(allow_nan=False)), "kind": st.sampled_from([None, "a", "b"])}
_TEXT = st.one_of(st.none(), st.text(max_size=80), st.sampled_from(HOSTILE_TEXT))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rule=_rules(), images=st.lists(st.fixed_dictionaries({c: _VALUES.get(c, _TEXT) for c in COLUMNS}),
                                      min_size=1, max_size=5))
def test_generated_rules_and_rows_are_the_mappers(tmp_path, rule, images):
    m = _mapper(tmp_path, **rule)
    rows = [{"values": ConvertedRow(r)} for r in images]
    try:
        want = [m.row(r["values"]) for r in rows]
    except TransformError:  # no mask text (not generated here): the C pass must decline as well
        assert shaped_rows(rows, "c", m) is None
        return
    shaped = shaped_rows(rows, "c", m)
    assert shaped is not None
    assert [list(s["values"].items()) for s in shaped] == [list(w.items()) for w in want]
    assert [orjson.dumps(s["values"]) for s in shaped] == [orjson.dumps(w) for w in want]


@pytest.mark.parametrize("rule", [
    {"filter": "n > 1"},
    {"computed": {"twice": {"expr": "n * 2", "type": "bigint"}}},
    {"columns": {"email": {"mask": "encrypt"}}},
], ids=["filter", "computed", "encrypt"])
def test_what_the_c_pass_does_not_implement_is_declined(tmp_path, rule):
    (tmp_path / "aes.key").write_text("ab" * 32)
    (tmp_path / "hash.key").write_bytes(KEY)
    cfg = TransformsConfig.model_validate({"hash_key_file": str(tmp_path / "hash.key"),
                                          "encryption_key_file": str(tmp_path / "aes.key"),
                                          "tables": [{"match": "shop.*", "columns": {"name": {"mask": "hash"}}}
                                                     | rule]})
    m = SourceTransforms("s", cfg).mapper(SCHEMA)
    assert m.native is None
    assert shaped_rows([{"values": ConvertedRow(_images(1, 1)[0])}], "c", m) is None


def test_a_clear_image_of_another_kind_or_a_value_without_mask_text_is_declined(tmp_path):
    m = _mapper(tmp_path, columns={"email": {"mask": "hash"}})
    row = dict(_images(2, 1)[0])
    assert shaped_rows([{"values": row}], "c", m) is None  # a plain dict: not the C pass's image
    assert shaped_rows([{"values": ConvertedRow(row)}, {"values": row}], "c", m) is None
    odd = ConvertedRow(row | {"email": 1.5})  # hash of a float: the mapper raises, the C pass declines
    assert shaped_rows([{"values": odd}], "c", m) is None
    with pytest.raises(TransformError):
        m.row(odd)
    assert shaped_rows([{"before_values": ConvertedRow(row)}], "u", m) is None  # an update without its after image


def test_the_hash_key_never_shows(tmp_path):
    m = _mapper(tmp_path, columns={"email": {"mask": "hash"}})
    assert KEY.decode() not in repr(m)
