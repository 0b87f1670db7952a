"""The way back from a refused Oracle transaction: `cdc source skip --source S --xid XID --yes --resync`.

No Oracle server runs here: the source is the LogMiner simulator, whose transaction ``odd_op_at`` holds one
row of an OPERATION_CODE the reader does not decode (68, XML DOC BEGIN). With ``unsupported: fail`` the
daemon stops on that transaction and would at every restart. `cdc source skip` moves the stream's checkpoint
past exactly that transaction, records it in the stream, and requests a snapshot of the tables it touched AS
OF its commit SCN; the restarted daemon re-reads them, then streams on. Folding the stream as a consumer
applies it gives exactly the source's rows (the simulator's flashback image at the head), including the rows
the skipped transaction changed.
"""

from __future__ import annotations

import re

import orjson
import pytest
import yaml

from cdc.cli import main as cdc_main
from cdc.publish.recovery import make_consumer, read_range, watermarks
from cdc.stream.envelope import changes_topic
from readers.oracle.sim import simulator
from readers.oracle.sim.workload import stream_row
from tests.e2e.mysql_daemon import Daemon, run_until_stop, wait_for
from tests.integration.stream_check import read_stream

pytestmark = [pytest.mark.oracle, pytest.mark.kafka, pytest.mark.slow]

# no rollbacks: a pre-existing row only a rolled-back change touched is in the flashback image, never in the stream
OPTS = "seed=5,transactions=40,lanes=2,tables=2,rollback_rate=0,partial_rollback_rate=0,odd_op_at=13"


def _fold(values) -> dict[str, dict[str, dict]]:
    """The tables as a consumer applying the stream's data records (in sequence order) holds them."""
    tables: dict[str, dict[str, dict]] = {}
    last = 0
    for v in values:
        if v["sequence"] <= last:
            continue  # a retried run appended twice: a consumer drops it
        last = v["sequence"]
        if v.get("status") is not None or "op" not in v:
            continue
        rows = tables.setdefault(v["source"]["table"], {})
        if v["op"] == "t":
            rows.clear()
        elif v["op"] == "d":
            rows.pop(v["before"]["ID"], None)
        else:
            rows[v["after"]["ID"]] = v["after"]
    return tables


def _values(bootstrap: str, topic: str) -> list[dict]:
    """The stream's record values up to its high watermark now (a running daemon keeps appending)."""
    consumer = make_consumer(bootstrap)
    try:
        low, high = watermarks(consumer, topic)
        return [orjson.loads(m.value()) for m in read_range(consumer, topic, low, high, reported_high=high)]
    finally:
        consumer.close()


def test_skip_a_refused_oracle_transaction_and_resync_its_tables(tmp_path, broker, topic_prefix, capsys):
    config = tmp_path / "cdc.yaml"
    config.write_text(yaml.safe_dump({
        "sources": [{"name": "ora", "kind": "oracle", "dsn": f"simulator:{OPTS}", "tables": ["APP.*"],
                     "dictionary_path": str(tmp_path), "heartbeat_interval_s": 0.3, "poll_interval_s": 0.05,
                     "snapshot": "never"}],
        "kafka": {"bootstrap_servers": broker.bootstrap, "topic_prefix": topic_prefix},
        "metrics": {"port": 0}, "drain_timeout_s": 20}))
    topic = changes_topic(topic_prefix, "ora")
    log = run_until_stop(config, tmp_path / "first.log", "the daemon stopping on the refused transaction", 90)
    refused = re.search(r"LogMiner cannot decode a change of \S+ at SCN \d+ \(XID (\d+\.\d+\.\d+), commit SCN", log)
    assert refused and "cdc source skip" in log, log[-3000:]
    xid = refused.group(1)

    # a plain restart stops on the same transaction
    assert f"XID {xid}" in run_until_stop(config, tmp_path / "again.log", "the restart stopping on the same XID", 90)

    code = cdc_main(["source", "skip", "--config", str(config), "--source", "ora", "--xid", xid, "--yes",
                     "--resync", "--reason", "an XML DOC write"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert f"moved past {xid}" in out.out, out.out
    skipped = [h["resume"]["skipped"] for h in read_stream(broker.bootstrap, topic).heartbeats
               if (h.get("resume") or {}).get("skipped")]
    assert [s["xid"] for s in skipped] == [xid] and skipped[0]["tables"], skipped
    assert cdc_main(["source", "skip", "--config", str(config), "--source", "ora", "--xid", xid, "--yes"]) == 2
    assert "already holds" in capsys.readouterr().err  # the checkpoint is past it

    sim = simulator.instance(OPTS)
    want = {t: {r["ID"]: stream_row(r) for r in sim.table_at(sim.head, t)} for t in ("T0", "T1")}
    after = Daemon(config, tmp_path / "after.log").start()
    try:
        def done():
            got = _fold(_values(broker.bootstrap, topic))
            return all(got.get(t, {}) == rows for t, rows in want.items())
        wait_for(done, 120, "the resynced tables and the rest of the stream", daemon=after)
        assert after.proc.poll() is None
    finally:
        assert after.stop() == 0
    stream = read_stream(broker.bootstrap, topic)  # whole and well formed (the daemon has stopped)
    assert all(_fold(_values(broker.bootstrap, topic)).get(t) == rows for t, rows in want.items())
    resynced = {r["source"]["table"] for _, rows, _ in stream.transactions for r in rows if r["op"] == "r"}
    assert {f"APP.{t}" for t in resynced} == set(skipped[0]["tables"])
