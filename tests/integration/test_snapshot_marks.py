"""A real MariaDB and MySQL 9.7 (``mysql_source``) initial snapshot marks its first and last rows ``snapshot: first`` / ``last``
(cdc.stream.snapshot_marks; Debezium's source.snapshot flag), across chunks and an empty table at the end, and
its rows carry the binlog ``file``/``pos`` of the snapshot's start."""

from __future__ import annotations

import pytest

from cdc.stream.events import Change, Heartbeat
from tests.integration.mysql_helpers import collect, is_mysql, source_for

pytestmark = pytest.mark.mysql


def test_initial_snapshot_marks_its_first_and_last_rows(mysql_source, tmp_source_db):
    db, q = tmp_source_db, mysql_source.query
    for table in ("a", "b", "c"):
        q(f"CREATE TABLE `{db}`.{table} (id INT PRIMARY KEY)")
    q(f"INSERT INTO `{db}`.a VALUES " + ", ".join(f"({i})" for i in range(1, 8)))  # 3 chunks of 3
    q(f"INSERT INTO `{db}`.b VALUES (1), (2), (3)")  # a full chunk, then an empty read
    src = source_for(mysql_source, [f"{db}.*"], snapshot="initial", snapshot_chunk_rows=3)
    src.start(None)
    try:
        events = collect(src, lambda evs: isinstance(evs[-1], Heartbeat) and "snapshot" not in (evs[-1].resume or {}))
    finally:
        src.close()
    snap = [c for c in events if isinstance(c, Change) and c.op == "r"]
    rows = [(str(c.table).split(".")[1], c.after["id"], c.source.get("snapshot")) for c in snap]
    # every snapshot row carries the binlog position the consistent read began at, as Debezium's do
    at = {(c.source["file"], c.source["pos"]) for c in snap}
    status = "SHOW BINARY LOG STATUS" if is_mysql(mysql_source) else "SHOW MASTER STATUS"  # MySQL 8.4+ spelling
    assert len(at) == 1 and next(iter(at))[0] == mysql_source.query(status)[0][0]
    assert [(t, i) for t, i, _ in rows] == [("a", i) for i in range(1, 8)] + [("b", 1), ("b", 2), ("b", 3)]
    assert [m for _, _, m in rows] == ["first"] + [None] * 8 + ["last"]  # table c is empty: b holds the last
