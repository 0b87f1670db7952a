"""The linear merge against a set-based oracle (hypothesis), and its order check."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc.compare.errors import OrderError
from cdc.compare.merge import merge, merge_multiset, norm_key_value

tables = st.dictionaries(st.integers(-50, 50), st.sampled_from("abc"), max_size=40)


@given(tables, tables)
def test_merge_equals_set_algebra(src, tgt):
    s_rows = [(k, v) for k, v in sorted(src.items())]
    t_rows = [(k, v) for k, v in sorted(tgt.items())]
    counts = [0, 0, 0]
    diffs = list(merge(s_rows, t_rows, "t", counts))
    got = {kind: sorted(d.key[0] for d in diffs if d.kind == kind) for kind in ("missing", "extra", "different")}
    assert got["missing"] == sorted(src.keys() - tgt.keys())
    assert got["extra"] == sorted(tgt.keys() - src.keys())
    assert got["different"] == sorted(k for k in src.keys() & tgt.keys() if src[k] != tgt[k])
    assert counts == [len(src), len(tgt), sum(1 for k in src.keys() & tgt.keys() if src[k] == tgt[k])]


@given(st.lists(st.sampled_from("abcd"), max_size=30), st.lists(st.sampled_from("abcd"), max_size=30))
def test_multiset_merge_counts_copies(src, tgt):
    s_rows = [(h, src.count(h)) for h in sorted(set(src))]
    t_rows = [(h, tgt.count(h)) for h in sorted(set(tgt))]
    counts = [0, 0, 0]
    diffs = list(merge_multiset(s_rows, t_rows, "t", counts))
    missing = sum(d.source - d.target for d in diffs if d.kind == "missing")
    extra = sum(d.target - d.source for d in diffs if d.kind == "extra")
    common = sum(min(src.count(h), tgt.count(h)) for h in set(src) | set(tgt))
    assert missing == len(src) - common and extra == len(tgt) - common
    assert counts == [len(src), len(tgt), common]


def test_composite_keys_and_exhausted_sides():
    s = [(1, "a", "h1"), (1, "b", "h2"), (2, "a", "h3")]
    t = [(1, "b", "hX"), (3, "z", "h9")]
    kinds = [(d.kind, d.key) for d in merge(s, t)]
    assert kinds == [("missing", (1, "a")), ("different", (1, "b")), ("missing", (2, "a")), ("extra", (3, "z"))]


def test_out_of_order_stream_is_a_clear_error():
    with pytest.raises(OrderError, match="not strictly increasing") as exc:
        list(merge([("b", 1), ("a", 1)], [], "db.t"))
    assert exc.value.table == "db.t" and exc.value.side == "source"
    with pytest.raises(OrderError):
        list(merge([], [(1, 1), (1, 2)], "db.t"))  # duplicate key


def test_key_values_normalise_across_drivers():
    aware = datetime(2024, 1, 1, 9, tzinfo=timezone(timedelta(hours=9)))
    assert norm_key_value(aware) == datetime(2024, 1, 1, 0)
    assert norm_key_value(Decimal(12)) == 12 and isinstance(norm_key_value(Decimal(12)), int)
    assert norm_key_value(Decimal("1.5")) == Decimal("1.5")
    assert norm_key_value(memoryview(b"ab")) == b"ab"
