"""What the publisher writes for a sequence of reader events (no broker: a recording producer)."""

from __future__ import annotations

import re

import orjson
import pytest

from cdc.errors import DecodeError, PublishError, StreamCorrupt
from cdc.stream import envelope
from cdc.stream.events import Begin, Change, ChangeBatch, Column, Commit, Heartbeat, SchemaChange, TableId, TableSchema
from tests.unit.cdc.publish.fakes import decoded, publisher

A, B = TableId("shop", "orders"), TableId("shop", "items")
SA = TableSchema(A, (Column("id", "int", False), Column("v", "varchar(9)")), ("id",))
SB = TableSchema(B, (Column("oid", "int", False), Column("n", "int", False), Column("q", "int")), ("oid", "n"))


def tx(txid: str, rows: list[Change], resume: dict) -> list:
    return [Begin(txid, 1000), *rows, Commit(txid, 1000, resume, {"gtid": txid})]


def ins(table, schema, row) -> Change:
    return Change(table, "c", None, row, {"row": 0}, schema)


def test_sequence_strictly_increases_and_end_counts_per_table():
    pub, fake, _ = publisher()
    events = tx("u:1", [ins(A, SA, {"id": 1, "v": "a"}), ins(B, SB, {"oid": 1, "n": 1, "q": 2}),
                        ins(B, SB, {"oid": 1, "n": 2, "q": 3})], {"gtid_set": "u:1"})
    events += tx("u:2", [ins(A, SA, {"id": 2, "v": "b"})], {"gtid_set": "u:1-2"})
    for ev in events:
        pub.publish(ev)
    out = decoded(fake)
    assert [v["sequence"] for _, _, v in out] == list(range(1, len(out) + 1))
    kinds = [v.get("status") or v["op"] for _, _, v in out]
    assert kinds == ["BEGIN", "SCHEMA", "c", "SCHEMA", "c", "c", "END", "BEGIN", "c", "END"]
    end1 = out[6][2]
    assert end1["event_count"] == 3
    assert end1["data_collections"] == [{"data_collection": "shop.orders", "event_count": 1},
                                        {"data_collection": "shop.items", "event_count": 2}]
    assert end1["resume"] == {"gtid_set": "u:1"} and end1["position"] == {"gtid": "u:1"}
    # a table definition written inside a transaction is not a checkpoint
    assert out[1][2]["resume"] is None and out[1][1] == {"table": "shop.orders"}
    # per-table order inside the transaction
    assert [v["transaction"] for _, _, v in out[4:6]] == [
        {"id": "u:1", "total_order": 2, "data_collection_order": 1},
        {"id": "u:1", "total_order": 3, "data_collection_order": 2}]
    assert out[5][1] == {"table": "shop.items", "key": {"oid": 1, "n": 2}}
    pub.flush()
    assert pub.last_resume == {"gtid_set": "u:1-2"}


def test_hot_path_builds_exactly_the_envelope_records():
    pub, fake, _ = publisher()
    ch = Change(A, "u", {"id": 5, "v": "x"}, {"id": 5, "v": "y"}, {"gtid": "u:9", "pos": 4}, SA)
    for ev in tx("u:9", [ch], {"g": 1}):
        pub.publish(ev)
    _, key, value = decoded(fake)[2]
    ekey, evalue = envelope.data_record(ch, sequence=value["sequence"], source_name="s", connector="mysql",
                                        txid="u:9", commit_ts_ms=1000, total_order=1, data_collection_order=1,
                                        now_ms=value["ts_ms"])
    assert (key, value) == (ekey, evalue)
    assert list(value) == list(evalue) and list(value["source"]) == list(evalue["source"])


def test_schema_record_again_only_when_the_definition_changes():
    pub, fake, _ = publisher()
    SA2 = TableSchema(A, SA.columns + (Column("w", "int"),), ("id",))
    for ev in (tx("t1", [ins(A, SA, {"id": 1, "v": "a"})], {"s": 1}) + tx("t2", [ins(A, SA, {"id": 2, "v": "a"})], {"s": 2})
               + tx("t3", [ins(A, SA2, {"id": 3, "v": "a", "w": 1})], {"s": 3})):
        pub.publish(ev)
    schemas = [v for _, _, v in decoded(fake) if v.get("status") == "SCHEMA"]
    assert [len(s["schema"]["columns"]) for s in schemas] == [2, 3]


def test_ddl_is_a_checkpoint_and_heartbeats_carry_resume():
    pub, fake, metrics = publisher()
    pub.publish(SchemaChange(A, "ALTER TABLE orders ADD w INT", SA, 5, {"gtid_set": "u:1-3"}))
    pub.publish(Heartbeat(6, {"gtid_set": "u:1-3"}))
    pub.publish(Begin("u:4", 7))
    pub.publish(Heartbeat(7, {"gtid_set": "u:1-3"}))  # inside a transaction: not written
    out = decoded(fake)
    assert [v["status"] for _, _, v in out] == ["SCHEMA", "HEARTBEAT", "BEGIN"]
    assert out[0][1] == {"table": "shop.orders"} and out[0][2]["ddl"].startswith("ALTER")
    pub.flush()
    assert metrics.registry.get_sample_value("cdc_source_last_published_sequence", {"source": "s"}) == 3


def test_metrics_move_only_after_acknowledgement():
    pub, fake, metrics = publisher()
    fake.acked_upto = 0
    for ev in tx("u:1", [ins(A, SA, {"id": 1, "v": "a"})], {"g": 1}):
        pub.publish(ev)
    pub._acks.check()
    get = metrics.registry.get_sample_value
    assert get("cdc_source_transactions_published_total", {"source": "s"}) == 0
    assert pub.last_resume is None
    fake.acked_upto = None
    pub._acks.check()
    assert get("cdc_source_transactions_published_total", {"source": "s"}) == 1
    assert get("cdc_source_events_published_total", {"source": "s", "table": "shop.orders", "op": "c"}) == 1
    assert pub.last_resume == {"g": 1}


def test_delivery_failure_surfaces_as_publish_error():
    pub, fake, _ = publisher()
    fake.failure = PublishError("broker did not acknowledge a record", topic="p.s.changes")
    pub.publish(Begin("u:1", 1))
    with pytest.raises(PublishError):
        pub.flush()


def test_contract_violations_are_loud():
    pub, _, _ = publisher()
    with pytest.raises(StreamCorrupt):
        pub.publish(ins(A, SA, {"id": 1, "v": "a"}))
    pub.publish(Begin("u:1", 1))
    with pytest.raises(StreamCorrupt):
        pub.publish(Begin("u:2", 1))
    with pytest.raises(StreamCorrupt):
        pub.publish(Commit("u:3", 1, {}, {}))


def test_per_table_topics_key_by_primary_key_and_tombstone_deletes():
    pub, fake, _ = publisher(per_table_topics=True)
    pub._table_topics.add("p.s.shop.orders")  # created already: no admin call in a unit test
    rows = [ins(A, SA, {"id": 1, "v": "a"}), Change(A, "d", {"id": 1, "v": "a"}, None, {}, SA)]
    for ev in tx("u:1", rows, {"g": 1}):
        pub.publish(ev)
    table = [(k, v) for t, v, k in fake.records if t == "p.s.shop.orders"]
    assert [(k, v is None) for k, v in table] == [(b'{"id":1}', False), (b'{"id":1}', False), (b'{"id":1}', True)]


def test_dead_letter_without_a_topic_raises_the_error():
    pub, _, _ = publisher()
    err = DecodeError("cannot decode column", table="shop.orders", column="v", position="b.1:4", value="\\xff")
    with pytest.raises(DecodeError):
        pub.dead_letter(err, b"\xff")


def _as_batch(changes: list[Change], mixed: bool = False) -> ChangeBatch:
    """The serialized form a reader's batch path yields (cdc.stream.events.ChangeBatch); ``mixed``: every other row
    left as a Change, as the Oracle reader leaves the rows its native pass cannot vouch for."""
    dumps = orjson.dumps
    tables, rows, known = [], [], {}
    for i, ch in enumerate(changes):
        if mixed and i % 2:
            tables.append(None)
            rows.append(ch)
            continue
        row = ch.after if ch.after is not None else ch.before
        pk = ch.schema.primary_key if ch.schema is not None else ()
        key = row[pk[0]] if len(pk) == 1 else {c: row.get(c) for c in pk} if pk else row
        tables.append(known.setdefault(ch.table, (ch.table, ch.schema)))  # one tuple per table, as readers do
        rows.append((ch.op, dumps(key), dumps(ch.before), dumps(ch.after), b"," + dumps(ch.source)[1:]))
    return ChangeBatch(tables, rows)


@pytest.mark.parametrize("mixed", [False, True])
def test_a_change_batch_writes_the_records_of_its_changes(mixed):
    """Two tables (each with its first SCHEMA record inside the transaction), keys of one and two columns:
    the batch gives the bytes the Changes give (but the publish times), with every sequence in produce order."""
    changes = [ins(A, SA, {"id": 1, "v": "a"}), ins(B, SB, {"oid": 1, "n": 1, "q": 2}),
               Change(B, "d", {"oid": 1, "n": 2, "q": 3}, None, {"scn": 4, "txId": "1.2.3"}, SB),
               Change(A, "u", {"id": 1, "v": "a"}, {"id": 1, "v": "é\"\n"}, {"scn": 5}, SA)]
    outs = []
    for events in (tx("t1", changes, {"r": 1}), tx("t1", [_as_batch(changes, mixed)], {"r": 1})):
        pub, fake, _ = publisher()
        for ev in events:
            pub.publish(ev)
        assert [v["sequence"] for _, _, v in decoded(fake)] == list(range(1, len(fake.records) + 1))
        outs.append([(t, k, re.sub(rb'"ts_ms":\d{13}', b'"ts_ms":0', v)) for t, v, k in fake.records])  # now
    assert outs[0] == outs[1]



def test_an_oversized_row_in_a_change_batch_stops_after_the_rows_before_it():
    """No dead-letter topic: RecordTooLarge at the third row, and the two rows before it are produced first
    (the stream and the next sequence agree: nothing counted that was not handed to the producer)."""
    from cdc.publish.producer import RecordTooLarge

    pub, fake, _ = publisher()
    pub._record_limit = 400
    changes = [ins(A, SA, {"id": 1, "v": "a"}), ins(A, SA, {"id": 2, "v": "b"}), ins(A, SA, {"id": 3, "v": "x" * 500})]
    pub.publish(Begin("t", 1000))
    pub.publish(_as_batch(changes[:1]))  # SA's SCHEMA record and constants now known: the next batch splices
    with pytest.raises(RecordTooLarge, match="shop.orders"):
        pub.publish(_as_batch(changes[1:]))
    seqs = [v["sequence"] for _, _, v in decoded(fake)]
    assert seqs == [1, 2, 3, 4] and pub.next_sequence == 5  # BEGIN, SCHEMA, row 1, row 2; row 3 never numbered


def test_an_oversized_row_in_a_change_batch_goes_to_the_dead_letter_topic_without_a_gap():
    """With kafka.dead_letter_topic: the oversized row of a spliced batch is dead-lettered (reason, table, key,
    size; never the row), the rows around it keep gapless sequences and END counts only them."""
    pub, fake, _ = publisher(dead_letter_topic="dlq")
    pub._record_limit = 400
    changes = [ins(A, SA, {"id": 1, "v": "a"}), ins(A, SA, {"id": 2, "v": "b"}), ins(A, SA, {"id": 3, "v": "x" * 500}),
               ins(A, SA, {"id": 4, "v": "d"})]
    for ev in tx("t", [_as_batch(changes[:1]), _as_batch(changes[1:])], {"r": 1}):
        pub.publish(ev)
    out = decoded(fake, topic="p.s.changes")
    assert [v["sequence"] for _, _, v in out] == list(range(1, len(out) + 1))
    rows = [v["after"]["id"] for _, _, v in out if v.get("op") == "c"]
    assert rows == [1, 2, 4] and out[-1][2]["event_count"] == 3
    dead = [orjson.loads(v) for t, v, _ in fake.records if t == "dlq"]
    assert len(dead) == 1 and dead[0]["error"] == "RecordTooLarge" and "x" * 50 not in orjson.dumps(dead[0]).decode()
    assert dead[0]["fields"]["table"] == "shop.orders" and dead[0]["fields"]["key"] == '{"id":3}'


@pytest.mark.parametrize("encoding, per_table", [("json", False), ("json", True), ("avro", False)])
def test_every_record_of_the_changes_topic_carries_the_writer_epoch(encoding, per_table):
    """Markers, table definitions, rows one by one and in a ChangeBatch: each with header cdc.epoch (the
    publisher's epoch, which recover() takes from the writer lease); the per-table topics carry it too (their
    guard against a fenced writer's late records, issue #36 section 3)."""
    pub, fake, _ = publisher(encoding, per_table_topics=per_table)
    pub._table_topics.update({"p.s.shop.orders", "p.s.shop.items"})  # created already: no admin call here
    pub.epoch, pub._headers = 12, envelope.epoch_headers(12)  # what recover() sets from a lease of epoch 12
    rows = [ins(A, SA, {"id": 1, "v": "a"}), ins(B, SB, {"oid": 1, "n": 1, "q": 2})]
    for ev in [*tx("t1", rows, {"r": 1}), *tx("t2", [_as_batch(rows)], {"r": 2}), Heartbeat(1, {"r": 3}),
               SchemaChange(A, "ALTER TABLE shop.orders COMMENT 'x'", SA, 1000, {"r": 4})]:
        pub.publish(ev)
    stream = [h for (t, _, _), h in zip(fake.records, fake.headers, strict=True) if t == pub.topic]
    assert len(stream) == 12 and all(envelope.record_epoch(h) == 12 for h in stream), stream
    others = [h for (t, _, _), h in zip(fake.records, fake.headers, strict=True) if t != pub.topic]
    assert all(envelope.record_epoch(h) == 12 for h in others)
