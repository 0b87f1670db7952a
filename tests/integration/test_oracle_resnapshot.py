"""Oracle archived logs deleted past the checkpoint, on the LogMiner simulator (``purged_before``).

Without ``snapshot: when_needed`` the start stops with ArchiveLogMissing. With it the reader
re-snapshots the tables AS OF the head (each table's first chunk starts with ``op: "t"``) while the
"primary" keeps committing (``head_step``), then mines on; a target that held the tables as of the
checkpoint, replaying the stream as every consumer does, ends equal to the model's tables."""

from __future__ import annotations

import time

import pytest

from cdc.metrics import SourceMetrics
from cdc.stream.events import Change, Heartbeat, expand
from readers.oracle.errors import ArchiveLogMissing
from readers.oracle.sim import simulator
from readers.oracle.sim.demo import make_source
from readers.oracle.sim.workload import stream_row, table_name

pytestmark = pytest.mark.oracle

OPTS = "seed=31,transactions=120,lanes=4,threads=2,log_scns=40,rows_max=5,rollback_rate=0.1,head_step=90,purged_before=3"


def model(sim, scn: int) -> dict[tuple, dict]:
    return {(table_name(n), row["ID"]): stream_row(row) for n in range(sim.workload.tables)
            for row in sim.table_at(scn, table_name(n))}


def test_archived_logs_gone_when_needed_resnapshots_and_the_target_converges(tmp_path):
    sim = simulator.instance(OPTS)
    checkpoint_scn = sim.workload.base_scn + 30  # in sequence 1: deleted (purged_before=3)
    resume = {"low_watermark_scn": checkpoint_scn, "commit_scn": checkpoint_scn, "xids_at_commit_scn": []}

    never = make_source("ora", OPTS, str(tmp_path), SourceMetrics("ora"))
    with pytest.raises(ArchiveLogMissing, match=f"no log holds SCN {checkpoint_scn}"):
        never.start(dict(resume))
    never.close()

    src = make_source("ora", OPTS, str(tmp_path), SourceMetrics("ora"), snapshot="when_needed",
                      snapshot_chunk_rows=4, sessions=2, scn_range_size=30)
    target = model(sim, checkpoint_scn)  # the target as of the checkpoint
    src.start(dict(resume))
    ops, deadline = [], time.monotonic() + 60
    try:
        for ev in expand(src.events()):  # a ChangeBatch as its Changes
            if isinstance(ev, Change):
                ops.append((ev.table.table, ev.op))
                if ev.op == "t":
                    target = {k: v for k, v in target.items() if k[0] != ev.table.table}
                elif ev.op == "d":
                    target.pop((ev.table.table, ev.before["ID"]))
                else:
                    target[(ev.table.table, ev.after["ID"])] = ev.after
            if isinstance(ev, Heartbeat) and src.caught_up() and sim.head >= sim.model.end_scn:
                break
            assert time.monotonic() < deadline, f"not caught up after {len(ops)} changes"
    finally:
        src.close()
    assert src.metrics._m.resnapshots.labels("ora")._value.get() == 1
    tables = [table_name(n) for n in range(sim.workload.tables)]
    assert [t for t, op in ops if op == "t"] == tables  # each table replaced once, before its rows
    last_r = max(i for i, (_, op) in enumerate(ops) if op == "r")
    assert any(op in ("c", "u", "d") for _, op in ops[last_r:])  # mining went on after the re-snapshot
    final = model(sim, sim.model.end_scn)
    assert set(model(sim, checkpoint_scn)) - set(final)  # rows deleted while the logs were gone ...
    assert target == final  # ... are gone from the target too
