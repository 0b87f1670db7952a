"""A deterministic scripted cdc.contract.Source, and a daemon process around it.

The script is a numbered list of steps 1..N. Step k is a DDL when
``k % ddl_every == 0``, else transaction ``tx-k`` with ``rows_of(k)`` rows
alternating over tables d.t1 / d.t2 (ids k*100000 + j). The resume state
after step k is ``{"step": k}``, so a restart replays exactly from the
stream's checkpoint. A Heartbeat follows every 25th step.

Run as a process (the crash and signal tests do)::

    python tests/integration/scripted_source.py --bootstrap B --prefix P --steps N
        [--pace-ms 2] [--stall-step K --stall-s S] [--big-every 50 --big-rows 3000]

It prints ``STALL <k>`` (flushed) when it stalls inside transaction k, after
the first rows of it, and exits with the daemon's status.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script from anywhere
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cdc.stream.events import Begin, Change, Column, Commit, Heartbeat, SchemaChange, TableId, TableSchema

T1, T2 = TableId("d", "t1"), TableId("d", "t2")
SCHEMAS = {t: TableSchema(t, (Column("id", "bigint", False), Column("v", "varchar(20)"), Column("n", "int")), ("id",))
           for t in (T1, T2)}


class ScriptedSource:
    def __init__(self, steps: int, *, metrics: Any = None, pace_s: float = 0.0, ddl_every: int = 40,
                 big_every: int = 0, big_rows: int = 0, stall_step: int | None = None, stall_s: float = 0.0,
                 ops: bool = False) -> None:
        self.name = "scripted"
        self.steps, self.metrics, self.pace_s, self.ddl_every = steps, metrics, pace_s, ddl_every
        self.big_every, self.big_rows = big_every, big_rows
        self.stall_step, self.stall_s, self.ops = stall_step, stall_s, ops
        self._stop = threading.Event()
        self._next = 1
        self.started_with: dict | None = None

    # -- the script --
    def rows_of(self, k: int) -> int:
        if self.big_every and k % self.big_every == 0:
            return self.big_rows
        return 1 + (k * 7919) % 5

    def is_ddl(self, k: int) -> bool:
        return self.ddl_every > 0 and k % self.ddl_every == 0

    def changes_of(self, k: int) -> Iterator[Change]:
        for j in range(self.rows_of(k)):
            table = T1 if j % 2 == 0 else T2
            row = {"id": k * 100000 + j, "v": f"s{k}-{j}", "n": j}
            op = "c"
            if self.ops and j % 3 == 1:
                op = "u"
            elif self.ops and j % 3 == 2:
                op = "d"
            before = dict(row, v="old") if op in ("u", "d") else None
            after = None if op == "d" else row
            yield Change(table, op, before, after, {"step": k, "row": j}, SCHEMAS[table])

    # -- cdc.contract.Source --
    def start(self, resume: dict | None) -> None:
        self.started_with = resume
        self._next = 1 if resume is None else resume["step"] + 1
        if self.metrics is not None:
            self.metrics.connected(True)

    def events(self) -> Iterator[Any]:
        k = self._next
        while k <= self.steps and not self._stop.is_set():
            ts = 1_700_000_000_000 + k
            if self.is_ddl(k):
                yield SchemaChange(T1, f"ALTER TABLE d.t1 COMMENT 'step {k}'", SCHEMAS[T1], ts, {"step": k})
            else:
                yield Begin(f"tx-{k}", ts)
                stall_at = min(1, self.rows_of(k) - 1) if k == self.stall_step else -1
                for j, change in enumerate(self.changes_of(k)):
                    yield change
                    if j == stall_at:
                        print(f"STALL {k}", flush=True)
                        time.sleep(self.stall_s)
                yield Commit(f"tx-{k}", ts, {"step": k}, {"step": k})
            if k % 25 == 0:
                yield Heartbeat(ts, {"step": k})
            k += 1
            if self.pace_s:
                time.sleep(self.pace_s)
        if self.metrics is not None:
            self.metrics.connected(False)

    def request_stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    from cdc.config.models import KafkaConfig
    from cdc.metrics import process_registry
    from cdc.runtime.daemon import Daemon, SourceSpec
    from cdc.runtime.logs import setup_logging
    from cdc.runtime.signals import TwoStageSignals

    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--source", default="scripted")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--pace-ms", type=float, default=0)
    p.add_argument("--big-every", type=int, default=0)
    p.add_argument("--big-rows", type=int, default=0)
    p.add_argument("--stall-step", type=int, default=None)
    p.add_argument("--stall-s", type=float, default=0)
    p.add_argument("--drain-timeout-s", type=float, default=30)
    p.add_argument("--producer", default="{}", help="extra librdkafka settings as JSON")
    p.add_argument("--kafka", default="{}", help="extra kafka config keys as JSON (e.g. idempotence)")
    a = p.parse_args(argv)
    setup_logging("INFO")
    kafka = KafkaConfig(bootstrap_servers=a.bootstrap, topic_prefix=a.prefix, **json.loads(a.kafka))

    def make(ctx):
        return ScriptedSource(a.steps, metrics=ctx.metrics, pace_s=a.pace_ms / 1000, big_every=a.big_every,
                              big_rows=a.big_rows, stall_step=a.stall_step, stall_s=a.stall_s)

    daemon = Daemon([SourceSpec(a.source, "scripted", make)], kafka, process_registry(), metrics_port=None,
                    drain_timeout_s=a.drain_timeout_s, producer_config=json.loads(a.producer))
    signals = TwoStageSignals(daemon.request_stop).install()
    status = daemon.run()
    signals.restore()
    if daemon.failure:
        print(daemon.failure, file=sys.stderr)
    if status == 1:  # a worker is still inside its reader: do not wait for it
        sys.stderr.flush()
        os._exit(1)
    return status


if __name__ == "__main__":
    sys.exit(main())
