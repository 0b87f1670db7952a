"""Failover across ``hosts``: clean promotion continues exactly once; a new primary
lacking published transactions stops with the divergence error; gtid locate maps positions.

The failover tests run on a fresh pair of each flavour (``pair``): two MariaDB servers (GTID replication) and
two MySQL 9.7 servers (a replica with ``SOURCE_AUTO_POSITION=1``); the primary is killed (-9) and the replica
promoted."""

from __future__ import annotations

import threading
import time

import pytest

from cdc.stream.events import expand
from readers.mysql.errors import Divergence
from readers.mysql.locate import locate
from readers.mysql.position import GtidSet
from tests.integration.mysql_helpers import is_mysql, make_source, marks, transactions

pytestmark = pytest.mark.mysql


def _setup(primary):
    primary.query("CREATE TABLE test.log (id INT PRIMARY KEY, w VARCHAR(20))")
    primary.query("CREATE TABLE test.acct (id INT PRIMARY KEY, bal INT)")


def _write(server, ids):
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            for i in ids:
                cur.execute("BEGIN")
                cur.execute("INSERT INTO test.log VALUES (%s, 'w')", (i,))
                cur.execute("INSERT INTO test.acct VALUES (%s, %s)", (i, i * 10))
                cur.execute("COMMIT")
    finally:
        conn.close()


@pytest.fixture(params=["mariadb", "mysql97"])
def pair(request):
    """A fresh (primary, replica) of each flavour: ``mariadb_pair`` or ``mysql97_pair``."""
    return request.getfixturevalue(f"{request.param}_pair")


def _drain(src, events, until, timeout):
    deadline = time.monotonic() + timeout
    it = expand(src.events())
    for ev in it:
        events.append(ev)
        if until(events) or time.monotonic() > deadline:
            break
    return it


def test_clean_failover_continues_exactly_once(pair):
    primary, replica = pair
    _setup(primary)
    src = make_source([primary.address, replica.address], ["test.*"], reconnect_attempts=20)
    src.start(None)
    events: list = []
    _write(primary, range(1, 51))
    replica.wait_caught_up(primary)
    done = threading.Event()

    def failover():
        primary.kill()
        replica.promote()
        _write(replica, range(51, 101))
        done.set()

    t = threading.Thread(target=failover)
    try:
        deadline = time.monotonic() + 60
        started = False
        for ev in expand(src.events()):
            events.append(ev)
            if not started and len(marks(events)) >= 50:
                started = True
                t.start()
            if done.is_set() and len(marks(events)) >= 100 or time.monotonic() > deadline:
                break
    finally:
        src.close()
        if started:
            t.join(30)
    got = marks(events)
    assert got == list(range(1, 101)), f"missing/duplicated: {sorted(set(range(1, 101)) ^ set(got))[:10]}"
    assert src.host == replica.address
    assert src.metrics._m.failovers.labels("src")._value.get() == 1
    assert all(len(rows) == 2 for _, rows in transactions(events))


def test_new_primary_lacking_published_transactions_is_divergence(pair):
    primary, replica = pair
    _setup(primary)
    replica.wait_caught_up(primary)
    replica.query("STOP REPLICA" if is_mysql(replica) else "STOP SLAVE")  # the replica will miss what follows
    src = make_source([primary.address, replica.address], ["test.*"], reconnect_attempts=20)
    src.start(None)
    _write(primary, range(1, 6))
    published = GtidSet.parse(primary.gtid_binlog_pos())
    events: list = []
    with pytest.raises(Divergence) as info:
        try:
            for ev in expand(src.events()):
                events.append(ev)
                if src.state.issuperset(published) and primary.running:
                    primary.kill()
                    replica.promote()
        finally:
            src.close()
    assert marks(events) == [1, 2, 3, 4, 5]
    assert info.value.host == replica.address
    missing = GtidSet.parse(info.value.missing)
    assert str(missing) and published.issuperset(missing), (missing, published)


def test_gtid_locate_maps_a_position_to_the_replica(mariadb_pair):
    primary, replica = mariadb_pair
    _setup(primary)
    _write(primary, range(1, 4))
    replica.wait_caught_up(primary)
    rows = primary.query("SHOW BINLOG EVENTS IN 'mariadb-bin.000001'")
    xids = [r for r in rows if r[2] == "Xid"]
    pos = xids[1][4]  # end of the second transaction
    result = locate(primary.address, "mariadb-bin.000001", pos, replica.address, "cdc", "cdc")
    state = GtidSet.parse(result["gtid_set"])
    assert state.domains()[0][1] == int(primary.gtid_binlog_pos().split("-")[2]) - 1
    rrows = replica.query(f"SHOW BINLOG EVENTS IN '{result['file']}'")
    assert any(r[4] == result["pos"] and r[2] == "Xid" for r in rrows)
