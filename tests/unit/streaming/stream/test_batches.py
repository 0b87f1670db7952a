"""split_range: a batch range -> input partitions (no broker needed)."""

import pytest

from streaming.stream.batches import split_range


def _spans(start, end, per_split):
    return [(p.start, p.end) for p in split_range("b:9092", "t", 3, start, end, "json", per_split)]


@pytest.mark.parametrize("start, end, per_split", [(0, 110_160, 100_000), (17, 199_938, 100_000), (0, 7, 3),
                                                   (5, 6, 100), (0, 1_000_000, 100_000), (40, 41, 1)])
def test_fewest_parts_of_equal_size_cover_the_range_in_order(start, end, per_split):
    spans = _spans(start, end, per_split)
    assert spans[0][0] == start and spans[-1][1] == end
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # contiguous: no record lost or read twice
    sizes = [b - a for a, b in spans]
    assert max(sizes) <= per_split and max(sizes) - min(sizes) <= 1
    assert len(spans) == -(-(end - start) // per_split)


def test_a_batch_a_little_over_the_split_is_read_as_two_halves():
    assert _spans(0, 110_160, 100_000) == [(0, 55_080), (55_080, 110_160)]


def test_an_empty_range_has_no_partition():
    assert _spans(10, 10, 100) == [] and _spans(10, 9, 100) == []


def test_partitions_carry_topic_partition_and_encoding():
    (p,) = split_range("b:9092", "t", 3, 0, 5, "avro", 10)
    assert (p.kafka, p.topic, p.partition, p.encoding) == ("b:9092", "t", 3, "avro")


# ---- read_range's consume loop, on a scripted consumer ------------------------------------------------
class _Msg:
    def __init__(self, offset, error=None):
        self._o, self._e = offset, error

    def offset(self):
        return self._o

    def key(self):
        return None if self._e else f"k{self._o}".encode()

    def value(self):
        return None if self._e else f"v{self._o}".encode()

    def error(self):
        return self._e

    def headers(self):
        return None if self._e else [("cdc.epoch", b"3")]


class _Consumer:
    def __init__(self, fetches):
        self.fetches = list(fetches)

    def assign(self, tps):
        pass

    def consume(self, num_messages, timeout):
        return [_Msg(*m) if isinstance(m, tuple) else _Msg(m) for m in self.fetches.pop(0)] if self.fetches else []

    def close(self):
        pass


def _read(monkeypatch, fetches, start, end, retention=None):
    from streaming.stream import batches

    monkeypatch.setattr(batches, "create_client", lambda kind, config: _Consumer(fetches))
    monkeypatch.setattr(batches, "check_retention", retention or (lambda c, topic, part, offset: None))
    monkeypatch.setattr(batches, "ARROW_ROWS", 4)
    monkeypatch.setattr(batches, "_chunk_decoder", lambda p: lambda offs, keys, values, epochs: list(zip(offs, keys, values, epochs)))
    return [r for chunk in batches.read_range(batches.RangePartition("b:9092", "t", 0, start, end)) for r in chunk]


def _want(start, end):
    return [(o, f"k{o}".encode(), f"v{o}".encode(), 3) for o in range(start, end)]  # 3: each one's cdc.epoch


def test_whole_fetches_and_a_fetch_past_the_end_give_each_record_once(monkeypatch):
    fetches = [range(10, 15), range(15, 18), range(18, 25)]  # the last fetch runs past the range's end (20)
    assert _read(monkeypatch, fetches, 10, 20) == _want(10, 20)


def test_a_fetch_repeating_records_already_read_drops_the_repeats(monkeypatch):
    fetches = [range(10, 15), [13, 14, 15, 16], [17, 17, 18, 19]]
    assert _read(monkeypatch, fetches, 10, 20) == _want(10, 20)


def test_a_hole_in_the_offsets_asks_the_retention_check(monkeypatch):
    from streaming.errors import OffsetsGone

    def gone(c, topic, part, offset):
        if offset > 10:
            raise OffsetsGone(f"offset {offset} is gone", topic=topic, offset=offset)

    with pytest.raises(OffsetsGone, match="offset 13"):
        _read(monkeypatch, [range(10, 13), [14, 15]], 10, 20, retention=gone)


def test_an_error_in_a_fetch_is_raised_not_read_as_a_record(monkeypatch):
    from confluent_kafka import KafkaError

    from streaming.errors import ApplyError

    with pytest.raises(ApplyError, match="failed"):
        _read(monkeypatch, [[10, 11, (12, KafkaError(KafkaError._MSG_TIMED_OUT))]], 10, 20)


def test_a_partition_eof_event_in_a_fetch_is_skipped(monkeypatch):
    from confluent_kafka import KafkaError

    fetches = [[10, 11, (12, KafkaError(KafkaError._PARTITION_EOF))], range(12, 20)]
    assert _read(monkeypatch, fetches, 10, 20) == _want(10, 20)


def test_a_range_over_the_bytes_per_split_is_read_in_more_parts():
    parts = split_range("k:9092", "t", 0, 0, 1000, "json", 5000, size=64 << 20, per_split_bytes=16 << 20)
    assert [(p.start, p.end) for p in parts] == [(0, 250), (250, 500), (500, 750), (750, 1000)]
    assert len(split_range("k:9092", "t", 0, 0, 1000, "json", 5000, size=1 << 20, per_split_bytes=16 << 20)) == 1
    assert len(split_range("k:9092", "t", 0, 0, 1000, "json", 5000, size=None, per_split_bytes=16 << 20)) == 1
    assert len(split_range("k:9092", "t", 0, 0, 3, "json", 5000, size=1 << 30, per_split_bytes=1)) == 3  # one each
