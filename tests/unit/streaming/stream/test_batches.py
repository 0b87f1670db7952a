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
