"""Shared helpers: run OracleSource against a simulator workload and collect what it publishes."""

from __future__ import annotations

import itertools

from cdc.contract import SourceContext
from cdc.metrics import SourceMetrics
from cdc.stream.events import Begin, Change, Commit, Heartbeat, expand
from readers.oracle.config import OracleSourceConfig
from readers.oracle.reader import OracleSource
from readers.oracle.sim import simulator

_n = itertools.count()


def source(options: str, tmp, **cfg) -> OracleSource:
    base = {"name": "ora", "dsn": "simulator:" + options, "tables": ["APP.*"], "dictionary_path": str(tmp),
            "heartbeat_interval_s": 0.05, "poll_interval_s": 0.01}
    base.update(cfg)
    return OracleSource(OracleSourceConfig(**base),
                        SourceContext(SourceMetrics("ora"), spill_dir=str(tmp / f"spill{next(_n)}")))


def run(src: OracleSource, resume=None, stop_after: int | None = None, stop_after_heartbeats: int | None = None):
    """Start, read until caught up (or ``stop_after`` commits / heartbeats); returns (txs, last resume)."""
    src.start(resume)
    txs, cur, last, beats = [], None, resume, 0
    try:
        for ev in expand(src.events()):  # a ChangeBatch as its Changes
            if isinstance(ev, Begin):
                cur = []
            elif isinstance(ev, Change):
                cur.append((ev.op, ev.table.db, ev.table.table, ev.before, ev.after))
            elif isinstance(ev, Commit):
                txs.append((ev.position["commit_scn"], ev.txid, cur))
                last = ev.resume
                if stop_after is not None and len(txs) >= stop_after:
                    break
            elif isinstance(ev, Heartbeat):
                last = ev.resume or last
                beats += 1
                if src.caught_up() or (stop_after_heartbeats is not None and beats >= stop_after_heartbeats):
                    break
    finally:
        src.close()
    return txs, last


def expected(options: str):
    return [(s, x, r) for s, x, r in simulator.instance(options).model.committed() if r]
