"""Net-effect compaction: applying the net effect equals applying every change."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.net_effect import DataChange, net_effect

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


@st.composite
def histories(draw):
    state = {k: {"id": k, "v": 0} for k in range(draw(st.integers(0, 4)))}
    initial = dict(state)
    changes = []
    for seq in range(draw(st.integers(0, 30))):
        op = draw(st.sampled_from(["c", "u", "d", "k"]))
        free = [k for k in range(8) if k not in state]
        if op == "c" and free:
            k = draw(st.sampled_from(free))
            state[k] = {"id": k, "v": seq}
            changes.append(DataChange(seq, T, "c", None, state[k]))
        elif op in ("u", "d", "k") and state:
            k = draw(st.sampled_from(sorted(state)))
            before = state[k]
            if op == "d":
                del state[k]
                changes.append(DataChange(seq, T, "d", before, None))
            elif op == "u":
                state[k] = {"id": k, "v": seq}
                changes.append(DataChange(seq, T, "u", before, state[k]))
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
