"""Reading a change stream back and checking the contract, as a consumer would."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from cdc.publish.recovery import make_consumer, read_range, watermarks
from cdc.stream.envelope import record_epoch
from cdc.stream.serde import get_serdes
from cdc.stream.stream_structure import StreamStructure
from streaming.stream.records import StreamRecord, to_row


# a test reads every record below the high watermark: a broker slow to serve them on a busy host (tansu reading
# its storage back after a restart) is waited for, not taken as the end of the stream (read_range's default 10 s)
STALL_S = 60.0


@dataclass
class Stream:
    transactions: list[tuple[str, list[dict[str, Any]], dict[str, Any]]] = field(default_factory=list)  # id, rows, END
    aborted: list[str] = field(default_factory=list)
    schemas: list[dict[str, Any]] = field(default_factory=list)
    heartbeats: list[dict[str, Any]] = field(default_factory=list)
    records: int = 0
    duplicates: int = 0
    epochs: list[int] = field(default_factory=list)  # the writer epoch of each record taken, in stream order


def read_stream(bootstrap: str, topic: str, encoding: str = "json") -> Stream:
    """Decode the whole stream as a consumer does (records at or below the last sequence are
    dropped as duplicates), asserting gapless sequences and marker structure, and holding every record
    to the structure rules with its writer epoch (cdc.stream.stream_structure: raises StreamCorrupt)."""
    ks, vs = get_serdes(encoding)
    out = Stream()
    last_seq = 0
    open_tx: tuple[str, list] | None = None
    check = StreamStructure(topic)
    for offset, key, value, headers in _records(bootstrap, topic, ks, vs):
        seq = value["sequence"]
        if seq <= last_seq:
            out.duplicates += 1  # a retried batch appended again: a consumer drops it
            continue
        out.records += 1
        assert seq == last_seq + 1, f"sequence gap at offset {offset}: {seq} after {last_seq} (lost records)"
        last_seq = seq
        epoch = record_epoch(headers)
        out.epochs.append(epoch)
        check.record(offset, seq, key, value, epoch)
        status = value.get("status")
        if status is None:
            assert open_tx is not None, f"data record outside a transaction at offset {offset}"
            assert key["table"] == f"{value['source']['db']}.{value['source']['table']}"
            assert value["transaction"]["id"] == open_tx[0]
            open_tx[1].append(value)
        elif status == "BEGIN":
            assert open_tx is None, f"BEGIN inside {open_tx and open_tx[0]} at offset {offset}"
            open_tx = (value["id"], [])
        elif status == "END":
            assert open_tx is not None and open_tx[0] == value["id"], f"END without BEGIN at offset {offset}"
            assert value["event_count"] == len(open_tx[1])
            per_table: dict[str, int] = {}
            for r in open_tx[1]:
                name = f"{r['source']['db']}.{r['source']['table']}"
                per_table[name] = per_table.get(name, 0) + 1
            assert {d["data_collection"]: d["event_count"] for d in value["data_collections"]} == per_table
            out.transactions.append((value["id"], open_tx[1], value))
            open_tx = None
        elif status == "ABORTED":
            assert open_tx is not None and open_tx[0] == value["id"], f"ABORTED without BEGIN at offset {offset}"
            out.aborted.append(value["id"])
            open_tx = None
        elif status == "SCHEMA":
            if value["resume"] is not None:
                assert open_tx is None, f"checkpoint SCHEMA inside a transaction at offset {offset}"
            out.schemas.append(value)
        elif status == "HEARTBEAT":
            assert open_tx is None
            out.heartbeats.append(value)
        else:
            raise AssertionError(f"unknown status {status!r} at offset {offset}")
    return out


def _records(bootstrap: str, topic: str, ks: Any, vs: Any) -> Any:
    """(offset, key, value, headers) of every record of partition 0, decoded."""
    consumer = make_consumer(bootstrap)
    try:
        low, high = watermarks(consumer, topic)
        for m in read_range(consumer, topic, low, None, reported_high=high, stall_s=STALL_S):
            k, v = m.key(), m.value()
            yield m.offset(), None if k is None else ks.decode(k), None if v is None else vs.decode(v), m.headers()
    finally:
        consumer.close()


def oracle_publisher(broker: Any, prefix: str) -> Any:
    """The publisher of the Oracle source ``ora`` used by the Oracle stream tests."""
    from cdc.config.models import KafkaConfig
    from cdc.metrics import SourceMetrics
    from cdc.publish.publisher import Publisher

    return Publisher("ora", "oracle", KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=prefix),
                     SourceMetrics("ora"))


def publish_then_crash(src: Any, pub: Any, after_commits: int) -> None:
    """Publish ``src``'s events until the first row change after ``after_commits`` commits, then stop as a
    crash would: the open transaction has its BEGIN and some rows in the stream but no END."""
    from cdc.stream.events import Change, Commit, Heartbeat, expand

    src.start(None)
    commits = 0
    try:
        for ev in expand(src.events()):  # a ChangeBatch as its Changes
            if isinstance(ev, Heartbeat):
                continue
            pub.publish(ev)
            commits += isinstance(ev, Commit)
            if commits >= after_commits and isinstance(ev, Change):
                break
    finally:
        src.close()
    pub.flush()
    pub.close()


def topic_records(bootstrap: str, prefix: str) -> dict[str, list[bytes]]:
    """Every record of every topic named ``prefix...``: its key, value and header bytes, joined (a scan for
    values that must not be there)."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient

    meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=20)
    out: dict[str, list[bytes]] = {}
    for name, topic in meta.topics.items():
        if not name.startswith(prefix):
            continue
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"scan-{time.time_ns()}",
                      "enable.auto.commit": False, "log_level": 3})
        try:
            parts = [TopicPartition(name, p, 0) for p in topic.partitions]
            ends = {p.partition: c.get_watermark_offsets(p, timeout=10)[1] for p in parts}
            c.assign(parts)
            got, deadline, last = [], time.monotonic() + 60, {p: -1 for p in ends}
            while any(last[p] < ends[p] - 1 for p in ends) and time.monotonic() < deadline:
                for m in c.consume(1000, 1.0):
                    if m.error() is None:
                        last[m.partition()] = m.offset()
                        got.append(b"|".join([m.key() or b"", m.value() or b""]
                                             + [v or b"" for _, v in (m.headers() or [])]))
            assert all(last[p] >= ends[p] - 1 for p in ends), f"{name}: read {last} of {ends}"
            out[name] = got
        finally:
            c.close()
    return out


class _Json:
    def decode(self, b: bytes) -> Any:
        return orjson.loads(b)


def stream_records(bootstrap: str, topic: str) -> list[StreamRecord]:
    """Every record of ``topic`` as the apply reads it (streaming.stream.records), JSON keys and values."""
    consumer = make_consumer(bootstrap)
    try:
        low, high = watermarks(consumer, topic)
        return [StreamRecord(*to_row(0, m.offset(), m.key(), m.value(), _Json(), _Json()))
                for m in read_range(consumer, topic, low, None, reported_high=high, stall_s=STALL_S)]
    finally:
        consumer.close()
