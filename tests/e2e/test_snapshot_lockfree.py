"""The initial snapshot takes no global lock and is exact, on a real MariaDB and MySQL 9.7 (``mysql_source``).

A writer commits updates, inserts and deletes on the snapshotted table the whole time, while a monitor polls
``SHOW PROCESSLIST`` for any session waiting on a global read lock or backup lock (FLUSH TABLES WITH READ
LOCK, LOCK INSTANCE FOR BACKUP). The reader is abandoned mid-snapshot (as a kill -9 leaves it: only what
reached a Commit counts) and started again from that Commit's resume state. The events are then folded
STRICTLY: an insert of a key already there, or an update/delete of a key not there, fails (a row applied
twice or lost), and the fold must equal the source.
"""

from __future__ import annotations

import threading

import pytest

from cdc.stream.events import Change, Commit, Heartbeat
from tests.e2e.test_snapshot import Writer, caught_up, load, make_source, pump, source_rows

pytestmark = [pytest.mark.slow, pytest.mark.mysql]

LOCK_WAITS = ("Waiting for global read lock", "Waiting for backup lock", "Waiting for commit lock")


class LockMonitor(threading.Thread):
    """Polls SHOW PROCESSLIST until stopped; keeps every state naming a global lock wait."""

    def __init__(self, primary):
        super().__init__(daemon=True)
        self.conn, self.stop, self.seen, self.polls = primary.connect(None), threading.Event(), [], 0

    def run(self):
        with self.conn.cursor() as cur:
            while not self.stop.wait(0.01):
                cur.execute("SHOW FULL PROCESSLIST")
                self.seen += [r[6] for r in cur.fetchall() if r[6] and str(r[6]).startswith(LOCK_WAITS)]
                self.polls += 1
        self.conn.close()


def fold_strict(events, table: dict) -> None:
    for e in events:
        if not isinstance(e, Change) or e.table.table != "t":
            continue
        if e.op == "r":
            assert e.after["id"] not in table, f"snapshot row {e.after['id']} sent twice"
            table[e.after["id"]] = e.after
        elif e.op == "c":
            assert e.after["id"] not in table, f"insert of {e.after['id']}, which the snapshot already holds"
            table[e.after["id"]] = e.after
        elif e.op == "u":
            assert table.get(e.before["id"]) == e.before, f"update of {e.before['id']} from a state the target lacks"
            del table[e.before["id"]]
            table[e.after["id"]] = e.after
        elif e.op == "d":
            assert table.pop(e.before["id"], None) == e.before, f"delete of {e.before['id']}, not as the target holds it"


def test_initial_snapshot_under_writes_takes_no_lock_and_is_exact_across_a_restart(mysql_source, tmp_source_db):
    load(mysql_source, tmp_source_db)
    writer, monitor = Writer(mysql_source, tmp_source_db), LockMonitor(mysql_source)
    writer.start()
    monitor.start()
    tables = [f"{tmp_source_db}.t"]
    try:
        first = make_source(mysql_source, tables, snapshot="initial", snapshot_chunk_rows=300)
        first.start(None)
        part1 = pump(first, lambda evs: sum(isinstance(e, Commit) for e in evs) == 4)  # 4 chunks out, then "kill"
        first.close()
        resume = part1[-1].resume
        assert resume["snapshot"]["table"] == tables[0] and 900 < resume["snapshot"]["after"][0] < 3000  # mid-table
        second = make_source(mysql_source, tables, snapshot="initial", snapshot_chunk_rows=300)
        second.start(resume)
        part2 = pump(second, lambda evs: isinstance(evs[-1], Heartbeat) and "snapshot" not in (evs[-1].resume or {}))
        part2 += pump(second, lambda evs: sum(isinstance(e, Commit) for e in evs) >= 20)  # streaming under writes
        writer.stop.set()
        writer.join(10)
        part2 += pump(second, caught_up(second, mysql_source))
        second.close()
    finally:
        writer.stop.set()
        monitor.stop.set()
        monitor.join(10)
    assert writer.count > 100 and monitor.polls > 10
    assert monitor.seen == []  # no session ever waited on a global lock
    table: dict = {}
    fold_strict(part1 + part2, table)
    assert table == source_rows(mysql_source, tmp_source_db)
