"""The consumer's sequence rule: a record's sequence read from its bytes, duplicates and gaps."""

from __future__ import annotations

import pytest

from cdc.errors import StreamCorrupt
from cdc.stream import envelope as e
from cdc.stream.sequence import SequenceWatch, sequence_peeker
from cdc.stream.serde import get_serdes


@pytest.mark.parametrize("encoding,framing", [("json", "confluent"), ("avro", "confluent"), ("avro", "plain")])
def test_the_peeked_sequence_is_the_decoded_one(encoding, framing):
    _, vs = get_serdes(encoding, framing)
    peek = sequence_peeker(encoding, framing, vs.decode)
    for seq in (1, 63, 64, 127, 128, 300, 2**31 + 5, 2**53 + 1):
        for value in (e.begin_record(seq, "0-1-2", 0), e.heartbeat_record(seq, 0, {"r": 1}),
                      e.end_record(seq, "x", 0, {"d.t": 1}, {"r": 1}, {})):
            data = vs.encode(value)
            assert peek(data) == vs.decode(data)["sequence"] == seq


def test_json_written_another_way_falls_back_to_decoding():
    _, vs = get_serdes("json")
    peek = sequence_peeker("json", decode=vs.decode)
    assert peek(b'{"status": "BEGIN", "sequence": 42}') == 42
    assert peek(b'{"status":"BEGIN"}') is None
    assert peek(b"not json") is None
    assert peek(None) is None


def test_the_watch_skips_duplicates_and_names_a_gap():
    w = SequenceWatch("p.s.changes", 0)
    assert [w.admit(s, o) for o, s in enumerate([5, 6, 7, 6, 7, 8])] == [True, True, True, False, False, True]
    with pytest.raises(StreamCorrupt, match=r"sequence 9\.\.11 missing in p\.s\.changes\[0\] after offset 5") as err:
        w.admit(12, 6)
    assert (err.value.missing_from, err.value.missing_to, err.value.offset) == (9, 11, 5)
    assert w.last == 8  # nothing after the gap was taken
