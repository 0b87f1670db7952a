"""The chunk decoder (DuckDB) must make of every message what to_row makes of it."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.stream.serde import get_serdes
from streaming.stream.decode import JsonChunkDecoder
from streaming.stream.records import FIELDS, to_row
from streaming.testing import StreamBuilder

JSON_TEXT = ("key", "before", "after", "meta", "bkey")


def _expected(part: int, offsets, keys, values) -> list[dict]:
    kd, vd = get_serdes("json")
    return [dict(zip(FIELDS, to_row(part, o, k, v, kd, vd))) for o, k, v in zip(offsets, keys, values)]


def _same(got: dict, want: dict) -> bool:
    for f in FIELDS:
        a, b = got[f], want[f]
        if f in JSON_TEXT and a is not None and b is not None and want["kind"] != "UNDECODABLE":
            a, b = orjson.loads(a), orjson.loads(b)
        if a != b:
            return False
    return True


def _check(keys: list, values: list, part: int = 3, first: int = 100) -> list[dict]:
    offsets = list(range(first, first + len(values)))
    got = JsonChunkDecoder(part).decode(offsets, keys, values).to_pylist()
    want = _expected(part, offsets, keys, values)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert _same(g, w), f"offset {w['offset']}:\n got  {g}\n want {w}"
    return got


def _builder_stream() -> StreamBuilder:
    b = StreamBuilder(source="s")
    b.schema("db.t", [("id", "bigint"), ("v", "varchar(10)"), ("f", "double")], ["id"])
    b.tx(("c", "db.t", None, {"id": 1, "v": "a\u0001é", "f": 1.5e300}),
         ("u", "db.t", {"id": 1, "v": "a", "f": 0.1}, {"id": 2, "v": "b", "f": -1.3741556090751488e16}),
         ("u", "db.t", {"id": 2, "v": "b", "f": None}, {"id": 2, "v": "c", "f": None}),
         ("d", "db.t", {"id": 2, "v": "c", "f": None}, None))
    b.tx(("c", "db.t", None, {"id": 3, "v": None, "f": 2.0}), abort=True)
    b.heartbeat()
    b.ddl("db.t", "ALTER TABLE t ADD COLUMN x INT")
    return b


def test_builder_stream_decodes_like_to_row():
    enc = _builder_stream().encoded()
    got = _check([k for k, _ in enc], [v for _, v in enc])
    kinds = [g["kind"] for g in got]
    assert "UNDECODABLE" not in kinds and {"data", "BEGIN", "END", "SCHEMA", "HEARTBEAT"} <= set(kinds)
    key_change = [g for g in got if g["op"] == "u" and g["bkey"]]
    assert len(key_change) == 1 and orjson.loads(key_change[0]["bkey"]) == {"id": 1}
    assert [g for g in got if g["op"] == "u" and not g["bkey"]], "an update keeping its key has no bkey"


def test_bad_messages_become_the_rows_to_row_makes():
    enc = _builder_stream().encoded()
    data = next(i for i, (k, v) in enumerate(enc) if k and b'"key"' in k)
    k, v = enc[data]
    bad = [
        (k, b"{not json"),                                   # not JSON
        (k, None),                                           # tombstone
        (k, b"[1, 2]"),                                      # not an object
        (k, v.replace(b'"sequence":', b'"sequence":"x",')),  # sequence not an integer
        (k, v.replace(b'"op":"', b'"op":"z')),               # unknown op
        (None, b'{"sequence":9,"status":"WHAT"}'),           # unknown status
        (b"\xff\xfe", v),                                    # key not UTF-8
        (k, b'{"sequence":9,"op":"c","after":{"v":"\xff"}}'),  # value not UTF-8
        (b'{"key":{"id":1}}', v),                            # key without its table
    ]
    keys = [k for k, _ in enc] + [b for b, _ in bad] + [k]
    values = [v for _, v in enc] + [x for _, x in bad] + [v]
    got = _check(keys, values)
    assert sum(g["kind"] == "UNDECODABLE" for g in got) >= 7
    assert got[-1]["kind"] == "data" and got[-1]["offset"] == 100 + len(values) - 1  # order kept after the redo


_scalar = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 63, 2 ** 63 - 1),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("cud"), st.dictionaries(st.sampled_from(["a", "b", "\u0007"]), _scalar,
                                                                     min_size=1),
                          st.dictionaries(st.text(max_size=4), _scalar, max_size=3), st.booleans()),
                min_size=1, max_size=20))
def test_random_changes_decode_like_to_row(changes):
    keys, values = [], []
    for i, (op, pk, rest, same_key) in enumerate(changes):
        after = {**rest, **pk}
        before = dict(after) if same_key else {**rest, **{c: i for c in pk}}
        value = {"sequence": i + 1, "op": op, "before": None if op == "c" else before,
                 "after": None if op == "d" else after, "source": {"ts_ms": 5, "db": "d", "table": "t"},
                 "transaction": {"id": "x"}}
        keys.append(orjson.dumps({"table": "d.t", "key": pk}))
        values.append(orjson.dumps(value))
    _check(keys, values)
