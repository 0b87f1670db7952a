"""How the tail scan reads markers: the last checkpoint and whether a transaction is left open."""

from __future__ import annotations

import pytest

from cdc.errors import StreamCorrupt
from cdc.publish.recovery import _summarise
from cdc.stream import envelope as e
from cdc.stream.serde import get_serdes

KS, VS = get_serdes("json")


class Msg:
    def __init__(self, offset: int, key: dict | None, value: dict) -> None:
        self._o, self._k, self._v = offset, None if key is None else KS.encode(key), VS.encode(value)

    def offset(self):
        return self._o

    def key(self):
        return self._k

    def value(self):
        return self._v

    def headers(self):
        return None


def _data(seq: int, txid: str) -> tuple[dict, dict]:
    return {"table": "d.t", "key": {"id": seq}}, {"sequence": seq, "op": "c", "transaction": {"id": txid}}


def window(records: list[tuple[dict | None, dict]]):
    return _summarise(iter(Msg(i, k, v) for i, (k, v) in enumerate(records)), KS, VS, "p.s.changes")


def test_open_transaction_after_the_last_end():
    w = window([(None, e.begin_record(1, "a", 0)), _data(2, "a"),
                (None, e.end_record(3, "a", 0, {"d.t": 1}, {"r": 3}, {})),
                (None, e.begin_record(4, "b", 0)),
                ({"table": "d.t"}, e.schema_record(5, "d.t", None, None, 0, None)),  # in-tx: not a checkpoint
                _data(6, "b")])
    assert w.checkpoint["resume"] == {"r": 3}
    assert w.trail["status"] == "BEGIN" and w.trail["id"] == "b"


def test_aborted_closes_and_a_heartbeat_is_a_checkpoint():
    w = window([(None, e.begin_record(1, "a", 0)), _data(2, "a"), (None, e.aborted_record(3, "a", 0))])
    assert w.checkpoint is None and w.trail["status"] == "ABORTED"
    w = window([(None, e.aborted_record(3, "a", 0)), (None, e.heartbeat_record(4, 0, {"r": 4}))])
    assert w.checkpoint["resume"] == {"r": 4} and w.trail is None


def test_an_end_without_resume_closes_its_begin():
    """`cdc compare --repair` into a stream with no checkpoint yet writes END with a null resume: not a
    checkpoint, but its transaction is closed (the next writer must not append ABORTED after it)."""
    w = window([(None, e.begin_record(1, "repair:t", 0)), _data(2, "repair:t"),
                (None, e.end_record(3, "repair:t", 0, {"d.t": 1}, None, {"repair": True}))])
    assert w.checkpoint is None and w.trail["status"] == "END"


def test_a_ddl_is_a_checkpoint_and_a_heartbeat_without_resume_is_not():
    w = window([({"table": "d.t"}, e.schema_record(1, "d.t", "ALTER TABLE t ADD c INT", None, 0, {"r": 1})),
                (None, e.heartbeat_record(2, 0, None))])
    assert w.checkpoint["sequence"] == 1


def test_the_window_takes_the_max_sequence_and_skips_a_duplicate_run():
    recs = [(None, e.begin_record(1, "a", 0)), _data(2, "a"), (None, e.end_record(3, "a", 0, {"d.t": 1}, {"r": 3}, {})),
            (None, e.begin_record(4, "b", 0)), _data(5, "b")]
    w = window(recs + recs[3:])  # the last batch appended twice (a retried produce)
    assert w.max_sequence == 5 and w.duplicates == 2
    assert w.checkpoint["resume"] == {"r": 3} and w.trail["id"] == "b"


def test_a_duplicated_end_after_an_open_begin_does_not_hide_it():
    end_a = (None, e.end_record(3, "a", 0, {"d.t": 1}, {"r": 3}, {}))
    recs = [(None, e.begin_record(1, "a", 0)), _data(2, "a"), end_a, (None, e.begin_record(4, "b", 0)),
            _data(5, "b"), end_a, _data(6, "b")]  # END 3 appended again inside transaction b
    w = window(recs)
    assert w.checkpoint["resume"] == {"r": 3} and w.trail["status"] == "BEGIN" and w.trail["id"] == "b"
    assert w.max_sequence == 6 and w.duplicates == 1


def test_a_gap_in_sequences_is_refused_naming_the_range_and_offset():
    with pytest.raises(StreamCorrupt, match=r"sequence 3\.\.4 missing in p\.s\.changes\[0\] after offset 1"):
        window([(None, e.begin_record(1, "a", 0)), _data(2, "a"), _data(5, "a")])


def _msgs(records):
    return iter(Msg(i, k, v) for i, (k, v) in enumerate(records))


def test_a_window_read_without_what_precedes_notes_jumps_and_one_read_after_it_skips_its_duplicates():
    end_a = (None, e.end_record(3, "a", 0, {"d.t": 1}, {"r": 3}, {}))
    # the window starts with END 3 again (its original lies before the window), then transaction b
    recs = [end_a, (None, e.begin_record(4, "b", 0)), _data(5, "b")]
    loose = _summarise(_msgs([recs[0], recs[2]]), KS, VS, "p.s.changes", strict=False)
    assert [g.missing_from for g in loose.gaps] == [4]  # a jump 3 -> 5: a gap, or duplicates at the start
    after_it = _summarise(_msgs(recs), KS, VS, "p.s.changes", after=3)
    assert after_it.checkpoint is None and after_it.trail["id"] == "b" and after_it.duplicates == 1
