"""MySqlSource against a real MariaDB and MySQL 9.7 (``mysql_source``): transactions, types, DDL, rollback,
resume, bad input."""

from __future__ import annotations

import pytest

from cdc.stream.events import Commit, SchemaChange, expand
from readers.mysql.errors import AuthenticationFailed, BinlogPurged, SettingsRefused, SourceUnavailable
from readers.mysql.position import GtidSet
from tests.fixtures.services import documented_capture_user
from tests.integration.mysql_helpers import collect, fill, is_mysql, make_source, marks, source_for, transactions

pytestmark = pytest.mark.mysql


def test_stream_types_ddl_rollback_and_resume(mysql_source, tmp_source_db):
    db = tmp_source_db
    src = source_for(mysql_source, [f"{db}.*"])
    src.start(None)
    start_state = src.state
    q = mysql_source.query
    q(f"CREATE TABLE `{db}`.log (id INT PRIMARY KEY, d DECIMAL(10,2), ts TIMESTAMP(3) NULL, dt DATETIME,"
      f" tm TIME(2), bl VARBINARY(8), e ENUM('x','y'), s SET('p','q'), bt BIT(5), n VARCHAR(5) NOT NULL)")
    q(f"CREATE TABLE test.not_captured_{db[-6:]} (id INT PRIMARY KEY)")
    q(f"INSERT INTO test.not_captured_{db[-6:]} VALUES (1)")
    conn = mysql_source.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute(f"INSERT INTO `{db}`.log VALUES (1, 3.14, '2024-01-02 03:04:05.123', '2024-01-02 03:04:05',"
                        " '-838:00:00', x'00ff', 'y', 'q,p', b'10101', 'héé')")
            cur.execute(f"INSERT INTO `{db}`.log (id, n) VALUES (2, 'a')")
            cur.execute("COMMIT")
            cur.execute("BEGIN")
            cur.execute(f"INSERT INTO `{db}`.log (id, n) VALUES (666, 'rb')")
            cur.execute("ROLLBACK")
            cur.execute(f"UPDATE `{db}`.log SET n='b' WHERE id=2")
            cur.execute(f"DELETE FROM `{db}`.log WHERE id=1")
            cur.execute("COMMIT")
    finally:
        conn.close()
    end = GtidSet.parse(mysql_source.gtid_binlog_pos())
    try:
        events = collect(src, lambda evs: src.state.issuperset(end), timeout=20)
    finally:
        src.close()

    ddl = [e for e in events if isinstance(e, SchemaChange)]
    assert ddl[0].table.table == "log" and ddl[0].schema.primary_key == ("id",)
    txs = transactions(events)
    assert [len(rows) for _, rows in txs] == [2, 1, 1]
    first = txs[0][1][0]
    assert first.after == {"id": 1, "d": "3.14", "ts": "2024-01-02T03:04:05.123000Z", "dt": "2024-01-02T03:04:05",
                           "tm": "-838:00:00", "bl": "AP8=", "e": "y", "s": "p,q", "bt": 21, "n": "héé"}
    assert first.source["gtid"] == txs[0][0] and first.source["file"] and first.source["pos"] > 0
    assert [c.name for c in first.schema.columns][:2] == ["id", "d"]
    assert first.schema.columns[1].type == "decimal(10,2)" and not first.schema.columns[-1].nullable
    assert txs[1][1][0].before["n"] == "a" and txs[1][1][0].after["n"] == "b"
    assert 666 not in marks(events), "a rolled-back transaction appeared"
    commits = [e for e in events if isinstance(e, Commit)]
    assert all(GtidSet.parse(c.resume["gtid_set"]).issuperset(start_state) for c in commits)
    assert GtidSet.parse(events[-1].resume["gtid_set"]) == end == src.state

    # resume after the first transaction: the next event is the second one, nothing twice
    again = source_for(mysql_source, [f"{db}.*"])
    again.start(commits[0].resume)
    try:
        evs2 = collect(again, lambda evs: again.state.issuperset(end), timeout=20)
    finally:
        again.close()
    assert [g for g, _ in transactions(evs2)] == [g for g, _ in txs[1:]]


def test_wrong_password_is_terminal(mysql_source):
    src = source_for(mysql_source, ["test.*"], password="nope")
    with pytest.raises(AuthenticationFailed):
        src.start(None)


def test_unreachable_host_is_a_clear_transient_error():
    src = make_source(["127.0.0.1:1"], ["test.*"], connect_timeout_s=1)
    with pytest.raises(SourceUnavailable) as info:
        src.start(None)
    assert "127.0.0.1:1" in str(info.value)


@pytest.fixture(params=["mariadb", "mysql97"])
def fresh_primary(request):
    """A server of each flavour of this test's own: the primary of ``mariadb_pair``, or ``mysql97_alone``."""
    if request.param == "mariadb":
        return request.getfixturevalue("mariadb_pair")[0]
    return request.getfixturevalue("mysql97_alone")


def test_reconnect_after_restart_then_purged_and_unsafe_settings_are_refused(fresh_primary, tmp_path):
    """One fresh server, three startup/recovery rules (sharing it keeps the suite fast); captured as the user the
    documented statements of the flavour make."""
    primary = fresh_primary
    user, password = documented_capture_user(primary, "cdc_doc", "doc-pw")
    login = {"user": user, "password": password}
    primary.query("CREATE TABLE test.log (id INT PRIMARY KEY)")
    src = make_source([primary.address], ["test.*"], reconnect_attempts=30, **login)
    src.start(None)
    events: list = []
    restarted = False
    try:
        primary.query("INSERT INTO test.log VALUES (1)")
        for ev in expand(src.events()):
            events.append(ev)
            if marks(events) == [1] and not restarted:
                restarted = True
                primary.restart()  # our connection drops; the reader reconnects from its own state
                primary.query("INSERT INTO test.log VALUES (2)")
            if len(marks(events)) >= 2:
                break
    finally:
        src.close()
    assert marks(events) == [1, 2]
    assert src.metrics._m.reconnects.labels("src")._value.get() >= 1

    # (2) binlog purged past a checkpoint: clear Terminal error at start
    if is_mysql(primary):
        old = {"gtid_set": f"{primary.query('SELECT @@server_uuid')[0][0]}:1"}
    else:
        old = {"gtid_set": f"0-{primary.server_id}-1"}
    primary.query("INSERT INTO test.log VALUES (3)")
    primary.query("FLUSH BINARY LOGS")
    last = primary.query("SHOW BINARY LOGS")[-1][0]
    primary.query(f"PURGE BINARY LOGS TO '{last}'")
    with pytest.raises(BinlogPurged) as info:
        make_source([primary.address], ["test.*"], **login).start(old)
    assert "purged" in str(info.value)
    now = {"gtid_set": str(GtidSet.parse(primary.gtid_binlog_pos()))}
    make_source([primary.address], ["test.*"], **login).start(now)

    # (3) unsafe settings: `cdc check` names each one with its fix and exits non-zero; start refuses
    from readers.mysql import check

    primary.query("SET GLOBAL binlog_format='STATEMENT'")
    primary.query("SET GLOBAL binlog_row_metadata='MINIMAL'")
    problems = check.check_host(primary.address, user, password, candidate=True)
    assert {"binlog_format", "binlog_row_metadata"} <= {p.setting for p in problems}
    assert any("SET GLOBAL binlog_format=ROW" in p.fix for p in problems)
    with pytest.raises(SettingsRefused):
        make_source([primary.address], ["test.*"], **login).start(None)
    cfg = tmp_path / "cdc.yaml"
    cfg.write_text(f"sources: [{{name: s, kind: mysql, hosts: ['{primary.address}'], user: {user}, "
                   f"password: {password}, tables: [test.*]}}]\nkafka: {{bootstrap_servers: '127.0.0.1:1'}}\n")
    from cdc.checks import run_checks
    from cdc.config.loader import load_config

    found = {c.detail.split(" is ")[0]: c for c in run_checks(load_config(cfg)) if not c.ok}
    assert {"binlog_format", "binlog_row_metadata"} <= set(found)
    assert found["binlog_format"].check == f"source s: host {primary.address}"


def test_connection_killed_inside_a_transaction_continues_without_duplicates(mysql_source, tmp_source_db):
    db = tmp_source_db
    # 16 MB of rows: more than the socket buffers hold, so the kill lands before the server has sent it all
    mysql_source.query(f"CREATE TABLE `{db}`.big (id INT PRIMARY KEY, v INT, pad VARCHAR(1000))")
    src = source_for(mysql_source, [f"{db}.*"], reconnect_attempts=20)
    src.start(None)
    fill(mysql_source, f"`{db}`.big", 20000, "seq, seq, REPEAT('x', 800)")
    events: list = []
    killed = False
    try:
        for ev in expand(src.events()):
            events.append(ev)
            if not killed and len(events) > 2000:
                killed = True
                for row in mysql_source.query("SHOW PROCESSLIST"):
                    if row[4].startswith("Binlog Dump"):  # ours (MySQL: "Binlog Dump GTID"), cut mid-transaction
                        mysql_source.query(f"KILL {row[0]}")
            if isinstance(ev, Commit):
                break
    finally:
        src.close()
    assert killed and src.metrics._m.reconnects.labels("src")._value.get() >= 1
    txs = transactions(events)
    assert len(txs) == 1
    assert [c.after["id"] for c in txs[0][1]] == list(range(1, 20001))
