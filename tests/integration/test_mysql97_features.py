"""What only Oracle MySQL writes, read from a real MySQL 9.7 server (the session ``mysql97_primary``, the
capture user of the documented MySQL 8 statements): tagged GTIDs, invisible columns and the generated
invisible primary key, ``binlog_row_value_options=PARTIAL_JSON``, ``VECTOR`` columns."""

from __future__ import annotations

import struct

import pytest

from cdc.stream.events import Change, Commit, Heartbeat
from readers.mysql.errors import SettingsRefused, UndecodedEvent
from readers.mysql.position import GtidSet
from tests.integration.mysql_helpers import collect, source_for, transactions

pytestmark = pytest.mark.mysql


@pytest.fixture
def my97(mysql97_primary, tmp_path):
    """(server, a fresh database) on the MySQL 9.7 session server; the database is dropped afterwards."""
    import uuid

    name = f"m97_{uuid.uuid4().hex[:8]}"
    mysql97_primary.query(f"CREATE DATABASE {name}")
    yield mysql97_primary, name
    mysql97_primary.query(f"DROP DATABASE IF EXISTS {name}")


def _run(server, statements: list[str], session: list[str] = ()) -> None:
    """``statements`` in one connection (autocommit) after the ``session`` settings."""
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            for s in [*session, *statements]:
                cur.execute(s)
    finally:
        conn.close()


def _stream(server, tables: list[str], work, resume=None, **kw) -> list:
    src = source_for(server, tables, **kw)
    src.start(resume)
    try:
        work()
        end = GtidSet.parse(server.gtid_binlog_pos())
        return collect(src, lambda evs: src.state.issuperset(end), timeout=30)
    finally:
        src.close()


def test_tagged_gtids_are_captured_checkpointed_and_resumed(my97):
    server, db = my97
    server.query(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(10))")
    tagged = ["SET gtid_next = 'AUTOMATIC:Batch_1'"]

    def work():
        _run(server, [f"INSERT INTO {db}.t VALUES (1, 'a')", f"INSERT INTO {db}.t VALUES (2, 'b')"], tagged)
        _run(server, [f"INSERT INTO {db}.t VALUES (3, 'c')"])  # untagged, between tagged ones
        _run(server, [f"UPDATE {db}.t SET v = 'z' WHERE id = 1"], tagged)

    events = _stream(server, [f"{db}.*"], work)
    txs = transactions(events)
    gtids = [g for g, _ in txs]
    assert [[(ch.op, (ch.after or ch.before)["id"]) for ch in rows] for _, rows in txs] == \
        [[("c", 1)], [("c", 2)], [("c", 3)], [("u", 1)]]
    assert [":batch_1:" in g for g in gtids] == [True, True, False, True], gtids  # the tag, lowercased
    assert all(ch.source["gtid"] == g for g, rows in txs for ch in rows)
    commits = [e for e in events if isinstance(e, Commit)]
    checkpoint = commits[-4].resume["gtid_set"]  # after the first tagged transaction
    assert ":batch_1:" in checkpoint and GtidSet.parse(checkpoint).issuperset(GtidSet.parse(gtids[0]))
    server_set = GtidSet.parse(server.gtid_binlog_pos())
    assert GtidSet.parse(commits[-1].resume["gtid_set"]) == server_set  # the tagged set as the server holds it

    # a new reader resumed from the checkpoint holding a tag: the next three, nothing twice
    again = _stream(server, [f"{db}.*"], lambda: None, resume=commits[-4].resume)
    assert [g for g, _ in transactions(again)] == gtids[1:]


def test_invisible_columns_and_the_generated_invisible_primary_key(my97):
    server, db = my97
    assert server.query("SELECT @@GLOBAL.show_gipk_in_create_table_and_information_schema")[0][0] == 1

    def work():
        _run(server, [f"CREATE TABLE {db}.g (v VARCHAR(10), n INT)",  # no key: my_row_id is generated
                      f"INSERT INTO {db}.g (v, n) VALUES ('a', 1), ('b', 2)",
                      f"UPDATE {db}.g SET n = 20 WHERE v = 'b'",
                      f"DELETE FROM {db}.g WHERE v = 'a'"],
             ["SET SESSION sql_generate_invisible_primary_key = ON"])
        _run(server, [f"CREATE TABLE {db}.iv (id INT PRIMARY KEY, secret VARCHAR(10) INVISIBLE, v INT)",
                      f"INSERT INTO {db}.iv (id, secret, v) VALUES (1, 'hidden', 5)",
                      f"ALTER TABLE {db}.iv ALTER COLUMN v SET INVISIBLE",
                      f"UPDATE {db}.iv SET secret = 'still', v = 6 WHERE id = 1"])

    events = _stream(server, [f"{db}.*"], work)
    changes = [ch for _, rows in transactions(events) for ch in rows]
    g = [ch for ch in changes if ch.table.table == "g"]
    assert [ch.op for ch in g] == ["c", "c", "u", "d"]
    assert all(ch.schema.primary_key == ("my_row_id",) for ch in g)
    assert [c.name for c in g[0].schema.columns] == ["my_row_id", "v", "n"]
    assert [(ch.after or ch.before)["my_row_id"] for ch in g] == [1, 2, 2, 1]
    assert g[2].before["n"] == 2 and g[2].after == {"my_row_id": 2, "v": "b", "n": 20}
    iv = [ch for ch in changes if ch.table.table == "iv"]
    assert iv[0].after == {"id": 1, "secret": "hidden", "v": 5}  # invisible columns are captured
    assert iv[1].before == {"id": 1, "secret": "hidden", "v": 5} and iv[1].after == {"id": 1, "secret": "still", "v": 6}


def test_partial_json_is_refused_at_start_and_at_the_event(my97):
    """Globally set: the reader refuses to start naming the setting and its fix. Set in one writing session
    only (the global stays ''): the stream stops at that transaction's PARTIAL_UPDATE_ROWS_EVENT, naming it,
    and nothing of the transaction is published."""
    server, db = my97
    server.query(f"CREATE TABLE {db}.j (id INT PRIMARY KEY, doc JSON)")
    server.query(f"INSERT INTO {db}.j VALUES (1, '{{\"a\": 1, \"b\": \"x\"}}')")
    server.query("SET GLOBAL binlog_row_value_options = 'PARTIAL_JSON'")
    try:
        with pytest.raises(SettingsRefused) as info:
            source_for(server, [f"{db}.*"]).start(None)
    finally:
        server.query("SET GLOBAL binlog_row_value_options = ''")
    assert "binlog_row_value_options" in str(info.value) and "SET GLOBAL binlog_row_value_options=''" in str(info.value)

    src = source_for(server, [f"{db}.*"])
    src.start(None)
    events: list = []
    try:
        _run(server, [f"UPDATE {db}.j SET doc = JSON_SET(doc, '$.a', 2) WHERE id = 1"],
             ["SET SESSION binlog_row_value_options = 'PARTIAL_JSON'"])
        with pytest.raises(UndecodedEvent) as stopped:
            collect_into(src, events)
    finally:
        src.close()
    text = str(stopped.value)
    assert "PARTIAL_UPDATE_ROWS_EVENT" in text and "binlog_row_value_options" in text, text
    assert not [e for e in events if isinstance(e, Change)]


def collect_into(src, events: list, timeout: float = 20) -> None:
    """Read until the source raises (the test expects it to); fails if it does not within ``timeout``."""
    import time

    deadline = time.monotonic() + timeout
    for ev in src.events():
        events.append(ev)
        assert time.monotonic() < deadline, f"no error after {timeout}s: {events[-3:]}"


def test_vector_columns_stream(my97):
    server, db = my97

    big = "[" + ", ".join(str(i / 4) for i in range(100)) + "]"

    def work():
        _run(server, [f"CREATE TABLE {db}.v (id INT PRIMARY KEY, emb VECTOR(3), big VECTOR)",
                      f"INSERT INTO {db}.v VALUES (1, STRING_TO_VECTOR('[1, -2.5, 1.5e20]'), NULL)",
                      f"INSERT INTO {db}.v VALUES (2, STRING_TO_VECTOR('[0, 0, 0]'), STRING_TO_VECTOR('{big}'))",
                      f"UPDATE {db}.v SET emb = STRING_TO_VECTOR('[7, 8, 9]') WHERE id = 1"])

    events = _stream(server, [f"{db}.*"], work)
    changes = [ch for _, rows in transactions(events) for ch in rows]
    assert [ch.op for ch in changes] == ["c", "c", "u"]
    cols = {c.name: c.type for c in changes[0].schema.columns}
    assert cols == {"id": "int", "emb": "vector(3)", "big": "vector(2048)"}, cols
    stored = {r[0]: bytes.fromhex(r[1]) for r in server.query(f"SELECT id, HEX(emb) FROM {db}.v")}  # PyMySQL
    # cannot fetch a VECTOR column itself
    assert _floats(changes[2].after["emb"]) == [7.0, 8.0, 9.0] == list(struct.unpack("<3f", stored[1]))
    assert _floats(changes[0].after["emb"]) == [1.0, -2.5, struct.unpack("<f", struct.pack("<f", 1.5e20))[0]]
    assert _floats(changes[1].after["big"]) == [i / 4 for i in range(100)]
    assert changes[0].after["big"] is None

    # the initial snapshot reads the same values
    src = source_for(server, [f"{db}.v"], snapshot="initial")
    src.start(None)
    try:
        rows = collect(src, lambda evs: any(isinstance(e, Heartbeat) and "snapshot" not in (e.resume or {})
                                            for e in evs), timeout=30)
    finally:
        src.close()
    snap = {ch.after["id"]: ch.after for ch in rows if isinstance(ch, Change) and ch.op == "r"}
    assert snap == {1: changes[2].after, 2: changes[1].after}, snap


def _floats(value) -> list[float]:
    """A streamed VECTOR value back to its floats (it is streamed as the stored bytes: float32 little-endian,
    base64 in the ordered stream)."""
    import base64

    raw = base64.b64decode(value) if isinstance(value, str) else bytes(value)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def test_vector_columns_compare(my97, tmp_path):
    """`cdc compare` of a VECTOR column: against a copy on MySQL and against DuckDB holding the stream's bytes
    (BLOB), EQUAL but for the one vector changed."""
    import duckdb

    from cdc.compare.endpoints import from_dsn
    from cdc.compare.table_diff import TableCompare

    server, db = my97
    vectors = {i: [i / 2, -i, 1e3 + i] for i in range(1, 41)}
    for t in ("a", "b"):
        server.query(f"CREATE TABLE {db}.{t} (id INT PRIMARY KEY, emb VECTOR(3))")
        _run(server, [f"INSERT INTO {db}.{t} VALUES " +
                      ", ".join(f"({i}, STRING_TO_VECTOR('{v}'))" for i, v in vectors.items())])
    server.query(f"UPDATE {db}.b SET emb = STRING_TO_VECTOR('[0, 0, 0.5]') WHERE id = 7")
    ep = from_dsn("m", f"mysql://root@127.0.0.1:{server.port}/{db}")
    report = TableCompare(ep, f"{db}.a", ep, f"{db}.b").run()
    assert report.keys("different") == [(7,)] and not report.keys("missing") and not report.keys("extra"), \
        report.render()

    path = str(tmp_path / "v.duckdb")
    con = duckdb.connect(path)
    con.execute("CREATE TABLE a (id INTEGER PRIMARY KEY, emb BLOB)")
    con.executemany("INSERT INTO a VALUES (?, ?)",
                    [(i, struct.pack("<3f", *(v if i != 9 else [9, 9, 9]))) for i, v in vectors.items()])
    con.close()
    report = TableCompare(ep, f"{db}.a", from_dsn("duck", path), "main.a").run()
    assert report.keys("different") == [(9,)] and not report.keys("missing") and not report.keys("extra"), \
        report.render()
