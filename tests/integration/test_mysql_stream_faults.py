"""MySqlSource against a real MariaDB and MySQL 9.7 (``mysql_source``), the reader faults: TRUNCATE as an ``op: "t"``
transaction, partial row images and statement-format DML refused with a named stop."""

from __future__ import annotations

import pytest

from cdc.stream.events import Begin, Commit, SchemaChange, expand
from readers.mysql.position import GtidSet
from tests.fixtures.services import documented_capture_user
from tests.integration.mysql_helpers import collect, gtid_since, make_source, marks, source_for, transactions

pytestmark = pytest.mark.mysql


def _read_to_end(server, src, timeout: float = 20):
    end = GtidSet.parse(server.gtid_binlog_pos())
    return collect(src, lambda evs: src.state.issuperset(end), timeout=timeout)


def test_truncate_is_its_own_transaction_with_one_t_change(mysql_source, tmp_source_db):
    db, q = tmp_source_db, mysql_source.query
    q(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(10))")
    q(f"CREATE TABLE `{db}`.never_written (id INT PRIMARY KEY)")
    src = source_for(mysql_source, [f"{db}.t", f"{db}.never_written"])
    src.start(None)
    try:
        q(f"INSERT INTO `{db}`.t VALUES (1, 'a'), (2, 'b')")
        q(f"TRUNCATE TABLE `{db}`.t")
        q(f"TRUNCATE `{db}`.never_written")
        q("CREATE TABLE IF NOT EXISTS test.not_captured (id INT PRIMARY KEY)")
        q("TRUNCATE TABLE test.not_captured")
        q(f"INSERT INTO `{db}`.t VALUES (3, 'c')")
        events = _read_to_end(mysql_source, src)
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
    commit = next(e for e in events if isinstance(e, Commit) and e.txid == txs[1][0])
    again = source_for(mysql_source, [f"{db}.t", f"{db}.never_written"])
    again.start(commit.resume)
    try:
        rest = _read_to_end(mysql_source, again)
    finally:
        again.close()
    assert [[c.op for c in rows] for _, rows in transactions(rest)] == [["t"], ["c"]]


def _events_until_error(src, timeout: float = 20):
    """Iterate events() until it raises (returned with the events before it); bounded by ``timeout``."""
    import time
    out, deadline = [], time.monotonic() + timeout
    try:
        for ev in expand(src.events()):
            out.append(ev)
            if time.monotonic() > deadline:
                raise AssertionError(f"no error within {timeout}s; last events {out[-3:]}")
    except Exception as exc:  # noqa: BLE001 - returned to the test
        return out, exc
    raise AssertionError("events() ended without an error")


@pytest.mark.parametrize("image", ["MINIMAL", "NOBLOB"])
def test_a_partial_row_image_from_one_session_is_a_named_stop(mysql_source, tmp_source_db, image):
    from readers.mysql.errors import PartialRowImage

    db, q = tmp_source_db, mysql_source.query
    q(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(10), doc TEXT)")
    q(f"INSERT INTO `{db}`.t VALUES (1, 'a', 'x'), (2, 'b', 'y')")
    src = source_for(mysql_source, [f"{db}.t"])
    src.start(None)
    good_state = src.state
    conn = mysql_source.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"INSERT INTO `{db}`.t VALUES (3, 'c', 'z')")  # FULL: published
            before = mysql_source.gtid_binlog_pos()
            cur.execute(f"SET SESSION binlog_row_image={image}")
            cur.execute(f"UPDATE `{db}`.t SET v = 'changed' WHERE id = 1")
    finally:
        conn.close()
    bad_gtid = gtid_since(mysql_source, before)
    try:
        events, err = _events_until_error(src)
    finally:
        src.close()
    assert isinstance(err, PartialRowImage), repr(err)
    assert [[c.op for c in rows] for _, rows in transactions(events)] == [["c"]]
    assert not any(isinstance(e, Begin) and e.txid == bad_gtid for e in events), "the bad transaction began"
    msg = str(err)
    assert f"{db}.t" in msg and bad_gtid in msg and "binlog_row_image=FULL" in msg and err.gtid == bad_gtid
    file, _, pos = err.position.rpartition(":")
    assert file and int(pos) > 0 and err.position in msg
    assert "doc" in err.missing
    assert src.state.issuperset(good_state) and not src.state.issuperset(GtidSet.parse(bad_gtid))


def test_statement_format_dml_on_a_captured_table_is_a_named_stop(mysql_source, tmp_source_db):
    from readers.mysql.errors import StatementFormatDml

    db, q = tmp_source_db, mysql_source.query
    q(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(10))")
    q(f"CREATE TABLE `{db}`.other (id INT PRIMARY KEY)")
    src = source_for(mysql_source, [f"{db}.t"])
    src.start(None)
    conn = mysql_source.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION binlog_format=STATEMENT")
            cur.execute(f"INSERT INTO `{db}`.other VALUES (1)")  # not captured: passes
            cur.execute("SET SESSION binlog_format=ROW")
            cur.execute(f"INSERT INTO `{db}`.t VALUES (1, 'row')")  # published
            before = mysql_source.gtid_binlog_pos()
            cur.execute("SET SESSION binlog_format=STATEMENT")
            cur.execute(f"UPDATE `{db}`.t SET v = 'stmt' WHERE id = 1")
    finally:
        conn.close()
    bad_gtid = gtid_since(mysql_source, before)
    try:
        events, err = _events_until_error(src)
    finally:
        src.close()
    assert isinstance(err, StatementFormatDml), repr(err)
    assert [[c.after for c in rows] for _, rows in transactions(events)] == [[{"id": 1, "v": "row"}]]
    assert err.table == f"{db}.t" and err.gtid == bad_gtid and "binlog_format=ROW" in str(err)
    assert bad_gtid in str(err) and "UPDATE" in str(err)


@pytest.fixture(params=["mariadb", "mysql97"])
def pair(request):
    """A fresh (primary, replica) of each flavour; on both servers the capture user made by the documented
    statements of the flavour (not replicated: made on each)."""
    primary, replica = request.getfixturevalue(f"{request.param}_pair")
    for server in (primary, replica):
        documented_capture_user(server, *CAPTURE)
    return primary, replica


CAPTURE = ("cdc_doc", "doc-pw")


def test_settings_are_checked_on_every_candidate_at_start_and_on_the_new_primary_after_failover(pair):
    from readers.mysql.errors import SettingsRefused

    primary, replica = pair
    primary.query("CREATE TABLE test.log (id INT PRIMARY KEY)")
    replica.wait_caught_up(primary)
    hosts = [primary.address, replica.address]
    login = {"user": CAPTURE[0], "password": CAPTURE[1]}
    # (1) at start: the candidate's row image is MINIMAL -> refused, naming the candidate and the setting
    replica.query("SET GLOBAL binlog_row_image = 'MINIMAL'")
    with pytest.raises(SettingsRefused) as err:
        make_source(hosts, ["test.*"], **login).start(None)
    assert replica.address in str(err.value) and "binlog_row_image is MINIMAL" in str(err.value)
    assert "SET GLOBAL binlog_row_image=FULL" in str(err.value)
    # (2) fine at start, misconfigured later: the failover to it is refused before anything is read there
    replica.query("SET GLOBAL binlog_row_image = 'FULL'")
    src = make_source(hosts, ["test.*"], reconnect_attempts=30, **login)
    src.start(None)
    events: list = []
    try:
        primary.query("INSERT INTO test.log VALUES (1)")
        for ev in expand(src.events()):
            events.append(ev)
            if marks(events) == [1]:
                break
        replica.wait_caught_up(primary)
        replica.query("SET GLOBAL binlog_row_image = 'NOBLOB'")
        primary.stop()
        replica.promote()
        replica.query("INSERT INTO test.log VALUES (2)")
        with pytest.raises(SettingsRefused) as err:
            for ev in expand(src.events()):
                events.append(ev)
                assert marks(events) == [1], "a transaction was read from the misconfigured new primary"
    finally:
        src.close()
    assert replica.address in str(err.value) and "binlog_row_image is NOBLOB" in str(err.value)
    assert src.metrics._m.failovers.labels("src")._value.get() == 1


def test_a_partition_truncate_is_a_named_stop(mysql_source, tmp_source_db):
    from readers.mysql.errors import UnloggedRowChange

    db, q = tmp_source_db, mysql_source.query
    q(f"CREATE TABLE `{db}`.p (id INT PRIMARY KEY) PARTITION BY RANGE (id) "
      "(PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)")
    src = source_for(mysql_source, [f"{db}.p"])
    src.start(None)
    q(f"INSERT INTO `{db}`.p VALUES (1), (20)")
    before = mysql_source.gtid_binlog_pos()
    q(f"ALTER TABLE `{db}`.p TRUNCATE PARTITION p0")
    bad = gtid_since(mysql_source, before)
    try:
        events, err = _events_until_error(src)
    finally:
        src.close()
    assert isinstance(err, UnloggedRowChange), repr(err)
    assert err.table == f"{db}.p" and err.gtid == bad and "TRUNCATE PARTITION" in str(err)
    assert [[c.op for c in rows] for _, rows in transactions(events)] == [["c", "c"]]
    assert not src.state.issuperset(GtidSet.parse(bad))
