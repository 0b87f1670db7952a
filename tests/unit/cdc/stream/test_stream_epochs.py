"""The writer epoch (header ``cdc.epoch``) under the stream's structure rules (cdc.stream.stream_structure): one epoch
from a BEGIN to its END, never lower than an earlier transaction's; an ABORTED of a newer writer closes an older
one's transaction; records written before epochs (no header: epoch 0) still read."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.consumer.assembler import TransactionAssembler
from cdc.consumer.transactions import Transaction
from cdc.errors import StreamCorrupt
from cdc.stream import envelope
from cdc.stream.envelope import EPOCH_HEADER, epoch_headers, record_epoch
from cdc.stream.stream_structure import NOT_READ as NR
from cdc.stream.stream_structure import StreamStructure
from tests.unit.cdc.stream.structure_streams import Record, committed, interleaved, plans, renumber, valid, write


def consume(records: list[Record], epochs: list[int | None]) -> tuple[list[Transaction], StreamCorrupt | None]:
    """What the consumer library hands out when record i carries epoch ``epochs[i]`` (offset = position)."""
    asm = TransactionAssembler("t")
    out: list[Transaction] = []
    for offset, ((key, value), epoch) in enumerate(zip(records, epochs, strict=True)):
        try:
            item = asm.feed(offset, key, value, epoch)
        except StreamCorrupt as exc:
            return out, exc
        if isinstance(item, Transaction):
            out.append(item)
    return out, None


def boundaries(records: list[Record]) -> list[int]:
    """Positions where a writer may hand over: between transactions (after the last record of one)."""
    depth, out = 0, [0]
    for i, (_k, v) in enumerate(records):
        status = v.get("status")
        if status == envelope.BEGIN:
            depth = 1
        elif status in (envelope.END, envelope.ABORTED):
            depth = 0
        if depth == 0:
            out.append(i + 1)
    return out


def test_the_header_round_trips_and_a_record_without_it_has_epoch_0():
    assert epoch_headers(7) == {EPOCH_HEADER: b"7"}
    assert record_epoch(epoch_headers(7)) == 7 and record_epoch([(EPOCH_HEADER, b"7")]) == 7
    assert record_epoch(None) == 0 and record_epoch([]) == 0 and record_epoch([("cdc.sequence", b"5")]) == 0
    assert record_epoch([(EPOCH_HEADER, b"x")]) == -1  # refused by every reader (below)


@pytest.mark.parametrize("feed, found, expected, epochs", [
    (lambda c: (c.begin(3, 3, "x", 5), c.row(4, 4, "db.a", "x", epoch=6)),
     "a data record of db.a with epoch 6 at offset 4, sequence 4", ("epoch 5 (the epoch of its writer, from the BEGIN "
     "at offset 3, sequence 3)"), (6, 5)),
    (lambda c: (c.begin(3, 3, "x", 5), c.row(4, 4, "db.a", "x", epoch=5), c.end(5, 5, "x", 1, NR, epoch=4)),
     "the END of transaction 'x' with epoch 4 at offset 5, sequence 5", "epoch 5 (the epoch", (4, 5)),
    (lambda c: (c.begin(3, 3, "x", 5), c.schema(4, 4, "db.a", None, None, epoch=0)),
     "a SCHEMA record of db.a with epoch 0", "epoch 5", (0, 5)),
    (lambda c: (c.begin(3, 3, "x", 5), c.aborted(4, 4, "x", 4)),
     "the ABORTED of transaction 'x' with epoch 4", "epoch 5 or higher", (4, 5)),
    (lambda c: (c.heartbeat(3, 3, 9), c.begin(4, 4, "x", 8)),
     "the BEGIN of transaction 'x' with epoch 8 at offset 4, sequence 4",
     "epoch 9 or higher (a newer writer's records, epoch 9, reached the stream at offset 3, sequence 3", (8, 9)),
    (lambda c: (c.begin(3, 3, "x", 9), c.end(4, 4, "x", 0, NR, 9), c.heartbeat(5, 5, 2)),
     "a HEARTBEAT with epoch 2 at offset 5", "epoch 9 or higher", (2, 9)),
    (lambda c: c.begin(3, 3, "x", -1), "the BEGIN of transaction 'x' with epoch -1", "a writer epoch", (-1, None)),
])
def test_each_epoch_rule_names_offset_sequence_and_both_epochs(feed, found, expected, epochs):
    check = StreamStructure("cdc.s.changes", 0)
    with pytest.raises(StreamCorrupt) as info:
        feed(check)
    err = info.value
    assert found in str(err) and f"where the stream's structure expects {expected}" in str(err), str(err)
    assert (err.fields.get("epoch"), err.fields.get("previous_epoch")) == epochs
    with pytest.raises(StreamCorrupt):  # stays broken
        check.heartbeat(99, 99, 99)


def test_a_newer_writer_closes_an_older_ones_transaction_and_records_without_epoch_still_read():
    check = StreamStructure("t")
    check.heartbeat(0, 1, None)  # a reader that does not read headers: no epoch rule
    check.begin(1, 2, "old", 0)  # written before epochs
    check.row(2, 3, "db.a", "old", epoch=0)
    check.end(3, 4, "old", 1, NR, 0)
    check.begin(4, 5, "a", 3)
    check.row(5, 6, "db.a", "a", epoch=3)
    check.aborted(6, 7, "a", 8)  # the newer writer (epoch 8) closes it
    check.heartbeat(7, 8, 0)  # a record without the header after stamped ones: read (a rollback of the daemon)
    check.begin(8, 9, "b", 8)
    check.end(9, 10, "b", 0, NR, 8)
    assert check.broken is None and check.epoch == 8


@settings(max_examples=300, deadline=None, derandomize=True)  # the same examples in every run (CI)
@given(valid(), st.data())
def test_writers_handing_over_between_transactions_with_rising_epochs_are_taken_whole(records, data):
    cuts = sorted(set(data.draw(st.lists(st.sampled_from(boundaries(records)), max_size=4))))
    epochs, epoch, start = [], data.draw(st.integers(0, 3)), 0
    for cut in [*cuts, len(records)]:
        epochs += [epoch] * (cut - start)
        start, epoch = cut, epoch + data.draw(st.integers(0, 5))
    out, err = consume(records, epochs)
    assert err is None
    assert [(t.id, t.sequence) for t in out] == committed(records)


@settings(max_examples=300, deadline=None, derandomize=True)  # the same examples in every run (CI)
@given(plans, plans, st.data())
def test_a_takeover_mid_transaction_is_closed_by_the_newer_writers_aborted(plan_a, plan_b, data):
    """Writer A (epoch 2) is fenced with a transaction open; B (epoch 7) closes it with ABORTED and goes on."""
    a = write([*plan_a, ("tx", [("c", "db.a", 1, 1), ("u", "db.a", 1, 2)])], 1, "A")
    cut = len(a) - data.draw(st.integers(1, 3))  # A stopped before its END
    a = a[:cut]
    begin = max(i for i, (_k, v) in enumerate(a) if v.get("status") == envelope.BEGIN)
    abort = (None, envelope.aborted_record(len(a) + 1, a[begin][1]["id"], 1))
    b = write(plan_b, len(a) + 2, "B")
    records = a + [abort] + b
    out, err = consume(records, [2] * len(a) + [7] * (1 + len(b)))
    assert err is None
    assert [(t.id, t.sequence) for t in out] == committed(records)


@settings(max_examples=400, deadline=None, derandomize=True)  # the same examples in every run (CI)
@given(interleaved())
def test_an_older_writers_record_after_a_newer_ones_is_refused_there_or_earlier(case):
    """Two writers from one tail, A with epoch 4 and B with epoch 9: the first record of A after any of B is
    refused (or an earlier structure violation), and nothing handed out mixes the two writers."""
    merged, (prefix, a, b) = case
    a_ids = {id(r) for r in a}
    b_ids = {id(r) for r in b}
    epochs = [3] * len(prefix) + [4 if id(r) in a_ids else 9 for r in merged[len(prefix):]]
    out, err = consume(merged, epochs)
    taken, top = [], 0  # the records the sequence rule takes (a duplicate sequence is dropped unread)
    for _k, v in merged:
        taken.append(v["sequence"] > top)
        top = max(top, v["sequence"])
    first_b = next((i for i, r in enumerate(merged) if id(r) in b_ids and taken[i]), None)
    late_a = next((i for i, r in enumerate(merged) if id(r) in a_ids and taken[i] and first_b is not None
                   and i > first_b), None)
    if late_a is not None:
        assert err is not None and err.offset <= late_a
    for t in out:
        stamped = {epochs[i] for i in range(t.begin_offset, t.end_offset + 1) if taken[i]}
        assert len(stamped) == 1, f"transaction {t.id} mixes writers"
    if err is not None:
        assert all(t.end_offset < err.offset for t in out)


def test_renumbered_records_of_an_older_writer_after_a_newer_one_are_refused():
    """Sequences alone cannot tell (the older writer's records renumbered to fit): the epoch does."""
    records = renumber(write([("tx", [("c", "db.a", 1, 1)])], 1, "B") + write([("tx", [("c", "db.a", 2, 2)])], 1, "A",
                                                                               {"db.a"}))
    n_b = 4  # B: BEGIN, table definition, row, END
    out, err = consume(records, [9] * n_b + [4] * (len(records) - n_b))
    assert [t.id for t in out] == ["B-0"]
    assert err is not None and err.offset == n_b and err.sequence == n_b + 1
    assert "epoch 4" in str(err) and "epoch 9" in str(err)


def test_epochs_of_a_fetch_are_each_records_own():
    from cdc.stream.wire import record_epochs

    fetch = [[(EPOCH_HEADER, b"3")], [(EPOCH_HEADER, b"3")], None, [], [(EPOCH_HEADER, b"x")], {EPOCH_HEADER: b"4"},
             [("other", b"1"), (EPOCH_HEADER, b"5")], [(EPOCH_HEADER, b"2")], [(EPOCH_HEADER, None)]]
    assert record_epochs(fetch) == [record_epoch(h) for h in fetch] == [3, 3, 0, 0, -1, 4, 5, 2, -1]
