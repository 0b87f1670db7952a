"""The stream's structure (cdc.stream.stream_structure) through the consumer library's assembler: valid streams are
taken whole; interleaved (two writers from one tail), truncated, doubled and reordered ones are refused before
the damaged transaction is handed out, and nothing handed out is ever a mixture."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.errors import StreamCorrupt
from cdc.stream import envelope
from cdc.stream.stream_structure import NOT_READ, StreamStructure
from tests.unit.cdc.stream.structure_streams import (
    committed,
    consume,
    damaged,
    fingerprint,
    interleaved,
    transactions_of,
    valid,
    write,
)


@settings(max_examples=300, deadline=None, derandomize=True)  # the same examples in every run (CI)
@given(valid())
def test_a_valid_stream_is_taken_whole(records):
    out, err, asm = consume(records)
    assert err is None and not asm.in_transaction
    assert [(t.id, t.sequence) for t in out] == committed(records)


@settings(max_examples=400, deadline=None, derandomize=True)  # the same examples in every run (CI)
@given(damaged())
def test_a_damaged_stream_is_refused_before_the_damaged_transaction(case):
    _original, recs, at, how = case
    out, err, _ = consume(recs)
    assert err is not None, f"{how} not refused"
    assert err.offset >= at and isinstance(err.sequence, int)
    # everything before the damage is handed out, nothing of the damaged transaction nor after it
    assert [(t.id, t.sequence) for t in out] == committed(recs, at), how
    assert all(t.end_offset < at for t in out)


@settings(max_examples=400, deadline=None, derandomize=True)  # the same examples in every run (CI)
@given(interleaved())
def test_two_writers_from_one_tail_never_hand_out_a_mixture(case):
    merged, writers = case
    intact = set().union(*(transactions_of(writers[0] + w) for w in writers[1:]))
    out, err, _ = consume(merged)
    for t in out:
        assert fingerprint(t.begin, [c.value for c in t.changes], t.end) in intact, f"a mixed transaction {t.id}"
    if err is not None:
        assert all(t.end_offset < err.offset for t in out)


def test_the_overlap_of_the_incident_is_refused_at_the_first_collision():
    """One daemon's BEGIN and the other's HEARTBEAT under one sequence: the rows that follow are refused."""
    tail = write([("tx", [("c", "db.a", 1, 1)])], 1, "P")
    a = write([("tx", [("c", "db.a", 2, 2), ("u", "db.a", 2, 3)])], len(tail) + 1, "A", {"db.a"})
    b = [(None, envelope.heartbeat_record(len(tail) + 1, 1, {"b": 1}))] + \
        write([("tx", [("c", "db.a", 5, 5)])], len(tail) + 2, "B", {"db.a"})
    merged = tail + [a[0], b[0], b[1], a[1], a[2], b[2], a[3], b[3]]  # A's BEGIN, B's heartbeat, B's BEGIN...
    out, err, _ = consume(merged)
    assert [t.id for t in out] == ["P-0"]
    assert err is not None and "BEGIN of transaction 'B-0' at offset 6" in str(err)
    assert "where the stream's structure expects the END or ABORTED of transaction 'A-0'" in str(err)
    assert err.offset == 6 and err.sequence == 6 and err.txid == "A-0"


@pytest.mark.parametrize("feed, found", [
    (lambda c: c.row(3, 3), "a data record outside any transaction at offset 3, sequence 3"),
    (lambda c: (c.begin(3, 3, "x"), c.row(4, 4, "db.a", "y")), "a data record of db.a of transaction 'y'"),
    (lambda c: (c.begin(3, 3, "x"), c.heartbeat(4, 4)), "a HEARTBEAT at offset 4"),
    (lambda c: (c.begin(3, 3, "x"), c.end(4, 4, "z", 0, [])), "the END of transaction 'z'"),
    (lambda c: (c.begin(3, 3, "x"), c.row(4, 4), c.end(5, 5, "x", 2, NOT_READ)), "event_count 2"),
    (lambda c: (c.begin(3, 3, "x"), c.row(4, 4, "db.a", "x"),
                c.end(5, 5, "x", 1, [{"data_collection": "db.b", "event_count": 1}])), "data_collections"),
    (lambda c: (c.begin(3, 3, "x"), c.end(4, 4, "x", None, [])), "event_count None"),
    (lambda c: c.aborted(3, 3, "x"), "the ABORTED of transaction 'x' with no open transaction"),
    (lambda c: (c.begin(3, 3, "x"), c.aborted(4, 4, "y")), "the ABORTED of transaction 'y'"),
    (lambda c: (c.begin(3, 3, "x"), c.schema(4, 4, "db.a", "DROP TABLE db.a", None)), "with ddl 'DROP TABLE db.a'"),
    (lambda c: (c.begin(3, 3, "x"), c.schema(4, 4, "db.a", None, {"gtid": "1"})), "a SCHEMA record of db.a"),
    (lambda c: c.other(3, 3, "COMMIT"), "a record with status 'COMMIT'"),
])
def test_each_rule_names_what_it_found_where(feed, found):
    check = StreamStructure("cdc.s.changes", 0)
    with pytest.raises(StreamCorrupt) as info:
        feed(check)
    assert found in str(info.value) and str(info.value).startswith("cdc.s.changes[0]: ")
    with pytest.raises(StreamCorrupt) as again:  # stays broken
        check.heartbeat(99, 99)
    assert again.value is info.value


@given(st.integers(0, 3))
def test_a_table_definition_inside_a_transaction_and_aborted_transactions_pass(n):
    check = StreamStructure("t")
    check.begin(0, 1, "x")
    check.schema(1, 2, "db.a", None, None)
    for i in range(n):
        check.row(2 + i, 3 + i, "db.a", "x")
    check.aborted(2 + n, 3 + n, "x")
    check.heartbeat(3 + n, 4 + n)
    check.schema(4 + n, 5 + n, "db.a", "ALTER TABLE db.a ADD c int", {"gtid": "1"})
    assert not check.in_transaction and check.broken is None
