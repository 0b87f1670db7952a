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
from readers.mysql.connection import binlog_status
from readers.mysql.errors import Divergence
from readers.mysql.locate import locate
from readers.mysql.position import GtidSet
from tests.fixtures.services import documented_capture_user
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


CAPTURE = ("cdc_doc", "doc-pw")  # the capture user of these tests: made by the documented statements


@pytest.fixture(params=["mariadb", "mysql97"])
def pair(request):
    """A fresh (primary, replica) of each flavour: ``mariadb_pair`` or ``mysql97_pair``; on both servers the capture
    user ``CAPTURE`` made by the documented statements of the flavour (not replicated: made on each)."""
    primary, replica = request.getfixturevalue(f"{request.param}_pair")
    for server in (primary, replica):
        documented_capture_user(server, *CAPTURE)
    return primary, replica


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
    src = make_source([primary.address, replica.address], ["test.*"], reconnect_attempts=20,
                      user=CAPTURE[0], password=CAPTURE[1])
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
    src = make_source([primary.address, replica.address], ["test.*"], reconnect_attempts=20,
                      user=CAPTURE[0], password=CAPTURE[1])
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


def _binlog_end(server) -> tuple[str, int]:
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            return binlog_status(cur)
    finally:
        conn.close()


def test_gtid_locate_maps_every_transaction_end_to_the_replica(pair):
    """After each transaction (a DDL, plain ones, a binlog rotation; on MySQL also a tagged GTID and a compressed
    transaction) the primary's binlog end maps to the replica's binlog end at that moment, with the primary's
    GTID state; as the capture user the documented statements make."""
    primary, replica = pair
    points = []  # (primary file:pos, GTID state, replica file:pos), each taken with the replica caught up

    def mark():
        replica.wait_caught_up(primary)
        points.append((_binlog_end(primary), primary.gtid_binlog_pos(), _binlog_end(replica)))

    _setup(primary)
    mark()
    _write(primary, range(1, 3))
    mark()
    conn = primary.connect()
    try:
        with conn.cursor() as cur:
            if is_mysql(primary):
                cur.execute("SET SESSION gtid_next = 'AUTOMATIC:locate'")
                cur.execute("INSERT INTO test.log VALUES (10, 'tagged')")
                cur.execute("COMMIT")
                cur.execute("SET SESSION gtid_next = 'AUTOMATIC'")
                mark()
                cur.execute("SET SESSION binlog_transaction_compression = ON")
                cur.execute("INSERT INTO test.log VALUES (11, 'compressed')")
                cur.execute("COMMIT")
                mark()  # the primary's end is the payload's end
            cur.execute("FLUSH BINARY LOGS")
    finally:
        conn.close()
    mark()  # the new file's header: its Previous_gtids / Gtid_list state, the replica's last transaction
    _write(primary, range(20, 22))
    mark()
    got = [locate(primary.address, file, pos, replica.address, *CAPTURE) for (file, pos), _, _ in points]
    want = [{"gtid_set": state, "file": file, "pos": pos} for _, state, (file, pos) in points]
    assert [dict(g, gtid_set=str(GtidSet.parse(g["gtid_set"]))) for g in got] == \
        [dict(w, gtid_set=str(GtidSet.parse(w["gtid_set"]))) for w in want]
    assert len({p[0][0] for p in points}) == 2  # the points span the rotation
