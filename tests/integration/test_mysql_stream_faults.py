"""MySqlSource against a real MariaDB, issue 13's reader faults: TRUNCATE as an ``op: "t"``
transaction, partial row images and statement-format DML refused with a named stop."""

from __future__ import annotations

import pytest

from cdc.events import Begin, Change, Commit, SchemaChange
from readers.mysql.position import GtidSet
from tests.integration.mysql_helpers import collect, make_source, transactions

pytestmark = pytest.mark.mysql


def _read_to_end(server, src, timeout: float = 20):
    end = GtidSet.parse(server.gtid_binlog_pos())
    return collect(src, lambda evs: src.state.issuperset(end), timeout=timeout)


def test_truncate_is_its_own_transaction_with_one_t_change(mariadb_primary, tmp_mysql_db):
    db, q = tmp_mysql_db, mariadb_primary.query
    q(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(10))")
    q(f"CREATE TABLE `{db}`.never_written (id INT PRIMARY KEY)")
    src = make_source([mariadb_primary.address], [f"{db}.t", f"{db}.never_written"])
    src.start(None)
    try:
        q(f"INSERT INTO `{db}`.t VALUES (1, 'a'), (2, 'b')")
        q(f"TRUNCATE TABLE `{db}`.t")
        q(f"TRUNCATE `{db}`.never_written")
        q("CREATE TABLE IF NOT EXISTS test.not_captured (id INT PRIMARY KEY)")
        q("TRUNCATE TABLE test.not_captured")
        q(f"INSERT INTO `{db}`.t VALUES (3, 'c')")
        events = _read_to_end(mariadb_primary, src)
    finally:
        src.close()
    assert not [e for e in events if isinstance(e, SchemaChange) and "TRUNCATE" in (e.ddl or "").upper()]
    txs = transactions(events)
    assert [[c.op for c in rows] for _, rows in txs] == [["c", "c"], ["t"], ["t"], ["c"]]
    trunc = txs[1][1][0]
    assert str(trunc.table) == f"{db}.t" and trunc.before is None and trunc.after is None
    assert trunc.source["gtid"] == txs[1][0] and trunc.source["file"] and trunc.source["pos"] > 0
    assert trunc.schema is not None and trunc.schema.primary_key == ("id",)
    never = txs[2][1][0]  # no row seen: its definition comes from information_schema
    assert str(never.table) == f"{db}.never_written" and never.schema.primary_key == ("id",)
    # the Commit carries the state after the TRUNCATE's GTID: a restart there reads only the last insert
    commit = [e for e in events if isinstance(e, Commit) and e.txid == txs[1][0]][0]
    again = make_source([mariadb_primary.address], [f"{db}.t", f"{db}.never_written"])
    again.start(commit.resume)
    try:
        rest = _read_to_end(mariadb_primary, again)
    finally:
        again.close()
    assert [[c.op for c in rows] for _, rows in transactions(rest)] == [["t"], ["c"]]
