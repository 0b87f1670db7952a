"""`cdc tail` on the real broker: any number of records, --idle-exit, filters, formats, a gap, both clients."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from streaming.testing import StreamBuilder, produce

pytestmark = pytest.mark.kafka
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["confluent", "kafka-python"])
def client(request) -> str:
    return request.param


def _config(tmp_path, broker, topic_prefix) -> Path:
    cfg = tmp_path / "cdc.yaml"
    cfg.write_text(f"sources: [{{name: src, kind: mysql, hosts: ['127.0.0.1:1'], user: u, password: p, "
                   f"tables: ['d.*']}}]\n"
                   f"kafka: {{bootstrap_servers: '{broker.bootstrap}', topic_prefix: '{topic_prefix}'}}\n")
    return cfg


def _tail(cfg: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cdc.cli", "tail", "--config", str(cfg), "--source", "src", *args],
                          capture_output=True, timeout=timeout, cwd=ROOT, check=False)


def _kinds(stdout: bytes) -> list[str]:
    return [v.get("status") or v["op"] for v in (orjson.loads(line)["value"] for line in stdout.splitlines())]


def _topic(broker, topic_prefix: str) -> str:
    topic = f"{topic_prefix}.src.changes"
    broker.create_topic(topic)
    return topic


@pytest.mark.slow
def test_cdc_tail_prints_ten_thousand_records(broker, topic_prefix, tmp_path, client):
    sb = StreamBuilder()
    sb.schema("d.t", [("id", "int"), ("v", "varchar")], ["id"])
    for i in range(1000):
        sb.tx(*[("c", "d.t", None, {"id": i * 10 + j, "v": "x" * 20}) for j in range(10)])
        if i == 500:
            sb.tx(("c", "d.t", None, {"id": -1, "v": "never"}), abort=True)
    enc = sb.encoded()
    produce(broker.bootstrap, _topic(broker, topic_prefix), enc[:6000] + enc[5900:6000] + enc[6000:])
    t0 = time.monotonic()
    out = _tail(_config(tmp_path, broker, topic_prefix), "--from-beginning", "--idle-exit", "2", "--client", client)
    took = time.monotonic() - t0
    assert out.returncode == 0, out.stderr.decode()
    kinds = _kinds(out.stdout)
    assert kinds.count("c") == 10_000 and kinds.count("BEGIN") == kinds.count("END") == 1000
    assert kinds[0] == "SCHEMA" and "ABORTED" not in kinds
    ids = [orjson.loads(line)["value"]["after"]["id"] for line in out.stdout.splitlines() if b'"op":"c"' in line]
    assert ids == list(range(10_000))  # in order, each once: the duplicate run and the aborted row are gone
    assert b"100 duplicates and 1 aborted" in out.stderr
    assert took < 30, f"cdc tail took {took:.1f}s for 12,001 records"


def test_idle_exit_counts_data_not_heartbeats_and_tail_starts_at_the_end(broker, topic_prefix, tmp_path, client):
    sb = StreamBuilder()
    sb.schema("d.t", [("id", "int"), ("v", "varchar")], ["id"])
    for i in range(5):
        sb.tx(("c", "d.t", None, {"id": i, "v": "old"}))
    topic = _topic(broker, topic_prefix)
    produce(broker.bootstrap, topic, sb.encoded())
    done = len(sb.items)
    proc = subprocess.Popen([sys.executable, "-m", "cdc.cli", "tail", "--config",
                             str(_config(tmp_path, broker, topic_prefix)), "--source", "src", "--idle-exit", "3",
                             "--client", client], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    beats, first = 0, []
    try:
        reader = threading.Thread(target=lambda: first.append(proc.stderr.readline()), daemon=True)
        reader.start()
        reader.join(30)  # the tail found the end of the stream
        assert first and first[0].startswith(b"cdc tail: reading "), first
        sb.tx(("c", "d.t", None, {"id": 99, "v": "new"}))
        produce(broker.bootstrap, topic, sb.encoded()[done:])
        t0 = time.monotonic()
        while proc.poll() is None and time.monotonic() - t0 < 20:  # a heartbeat every 0.3 s the whole time
            n = len(sb.items)
            sb.heartbeat()
            produce(broker.bootstrap, topic, sb.encoded()[n:])
            beats += 1
            time.sleep(0.3)
        waited = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
        stdout, stderr = proc.communicate(timeout=10)
    assert proc.returncode == 0, stderr.decode()
    assert 2.5 < waited < 12, f"--idle-exit 3 exited after {waited:.1f}s with a heartbeat every 0.3 s"
    assert beats >= 8
    values = [orjson.loads(line)["value"] for line in stdout.splitlines()]
    assert [v.get("status") or v["after"]["v"] for v in values] == ["BEGIN", "new", "END"]


def test_table_filter_formats_max_and_from_sequence(broker, topic_prefix, tmp_path, client):
    sb = StreamBuilder()
    sb.schema("d.orders", [("id", "int"), ("v", "varchar")], ["id"])
    sb.schema("d.audit", [("id", "int"), ("v", "varchar")], ["id"])
    sb.tx(("c", "d.orders", None, {"id": 1, "v": "a"}), ("c", "d.audit", None, {"id": 1, "v": "log"}))  # 3..6
    sb.tx(("c", "d.audit", None, {"id": 2, "v": "log"}))  # 7..9
    sb.tx(("u", "d.orders", {"id": 1, "v": "a"}, {"id": 1, "v": "b"}))  # 10..12
    produce(broker.bootstrap, _topic(broker, topic_prefix), sb.encoded())
    cfg = _config(tmp_path, broker, topic_prefix)
    common = ("--idle-exit", "1", "--client", client)

    out = _tail(cfg, "--from-beginning", "--table", "d.ord*", *common)
    assert out.returncode == 0, out.stderr.decode()
    assert _kinds(out.stdout) == ["SCHEMA", "BEGIN", "c", "END", "BEGIN", "u", "END"]

    out = _tail(cfg, "--from-sequence", "5", *common)  # 5 is inside the first transaction: start at the next
    assert [orjson.loads(line)["value"]["sequence"] for line in out.stdout.splitlines()] == [7, 8, 9, 10, 11, 12]

    out = _tail(cfg, "--from-beginning", "--max", "4", "--format", "text", *common)
    lines = out.stdout.decode().splitlines()
    assert out.returncode == 0 and len(lines) == 4, out.stderr.decode()
    assert lines[0].startswith("#1 @0 SCHEMA d.orders") and lines[2].startswith("#3 @2 BEGIN 0-1-1")
    assert lines[3] == '#4 @3   c d.orders {"id":1} {"id":1,"v":"a"}'

    out = _tail(cfg, "--from-sequence", "10", "--format", "text", *common)
    assert out.stdout.decode().splitlines()[1] == '#11 @10   u d.orders {"id":1} {"v":"a"} -> {"v":"b"}'


def test_a_gap_stops_cdc_tail_naming_the_range(broker, topic_prefix, tmp_path, client):
    sb = StreamBuilder()
    for i in range(4):
        sb.tx(("c", "d.t", None, {"id": i}))
    enc = sb.encoded()
    produce(broker.bootstrap, _topic(broker, topic_prefix), enc[:5] + enc[7:])
    out = _tail(_config(tmp_path, broker, topic_prefix), "--from-beginning", "--idle-exit", "2", "--client", client)
    assert out.returncode == 2
    assert b"StreamCorrupt" in out.stderr and b"sequence 6..7 missing in" in out.stderr and b"after offset 4" in out.stderr
    assert _kinds(out.stdout) == ["BEGIN", "c", "END"]


def test_a_per_table_topic_prints_upserts_and_tombstones(broker, topic_prefix, tmp_path, client):
    topic = f"{topic_prefix}.src.d.t"
    broker.create_topic(topic)
    row = orjson.dumps({"sequence": 3, "op": "c", "before": None, "after": {"id": 1, "v": "a"}})
    produce(broker.bootstrap, topic, [(b'{"id":1}', row), (b'{"id":1}', None)])
    out = _tail(_config(tmp_path, broker, topic_prefix), "--table-topic", "d.t", "--from-beginning",
                "--idle-exit", "1", "--client", client)
    assert out.returncode == 0, out.stderr.decode()
    lines = [orjson.loads(line) for line in out.stdout.splitlines()]
    assert [(ln["key"], ln["value"] and ln["value"]["op"]) for ln in lines] == [({"id": 1}, "c"), ({"id": 1}, None)]


def test_an_unreachable_broker_is_named_without_a_flood_of_librdkafka_lines(tmp_path):
    from cdc.dev.ports import free_port

    bootstrap = f"127.0.0.1:{free_port()}"  # nothing listens there
    cfg = tmp_path / "cdc.yaml"
    cfg.write_text("sources: [{name: src, kind: mysql, hosts: ['127.0.0.1:1'], user: u, password: p, "
                   f"tables: ['d.*']}}]\nkafka: {{bootstrap_servers: '{bootstrap}'}}\n")
    out = _tail(cfg, "--idle-exit", "1")
    err = out.stderr.decode()
    assert out.returncode == 2, err
    assert f"BrokerUnreachable: no metadata for cdc.src.changes from {bootstrap}" in err
    assert err.count("Connection refused") <= 2, err  # librdkafka retries ~10 times a second: rate-limited
