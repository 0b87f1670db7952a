"""``cdc tail --max N`` reports the sequence of the last record it printed, not of the last one read."""

import io

from cdc.consumer.tail_cmd import _Out


def test_max_reports_the_last_printed_sequence() -> None:
    out = _Out("json", 3)
    out._w = io.BytesIO()
    for seq in range(10, 30):  # a transaction of 20 records; --max 3 prints the first three
        out.record(seq, None, {"sequence": seq, "op": "c"})
    assert out.count == 3
    assert out.last_sequence == 12
    assert out._w.getvalue().count(b"\n") == 3


def test_nothing_printed_reports_no_sequence() -> None:
    out = _Out("text", 2)
    out._w = io.BytesIO()
    out.record(5, {"id": 1}, None)  # a tombstone carries no sequence
    assert out.count == 1 and out.last_sequence is None
