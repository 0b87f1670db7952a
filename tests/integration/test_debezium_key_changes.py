"""Primary-key changes on a per-table topic the real daemon wrote from MariaDB and MySQL 9.7, replayed as Debezium's
consumers replay it: after compaction, and with every record delivered twice.

`cdc run` captures a workload with 20+ primary-key changes (single rows, several rows in one UPDATE
statement, a key moved and moved back, keys swapped through a free one in one transaction), updates
and deletes, with ``kafka.per_table_topics`` and ``kafka.debezium.schemas: true``. Each key change is
``d`` + tombstone for the old key and ``c`` for the new one. tansu has no log cleaner (it never
compacts), so the test applies Kafka's compaction rule itself: per partition, the last record of each
key, keys whose last record is a tombstone removed, offsets order kept. A consumer that upserts by key
and deletes on tombstones then holds exactly the source table, from the compacted topic and from the
whole topic delivered twice (at-least-once redelivery).
"""

from __future__ import annotations

import time
import uuid

import orjson
import pytest
import yaml
from confluent_kafka import Consumer, TopicPartition

from cdc.consumer import ChangeStreamConsumer
from cdc.debezium.record import NEWKEY, OLDKEY
from cdc.stream.envelope import changes_topic, table_topic
from tests.e2e.mysql_daemon import Daemon, wait_for, write_config
from tests.fixtures.services import capture_login

pytestmark = [pytest.mark.mysql, pytest.mark.kafka, pytest.mark.slow]


def _read_all(bootstrap: str, topic: str, quiet_s: float = 3.0, timeout_s: float = 60.0) -> list[tuple]:
    """Every record of every partition: (partition, offset, key, value, headers), each partition in order."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"t-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        parts = c.list_topics(topic, timeout=10).topics[topic].partitions
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        out, last, deadline = [], time.monotonic(), time.monotonic() + timeout_s
        while time.monotonic() - last < quiet_s:
            assert time.monotonic() < deadline, f"reading {topic} took over {timeout_s}s"
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            last = time.monotonic()
            out.append((m.partition(), m.offset(), m.key(), m.value(), dict(m.headers() or [])))
        return sorted(out, key=lambda r: (r[0], r[1]))
    finally:
        c.close()


def _compact(records: list[tuple]) -> list[tuple]:
    """Kafka's compaction rule: per partition, keep the last record of each key (in offset order); a key
    whose last record is a tombstone is gone."""
    last: dict[tuple, tuple] = {}
    for r in records:
        last[(r[0], r[2])] = r
    return sorted((r for r in last.values() if r[3] is not None), key=lambda r: (r[0], r[1]))


def _apply(records: list[tuple]) -> dict[int, tuple]:
    """The consumer: upsert ``after`` by key, delete on ``op: d`` and on tombstones."""
    table: dict[int, tuple] = {}
    for _, _, key, value, _ in records:
        k = orjson.loads(key)["payload"]["id"]
        if value is None:
            table.pop(k, None)
            continue
        payload = orjson.loads(value)["payload"]
        if payload["op"] == "d":
            table.pop(k, None)
        else:
            after = payload["after"]
            table[k] = (after["id"], after["v"], after["n"])
    return table


@pytest.fixture(scope="module", params=["mariadb", "mysql97"])
def captured(request, broker, tmp_path_factory):
    """The workload captured from the session primary of each flavour, as its capture user (MySQL 9.7: the
    documented one)."""
    server = request.getfixturevalue(f"{request.param}_primary")
    db, prefix = f"dbz_{uuid.uuid4().hex[:8]}", f"t-dbz-{uuid.uuid4().hex[:8]}"
    tmp = tmp_path_factory.mktemp("debezium-keys")
    q = server.query
    q(f"CREATE DATABASE `{db}`")
    q(f"CREATE TABLE `{db}`.k (id INT PRIMARY KEY, v VARCHAR(20), n INT)")
    config = write_config(tmp / "cdc.yaml", hosts=[server.address], tables=[f"{db}.*"],
                          bootstrap=broker.bootstrap, prefix=prefix,
                          user=capture_login(server))
    cfg = yaml.safe_load(config.read_text())
    cfg["kafka"].update(per_table_topics=True, debezium={"schemas": True})
    config.write_text(yaml.safe_dump(cfg))
    daemon = Daemon(config, tmp / "daemon.log").start()
    key_changes = 0
    try:
        wait_for(lambda: changes_topic(prefix, "s1") in broker.topics(), 60, "the changes topic", daemon=daemon)
        with ChangeStreamConsumer(broker.bootstrap, changes_topic(prefix, "s1"), start="beginning") as probe:
            wait_for(lambda: probe.poll(0.5) or probe.last_heartbeat_ms, 60, "the daemon's first record (the reader "
                     "streams from here on)", daemon=daemon)
        conn = server.connect()
        with conn.cursor() as cur:
            def run(sql: str, *args: object) -> int:
                cur.execute(sql, args or None)
                cur.execute("COMMIT")
                return cur.rowcount

            for i in range(1, 31):
                run(f"INSERT INTO `{db}`.k VALUES (%s, %s, %s)", i, f"v{i}", i)
            for i in range(1, 11):  # one key change per statement
                cur.execute(f"UPDATE `{db}`.k SET id = id + 100, n = n + 1 WHERE id = %s", (i,))
                cur.execute("COMMIT")
                key_changes += 1
            cur.execute(f"UPDATE `{db}`.k SET id = id + 200 WHERE id BETWEEN 11 AND 15")  # 5 rows, one event
            key_changes += cur.rowcount
            cur.execute("COMMIT")
            for i in (16, 17, 18):  # moved away and back
                run(f"UPDATE `{db}`.k SET id = 500 WHERE id = %s", i)
                run(f"UPDATE `{db}`.k SET id = %s, v = 'back' WHERE id = 500", i)
                key_changes += 2
            cur.execute(f"UPDATE `{db}`.k SET id = 999 WHERE id = 19")  # swap 19 and 20 in one transaction
            cur.execute(f"UPDATE `{db}`.k SET id = 19 WHERE id = 20")
            cur.execute(f"UPDATE `{db}`.k SET id = 20 WHERE id = 999")
            cur.execute("COMMIT")
            key_changes += 3
            run(f"UPDATE `{db}`.k SET v = 'plain' WHERE id IN (21, 22)")
            run(f"DELETE FROM `{db}`.k WHERE id IN (23, 101)")
            run(f"UPDATE `{db}`.k SET id = 23 WHERE id = 24")  # onto a deleted key
            key_changes += 1
            run(f"INSERT INTO `{db}`.k VALUES (9999, 'last', 0)")
        conn.close()
        rows = {r[0]: tuple(r) for r in q(f"SELECT id, v, n FROM `{db}`.k")}
        topic = table_topic(prefix, "s1", db, "k")
        wait_for(lambda: topic in broker.topics() and any(
            r[2] is not None and orjson.loads(r[2])["payload"]["id"] == 9999
            for r in _read_all(broker.bootstrap, topic, quiet_s=0.5)), 60, "the last insert on the table topic",
            daemon=daemon)
        records = _read_all(broker.bootstrap, topic)
    finally:
        rc = daemon.stop()
        q(f"DROP DATABASE IF EXISTS `{db}`")
    assert rc == 0, daemon.tail()
    return rows, records, key_changes


def test_key_changes_are_delete_tombstone_create_with_headers(captured):
    _, records, key_changes = captured
    assert key_changes >= 20
    moved = [r for r in records if NEWKEY in r[4]]
    creates = [r for r in records if OLDKEY in r[4]]
    assert len(creates) == key_changes and len(moved) == 2 * key_changes  # delete + tombstone per change
    for r in creates:
        payload = orjson.loads(r[3])["payload"]
        assert payload["op"] == "c" and payload["before"] is None
        assert orjson.loads(r[4][OLDKEY]) != orjson.loads(r[2])["payload"]
    ops = [None if r[3] is None else orjson.loads(r[3])["payload"]["op"] for r in records]
    assert ops.count("u") == 2  # the two non-key updates


def test_a_compacted_topic_replayed_holds_exactly_the_table(captured):
    rows, records, _ = captured
    compacted = _compact(records)
    assert len(compacted) < len(records)
    assert _apply(compacted) == rows
    # control: the old shape, one ``u`` keyed by the new key, leaves the old keys behind after compaction
    single = [(p, o, k, v, h) for p, o, k, v, h in records if OLDKEY in h or NEWKEY not in h]
    assert _apply(_compact(single)) != rows


def test_every_record_delivered_twice_still_holds_exactly_the_table(captured):
    rows, records, _ = captured
    twice = [r for rec in records for r in (rec, rec)]
    assert _apply(twice) == rows
    assert _apply(records + records) == rows  # the whole topic redelivered after the end
