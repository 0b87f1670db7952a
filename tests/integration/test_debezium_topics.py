"""Debezium-shaped topics through the real broker from a real MariaDB (and the Oracle LogMiner simulator):
per-table topics in Avro through a Schema Registry, the transaction topic and the schema-change topic.

The reader and publisher run in this process through the daemon's own ``run_source`` (not a ``cdc run``
subprocess): the Schema Registry is the client's in-memory one (``mock://``; no registry server can run
here), which only clients of the same process share. An ALTER TABLE ADD COLUMN in the middle of the
workload makes a second version of the value subject; consumers read with confluent-kafka's
``DeserializingConsumer`` + ``AvroDeserializer`` and fold the per-table topic into the table, which must
equal what MariaDB holds. The JSON variant reads the same topics as Kafka Connect JSON.
"""

from __future__ import annotations

import decimal
import threading
import time
import uuid
from datetime import date
from typing import Any

import avro.schema
import orjson
import pytest
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType
from confluent_kafka import OFFSET_BEGINNING, Consumer, DeserializingConsumer, TopicPartition
from confluent_kafka.schema_registry.avro import AvroDeserializer

from cdc.config.models import KafkaConfig
from cdc.contract import SourceContext
from cdc.debezium.schema_registry import registry_client
from cdc.metrics import SourceMetrics
from cdc.publish.publisher import Publisher
from cdc.runtime.daemon import run_source
from cdc.stream.envelope import table_topic
from readers.mysql.config import MySqlSourceConfig
from readers.mysql.reader import MySqlSource
from tests.fixtures.services import capture_login

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

EPOCH = date(1970, 1, 1)


def _read(broker, topic: str, count: int, deserializing: dict | None = None, timeout: float = 60) -> list[Any]:
    """The first ``count`` records of partition 0 of ``topic`` as (key, value); fails after ``timeout``."""
    conf = {"bootstrap.servers": broker.bootstrap, "group.id": f"t-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False, "log_level": 3}
    consumer = DeserializingConsumer({**conf, **deserializing}) if deserializing else Consumer(conf)
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < count:
            assert time.monotonic() < deadline, f"{topic}: {len(out)} of {count} records after {timeout}s"
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            out.append((msg.key(), msg.value()))
    finally:
        consumer.close()
    return out


def _read_until_idle(broker, topic: str, deserializing: dict, idle_s: float = 1.5, timeout: float = 60) -> list[Any]:
    """Every record of partition 0 of ``topic``: read until nothing came for ``idle_s`` (bounded by ``timeout``)."""
    consumer = DeserializingConsumer({"bootstrap.servers": broker.bootstrap, "group.id": f"t-{uuid.uuid4().hex[:8]}",
                                      "enable.auto.commit": False, "log_level": 3, **deserializing})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out: list[Any] = []
    start = last = time.monotonic()
    try:
        while time.monotonic() - last < idle_s:
            assert time.monotonic() - start < timeout, f"{topic}: still reading after {timeout}s"
            msg = consumer.poll(0.3)
            if msg is not None and not msg.error():
                out.append((msg.key(), msg.value()))
                last = time.monotonic()
    finally:
        consumer.close()
    return out


def _workload(db: str, conn) -> None:
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{db}`.items (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, "
                    "price DECIMAL(10,2), born DATE)")
        for i in range(6):
            cur.execute("BEGIN")
            for j in range(3):
                cur.execute(f"INSERT INTO `{db}`.items VALUES (%s, %s, %s, %s)",
                            (i * 3 + j, f"n{i}.{j}", f"{i}.{j}5", date(2020 + j, 1 + i, 28)))
            cur.execute("COMMIT")
        cur.execute("BEGIN")
        cur.execute(f"UPDATE `{db}`.items SET price = -12345678.90 WHERE id = 4")
        cur.execute(f"DELETE FROM `{db}`.items WHERE id = 5")
        cur.execute("COMMIT")
        cur.execute(f"ALTER TABLE `{db}`.items ADD COLUMN note VARCHAR(10)")
        cur.execute("BEGIN")
        cur.execute(f"INSERT INTO `{db}`.items VALUES (100, 'after', 1.00, NULL, 'new')")
        cur.execute(f"UPDATE `{db}`.items SET note = 'touched', born = NULL WHERE id = 7")
        cur.execute("COMMIT")
        cur.execute(f"UPDATE `{db}`.items SET id = 200 WHERE id = 0")  # a key change: delete + tombstone + create


def _fold(records: list[Any]) -> dict[Any, dict]:
    rows: dict[Any, dict] = {}
    for key, value in records:
        if value is None:  # tombstone
            continue
        if value["op"] == "d":
            rows.pop(key["id"], None)
        else:
            rows[key["id"]] = value["after"]
    return rows


@pytest.mark.mysql
@pytest.mark.parametrize("encoding", ["avro_registry", "json"])
def test_per_table_transaction_and_schema_change_topics_from_mysql(broker, mysql_source, tmp_source_db,
                                                                    topic_prefix, encoding):
    """On MariaDB and MySQL 9.7 (``mysql_source``; MySQL: the documented capture user)."""
    db, registry = tmp_source_db, {"url": f"mock://{uuid.uuid4().hex}"}
    avro_settings = {"encoding": "avro", "avro_framing": "schema_registry", "schema_registry": registry}
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=topic_prefix, per_table_topics=True,
                        debezium={"temporal": "adaptive_micros", "decimal": "precise", "transaction_topic": True,
                                  "schema_change_topic": True},
                        **(avro_settings if encoding == "avro_registry" else {}))
    metrics = SourceMetrics("s1")
    source = MySqlSource(MySqlSourceConfig(name="s1", hosts=[mysql_source.address], **_login(mysql_source),
                                           tables=[f"{db}.*"], heartbeat_interval_s=0.3, reconnect_backoff_s=0.2),
                         SourceContext(metrics=metrics))
    publisher = Publisher("s1", "mysql", kafka, metrics, heartbeat_min_interval_s=0)
    stop, failed = threading.Event(), []

    def pump() -> None:
        try:
            run_source(source, publisher, stop, metrics=metrics)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            failed.append(exc)

    worker = threading.Thread(target=pump, daemon=True)
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while publisher.next_sequence is None or publisher.last_resume is None:  # recovered and reading
            assert not failed and time.monotonic() < deadline, f"the source did not start: {failed}"
            time.sleep(0.1)
        conn = mysql_source.connect()
        try:
            _workload(db, conn)
        finally:
            conn.close()
        table = {r[0]: r for r in mysql_source.query(f"SELECT id, name, price, born, note FROM `{db}`.items")}
        deser = {}
        if encoding == "avro_registry":
            client = registry_client(registry)
            deser = {"key.deserializer": AvroDeserializer(client), "value.deserializer": AvroDeserializer(client)}
        else:
            deser = {"key.deserializer": lambda b, ctx: orjson.loads(b) if b is not None else None,
                     "value.deserializer": lambda b, ctx: orjson.loads(b) if b is not None else None}
        # 18 inserts, 1 update, delete + tombstone, 1 insert, 1 update, key change (3 records)
        items = _read(broker, table_topic(topic_prefix, "s1", db, "items"), 18 + 1 + 2 + 2 + 3, deser)
        # BEGIN/END of 6 + 1 + 1 + 1 + 1 transactions (the UPDATE and DELETE commit as one)
        txs = _read(broker, f"{topic_prefix}.s1.transaction", 2 * 9, deser)
        ddl = _read_until_idle(broker, f"{topic_prefix}.s1", deser)
    finally:
        stop.set()
        worker.join(30)
    assert not failed, failed
    assert not worker.is_alive(), "run_source did not stop"

    # the per-table topic folds into the table
    rows = _fold(items)
    assert sorted(rows) == sorted(table)
    for pk, (_, name, price, born, note) in table.items():
        after = rows[pk]
        got_price = after["price"] if encoding == "avro_registry" else _unscaled(after["price"])
        assert (after["name"], got_price, after.get("note")) == (name, price, note), pk
        assert after["born"] == (None if born is None else (born - EPOCH).days), pk
    assert all(isinstance(r["price"], decimal.Decimal) for r in rows.values() if encoding == "avro_registry")

    # transaction topic: BEGIN/END pairs keyed by id, END counts = the data records carrying that id
    assert [v["status"] for _, v in txs] == ["BEGIN", "END"] * 9
    assert all(k == {"id": v["id"]} for k, v in txs)
    per_tx: dict[str, int] = {}
    for _, value in items:
        if value is not None:
            per_tx[value["transaction"]["id"]] = per_tx.get(value["transaction"]["id"], 0) + 1
    ends = {v["id"]: v for _, v in txs if v["status"] == "END"}
    assert {t: e["event_count"] for t, e in ends.items()} == per_tx
    assert list(per_tx.values())[-1] == 2, "a key change is two data records (delete, create), as Debezium counts"
    assert all(e["data_collections"] == [{"data_collection": f"{db}.items", "event_count": e["event_count"]}]
               for e in ends.values())

    # schema-change topic, keyed by database: the CREATE, then the ALTER with the added column. (The reader
    # reads a DDL's definition from information_schema when it reaches the DDL: if the ALTER ran by then, the
    # CREATE shows the new column and the first rows' shape follows as an ALTER without DDL text.)
    assert ddl and all(k == {"databaseName": db} for k, _ in ddl)
    changes = [(v["ddl"], v["tableChanges"][0]) for _, v in ddl]
    assert changes[0][0].startswith("CREATE TABLE") and changes[0][1]["type"] == "CREATE"
    assert all(change["type"] == "ALTER" for _, change in changes[1:])
    alters = [change for text, change in changes if text is not None and text.startswith("ALTER TABLE")]
    assert len(alters) == 1 and changes[-1][1] == alters[0]
    cols = alters[0]["table"]["columns"]
    assert [c["name"] for c in cols] == ["id", "name", "price", "born", "note"]
    assert (cols[-1]["typeName"], cols[-1]["length"], cols[-1]["optional"]) == ("VARCHAR", 10, True)

    if encoding == "avro_registry":  # the ADD COLUMN is a second, BACKWARD-compatible version
        subject = f"{table_topic(topic_prefix, 's1', db, 'items')}-value"
        versions = sorted(client.get_versions(subject))
        assert versions == [1, 2]
        old, new = (avro.schema.parse(client.get_version(subject, v).schema.schema_str) for v in versions)
        result = ReaderWriterCompatibilityChecker().get_compatibility(new, old)
        assert result.compatibility is SchemaCompatibilityType.compatible, result.messages


@pytest.mark.mysql
@pytest.mark.parametrize("encoding", ["avro_registry", "json"])
def test_a_primary_key_change_reaches_the_per_table_keys_and_the_schema_change_topic(broker, mysql_source,
                                                                                     tmp_source_db, topic_prefix,
                                                                                     encoding):
    """``ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (a, b)`` between writes: the per-table topic's keys
    are ``{a}`` before and ``{a, b}`` after (Avro: a second version of the key subject), and the
    schema-change topic carries the statement with the new key columns. On MariaDB and MySQL 9.7."""
    db, registry = tmp_source_db, {"url": f"mock://{uuid.uuid4().hex}"}
    avro_settings = {"encoding": "avro", "avro_framing": "schema_registry", "schema_registry": registry}
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=topic_prefix, per_table_topics=True,
                        debezium={"schema_change_topic": True}, **(avro_settings if encoding == "avro_registry" else {}))
    metrics = SourceMetrics("s1")
    source = MySqlSource(MySqlSourceConfig(name="s1", hosts=[mysql_source.address], **_login(mysql_source),
                                           tables=[f"{db}.*"], heartbeat_interval_s=0.3, reconnect_backoff_s=0.2),
                         SourceContext(metrics=metrics))
    publisher = Publisher("s1", "mysql", kafka, metrics, heartbeat_min_interval_s=0)
    stop, failed = threading.Event(), []

    def pump() -> None:
        try:
            run_source(source, publisher, stop, metrics=metrics)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            failed.append(exc)

    worker = threading.Thread(target=pump, daemon=True)
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while publisher.next_sequence is None or publisher.last_resume is None:  # recovered and reading
            assert not failed and time.monotonic() < deadline, f"the source did not start: {failed}"
            time.sleep(0.1)
        q = mysql_source.query
        q(f"CREATE TABLE `{db}`.pairs (a INT NOT NULL, b INT NOT NULL, v VARCHAR(10), PRIMARY KEY (a))")
        q(f"INSERT INTO `{db}`.pairs VALUES (1, 1, 'x')")
        q(f"ALTER TABLE `{db}`.pairs DROP PRIMARY KEY, ADD PRIMARY KEY (a, b)")
        q(f"INSERT INTO `{db}`.pairs VALUES (1, 2, 'y')")
        q(f"UPDATE `{db}`.pairs SET v = 'z' WHERE a = 1 AND b = 1")
        if encoding == "avro_registry":
            client = registry_client(registry)
            deser = {"key.deserializer": AvroDeserializer(client), "value.deserializer": AvroDeserializer(client)}
        else:
            deser = {"key.deserializer": lambda b, ctx: orjson.loads(b) if b is not None else None,
                     "value.deserializer": lambda b, ctx: orjson.loads(b) if b is not None else None}
        topic = table_topic(topic_prefix, "s1", db, "pairs")
        rows = _read(broker, topic, 3, deser)
        ddl = _read_until_idle(broker, f"{topic_prefix}.s1", deser)
    finally:
        stop.set()
        worker.join(30)
    assert not failed, failed
    assert [(k, v["op"], v["after"]["v"]) for k, v in rows] == [
        ({"a": 1}, "c", "x"), ({"a": 1, "b": 2}, "c", "y"), ({"a": 1, "b": 1}, "u", "z")]
    alters = [(v["ddl"], v["tableChanges"][0]) for _, v in ddl if (v["ddl"] or "").startswith("ALTER TABLE")]
    assert len(alters) == 1, [v["ddl"] for _, v in ddl]
    text, change = alters[0]
    assert "ADD PRIMARY KEY (a, b)" in text and change["type"] == "ALTER"
    assert change["table"]["primaryKeyColumnNames"] == ["a", "b"]
    if encoding == "avro_registry":  # the key subject has a version per key shape
        versions = sorted(client.get_versions(f"{topic}-key"))
        assert len(versions) == 2, versions
        old, new = (orjson.loads(client.get_version(f"{topic}-key", v).schema.schema_str) for v in versions)
        assert [f["name"] for f in old["fields"]] == ["a"] and [f["name"] for f in new["fields"]] == ["a", "b"]


def _login(server) -> dict[str, str]:
    """The user a test captures as: MySQL 9.7's documented capture user, else cdc/cdc."""
    user, password = capture_login(server)
    return {"user": user, "password": password}


def _unscaled(text: str | None) -> decimal.Decimal | None:
    """A JSON Decimal (base64 of the unscaled two's complement, scale 2) back to its value."""
    import base64

    if text is None:
        return None
    return decimal.Decimal(int.from_bytes(base64.b64decode(text), "big", signed=True)).scaleb(-2)


@pytest.mark.oracle
def test_oracle_transaction_and_schema_change_topics_in_avro(broker, topic_prefix, tmp_path):
    """The LogMiner simulator's workload (no Oracle server runs here) through the publisher: the transaction
    topic mirrors the ordered stream's transactions, END counts the per-table records, and every captured table
    has its CREATE on the schema-change topic with the stream's columns; all Avro through the registry."""
    from readers.oracle.sim.demo import make_source, pump
    from tests.integration.stream_check import read_stream

    registry = {"url": f"mock://{uuid.uuid4().hex}"}
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=topic_prefix, per_table_topics=True,
                        encoding="avro", avro_framing="schema_registry", schema_registry=registry,
                        debezium={"transaction_topic": True, "schema_change_topic": True})
    pub = Publisher("ora", "oracle", kafka, SourceMetrics("ora"))
    pub.recover()
    opts = "seed=5,transactions=30,lanes=3,threads=2,rows_max=4,rollback_rate=0.2"
    stats = pump(make_source("ora", opts, str(tmp_path), SourceMetrics("ora"), sessions=2), pub, None)
    pub.close()
    assert stats["transactions"] > 0

    client = registry_client(registry)
    deser = {"key.deserializer": AvroDeserializer(client), "value.deserializer": AvroDeserializer(client)}
    stream = read_stream(broker.bootstrap, pub.topic, "avro")
    txs = _read(broker, f"{topic_prefix}.ora.transaction", 2 * len(stream.transactions), deser)
    assert [(v["status"], v["id"]) for _, v in txs] == [(s, txid) for txid, _, _ in stream.transactions
                                                        for s in ("BEGIN", "END")]
    tables = {f"{r['source']['db']}.{r['source']['table']}" for _, rows, _ in stream.transactions for r in rows}
    per_tx: dict[str, dict[str, int]] = {}
    for name in tables:
        db, table = name.split(".")
        for _, value in _read_until_idle(broker, table_topic(topic_prefix, "ora", db, table), deser):
            if value is not None:
                counts = per_tx.setdefault(value["transaction"]["id"], {})
                counts[name] = counts.get(name, 0) + 1
                assert value["source"]["connector"] == "oracle" and value["source"]["txId"] is not None
    ends = {v["id"]: {d["data_collection"]: d["event_count"] for d in v["data_collections"]}
            for _, v in txs if v["status"] == "END"}
    assert ends == per_tx

    ddl = _read_until_idle(broker, f"{topic_prefix}.ora", deser)
    firsts = {}
    for key, value in ddl:
        [change] = value["tableChanges"]
        assert key == {"databaseName": "ora"} and value["source"]["connector"] == "oracle"
        firsts.setdefault(change["id"], change)
    schemas = {s["table"]: s["schema"] for s in stream.schemas if s["schema"] is not None}
    assert {f'"{t.split(".")[0]}"."{t.split(".")[1]}"' for t in tables} <= set(firsts)
    for name in tables:
        db, table = name.split(".")
        first = firsts[f'"{db}"."{table}"']
        assert first["type"] == "CREATE"
        assert [c["name"] for c in first["table"]["columns"]] == [c["name"] for c in schemas[name]["columns"]]
        assert first["table"]["primaryKeyColumnNames"] == schemas[name]["primary_key"]


def test_cdc_tail_prints_a_registry_avro_per_table_topic(broker, topic_prefix, tmp_path, capsysbinary):
    """``cdc tail --table-topic`` decodes registry-framed Avro with confluent-kafka's AvroDeserializer. It runs
    in this process: the ``mock://`` registry the records were registered in exists only here."""
    from confluent_kafka import Producer

    from cdc.cli import main
    from cdc.debezium.schema_registry import RegistryAvro

    url, topic = f"mock://{uuid.uuid4().hex}", table_topic(topic_prefix, "s1", "d", "t")
    broker.create_topic(topic)
    key_schema = {"type": "struct", "name": f"{topic}.Key", "optional": False,
                  "fields": [{"field": "id", "type": "int32", "optional": False}]}
    value_schema = {"type": "struct", "name": f"{topic}.Value", "optional": False, "fields": [
        {"field": "id", "type": "int32", "optional": False},
        {"field": "price", "type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
         "version": 1, "parameters": {"scale": "2", "connect.decimal.precision": "10"}}]}
    ser = RegistryAvro({"url": url})
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(topic, ser.encode(topic, "value", value_schema, {"id": 1, "price": "MDk="}),  # 123.45
                     ser.encode(topic, "key", key_schema, {"id": 1}))
    producer.produce(topic, None, ser.encode(topic, "key", key_schema, {"id": 1}))  # a tombstone
    assert producer.flush(30) == 0
    cfg = tmp_path / "cdc.yaml"
    cfg.write_text(f"sources: [{{name: s1, kind: mysql, hosts: ['127.0.0.1:1'], user: u, password: p, "
                   f"tables: ['d.*']}}]\nkafka: {{bootstrap_servers: '{broker.bootstrap}', topic_prefix: "
                   f"'{topic_prefix}', encoding: avro, avro_framing: schema_registry, schema_registry: {{url: '{url}'}}}}\n")
    rc = main(["tail", "--config", str(cfg), "--source", "s1", "--table-topic", "d.t", "--from-beginning",
               "--idle-exit", "1"])
    out = capsysbinary.readouterr()
    assert rc == 0, out.err.decode()
    lines = [orjson.loads(line) for line in out.out.splitlines()]
    assert [(ln["key"], ln["value"]) for ln in lines] == [({"id": 1}, {"id": 1, "price": "123.45"}), ({"id": 1}, None)]
