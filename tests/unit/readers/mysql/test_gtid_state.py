"""GtidState (updated in place, printed on demand) against GtidSet parsed and printed at every step."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readers.mysql.errors import GtidFlavorMismatch, GtidParseError
from readers.mysql.position import GtidSet, GtidState

UUIDS = ["3e11fa47-71ca-11e1-9e33-c80aa9429562", "4e11fa47-71ca-11e1-9e33-c80aa9429562",
         "00000000-0000-0000-0000-000000000001"]
TAGS = ["alpha", "b_2", "Zeta"]

seqs = st.integers(min_value=0, max_value=12)
uuid_text = st.sampled_from(UUIDS).flatmap(lambda u: st.sampled_from([u, u.upper(), u.replace("-", "")]))
mysql_gtid = st.one_of(
    st.builds(lambda u, n: f"{u}:{n}", uuid_text, seqs),
    st.builds(lambda u, t, n: f"{u}:{t}:{n}", uuid_text, st.sampled_from(TAGS), seqs),
)
maria_gtid = st.builds(lambda d, s, n: f"{d}-{s}-{n}", st.integers(0, 3), st.integers(1, 3), seqs)
# one domain and mostly one server, sequence numbers also with leading zeros (not the printed form): the
# fast path for the next GTID of the last server (GtidState._fast) against GtidSet
maria_one = st.builds(lambda s, z, n: f"0-{s}-{z}{n}", st.sampled_from([1, 1, 1, 2]), st.sampled_from(["", "", "0"]),
                      seqs)
odd_gtid = st.sampled_from(["", "x", "0-1", f"{UUIDS[0]}:", f"{UUIDS[0]}:1-3", f"{UUIDS[0]}:-1", "1-2-٣", "0-1-٣",
                            "0-1-", "0-1-2-3", "0-1-+4", "0-1- 5"])


def _start(flavor: str) -> st.SearchStrategy[str]:
    one = mysql_gtid if flavor == "mysql" else maria_gtid
    return st.lists(one, max_size=4).map(lambda gs: str(_fold(GtidSet(), gs)))


def _fold(s: GtidSet, gtids: list[str]) -> GtidSet:
    for g in gtids:
        try:
            s = s.add(g)
        except (GtidParseError, GtidFlavorMismatch):
            pass
    return s


def _check_sequence(start: str, gtids: list[str]) -> None:
    ref = GtidSet.parse(start)
    state = GtidState(GtidSet.parse(start))
    for g in gtids:
        try:
            want = GtidSet.parse(str(ref)).add(g)  # what the reader did at every commit before
        except (GtidParseError, GtidFlavorMismatch) as exc:
            with pytest.raises(type(exc)):
                state.add(g)
        else:
            state.add(g)
            ref = want
        if g.endswith("7"):  # print only now and then: the unprinted changes still show at the next print
            continue
        assert str(state) == str(ref)
        assert state.freeze() == ref == GtidSet.parse(str(state))
        assert bool(state) == bool(ref) and state.flavor == ref.flavor
        probe = GtidSet.parse(str(_fold(GtidSet(), gtids[:3])))
        if not probe.flavor or not ref.flavor or probe.flavor == ref.flavor:
            assert state.issuperset(probe) == ref.issuperset(probe)
    assert str(state) == str(ref) and state.freeze() == ref


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["mysql", "mariadb"]).flatmap(
    lambda f: st.tuples(_start(f), st.lists(st.one_of(mysql_gtid if f == "mysql" else maria_gtid, odd_gtid,
                                                      mysql_gtid, maria_gtid), max_size=40))))
def test_incremental_state_equals_parsed_and_printed(case):
    start, gtids = case
    _check_sequence(start, gtids)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(mysql_gtid, maria_gtid, odd_gtid), max_size=30))
def test_from_empty_any_mix(gtids):
    _check_sequence("", gtids)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["", "0-1-0", "0-1-5,3-2-1"]), st.lists(st.one_of(maria_one, maria_one, odd_gtid, maria_gtid),
                                                              max_size=40))
def test_one_mariadb_server_after_another(start, gtids):
    _check_sequence(start, gtids)


def test_examples():
    u = UUIDS[0]
    s = GtidState(GtidSet.parse(f"{u}:1-5:alpha:1-2,{UUIDS[1]}:3"))
    s.add(f"{u}:6")
    s.add(f"{u}:alpha:3")
    s.add(f"{u}:4")  # already in
    s.add(f"{u}:9")  # a gap: its own interval
    s.add(f"{u}:beta:1")  # a new tag: the slow path
    assert str(s) == f"{u}:1-6:9:alpha:1-3:beta:1,{UUIDS[1]}:3"
    s.add(f"{u}:7")
    s.add(f"{u}:8")
    assert str(s) == f"{u}:1-9:alpha:1-3:beta:1,{UUIDS[1]}:3"
    m = GtidState(GtidSet.parse("1-7-3,0-1-42"))
    m.add("0-1-43")
    m.add("1-7-2")  # older seq in the domain: the state keeps 3
    m.add("2-5-1")  # a new domain
    assert str(m) == "0-1-43,1-7-3,2-5-1"
    with pytest.raises(GtidFlavorMismatch):
        m.add(f"{u}:1")
    with pytest.raises(GtidParseError):
        m.add("0-1")
    assert str(m) == "0-1-43,1-7-3,2-5-1"
