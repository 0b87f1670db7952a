"""GtidSet algebra: examples plus hypothesis properties against a naive set model."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from readers.mysql.errors import GtidFlavorMismatch, GtidParseError
from readers.mysql.position import BinlogPosition, GtidSet

U1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
U2 = "4e11fa47-71ca-11e1-9e33-c80aa9429562"


def test_mysql_parse_normalises_and_prints_closed_intervals():
    s = GtidSet.parse(f"{U2}:5, {U1.upper()}:1-3:4:7-9\n")
    assert str(s) == f"{U1}:1-4:7-9,{U2}:5"
    assert GtidSet.parse(str(s)) == s


def test_mysql_union_subtract_contains():
    a = GtidSet.parse(f"{U1}:1-10")
    b = GtidSet.parse(f"{U1}:5-12,{U2}:1")
    assert str(a | b) == f"{U1}:1-12,{U2}:1"
    assert str(a - b) == f"{U1}:1-4"
    assert str(b - a) == f"{U1}:11-12,{U2}:1"
    assert a.issubset(a | b) and not a.issuperset(b)
    assert f"{U1}:10" in a and f"{U1}:11" not in a
    assert str(a.add(f"{U1}:11")) == f"{U1}:1-11"


def test_mariadb_one_gtid_per_domain():
    s = GtidSet.parse("1-7-3,0-1-42")
    assert str(s) == "0-1-42,1-7-3" and s.flavor == "mariadb"
    assert s.issuperset(GtidSet.parse("0-1-40"))
    assert not s.issuperset(GtidSet.parse("0-1-43"))
    assert not s.issuperset(GtidSet.parse("2-1-1"))
    assert not s.issuperset(GtidSet.parse("0-2-42")), "same seq from another server is another transaction"
    assert str(s.add("0-2-43")) == "0-2-43,1-7-3"
    assert str(GtidSet.parse("0-1-50,1-7-3") - s) == "0-1-50"


def test_empty_combines_with_either_flavour():
    e = GtidSet.parse("")
    assert not e and e.flavor is None and str(e) == ""
    assert (e | GtidSet.parse("0-1-1")) == GtidSet.parse("0-1-1")
    assert GtidSet.parse(f"{U1}:1").issuperset(e)


@pytest.mark.parametrize("text", [
    "garbage", f"{U1}", f"{U1}:0", f"{U1}:5-3", "abc:1", f"{U1}:1-x", "0-1-2,0-1-3", "0-1-2,x",
])
def test_bad_text_raises_domain_error(text):
    with pytest.raises(GtidParseError) as info:
        GtidSet.parse(text)
    assert info.value.text == text
    assert pickle.loads(pickle.dumps(info.value)).text == text


def test_mixing_flavours_is_refused():
    with pytest.raises(GtidFlavorMismatch):
        GtidSet.parse(f"{U1}:1") | GtidSet.parse("0-1-1")


def test_binlog_position_orders_and_parses():
    assert BinlogPosition.parse("mysql-bin.000002:120") < BinlogPosition("mysql-bin.000010", 4)
    assert str(BinlogPosition("f.1", 4)) == "f.1:4"


# -- properties ---------------------------------------------------------------
uuids = st.sampled_from([U1, U2, "5e11fa47-71ca-11e1-9e33-c80aa9429562"])
model_sets = st.sets(st.tuples(uuids, st.integers(1, 40)), max_size=30)


def to_gtid(model: set[tuple[str, int]]) -> GtidSet:
    return GtidSet.parse(",".join(f"{u}:{n}" for u, n in sorted(model)))


def to_model(s: GtidSet) -> set[tuple[str, int]]:
    return {(u, n) for u, iv in s.mysql for a, b in iv for n in range(a, b)}


@given(model_sets, model_sets)
def test_mysql_algebra_matches_set_model(x, y):
    a, b = to_gtid(x), to_gtid(y)
    assert to_model(a) == x
    assert to_model(a | b) == x | y
    assert to_model(a - b) == x - y
    assert a.issubset(b) == (x <= y)
    assert GtidSet.parse(str(a)) == a
    assert (a | b) == (b | a)


@given(model_sets, model_sets, model_sets)
def test_mysql_union_associative(x, y, z):
    a, b, c = to_gtid(x), to_gtid(y), to_gtid(z)
    assert (a | b) | c == a | (b | c)


maria = st.dictionaries(st.integers(0, 3), st.tuples(st.integers(1, 3), st.integers(1, 50)), max_size=4)


def to_maria(d) -> GtidSet:
    return GtidSet.parse(",".join(f"{k}-{s}-{n}" for k, (s, n) in d.items()))


@given(maria, maria)
def test_mariadb_union_is_upper_bound(x, y):
    a, b = to_maria(x), to_maria(y)
    u = a | b
    assert u.issuperset(a) or any(a.domains()[d][1] == u.domains()[d][1] for d in a.domains())
    assert GtidSet.parse(str(u)) == u
    assert all(u.domains()[d][1] == max(x.get(d, (0, 0))[1], y.get(d, (0, 0))[1]) for d in u.domains())
    assert not (a - a) and a.issuperset(a)
    assert (a - b).issubset(a)
    assert a.issuperset(b) == (not (b - a))


# -- tagged GTIDs (MySQL 8.3+) ------------------------------------------------------------------------------
def test_tagged_parse_prints_as_the_server_does():
    s = GtidSet.parse(f"{U2}:Beta:4, {U1}:tag1:1-3:7,{U1.upper()}:1-5,{U1}:ALPHA:2")
    assert str(s) == f"{U1}:1-5:alpha:2:tag1:1-3:7,{U2}:beta:4"
    assert GtidSet.parse(str(s)) == s and s.tags() == {"alpha", "tag1", "beta"}
    assert str(GtidSet.parse(f"{U1}:1-5:tag1:1-3")) == f"{U1}:1-5:tag1:1-3"


def test_tagged_algebra_keeps_tags_apart():
    a = GtidSet.parse(f"{U1}:1-10:t:1-3")
    assert f"{U1}:t:3" in a and f"{U1}:t:4" not in a and f"{U1}:4" in a
    assert str(a.add(f"{U1}:t:4")) == f"{U1}:1-10:t:1-4"
    assert str(a - GtidSet.parse(f"{U1}:1-10")) == f"{U1}:t:1-3"
    assert not GtidSet.parse(f"{U1}:1-10").issuperset(a), "the tagged transactions are others"
    assert GtidSet.of(f"{U1}:t:3") == GtidSet.parse(f"{U1}:T:3")
    assert a.last_seq() == 10


@pytest.mark.parametrize("text", [
    f"{U1}:tag", f"{U1}:1-3:tag", f"{U1}:a:b:1", f"{U1}:9tag:1", f"{U1}:{'x' * 33}:1", f"{U1}:t-a:1", f"{U1}:t:0",
])
def test_bad_tagged_text_raises(text):
    with pytest.raises(GtidParseError):
        GtidSet.parse(text)


def test_wire_encoding_of_untagged_set_is_the_librarys():
    from pymysqlreplication.gtid import GtidSet as LibraryGtidSet

    text = f"{U1}:1-5:7,{U2}:3"
    assert GtidSet.parse(text).encode() == LibraryGtidSet(text).encoded()
    assert GtidSet.decode(GtidSet.parse(text).encode()) == GtidSet.parse(text)


@pytest.mark.parametrize("data", [b"", b"\x01" + bytes(7), b"\x01\x00\x00\x00\x00\x00\x00\x02", bytes(9),
                                  (1).to_bytes(8, "little") + bytes(16) + (1).to_bytes(8, "little") + bytes(16)])
def test_bad_wire_bytes_raise(data):
    with pytest.raises(GtidParseError):
        GtidSet.decode(data)


tags = st.sampled_from(["", "a", "tag_1", "zz"])
tagged_models = st.sets(st.tuples(uuids, tags, st.integers(1, 30)), max_size=30)


def to_tagged(model: set[tuple[str, str, int]]) -> GtidSet:
    return GtidSet.parse(",".join(f"{u}:{t}:{n}" if t else f"{u}:{n}" for u, t, n in sorted(model)))


def to_tagged_model(s: GtidSet) -> set[tuple[str, str, int]]:
    return {(*(tsid.split(":") if ":" in tsid else (tsid, "")), n) for tsid, iv in s.mysql for a, b in iv
            for n in range(a, b)}


@given(tagged_models, tagged_models)
def test_tagged_algebra_matches_set_model(x, y):
    a, b = to_tagged(x), to_tagged(y)
    assert to_tagged_model(a) == x
    assert to_tagged_model(a | b) == x | y
    assert to_tagged_model(a - b) == x - y
    assert a.issubset(b) == (x <= y)
    assert GtidSet.parse(str(a)) == a, "prints as it parses"
    assert GtidSet.decode(a.encode()) == a, "the wire format round-trips"
    assert all((f"{u}:{t}:{n}" if t else f"{u}:{n}") in a for u, t, n in x)


@given(tagged_models)
def test_tagged_resume_adds_one_gtid_at_a_time(x):
    """A reader's state grows by one GTID per transaction read: adding them in any order gives the set."""
    state = GtidSet()
    for u, t, n in sorted(x, key=lambda g: (g[2], g[1], g[0])):
        state = state.add(f"{u}:{t}:{n}" if t else f"{u}:{n}")
    assert state == to_tagged(x)
