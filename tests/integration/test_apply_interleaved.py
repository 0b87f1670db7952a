"""Two publishers of one source writing one stream (real broker, Spark, PostgreSQL): `cdc apply --until-idle`
stops non-zero with the StreamCorrupt naming offset and sequence, and the target stays at the last whole
transaction before the mixture (what the consumer library hands out of the same records, no more).

The stream is written the way two daemons write it: a first publisher commits some transactions and exits;
then two publishers recover from that same tail (both continue its numbering) and publish the same scripted
source transactions, the second one a heartbeat ahead, their produce batches alternating on the broker."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml

from cdc.config.models import KafkaConfig
from cdc.consumer.assembler import TransactionAssembler
from cdc.consumer.transactions import Transaction
from cdc.dev.procs import spawn, terminate
from cdc.errors import StreamCorrupt
from cdc.metrics import SourceMetrics
from cdc.publish.publisher import Publisher
from cdc.publish.recovery import read_records
from cdc.stream.events import Heartbeat
from cdc.stream.serde import get_serdes
from tests.integration.scripted_source import ScriptedSource

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

CDC = str(Path(sys.executable).with_name("cdc"))
GOOD_STEPS = 30  # committed by the first publisher alone
OVERLAP_STEPS = 12  # published by both of the next two


def _publisher(broker, prefix: str) -> Publisher:
    kafka = KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=prefix)
    return Publisher("src", "mysql", kafka, SourceMetrics("src"), heartbeat_min_interval_s=0)


def _events(first: int, last: int) -> list:
    src = ScriptedSource(last, ddl_every=0)
    src.start(None if first == 1 else {"step": first - 1})
    return list(src.events())


def _write_two_daemons(broker, prefix: str) -> None:
    alone = _publisher(broker, prefix)
    alone.recover()
    alone.recovered()
    for ev in _events(1, GOOD_STEPS):
        alone.publish(ev)
    alone.flush()
    alone.close()
    a, b = _publisher(broker, prefix), _publisher(broker, prefix)
    resume_a, resume_b = a.recover(), b.recover()  # the same tail: both number on from its last sequence
    assert resume_a == resume_b == {"step": GOOD_STEPS}
    ev_a = _events(GOOD_STEPS + 1, GOOD_STEPS + OVERLAP_STEPS)
    ev_b = [Heartbeat(1_700_000_000_000, resume_b)] + list(ev_a)
    while ev_a or ev_b:  # each publisher's produce batches land whole, alternating
        for pub, evs in ((a, ev_a), (b, ev_b)):
            for ev in evs[:3]:
                pub.publish(ev)
            del evs[:3]
            pub.flush()
    a.close()
    b.close()


def _consumer_view(broker, topic: str) -> tuple[list[Transaction], StreamCorrupt]:
    ks, vs = get_serdes("json")
    asm, out = TransactionAssembler(topic), []
    for offset, key, value in read_records(broker.bootstrap, topic, ks, vs):
        try:
            item = asm.feed(offset, key, value)
        except StreamCorrupt as exc:
            return out, exc
        if isinstance(item, Transaction):
            out.append(item)
    raise AssertionError("the consumer library took the interleaved stream without an error")


@pytest.mark.slow
def test_an_interleaved_stream_stops_the_apply_at_the_last_whole_transaction(broker, postgres, topic_prefix,
                                                                              tmp_path):
    topic = f"{topic_prefix}.src.changes"
    _write_two_daemons(broker, topic_prefix)
    handed_out, corrupt = _consumer_view(broker, topic)
    assert len(handed_out) >= GOOD_STEPS

    schema = topic_prefix.replace("-", "_")[:40]
    with postgres.connect() as c:
        c.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        c.commit()
    cfg = tmp_path / "cdc.yaml"
    cfg.write_text(yaml.safe_dump({
        "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": topic_prefix},
        "targets": [{"name": "pg", "kind": "postgres", "dsn": postgres.dsn, "schema": schema}],
        "apply": [{"source": "src", "target": "pg", "checkpoint_dir": str(tmp_path / "ck"),
                   "trigger_interval_s": 0.2, "max_records_per_batch": 40}]}))
    log = tmp_path / "apply.log"
    proc = spawn([CDC, "apply", "--config", str(cfg), "--master", "local[2]", "--until-idle", "6"], log,
                 env=dict(os.environ, CDC_PROGRESS="off", PYTHONUNBUFFERED="1"))
    try:
        code = proc.wait(timeout=300)
    finally:
        terminate(proc)
    text = log.read_text(errors="replace")
    assert code == 2, text[-3000:]
    where = f"at offset {corrupt.offset}, sequence {corrupt.sequence}, where the stream's structure expects"
    errors = [line for line in text.splitlines() if line.startswith("cdc apply: error: ")]
    assert len(errors) == 1 and where in errors[0] and f"{topic}[0]: " in errors[0], text[-3000:]

    with postgres.connect() as c:
        last = c.execute(f'SELECT last_sequence FROM "{schema}".cdc_progress').fetchone()[0]
        ids = {r[0] for t in ("t1", "t2") for r in c.execute(f'SELECT id FROM "{schema}".{t}').fetchall()}
    # the last whole transaction the consumer hands out is applied, nothing of the broken one or after it
    assert handed_out[-1].sequence <= last < corrupt.sequence
    assert ids == {ch.key["id"] for tx in handed_out for ch in tx.changes}
