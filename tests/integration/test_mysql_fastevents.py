"""On a real MariaDB, the events the reader decodes below the library (readers/mysql/binlog/fastevents.py) give the same
stream as the library's: a table's TABLE_MAP seen again is the cached definition until a DDL changes it, after a
binlog rotation too, and every transaction's GTID and commit land in the state."""

from __future__ import annotations

import pytest

from cdc.stream.events import Begin, Commit
from readers.mysql.binlog import fastevents
from readers.mysql.position import GtidSet
from tests.integration.mysql_helpers import collect, make_source, transactions

pytestmark = pytest.mark.mysql


def test_table_map_cache_follows_ddl_and_rotation(mariadb_primary, tmp_mysql_db, monkeypatch):
    db, q = tmp_mysql_db, mariadb_primary.query
    q(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, a VARCHAR(10))")
    start = mariadb_primary.gtid_binlog_pos()
    for i in range(1, 4):
        q(f"INSERT INTO `{db}`.t VALUES ({i}, 'x{i}')")
    q(f"ALTER TABLE `{db}`.t ADD COLUMN b INT DEFAULT 5")
    q(f"INSERT INTO `{db}`.t VALUES (4, 'x4', 40)")
    q(f"INSERT INTO `{db}`.t VALUES (5, 'x5', 50)")
    q("FLUSH BINARY LOGS")
    q(f"UPDATE `{db}`.t SET a = 'y' WHERE id = 5")
    q(f"ALTER TABLE `{db}`.t MODIFY COLUMN a VARCHAR(20)")
    q(f"DELETE FROM `{db}`.t WHERE id = 1")
    end = GtidSet.parse(mariadb_primary.gtid_binlog_pos())

    seen: list[type] = []
    fetch = fastevents.FastStream.fetchone

    def counting(self):
        ev = fetch(self)
        seen.append(type(ev))
        return ev

    monkeypatch.setattr(fastevents.FastStream, "fetchone", counting)
    src = make_source([mariadb_primary.address], [f"{db}.t"], snapshot="never")
    try:
        src.start({"gtid_set": start})
        events = collect(src, lambda evs: src.state.issuperset(end), timeout=60)
    finally:
        src.close()
    txs = transactions(events)
    rows = [(c.op, c.before, c.after) for _, changes in txs for c in changes]
    assert rows == [
        ("c", None, {"id": 1, "a": "x1"}), ("c", None, {"id": 2, "a": "x2"}), ("c", None, {"id": 3, "a": "x3"}),
        ("c", None, {"id": 4, "a": "x4", "b": 40}), ("c", None, {"id": 5, "a": "x5", "b": 50}),
        ("u", {"id": 5, "a": "x5", "b": 50}, {"id": 5, "a": "y", "b": 50}),
        ("d", {"id": 1, "a": "x1", "b": 5}, None)]
    schemas = [c.schema for _, changes in txs for c in changes]
    assert schemas[0] is schemas[2] and schemas[3] is schemas[4], "one schema per definition"
    assert [c.type for c in schemas[0].columns] != [c.type for c in schemas[3].columns]
    assert [c.type for c in schemas[5].columns] != [c.type for c in schemas[6].columns]
    commits = [e for e in events if type(e) is Commit]
    assert [e.txid for e in events if type(e) is Begin] == [c.txid for c in commits] == [g for g, _ in txs]
    assert GtidSet.parse(commits[-1].resume["gtid_set"]).issuperset(end)
    # the per-transaction events came from the bytes: every GTID and XID, the TABLE_MAPs after the first of each
    assert seen.count(fastevents.FastGtid) >= 9 and seen.count(fastevents.FastXid) == 7
    assert seen.count(fastevents.FastTableMap) >= 3
