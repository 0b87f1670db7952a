"""An executor's read of one offset range on the real broker: JSON records (decoded by DuckDB a chunk at a
time) and Avro records (decoded one by one) of the same stream become the same rows."""

from __future__ import annotations

import uuid

import orjson
import pytest

from cdc.stream.serde import get_serdes
from streaming.stream import batches
from streaming.stream.batches import RangePartition, read_range
from streaming.testing import StreamBuilder, produce

pytestmark = [pytest.mark.kafka]

JSON_TEXT = ("key", "before", "after", "bkey")


def _stream() -> StreamBuilder:
    b = StreamBuilder(source="s")
    b.schema("db.t", [("id", "bigint"), ("v", "varchar(10)")], ["id"])
    for i in range(300):  # more than one decode chunk with the chunk size below
        b.tx(("c", "db.t", None, {"id": i, "v": "a"}),
             ("u", "db.t", {"id": i, "v": "a"}, {"id": i + 10_000, "v": "b"}),
             ("d", "db.t", {"id": i + 10_000, "v": "b"}, None))
    b.tx(("c", "db.t", None, {"id": -1, "v": "x"}), abort=True)
    b.heartbeat()
    return b


def _read(broker, items, encoding: str) -> list[dict]:
    ks, vs = get_serdes(encoding)
    enc = [(ks.encode(k) if k is not None else None, vs.encode(v)) for k, v in items]
    topic = f"rr-{encoding}-{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic)
    produce(broker.bootstrap, topic, enc)
    rows = [r for b in read_range(RangePartition(broker.bootstrap, topic, 0, 0, len(enc), encoding))
            for r in b.to_pylist()]
    assert [r["offset"] for r in rows] == list(range(len(enc)))
    return rows


def test_json_and_avro_ranges_read_alike(broker, monkeypatch):
    monkeypatch.setattr(batches, "ARROW_ROWS", 1000)
    items = _stream().items
    js, av = _read(broker, items, "json"), _read(broker, items, "avro")
    assert {r["kind"] for r in js} == {"data", "BEGIN", "END", "ABORTED", "SCHEMA", "HEARTBEAT"}
    assert sum(1 for r in js if r["bkey"]) == 300  # every key-changing update names the key it left
    for a, b in zip(js, av):
        for f in a:
            x, y = a[f], b[f]
            if f in JSON_TEXT and x is not None and y is not None:
                x, y = orjson.loads(x), orjson.loads(y)
            if f == "meta" and x is not None:
                x, y = orjson.loads(x), orjson.loads(y)
            assert x == y, f"offset {a['offset']} field {f}: json {a[f]!r} avro {b[f]!r}"
