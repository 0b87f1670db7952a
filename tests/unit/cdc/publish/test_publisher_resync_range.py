"""A resync range record (cdc.stream.resync_range, op "x") on the ordered stream, and a loud stop before anything of
it is written when per-table topics are on (Debezium has no range delete; no broker: a recording producer)."""

from __future__ import annotations

import orjson
import pytest

from cdc.stream.events import Begin, Change, Column, Commit, TableId, TableSchema
from cdc.stream.resync_range import ResyncRange, ResyncRangeError
from tests.unit.cdc.publish.fakes import publisher

T = TableId("shop", "orders")
S = TableSchema(T, (Column("id", "int", False), Column("v", "varchar(9)")), ("id",))
RNG = ResyncRange(("id",), (10,), None, frozenset({(11,), (14,)}))
RANGE = Change(T, "x", None, None, {"resync": RNG.to_text(), "row": 1}, S)


def _publish(pub):
    pub._table_topics.add("p.s.shop.orders")  # created already: no admin call in a unit test
    pub.publish(Begin("resync:shop.orders", 1000))
    pub.publish(Change(T, "r", None, {"id": 11, "v": "a"}, {"incremental_snapshot": True, "row": 0}, S))
    pub.publish(RANGE)
    pub.publish(Commit("resync:shop.orders", 1000, {"gtid_set": "0-1-9"}, {"snapshot": "shop.orders"}))


def test_the_range_is_a_keyless_x_record_counted_in_its_transaction():
    pub, fake, _ = publisher()
    _publish(pub)
    records = [(orjson.loads(k) if k else None, orjson.loads(v)) for _, v, k in fake.records if v]
    [(key, x)] = [(k, v) for k, v in records if v.get("op") == "x"]
    assert key == {"table": "shop.orders", "key": None} and x["before"] is None and x["after"] is None
    assert ResyncRange.from_text(x["source"]["resync"], "shop.orders") == RNG
    end = next(v for _, v in records if v.get("status") == "END")
    assert end["event_count"] == 2 and end["data_collections"] == [{"data_collection": "shop.orders",
                                                                     "event_count": 2}]


def test_per_table_topics_stop_the_range_before_it_is_written():
    pub, fake, _ = publisher(per_table_topics=True, topics={"per_table": {"cleanup.policy": "delete"}})
    with pytest.raises(ResyncRangeError, match="cannot go to its per-table topic"):
        _publish(pub)
    assert not [r for r in fake.records if r[1] and b'"op":"x"' in r[1]]
