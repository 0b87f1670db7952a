"""TRUNCATE on the per-table topics: Debezium's null-key ``op: t`` record, or a loud stop when compaction
would refuse it (no broker: a recording producer)."""

from __future__ import annotations

import orjson
import pytest

from cdc.debezium.errors import TruncateOnCompactedTopic
from cdc.stream.events import Begin, Change, Column, Commit, TableId, TableSchema
from tests.unit.cdc.publish.fakes import publisher

T = TableId("shop", "orders")
S = TableSchema(T, (Column("id", "int", False), Column("v", "varchar(9)")), ("id",))
TRUNCATE = Change(T, "t", None, None, {"gtid": "0-1-9", "file": "b.000001", "pos": 400, "row": 0}, S)


def _publish(pub, change):
    pub._table_topics.add("p.s.shop.orders")  # created already: no admin call in a unit test
    pub.publish(Begin("0-1-9", 1000))
    pub.publish(change)
    pub.publish(Commit("0-1-9", 1000, {"gtid_set": "0-1-9"}, {"gtid": "0-1-9"}))


def test_truncate_is_a_null_key_t_record_on_a_topic_that_is_not_compacted():
    pub, fake, _ = publisher(per_table_topics=True, topics={"per_table": {"cleanup.policy": "delete"}})
    _publish(pub, TRUNCATE)
    [(key, value)] = [(k, v) for t, v, k in fake.records if t == "p.s.shop.orders"]
    payload = orjson.loads(value)
    assert key is None and payload["op"] == "t" and payload["before"] is None and payload["after"] is None
    assert payload["source"]["gtid"] == "0-1-9" and payload["source"]["pos"] == 400


def test_truncate_for_a_compacted_per_table_topic_stops_naming_table_and_position():
    pub, fake, _ = publisher(per_table_topics=True)  # per-table topics are compacted by default
    with pytest.raises(TruncateOnCompactedTopic) as err:
        _publish(pub, TRUNCATE)
    assert err.value.table == "shop.orders" and err.value.position["gtid"] == "0-1-9"
    assert "kafka.topics.per_table.cleanup.policy" in str(err.value)
    assert not [r for r in fake.records if r[0] == "p.s.shop.orders"]


@pytest.mark.parametrize("schemas", [False, True])
def test_per_table_records_carry_the_writers_epoch(schemas):
    """The guard on the per-table topics (issue #36 section 3): each record carries the writer epoch next to its
    ``cdc.sequence``, so a late record of a fenced writer (a lower epoch) is told from the newer writer's."""
    from cdc.stream.envelope import epoch_headers

    pub, fake, _ = publisher(per_table_topics=True, debezium={"schemas": schemas})
    pub.epoch, pub._headers = 7, epoch_headers(7)
    _publish(pub, Change(T, "d", {"id": 1, "v": "a"}, None, {"gtid": "0-1-9"}, S))
    table = [dict(h or ()) for (t, _, _), h in zip(fake.records, fake.headers) if t == "p.s.shop.orders"]
    assert len(table) == 2  # the delete and its tombstone
    assert all(h.get("cdc.epoch") == b"7" for h in table), table
