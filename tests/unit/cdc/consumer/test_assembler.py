"""The consumer's state machine on streams built in memory: duplicates, gaps, ABORTED, schema items."""

from __future__ import annotations

import pytest

from cdc.consumer.assembler import TransactionAssembler
from cdc.consumer.transactions import SchemaChange, Transaction
from cdc.errors import StreamCorrupt
from streaming.testing import StreamBuilder


def _stream() -> StreamBuilder:
    sb = StreamBuilder()
    sb.schema("d.t", [("id", "int"), ("v", "varchar")], ["id"])
    sb.tx(("c", "d.t", None, {"id": 1, "v": "a"}), ("c", "d.t", None, {"id": 2, "v": "b"}))
    sb.heartbeat()
    sb.tx(("u", "d.t", {"id": 1, "v": "a"}, {"id": 1, "v": "z"}), abort=True)
    sb.tx(("d", "d.t", {"id": 2, "v": "b"}, None))
    return sb


def _feed_all(asm: TransactionAssembler, records) -> list:
    out = []
    for offset, (key, value) in enumerate(records):
        item = asm.feed(offset, key, value)
        if item is not None:
            out.append(item)
    return out


def test_whole_transactions_in_order_schema_items_and_aborted_dropped():
    sb = _stream()
    asm = TransactionAssembler("t")
    items = _feed_all(asm, sb.items)
    assert [type(i).__name__ for i in items] == ["SchemaChange", "Transaction", "Transaction"]
    schema, tx1, tx3 = items
    assert schema.table == "d.t" and schema.position.sequence == 1 and schema.position.offset == 1
    assert not schema.in_transaction
    assert [(c.op, c.key, c.after) for c in tx1.changes] == [("c", {"id": 1}, {"id": 1, "v": "a"}),
                                                            ("c", {"id": 2}, {"id": 2, "v": "b"})]
    assert tx1.id == "0-1-1" and tx1.begin_sequence == 2 and tx1.sequence == 5 and tx1.position.offset == 5
    assert tx1.tables == {"d.t": 2} and len(tx1) == 2
    assert tx3.id == "0-1-3" and [c.op for c in tx3.changes] == ["d"] and tx3.changes[0].before == {"id": 2, "v": "b"}
    assert asm.aborted == 1 and asm.heartbeats == 1 and asm.last_heartbeat_ms == sb.ts - 20


def test_a_run_appended_twice_is_dropped_wherever_it_appears():
    sb = _stream()
    recs = list(sb.items)
    doubled = recs[:4] + recs[1:6] + recs[6:] + recs[2:5]  # a run inside tx 1, and one at the very end
    asm = TransactionAssembler("t")
    items = _feed_all(asm, doubled)
    assert [i.sequence for i in items] == [1, 5, 12]
    assert asm.duplicates == 3 + 3 and asm.last_sequence == recs[-1][1]["sequence"]


def test_a_gap_raises_naming_the_range_and_offset_and_stays_before_it():
    recs = list(_stream().items)
    del recs[6:8]  # sequences 7 and 8 lost
    asm = TransactionAssembler("cdc.src.changes")
    with pytest.raises(StreamCorrupt) as err:
        _feed_all(asm, recs)
    assert (err.value.missing_from, err.value.missing_to, err.value.offset) == (7, 8, 5)
    assert "sequence 7..8 missing in cdc.src.changes[0] after offset 5" in str(err.value)
    assert asm.last_sequence == 6
    with pytest.raises(StreamCorrupt):  # the next record does not get past it either
        asm.feed(7, None, recs[7][1])


def test_a_transaction_cut_by_a_gap_in_its_rows_is_never_handed_out():
    sb = StreamBuilder()
    sb.tx(*[("c", "d.t", None, {"id": i}) for i in range(5)])
    recs = sb.items[:3] + sb.items[4:]
    asm = TransactionAssembler("t")
    with pytest.raises(StreamCorrupt, match=r"sequence 4\.\.4 missing"):
        _feed_all(asm, recs)


def test_resuming_after_a_sequence_drops_what_is_done():
    recs = _stream().items
    asm = TransactionAssembler("t", last_sequence=5)
    items = _feed_all(asm, recs)
    assert [i.sequence for i in items] == [12] and asm.duplicates == 5


def test_unsynced_start_inside_a_transaction_waits_for_the_next_boundary():
    recs = _stream().items
    asm = TransactionAssembler("t", synced=False)
    items = [asm.feed(o, k, v) for o, (k, v) in enumerate(recs) if o >= 3]
    assert [i.sequence for i in items if i is not None] == [12]
    assert asm.unsynced == 2  # the rest of tx 1 (row 2, END)


def test_synced_start_inside_a_transaction_is_corrupt_not_half_a_transaction():
    recs = _stream().items
    asm = TransactionAssembler("t", last_sequence=2)
    with pytest.raises(StreamCorrupt, match="outside any transaction.*offset 2, sequence 3"):
        _feed_all(asm, recs)


@pytest.mark.parametrize("case", ["count", "id", "begin-in-tx", "end-alone", "no-sequence", "status"])
def test_broken_transactions_name_offset_and_sequence(case):
    sb = StreamBuilder()
    sb.tx(("c", "d.t", None, {"id": 1}), ("c", "d.t", None, {"id": 2}))
    recs = [(k, dict(v)) for k, v in sb.items]
    if case == "count":
        recs[3][1]["event_count"] = 3
    elif case == "id":
        recs[3][1]["id"] = "other"
    elif case == "begin-in-tx":
        recs[2] = (None, {**recs[0][1], "sequence": 3})
    elif case == "end-alone":
        recs = [(None, {**recs[3][1], "sequence": 1})]
    elif case == "no-sequence":
        del recs[1][1]["sequence"]
    else:
        recs[1] = (None, {"sequence": 2, "status": "WHATEVER"})
    with pytest.raises(StreamCorrupt, match="offset"):
        _feed_all(TransactionAssembler("t"), recs)


def test_schema_record_inside_a_transaction_belongs_to_it():
    sb = StreamBuilder()
    sb.tx(("c", "d.t", None, {"id": 1}))
    begin, row, end = sb.items
    inner = ({"table": "d.t"}, {"sequence": 2, "status": "SCHEMA", "table": "d.t", "ddl": None,
                                "schema": {"table": "d.t"}, "ts_ms": 1, "resume": None})
    recs = [begin, inner, (row[0], {**row[1], "sequence": 3}), (None, {**end[1], "sequence": 4})]
    [tx] = _feed_all(TransactionAssembler("t"), recs)
    assert isinstance(tx, Transaction) and [type(i) for i in tx.items] == [SchemaChange, type(tx.changes[0])]
    assert tx.schemas[0].table == "d.t" and tx.schemas[0].in_transaction and len(tx.changes) == 1


def test_a_resync_range_stops_a_consumer_that_did_not_ask_for_them_and_is_handed_out_to_one_that_did():
    from cdc.stream.resync_range import ResyncRange, ResyncRangeError

    rng = ResyncRange(("id",), None, (5,), frozenset({(1,), (2,)}))
    sb = _stream()
    sb.tx(("r", "d.t", None, {"id": 1, "v": "a"}), ("x", "d.t", None, None, {"resync": rng.to_text()}))
    with pytest.raises(ResyncRangeError, match="a resync range of d.t at offset"):
        _feed_all(TransactionAssembler("t"), sb.items)
    last = _feed_all(TransactionAssembler("t", resync_ranges=True), sb.items)[-1]
    assert [c.op for c in last.changes] == ["r", "x"] and last.changes[1].resync_range == rng
    assert last.changes[0].resync_range is None
