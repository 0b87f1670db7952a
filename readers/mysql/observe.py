"""What a MySqlSource tells the operations API (cdc.contract.Observable): the snapshot it reads, and the
source transactions not yet published (lag in transactions).

Lag in transactions is the server's binlog GTID set (MySQL ``gtid_executed``, MariaDB ``gtid_binlog_pos``,
as readers/mysql/failover.py probes them) minus the published checkpoint's ``gtid_set``, counted: MySQL
the intervals' lengths; MariaDB per domain the sequence numbers between the checkpoint's and the
server's (a domain's sequence numbers have no gaps unless ``gtid_seq_no`` was set by hand). The probe is
a connection of its own (never the reader's binlog connection), at most one per ``LAG_TTL_S`` seconds.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from cdc.contract import Observation
from cdc.errors import CdcError
from readers.mysql.position import GtidSet

LAG_TTL_S = 5.0  # one probe of the server per source at most this often (the API's sampler asks every 5 s)


def count(missing: GtidSet, have: GtidSet) -> int:
    """Transactions in ``missing`` (= server - ``have``), counted (see the module docstring)."""
    if missing.mariadb:
        mine = have.domains()
        return sum(max(1, n - mine.get(d, (0, 0))[1]) for d, _, n in missing.mariadb)
    return sum(stop - start for _, intervals in missing.mysql for start, stop in intervals)


def snapshot_state(source: Any, checkpoint: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The initial or incremental snapshot ``source`` (a MySqlSource) reads now; None: none. A stream without a
    checkpoint, or whose checkpoint is inside a snapshot, is snapshotting from the start (while the reader
    opens its consistent read) until the snapshot's end is acknowledged."""
    initial = source._snapshot_running or source._initial_snapshot
    if initial is None and source.config.snapshot != "never" and (checkpoint is None or "snapshot" in checkpoint):
        progress = (checkpoint or {}).get("snapshot") or {}
        return {"kind": "initial", "table": progress.get("table"), "tables_done": None, "tables_total": None,
                "after": progress.get("after"), "resync": bool(progress.get("replace"))}
    if initial is not None:
        progress = dict(initial.progress)  # a copy: the reader's thread updates it per chunk
        tables = [str(t) for t in initial.tables]
        table = progress.get("table")
        done = tables.index(table) if table in tables else 0
        return {"kind": "initial", "table": table, "tables_done": done, "tables_total": len(tables),
                "after": progress.get("after"), "resync": bool(progress.get("replace"))}
    inc = source._incremental
    if inc is not None and (inc.table is not None or inc.queue):
        queue = list(inc.queue)
        return {"kind": "incremental", "table": inc.table, "tables_done": None, "tables_total": None,
                "tables_queued": queue, "after": inc.after, "resync": bool(inc.resyncing)}
    return None


class LagCounter:
    """``lag(checkpoint)``: (count, None) or (None, why); probes the server at most every LAG_TTL_S seconds."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self._lock = threading.Lock()
        self._server: tuple[float, GtidSet | None, str | None] = (0.0, None, None)

    def _server_set(self) -> tuple[GtidSet | None, str | None]:
        with self._lock:
            at, gtids, why = self._server
            if time.monotonic() - at < LAG_TTL_S:
                return gtids, why
            host = self.source.host
            if host is None:
                gtids, why = None, "the reader has not connected to the server yet"
            else:
                try:
                    gtids, why = self.source._prober(host).gtid_state, None
                except CdcError as exc:
                    gtids, why = None, f"cannot ask {host} for its GTID set: {type(exc).__name__}"
            self._server = (time.monotonic(), gtids, why)
            return gtids, why

    def lag(self, checkpoint: dict[str, Any] | None) -> tuple[int | None, str | None]:
        if not checkpoint or checkpoint.get("gtid_set") is None:
            return None, "no checkpoint in the stream yet"
        server, why = self._server_set()
        if server is None:
            return None, why
        try:
            have = GtidSet.parse(checkpoint["gtid_set"])
            return count(server - have, have), None
        except CdcError as exc:
            return None, f"the server's GTID set and the checkpoint's do not compare: {type(exc).__name__}"


def observe(source: Any, lag: LagCounter, checkpoint: dict[str, Any] | None) -> Observation:
    n, why = lag.lag(checkpoint)
    return Observation(snapshot=snapshot_state(source, checkpoint), open_transactions=None, lag_transactions=n,
                       lag_transactions_why=why)
