"""The Oracle demo (``make demo-oracle`` -> ``cdc dev demo --oracle``) and the pump the benchmark uses.

There is no Oracle server here: the source is the LogMiner simulator
(readers/oracle/sim/simulator.py), read through the real reader, published by
the real publisher into a real broker.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

from cdc.contract import SourceContext
from cdc.metrics import SourceMetrics
from cdc.stream.events import Change, ChangeBatch, Commit, Heartbeat
from readers.oracle.config import OracleSourceConfig
from readers.oracle.reader import OracleSource

DEMO_WORKLOAD = "seed=7,transactions=2000,lanes=8,threads=2,rows_max=8,rollback_rate=0.1,partial_rollback_rate=0.1,csf_rate=0.02,log_scns=2000,head_step=1500"


def make_source(name: str, options: str, workdir: str, metrics: SourceMetrics, **cfg: Any) -> OracleSource:
    from readers.oracle.sim import simulator
    simulator.instance(options)  # build the workload model now, outside any timing
    config = OracleSourceConfig(name=name, dsn=f"simulator:{options}", tables=["APP.*"], dictionary_path=workdir,
                                heartbeat_interval_s=0.2, poll_interval_s=0.05, **cfg)
    return OracleSource(config, SourceContext(metrics, spill_dir=f"{workdir}/spill"))


def pump(source: OracleSource, publisher: Any, resume: Any = None,
         on_commit: Callable[[int], None] | None = None) -> dict[str, int | float]:
    """Start the source, publish until it is idle (first heartbeat after all redo), flush; returns counts.
    ``on_commit(rows so far)`` after each transaction (progress)."""
    source.start(resume)
    rows = txs = 0
    t0, c0 = time.perf_counter(), time.thread_time()
    publish = publisher.publish
    try:
        for ev in source.events():
            if type(ev) is Heartbeat:
                if source.caught_up():
                    break
                continue
            publish(ev)
            if type(ev) is Change:
                rows += 1
            elif type(ev) is ChangeBatch:
                rows += len(ev)
            elif type(ev) is Commit:
                txs += 1
                if on_commit is not None:
                    on_commit(rows)
        publisher.flush(timeout_s=120)
    finally:
        source.close()
    return {"rows": rows, "transactions": txs, "seconds": time.perf_counter() - t0,
            "cpu_seconds": time.thread_time() - c0}


def run_demo(where: Any = None, *, workload: str = DEMO_WORKLOAD, out: Callable[[str], None] = print) -> int:
    """``cdc dev demo --oracle``: ``where`` is a broker address (host:port) or the dev-stack directory
    (its cdc.yaml names the broker when `cdc dev up` runs); without a reachable broker the demo starts
    its own tansu broker and stops it afterwards. Returns the exit status."""
    from pathlib import Path

    from cdc.dev.broker import Broker

    bootstrap = where if isinstance(where, str) and ":" in where else None
    if bootstrap is None and where is not None and (Path(where) / "cdc.yaml").exists():
        try:
            from cdc.config.loader import load_config
            bootstrap = load_config(Path(where) / "cdc.yaml").kafka.bootstrap_servers
            from confluent_kafka.admin import AdminClient

            from cdc.config.kafka_settings import KafkaConnection
            AdminClient(KafkaConnection.of(bootstrap).settings("admin")).list_topics(timeout=3)
        except Exception:  # dev stack not up: use our own broker  # noqa: BLE001 -- any failure: use our own broker
            bootstrap = None
    broker = None
    if bootstrap is None:
        broker = Broker().start()
        bootstrap = broker.bootstrap
        out(f"  started a tansu broker on {bootstrap} for the demo")
    try:
        stream_demo(bootstrap, workload=workload, out=out)
        return 0
    finally:
        if broker is not None:
            broker.stop()


def stream_demo(bootstrap: str, *, topic_prefix: str | None = None, workload: str = DEMO_WORKLOAD,
                out: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the simulator source through the publisher into the broker at ``bootstrap``; print a summary."""
    from cdc.config.models import KafkaConfig
    from cdc.publish.publisher import Publisher

    prefix = topic_prefix or f"demo{uuid.uuid4().hex[:6]}"
    metrics = SourceMetrics("oracle_demo")
    publisher = Publisher("oracle_demo", "oracle", KafkaConfig(bootstrap_servers=bootstrap, topic_prefix=prefix),
                          metrics)
    out("Oracle demo: NO live Oracle here -- the LogMiner simulator plays an ADG standby + mining instance")
    out(f"  workload: {workload}")
    with tempfile.TemporaryDirectory(prefix="cdc-oracle-demo-") as work:
        resume = publisher.recover()
        src = make_source("oracle_demo", workload, work, metrics, sessions=2, scn_range_size=5000)
        stats = pump(src, publisher, resume)
        sessions = src.miner.sessions if src.miner else []
        publisher.close()
    summary = {**stats, "topic": publisher.topic, "logminer_sessions": len(sessions),
               "log_switches": sum(s.log_switches for s in sessions), "resume": publisher.last_resume}
    out(f"  published {stats['rows']} rows in {stats['transactions']} committed transactions "
        f"({stats['rows'] / max(stats['seconds'], 1e-9):,.0f} rows/s) to {publisher.topic}")
    out(f"  {summary['log_switches']} log switches across {len(sessions)} parallel LogMiner sessions; "
        f"resume state in the last END: {publisher.last_resume}")
    return summary
