"""Net-effect compaction: applying the net effect equals applying every change."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.apply.net_effect import DataChange, net_effect

T = "db.t"


def _apply_net(state: dict, net) -> dict:
    out = dict(state)
    for r in net.deletes:
        del out[r["id"]]
    for r in net.upserts:
        out[r["id"]] = r
    return out


def test_insert_then_delete_cancels():
    ch = [DataChange(1, T, "c", None, {"id": 1, "v": "a"}), DataChange(2, T, "d", {"id": 1, "v": "a"}, None)]
    net = net_effect(ch, {T: ("id",)})[T]
    assert net.deletes == [] and net.upserts == []


def test_update_chain_merges_and_keeps_first_before_image():
    ch = [DataChange(1, T, "u", {"id": 1, "v": "a"}, {"id": 1, "v": "b"}),
          DataChange(2, T, "u", {"id": 1, "v": "b"}, {"id": 1, "v": "c"})]
    net = net_effect(ch, {T: ("id",)})[T]
    assert net.upserts == [{"id": 1, "v": "c"}] and net.replaced == [{"id": 1, "v": "a"}]


def test_key_update_is_delete_old_plus_insert_new():
    ch = [DataChange(1, T, "u", {"id": 1, "v": "a"}, {"id": 2, "v": "a"})]
    net = net_effect(ch, {T: ("id",)})[T]
    assert net.deletes == [{"id": 1, "v": "a"}] and net.upserts == [{"id": 2, "v": "a"}]


def test_keyless_table_counts_copies():
    r = {"a": 1}
    ch = [DataChange(1, T, "c", None, r), DataChange(2, T, "c", None, r), DataChange(3, T, "d", r, None),
          DataChange(4, T, "u", {"a": 2}, {"a": 3})]
    net = net_effect(ch, {T: ()})[T]
    assert net.upserts == [{"a": 1}, {"a": 3}] and net.deletes == [{"a": 2}]


# ---- the columnar reduction equals the record-by-record one ------------------------------------
def _columns(changes: list[DataChange]):
    import numpy as np
    import orjson
    import pyarrow as pa

    def dumps(v):
        return None if v is None else orjson.dumps(v).decode()

    keys, bkeys = [], []
    for ch in changes:
        img = ch.after if ch.after is not None else ch.before
        keys.append(dumps({"id": img["id"]}))
        moved = ch.op == "u" and ch.before["id"] != ch.after["id"]
        bkeys.append(dumps({"id": ch.before["id"]}) if moved else None)
    return (np.array([ch.op for ch in changes], dtype=object), pa.array(keys, pa.string()),
            pa.array(bkeys, pa.string()), pa.array([dumps(c.before) for c in changes], pa.string()),
            pa.array([dumps(c.after) for c in changes], pa.string()))


@st.composite
def histories(draw):
    """(start state, a run of changes on one table, end state): inserts, snapshot reads ('r'), updates that
    may return to an earlier image or change nothing, deletes and key moves."""
    state = {k: {"id": k, "v": 0} for k in range(draw(st.integers(0, 4)))}
    initial = dict(state)
    changes = []
    for seq in range(draw(st.integers(0, 40))):
        op = draw(st.sampled_from(["c", "r", "u", "d", "k", "same"]))
        free = [k for k in range(8) if k not in state]
        if op in ("c", "r") and free:
            k = draw(st.sampled_from(free))
            state[k] = {"id": k, "v": seq}
            changes.append(DataChange(seq, T, op, None, state[k]))
        elif op in ("u", "d", "k", "same") and state:
            k = draw(st.sampled_from(sorted(state)))
            before = state[k]
            if op == "d":
                del state[k]
                changes.append(DataChange(seq, T, "d", before, None))
            elif op == "u":
                state[k] = {"id": k, "v": draw(st.integers(0, 2))}  # may come back to an earlier image
                changes.append(DataChange(seq, T, "u", before, state[k]))
            elif op == "same":
                changes.append(DataChange(seq, T, "u", before, dict(before)))
            elif free:
                nk = draw(st.sampled_from(free))
                del state[k]
                state[nk] = {"id": nk, "v": before["v"]}
                changes.append(DataChange(seq, T, "u", before, state[nk]))
    return initial, changes, state


@settings(max_examples=300, deadline=None)
@given(histories())
def test_net_effect_equals_sequential_apply(h):
    initial, changes, final = h
    nets = net_effect(changes, {T: ("id",)})
    result = _apply_net(initial, nets[T]) if T in nets else initial
    assert result == final
    if T in nets:  # deletes and upserts never touch the same key
        assert not {r["id"] for r in nets[T].deletes} & {r["id"] for r in nets[T].upserts}


@settings(max_examples=400, deadline=None)
@given(histories())
def test_columnar_net_effect_equals_record_net_effect(h):
    _initial, changes, _final = h
    import orjson

    from streaming.apply.net_effect import net_effect_columns

    ops, key, bkey, before, after = _columns(changes)
    col = net_effect_columns(ops, key, bkey, before, after)
    assert col.changes == len(changes)
    ref = net_effect(changes, {T: ("id",)}).get(T)

    def imgs(arr, at):
        return [orjson.loads(arr[int(i)].as_py()) for i in at]

    assert imgs(before, col.deletes) == (ref.deletes if ref else [])
    assert imgs(after, col.upserts) == (ref.upserts if ref else [])
    assert imgs(before, col.replaced) == (ref.replaced if ref else [])
    assert [changes[int(i)].sequence for i in col.upsert_last] == [s.sequence for s in (ref.upsert_src if ref else [])]
    assert [changes[int(i)].sequence for i in col.delete_last] == [s.sequence for s in (ref.delete_src if ref else [])]
    # a plain insert: the key's first change in the run created it (no row in the target can conflict)
    firsts: dict[int, bool] = {}
    for ch in changes:
        if ch.op == "d":
            firsts.setdefault(ch.before["id"], False)
        elif ch.op in ("c", "r"):
            firsts.setdefault(ch.after["id"], ch.op == "c")
        elif ch.before["id"] != ch.after["id"]:
            firsts.setdefault(ch.before["id"], False)
            firsts.setdefault(ch.after["id"], True)
        else:
            firsts.setdefault(ch.after["id"], False)
    assert [bool(x) for x in col.inserts] == [firsts[orjson.loads(after[int(i)].as_py())["id"]] for i in col.upserts]


def test_columnar_net_effect_refuses_a_missing_key_or_image():
    import numpy as np
    import pyarrow as pa
    import pytest

    from streaming.apply.net_effect import net_effect_columns

    s = pa.string()
    with pytest.raises(ValueError, match="primary-key"):
        net_effect_columns(np.array(["c"], dtype=object), pa.array(['{"id":null}'], s), pa.array([None], s),
                           pa.array([None], s), pa.array(['{"id":null}'], s))
    with pytest.raises(ValueError, match="image"):
        net_effect_columns(np.array(["d"], dtype=object), pa.array(['{"id":1}'], s), pa.array([None], s),
                           pa.array([None], s), pa.array([None], s))
