"""The publisher and the daemon runtime against the real broker (in-process)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import fastavro
import orjson
import pytest

from cdc.config.models import KafkaConfig
from cdc.errors import DecodeError
from cdc.metrics import SourceMetrics, process_registry
from cdc.publish.publisher import Publisher
from cdc.publish.recovery import read_records
from cdc.runtime.daemon import Daemon, SourceSpec
from cdc.stream.envelope import changes_topic, table_topic
from cdc.stream.events import Begin, Change, Commit
from cdc.stream.serde import get_serdes, get_table_key_serde
from tests.fixtures.http import http_get
from tests.integration.scripted_source import SCHEMAS, T1, ScriptedSource
from tests.integration.stream_check import read_stream

pytestmark = pytest.mark.kafka
ROOT = Path(__file__).resolve().parents[2]


def _publisher(broker, prefix: str, **kafka) -> Publisher:
    cfg = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=prefix, **kafka)
    return Publisher("src", "mysql", cfg, SourceMetrics("src"), heartbeat_min_interval_s=0)


def _tx(pub: Publisher, k: int, changes: list[Change]) -> None:
    pub.publish(Begin(f"tx-{k}", 1000 + k))
    for ch in changes:
        pub.publish(ch)
    pub.publish(Commit(f"tx-{k}", 1000 + k, {"step": k}, {"step": k}))


def _row(i: int, v: str = "a") -> dict:
    return {"id": i, "v": v, "n": i}


def test_per_table_topics_carry_debezium_envelopes_and_tombstones(broker, topic_prefix):
    pub = _publisher(broker, topic_prefix, per_table_topics=True)
    assert pub.recover() is None
    s = SCHEMAS[T1]
    _tx(pub, 1, [Change(T1, "c", None, _row(1), {}, s), Change(T1, "c", None, _row(2), {}, s)])
    _tx(pub, 2, [Change(T1, "u", _row(1), _row(1, "b"), {}, s), Change(T1, "d", _row(2), None, {}, s)])
    pub.flush()
    pub.close()
    ks, vs = get_table_key_serde("json"), get_serdes("json")[1]
    got = [(k, None if v is None else (v["op"], v["after"])) for _, k, v in
           read_records(broker.bootstrap, table_topic(topic_prefix, "src", "d", "t1"), ks, vs)]
    assert got == [({"id": 1}, ("c", _row(1))), ({"id": 2}, ("c", _row(2))), ({"id": 1}, ("u", _row(1, "b"))),
                   ({"id": 2}, ("d", None)), ({"id": 2}, None)]


def test_dead_letter_topic_receives_the_undecodable_change(broker, topic_prefix):
    dlq = f"{topic_prefix}.dlq"
    pub = _publisher(broker, topic_prefix, dead_letter_topic=dlq)
    pub.recover()
    pub.publish(Begin("tx-1", 1))
    pub.dead_letter(DecodeError("unknown column type", table="d.t1", column="g", position="b.000001:42",
                                value="geometry"), b"\x00\xff")
    pub.publish(Change(T1, "c", None, _row(1), {}, SCHEMAS[T1]))
    pub.publish(Commit("tx-1", 1, {"step": 1}, {}))
    pub.flush()
    pub.close()
    [(_, key, value)] = list(read_records(broker.bootstrap, dlq, get_serdes("json")[0], get_serdes("json")[1]))
    assert key == {"source": "src", "table": "d.t1"}
    assert value["error"] == "DecodeError" and value["fields"]["column"] == "g"
    assert value["fields"]["position"] == "b.000001:42" and value["raw"] == "AP8=" and value["txid"] == "tx-1"
    stream = read_stream(broker.bootstrap, changes_topic(topic_prefix, "src"))
    assert [(t, len(rows)) for t, rows, _ in stream.transactions] == [("tx-1", 1)]


def test_avro_stream_decodes_with_the_schemas_from_the_schemas_topic(broker, topic_prefix):
    pub = _publisher(broker, topic_prefix, encoding="avro")
    pub.recover()
    _tx(pub, 1, [Change(T1, "c", None, _row(1), {"gtid": "u:1"}, SCHEMAS[T1])])
    pub.flush()
    pub.close()
    docs = [v for _, _, v in read_records(broker.bootstrap, f"{topic_prefix}._schemas",
                                          get_serdes("json")[0], get_serdes("json")[1])]
    by_name = {d["name"]: d for d in docs}
    assert set(by_name) == {"change_key", "change_value", "table_key"}
    # a consumer with no registry: strip the Confluent header, decode with the published schema
    schema = fastavro.parse_schema(json.loads(by_name["change_value"]["schema"]))
    raw = [v for _, _, v in read_records(broker.bootstrap, changes_topic(topic_prefix, "src"),
                                         _Raw(), _Raw())]
    assert int.from_bytes(raw[0][1:5], "big") == by_name["change_value"]["id"]
    first = fastavro.schemaless_reader(io.BytesIO(raw[0][5:]), schema)
    assert first["status"] == "BEGIN" and first["id"] == "tx-1"
    stream = read_stream(broker.bootstrap, changes_topic(topic_prefix, "src"), "avro")
    assert stream.transactions[0][1][0]["after"] == _row(1)


class _Raw:
    def decode(self, data: bytes) -> bytes:
        return data


def test_recovery_walks_back_past_a_large_cut_off_transaction(broker, topic_prefix):
    pub = _publisher(broker, topic_prefix)
    pub.recover()
    _tx(pub, 1, [Change(T1, "c", None, _row(1), {}, SCHEMAS[T1])])
    pub.publish(Begin("tx-2", 2))
    for i in range(9000):  # more than the tail window several times over
        pub.publish(Change(T1, "c", None, _row(i), {}, SCHEMAS[T1]))
    pub.flush()
    last = pub.next_sequence - 1
    pub.close()  # "crash": no END

    again = _publisher(broker, topic_prefix)
    assert again.recover() == {"step": 1}
    assert again.next_sequence == last + 2  # the ABORTED marker took last + 1
    _tx(again, 2, [Change(T1, "c", None, _row(5), {}, SCHEMAS[T1])])
    again.flush()
    again.close()
    stream = read_stream(broker.bootstrap, changes_topic(topic_prefix, "src"))
    assert stream.aborted == ["tx-2"]
    assert [(t, len(r)) for t, r, _ in stream.transactions] == [("tx-1", 1), ("tx-2", 1)]


def test_daemon_serves_readiness_and_metrics_and_stops_on_request(broker, topic_prefix):
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=topic_prefix)
    spec = SourceSpec("scripted", "scripted", lambda ctx: ScriptedSource(100_000, metrics=ctx.metrics, pace_s=0.005))
    daemon = Daemon([spec], kafka, process_registry(), metrics_port=0)
    status: list[int] = []
    t = threading.Thread(target=lambda: status.append(daemon.run()))
    t.start()
    try:
        base = f"http://127.0.0.1:{daemon.health.port}"
        deadline = time.monotonic() + 20
        while http_get(base + "/readyz")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert http_get(base + "/readyz")[0] == 200
        assert http_get(base + "/healthz")[0] == 200
        body = http_get(base + "/metrics")[1].decode()
        assert 'cdc_source_transactions_published_total{source="scripted"}' in body
        assert "process_resident_memory_bytes" in body
    finally:
        daemon.request_stop()
        t.join(30)
    assert status == [0]
    stream = read_stream(broker.bootstrap, changes_topic(topic_prefix, "scripted"))
    assert stream.transactions and not stream.aborted


class _FailingSource(ScriptedSource):
    def changes_of(self, k):
        if k == 4:
            raise DecodeError("cannot decode row", table="d.t1", column="v", position={"step": 4}, value="\\xff")
        return super().changes_of(k)


def test_daemon_exits_non_zero_naming_source_and_position_on_a_terminal_error(broker, topic_prefix):
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=topic_prefix)
    spec = SourceSpec("scripted", "scripted", lambda ctx: _FailingSource(10, metrics=ctx.metrics))
    daemon = Daemon([spec], kafka, process_registry(), metrics_port=None)
    assert daemon.run() == 2
    assert "source scripted stopped at position {'step': 3}" in daemon.failure
    assert "DecodeError" in daemon.failure and "column='v'" in daemon.failure


def test_cdc_tail_prints_decoded_records(broker, topic_prefix, tmp_path):
    pub = _publisher(broker, topic_prefix)
    pub.recover()
    _tx(pub, 1, [Change(T1, "c", None, _row(1), {}, SCHEMAS[T1])])
    pub.flush()
    pub.close()
    cfg = tmp_path / "cdc.yaml"
    cfg.write_text(f"sources: [{{name: src, kind: mysql, hosts: ['127.0.0.1:1'], user: u, passwordless: true, tables: ['d.*']}}]\n"
                   f"kafka: {{bootstrap_servers: '{broker.bootstrap}', topic_prefix: '{topic_prefix}'}}\n")
    out = subprocess.run([sys.executable, "-m", "cdc.cli", "tail", "--config", str(cfg), "--source", "src",
                          "--from-beginning", "--max", "4"], capture_output=True, text=True, timeout=60, cwd=ROOT,
                         check=False)
    assert out.returncode == 0, out.stderr
    lines = [orjson.loads(line) for line in out.stdout.splitlines()]
    assert [ln["value"].get("status") or ln["value"]["op"] for ln in lines] == ["BEGIN", "SCHEMA", "c", "END"]


class _DeadLetteringSource(ScriptedSource):
    """Step 2's second row is 'undecodable': handed to the context's dead_letter, then skipped."""

    def __init__(self, ctx, steps: int) -> None:
        super().__init__(steps, metrics=ctx.metrics)
        self.ctx = ctx

    def changes_of(self, k):
        for j, ch in enumerate(super().changes_of(k)):
            if k == 2 and j == 1:
                self.ctx.dead_letter(DecodeError("bad row", table="d.t2", position={"step": 2, "row": 1}),
                                     {"row": repr(ch.after)})
                continue
            yield ch


def test_daemon_wires_the_dead_letter_topic_into_the_reader_context(broker, topic_prefix):
    dlq = f"{topic_prefix}.dlq"
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=topic_prefix, dead_letter_topic=dlq)
    spec = SourceSpec("scripted", "scripted", lambda ctx: _DeadLetteringSource(ctx, 3))
    daemon = Daemon([spec], kafka, process_registry(), metrics_port=None)
    assert daemon.run() == 0
    [(_, key, value)] = list(read_records(broker.bootstrap, dlq, *get_serdes("json")))
    assert key == {"source": "scripted", "table": "d.t2"} and value["fields"]["position"] == {"step": 2, "row": 1}
    stream = read_stream(broker.bootstrap, changes_topic(topic_prefix, "scripted"))
    assert [(t, len(r)) for t, r, _ in stream.transactions] == [("tx-1", 5), ("tx-2", 3), ("tx-3", 3)]
