"""snapshot: when_needed on a real MariaDB and MySQL 9.7 (a fresh server of each, the documented capture user), at
the reader: the re-snapshot replaces each table once, also
across a restart in the middle of it (no table truncated after its first chunk is out)."""

from __future__ import annotations

import time

import pytest

from cdc.stream.events import Begin, Change, Commit, Heartbeat, expand
from readers.mysql.errors import BinlogPurged
from tests.fixtures.services import documented_capture_user
from tests.integration.mysql_helpers import make_source

pytestmark = pytest.mark.mysql


def purge_all_but_newest(m) -> str:
    m.query("FLUSH BINARY LOGS")
    newest = m.query("SHOW BINARY LOGS")[-1][0]
    deadline = time.monotonic() + 30  # a log still needed for crash recovery stays a moment
    while [r[0] for r in m.query("SHOW BINARY LOGS")] != [newest] and time.monotonic() < deadline:
        m.query(f"PURGE BINARY LOGS TO '{newest}'")
        time.sleep(0.3)
    assert [r[0] for r in m.query("SHOW BINARY LOGS")] == [newest]
    return newest


def read(src, stop_after_commits: int | None = None, timeout: float = 30) -> tuple[list, dict | None]:
    """Events until the snapshot's closing Heartbeat (or ``stop_after_commits`` Commits); the last resume."""
    out, resume, commits, deadline = [], None, 0, time.monotonic() + timeout
    for ev in expand(src.events()):
        out.append(ev)
        if isinstance(ev, Commit):
            resume, commits = ev.resume, commits + 1
            if commits == stop_after_commits:
                break
        if isinstance(ev, Heartbeat) and "snapshot" not in (ev.resume or {}):
            resume = ev.resume
            break
        assert time.monotonic() < deadline, f"timed out after {len(out)} events"
    return out, resume


@pytest.fixture(params=["mariadb", "mysql97"])
def alone(request):
    """A fresh server of each flavour (its binlogs get purged) with the documented capture user ``CAPTURE``."""
    server = request.getfixturevalue(f"{request.param}_alone")
    documented_capture_user(server, *CAPTURE)
    return server


CAPTURE = ("cdc_doc", "doc-pw")


def test_resnapshot_replaces_each_table_once_across_a_restart(alone):
    m, q = alone, alone.query
    login = {"user": CAPTURE[0], "password": CAPTURE[1]}
    q("CREATE DATABASE shop")
    q("CREATE TABLE shop.a (id INT PRIMARY KEY, v INT)")
    q("CREATE TABLE shop.b (id INT PRIMARY KEY, v INT)")
    q("INSERT INTO shop.a VALUES " + ", ".join(f"({i}, 0)" for i in range(1, 11)))
    q("INSERT INTO shop.b VALUES " + ", ".join(f"({i}, 0)" for i in range(1, 11)))
    checkpoint = {"gtid_set": m.gtid_binlog_pos()}
    # the target holds the tables at the checkpoint; then, with the log gone, rows are deleted and updated
    target = {("a", i): {"id": i, "v": 0} for i in range(1, 11)} | {("b", i): {"id": i, "v": 0} for i in range(1, 11)}
    q("DELETE FROM shop.a WHERE id > 7")
    q("DELETE FROM shop.b WHERE id <= 3")
    q("UPDATE shop.b SET v = 5 WHERE id = 9")
    purge_all_but_newest(m)

    with pytest.raises(BinlogPurged):
        make_source([m.address], ["shop.*"], **login).start(dict(checkpoint))

    first = make_source([m.address], ["shop.*"], snapshot="when_needed", snapshot_chunk_rows=3, **login)
    first.start(dict(checkpoint))
    assert first.metrics._m.resnapshots.labels("src")._value.get() == 1
    part1, resume = read(first, stop_after_commits=2)  # table a's first two chunks, then a crash
    first.close()
    assert "snapshot" in resume and resume["snapshot"]["replace"] is True

    second = make_source([m.address], ["shop.*"], snapshot="when_needed", snapshot_chunk_rows=3, **login)
    second.start(resume)  # continues the re-snapshot, not a new one
    assert second.metrics._m.resnapshots.labels("src")._value.get() == 0
    part2, final = read(second)
    second.close()
    assert final is not None and "snapshot" not in final

    ops = [(e.table.table, e.op) for e in part1 + part2 if isinstance(e, Change)]
    assert [t for t, op in ops if op == "t"] == ["a", "b"]  # each table replaced once, before its rows
    assert ops.index(("a", "t")) == 0 and ops.index(("b", "t")) == ops.index(next(o for o in ops if o[0] == "b"))
    assert sum(isinstance(e, Begin) for e in part1 + part2) == sum(isinstance(e, Commit) for e in part1 + part2)
    for e in part1 + part2:  # fold as every consumer does: t empties the table, r upserts
        if isinstance(e, Change) and e.op == "t":
            target = {k: v for k, v in target.items() if k[0] != e.table.table}
        elif isinstance(e, Change):
            target[(e.table.table, e.after["id"])] = e.after
    source = {(t, i): {"id": i, "v": v} for t in ("a", "b") for i, v in q(f"SELECT id, v FROM shop.{t}")}
    assert target == source
