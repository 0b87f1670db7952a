"""Publisher micro-benchmark (not a test): ``python -m cdc.bench.produce --bootstrap HOST:PORT``.

Prints one JSON line comparing, on the same broker in the same run:

- ``raw_produce_per_s``: confluent-kafka produce of pre-serialized records
  (the same bytes the publisher would write), with the publisher's producer
  settings: the ceiling for any Python publisher;
- ``publisher_per_s``: Publisher.publish() of Change events (envelope
  building + encoding + produce + sequence/counters), acknowledged (flush);
- ``encode_only_per_s``: envelope building + encoding without producing;
- ``publisher_thread_cpu_us_per_row``: CPU time of the publishing thread per
  row (librdkafka's own threads excluded): the figure to watch on a busy box;
- with ``--big-txn N``: one transaction of N rows, peak RSS before/after.

Start a broker with ``cdc dev up`` or tansu yourself.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import time
import uuid

from cdc.config.models import KafkaConfig
from cdc.metrics import SourceMetrics
from cdc.publish.producer import OrderedProducer
from cdc.publish.publisher import Publisher
from cdc.publish.topics import ensure_topic
from cdc.stream.envelope import data_record
from cdc.stream.events import Begin, Change, Column, Commit, TableId, TableSchema
from cdc.stream.serde import get_serdes

TABLE = TableId("bench", "orders")
SCHEMA = TableSchema(TABLE, (Column("id", "bigint"), Column("customer", "varchar(40)"), Column("amount", "decimal(10,2)"),
                             Column("status", "varchar(10)"), Column("created", "datetime")), ("id",))


def changes(n: int, tx_rows: int):
    """Begin/Change*/Commit events: ``n`` rows in transactions of ``tx_rows``."""
    k = 0
    while k < n:
        txid = f"tx-{k}"
        yield Begin(txid, 1_700_000_000_000)
        for i in range(k, min(n, k + tx_rows)):
            yield Change(TABLE, "c", None, {"id": i, "customer": f"customer-{i % 977}", "amount": "123.45",
                                            "status": "NEW", "created": "2024-05-01T12:00:00"},
                         {"scn": 1000 + i, "commit_scn": 2000 + k, "txId": txid}, SCHEMA)
        k = min(n, k + tx_rows)
        yield Commit(txid, 1_700_000_000_000, {"scn": 2000 + k}, {"commit_scn": 2000 + k})


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(bootstrap: str, rows: int, tx_rows: int, encoding: str, big_txn: int) -> dict:
    prefix = f"mb-{uuid.uuid4().hex[:8]}"
    kafka = KafkaConfig(bootstrap_servers=bootstrap, topic_prefix=prefix, encoding=encoding)
    kser, vser = get_serdes(encoding)
    events = list(changes(rows, tx_rows))
    gc.collect()
    gc.freeze()  # the pre-built events are not garbage: keep the collector from rescanning them
    result: dict = {"rows": rows, "tx_rows": tx_rows, "encoding": encoding}

    # encoding only (cdc.stream.envelope.data_record + serde), no Kafka, nothing kept
    rows_only = [e for e in events if type(e) is Change]
    t0 = time.perf_counter()
    for i, ev in enumerate(rows_only):
        k, v = data_record(ev, sequence=i, source_name="s", connector="oracle", txid="t", commit_ts_ms=1,
                           total_order=i, data_collection_order=i, now_ms=1)
        kser.encode(k)
        vser.encode(v)
    result["encode_only_per_s"] = round(len(rows_only) / (time.perf_counter() - t0))
    pre = []
    for i, ev in enumerate(rows_only):
        k, v = data_record(ev, sequence=i, source_name="s", connector="oracle", txid="t", commit_ts_ms=1,
                           total_order=i, data_collection_order=i, now_ms=1)
        pre.append((kser.encode(k), vser.encode(v)))
    del rows_only

    # raw produce of the pre-serialized records
    topic = f"{prefix}.raw"
    ensure_topic(bootstrap, topic)
    prod = OrderedProducer(bootstrap)
    t0 = time.perf_counter()
    for kb, vb in pre:
        prod.produce(topic, vb, kb)
    prod.flush(120)
    result["raw_produce_per_s"] = round(len(pre) / (time.perf_counter() - t0))
    del pre

    # the publisher
    pub = Publisher("s", "oracle", kafka, SourceMetrics("s"))
    pub.recover()
    t0, c0 = time.perf_counter(), time.thread_time()
    for ev in events:
        pub.publish(ev)
    c1 = time.thread_time()
    pub.flush(120)
    result["publisher_per_s"] = round(rows / (time.perf_counter() - t0))
    # CPU of the publishing thread alone: the per-row Python cost, independent of machine load
    result["publisher_thread_cpu_us_per_row"] = round((c1 - c0) / rows * 1e6, 2)
    result["publisher_vs_raw"] = round(result["publisher_per_s"] / result["raw_produce_per_s"], 3)
    result["publisher_us_per_row"] = round(1e6 / result["publisher_per_s"], 2)
    del events

    if big_txn:
        before = rss_mb()
        t0 = time.perf_counter()
        for ev in changes(big_txn, big_txn):
            pub.publish(ev)
        pub.flush(300)
        result["big_txn_rows"] = big_txn
        result["big_txn_per_s"] = round(big_txn / (time.perf_counter() - t0))
        result["peak_rss_mb_before_big_txn"] = round(before)
        result["peak_rss_mb_after_big_txn"] = round(rss_mb())
    pub.close()
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--tx-rows", type=int, default=10)
    p.add_argument("--encoding", default="json", choices=["json", "avro"])
    p.add_argument("--big-txn", type=int, default=0)
    a = p.parse_args()
    print(json.dumps(run(a.bootstrap, a.rows, a.tx_rows, a.encoding, a.big_txn)))


if __name__ == "__main__":
    main()
