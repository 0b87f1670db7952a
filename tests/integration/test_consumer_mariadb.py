"""cdc.consumer on a stream the real daemon wrote from MariaDB: the fold of what it hands out equals the tables.

One `cdc run` captures a random workload (inserts, updates, deletes, rolled-back
transactions, a multi-row UPDATE, an ALTER TABLE in the middle); each Kafka client
then reads the stream with the library and rebuilds both tables from the row
changes. Rolled-back rows never appear, the ALTER arrives as a SchemaChange item
between transactions, and transactions come in GTID order.
"""

from __future__ import annotations

import random
import uuid

import pytest

from cdc.consumer import ChangeStreamConsumer, SchemaChange, Transaction
from cdc.stream.envelope import changes_topic
from tests.e2e.mysql_daemon import Daemon, wait_for, write_config

pytestmark = [pytest.mark.mysql, pytest.mark.kafka, pytest.mark.slow, pytest.mark.filterwarnings("ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning")]


@pytest.fixture(scope="module")
def captured(mariadb_primary, broker, tmp_path_factory):
    """(topic, {table: {id: row}} as MariaDB holds them, rolled-back ids)."""
    db, prefix = f"cons_{uuid.uuid4().hex[:8]}", f"t-consumer-{uuid.uuid4().hex[:8]}"
    tmp = tmp_path_factory.mktemp("consumer-mariadb")
    q = mariadb_primary.query
    q(f"CREATE DATABASE `{db}`")
    q(f"CREATE TABLE `{db}`.a (id INT PRIMARY KEY, v VARCHAR(20), n INT)")
    q(f"CREATE TABLE `{db}`.b (id INT PRIMARY KEY, v VARCHAR(20))")
    topic = changes_topic(prefix, "s1")
    daemon = Daemon(write_config(tmp / "cdc.yaml", hosts=[mariadb_primary.address], tables=[f"{db}.*"],
                                 bootstrap=broker.bootstrap, prefix=prefix), tmp / "daemon.log").start()
    rng, rolled_back = random.Random(16), []
    try:
        wait_for(lambda: topic in broker.topics(), 60, f"topic {topic}", daemon=daemon)
        with ChangeStreamConsumer(broker.bootstrap, topic, start="beginning") as probe:
            wait_for(lambda: probe.poll(0.5) or probe.last_heartbeat_ms, 60, "the daemon's first record",
                     daemon=daemon)
        conn = mariadb_primary.connect()
        with conn.cursor() as cur:
            for i in range(60):
                cur.execute("BEGIN")
                for j in range(rng.randint(1, 4)):
                    k, table = rng.randrange(25), rng.choice("ab")
                    cols = "(id, v, n) VALUES (%s, %s, %s)" if table == "a" else "(id, v) VALUES (%s, %s)"
                    args = (k, f"{i}.{j}", i) if table == "a" else (k, f"{i}.{j}")
                    if rng.random() < 0.25:
                        cur.execute(f"DELETE FROM `{db}`.{table} WHERE id = %s", (k,))
                    else:
                        cur.execute(f"REPLACE INTO `{db}`.{table} {cols}", args)
                if i % 7 == 6:
                    cur.execute(f"INSERT INTO `{db}`.b (id, v) VALUES (%s, 'rolled back')", (1000 + i,))
                    cur.execute("ROLLBACK")
                    rolled_back.append(1000 + i)
                else:
                    cur.execute("COMMIT")
                if i == 30:
                    cur.execute(f"ALTER TABLE `{db}`.a ADD COLUMN extra VARCHAR(10) DEFAULT 'x'")
                    cur.execute(f"UPDATE `{db}`.a SET n = n + 1")  # one statement, many rows
            cur.execute(f"INSERT INTO `{db}`.b (id, v) VALUES (999, 'last')")
            cur.execute("COMMIT")
        conn.close()
        tables = {t: {row[0]: row for row in q(f"SELECT * FROM `{db}`.{t}")} for t in "ab"}
        with ChangeStreamConsumer(broker.bootstrap, topic, start="beginning") as probe:
            wait_for(lambda: any(isinstance(it, Transaction) and any(c.key == {"id": 999} for c in it.changes)
                                 for it in iter(lambda: probe.poll(0.5), None)), 60, "the last transaction",
                     daemon=daemon)
    finally:
        rc = daemon.stop()
        q(f"DROP DATABASE IF EXISTS `{db}`")
    assert rc == 0, daemon.tail()
    return db, topic, tables, rolled_back


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_the_fold_of_the_consumed_stream_equals_the_mariadb_tables(broker, captured, client):
    db, topic, tables, rolled_back = captured
    rebuilt: dict[str, dict] = {"a": {}, "b": {}}
    gtids, schema_items = [], []
    with ChangeStreamConsumer(broker.bootstrap, topic, client=client, start="beginning") as c:
        for item in c.items(2.0):
            if isinstance(item, SchemaChange):
                schema_items.append(item)
                continue
            gtids.append(int(item.id.rsplit("-", 1)[1]))
            for ch in item.changes:
                table = ch.table.split(".", 1)[1]
                assert ch.table.startswith(f"{db}.") and ch.key == {"id": ch.row["id"]}
                if ch.op == "d":
                    rebuilt[table].pop(ch.key["id"], None)
                else:
                    rebuilt[table][ch.key["id"]] = tuple(ch.after.values())
        assert c.stats["duplicates"] == 0 and c.stats["aborted"] == 0
    assert rebuilt == tables
    assert not set(rolled_back) & set(rebuilt["b"])
    assert gtids == sorted(gtids) and len(gtids) >= 50
    alter = [s for s in schema_items if s.ddl and "ADD COLUMN" in s.ddl.upper()]
    assert len(alter) == 1 and alter[0].table == f"{db}.a"
    assert [col["name"] for col in alter[0].schema["columns"]] == ["id", "v", "n", "extra"]
