"""A snapshot row, a compare-repair row and a binlog row of the same values are identical (cdc.schema.values).

Fault injected: values where the two read paths of MySQL/MariaDB (both run: ``mysql_source``) hand Python different objects
(negative fractional TIME, BIT as bytes vs bits, SET as a set vs text, float32 FLOAT, DECIMAL,
TIMESTAMP fractions, binary, JSON, zero-padded CHAR). The user would otherwise see a row that a
snapshot wrote and the same row streamed from the binlog differ in the target.
"""

from __future__ import annotations

import pytest

from cdc.compare.endpoints import from_dsn
from cdc.compare.repair import fetch_rows
from cdc.compare.shapes import describe
from cdc.stream.events import Change, TableId
from readers.mysql.position import GtidSet
from readers.mysql.snapshot import TableReader
from tests.integration.mysql_helpers import collect, is_mysql, source_for, transactions

pytestmark = pytest.mark.mysql

COLUMNS = ("id INT PRIMARY KEY, tm TIME(6), tm2 TIME(2), tm0 TIME, d DECIMAL(20,6), f FLOAT, g DOUBLE, "
           "ts TIMESTAMP(6) NULL, dt DATETIME(6), dt0 DATETIME, day DATE, y YEAR, bt BIT(10), b1 BIT(1), "
           "s SET('p','q','r'), e ENUM('x','y'), vb VARBINARY(8), bl BLOB, tx TEXT, vc VARCHAR(20), "
           "ch CHAR(4), j JSON, ti TINYINT, ub BIGINT UNSIGNED")
ROWS = [
    ("(1, '-00:00:01.25', '-00:00:01.25', '-00:00:01', -1.5, 0.1, 0.1, '2024-01-02 03:04:05.123456', "
    "'2024-01-02 03:04:05.5', '2024-01-02 03:04:05', '2024-02-29', 2024, b'1000000001', b'1', 'r,p', 'y', "
    "x'00ff', x'0102', 'tëxt', 'vc', 'ab', '{\"k\": [1, \"v\"]}', -128, 18446744073709551615)"),
    ("(2, '-838:59:59.999999', '838:59:59.99', '-00:00:00', 0.000001, 123456789, 1e300, "
    "'1970-01-01 00:00:01', '1000-01-01 00:00:00', '9999-12-31 23:59:59', '1000-01-01', 1901, b'0', b'0', "
    "'', 'x', x'', x'', '', '', '', '[]', 127, 0)"),
    ("(3, '-00:00:00.000001', '00:00:00.01', '12:00:00', -99999999999999.999999, -3.4e38, -0.0, "
    "'2038-01-19 03:14:07.999999', '2024-01-02 03:04:05.000001', '2024-01-02 00:00:00', '2024-01-01', 2155, "
    "b'1111111111', b'1', 'p,q,r', 'x', x'ff', x'ff00', 'a\\nb', 'é', 'é', 'null', 0, 1)"),
    ("(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL)"),
]


def _rows(mysql: bool) -> list[str]:
    """ROWS as the flavour takes them: MySQL's TIME ends at 838:59:59 exactly (MariaDB's at 838:59:59.999999)."""
    if not mysql:
        return ROWS
    rows = [r.replace("'-838:59:59.999999', '838:59:59.99'", "'-838:59:59', '838:59:59'") for r in ROWS]
    return [r.replace("'null', 0, 1)", "'true', 0, 1)") for r in rows]  # JSON null: test_a_json_null_document_*


def test_snapshot_and_repair_rows_equal_binlog_row(mysql_source, tmp_source_db):
    db, q = tmp_source_db, mysql_source.query
    mysql = is_mysql(mysql_source)
    q(f"CREATE TABLE `{db}`.v ({COLUMNS})")
    src = source_for(mysql_source, [f"{db}.*"])
    src.start(None)
    try:
        q(f"INSERT INTO `{db}`.v VALUES " + ", ".join(_rows(mysql)))
        end = GtidSet.parse(mysql_source.gtid_binlog_pos())
        events = collect(src, lambda evs: src.state.issuperset(end), timeout=20)
    finally:
        src.close()
    streamed = {ch.after["id"]: ch.after for _, rows in transactions(events) for ch in rows
                if isinstance(ch, Change) and ch.table.table == "v"}
    conn = mysql_source.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION time_zone = '+00:00'")
        snap = {r["id"]: r for r in TableReader(conn, TableId(db, "v")).chunk(None, 100)}
    finally:
        conn.close()
    # compare --repair and the shadow source read rows through the same endpoint code
    ep = from_dsn("src", f"mysql://root@{mysql_source.host}:{mysql_source.port}/{db}")
    ep_conn = ep.connect()
    try:
        shape = describe("mysql", ep_conn, db, "v")
        repaired = {r["id"]: r for r in fetch_rows(ep, ep_conn, shape, ["id"], [(1,), (2,), (3,), (4,)])}
    finally:
        ep_conn.close()
    assert sorted(streamed) == sorted(repaired) == [1, 2, 3, 4]
    for i in sorted(streamed):
        for name, other in (("snapshot", snap[i]), ("compare repair", repaired[i])):
            diff = {k: (other[k], streamed[i][k]) for k in streamed[i] if other[k] != streamed[i][k]}
            assert not diff, f"row {i}: {name} vs binlog differ: {diff}"
    assert (snap[1]["tm"], snap[1]["tm2"], snap[2]["tm"], snap[3]["tm"]) == \
        ("-00:00:01.250000", "-00:00:01.250000", "-838:59:59" if mysql else "-838:59:59.999999",
         "-00:00:00.000001")
    assert (snap[1]["f"], snap[2]["f"], snap[1]["bt"], snap[1]["b1"], snap[1]["s"], snap[2]["s"]) == \
        (0.10000000149011612, 123456792.0, 513, 1, "p,r", "")
    assert snap[4] == {k: (4 if k == "id" else None) for k in snap[4]}


def _streamed_and_snapshot(mysql_source, src, db: str) -> tuple[dict, dict]:
    """``j`` of table ``db.j`` by id: as the running reader ``src`` streamed it up to the server's current
    GTIDs, and as a snapshot reads it."""
    end = GtidSet.parse(mysql_source.gtid_binlog_pos())
    events = collect(src, lambda evs: src.state.issuperset(end), timeout=20)
    streamed = {ch.after["id"]: ch.after["j"] for _, rows in transactions(events) for ch in rows}
    conn = mysql_source.connect()
    try:
        snap = {r["id"]: r["j"] for r in TableReader(conn, TableId(db, "j")).chunk(None, 100)}
    finally:
        conn.close()
    return streamed, snap


def test_a_json_null_document_is_not_an_sql_null(mysql_source, tmp_source_db):
    """A JSON column holding the JSON literal ``null`` is the text 'null' on every path; SQL NULL is None.
    MariaDB's JSON is LONGTEXT. MySQL's binary JSON ``null`` (the library's
    parse_json, used by the lean and the native row decoders, returns None for it): both decoders make it the text."""
    db, q = tmp_source_db, mysql_source.query
    q(f"CREATE TABLE `{db}`.j (id INT PRIMARY KEY, j JSON)")
    src = source_for(mysql_source, [f"{db}.*"])
    src.start(None)
    try:
        q(f"INSERT INTO `{db}`.j VALUES (1, 'null'), (2, NULL), (3, '[null]')")
        streamed, snap = _streamed_and_snapshot(mysql_source, src, db)
    finally:
        src.close()
    assert snap == {1: "null", 2: None, 3: "[null]"}
    assert streamed == snap


def _stream_documents(mysql_source, db: str, docs: list[str]) -> tuple[dict, dict]:
    """Table ``db.j`` (id, j JSON) with one row per SQL expression of ``docs`` (id = its index), written while a
    reader streams: ``j`` by id as streamed and as a snapshot reads it."""
    q = mysql_source.query
    q(f"CREATE TABLE `{db}`.j (id INT PRIMARY KEY, j JSON)")
    src = source_for(mysql_source, [f"{db}.*"])
    src.start(None)
    try:
        for i, doc in enumerate(docs):
            q(f"INSERT INTO `{db}`.j VALUES ({i}, {doc})")
        return _streamed_and_snapshot(mysql_source, src, db)
    finally:
        src.close()


def test_dates_times_and_binary_strings_inside_a_json_document_stream_as_the_snapshot_reads_them(
        mysql_source, tmp_source_db):
    """A JSON document holding a DATE, DATETIME, TIME or binary string (MySQL: opaque values in its binary JSON,
    which the binlog library reads as Python datetimes and stopped the stream; MariaDB: text already) streams as
    the text MySQL prints, which the snapshot reads."""
    db, mysql = tmp_source_db, is_mysql(mysql_source)
    docs = [("JSON_OBJECT('at', CAST('2024-02-29 12:34:56.5' AS DATETIME(6)), 'd', CAST('2024-02-29' AS DATE), "
             "'t', CAST('-01:02:03' AS TIME))"),
            "JSON_ARRAY(CAST('1000-01-01' AS DATE), CAST('838:59:59' AS TIME))"]
    if mysql:  # a binary string in a document, a document that is one TIME (MariaDB has no CAST AS JSON)
        docs += ["JSON_OBJECT('b', CAST(x'00ff' AS BINARY))", "CAST(CAST('12:34:56.000001' AS TIME(6)) AS JSON)"]
    streamed, snap = _stream_documents(mysql_source, db, docs)
    assert streamed == snap and len(snap) == len(docs)
    if mysql:
        assert snap[0] == '{"d":"2024-02-29","t":"-01:02:03.000000","at":"2024-02-29 12:34:56.500000"}'
        assert (snap[2], snap[3]) == ('{"b":"base64:type15:AP8="}', '"12:34:56.000001"')


def test_numbers_inside_a_json_document_stream_as_the_server_prints_them(mysql_source, tmp_source_db):
    """Doubles (large, tiny, integral, negative zero) and a DECIMAL inside a JSON document: the binlog row, the
    snapshot row and the server's own text (closed up) are the same text, so `cdc compare` of a text target
    finds them equal."""
    db, q = tmp_source_db, mysql_source.query
    docs = [("JSON_OBJECT('e', 1e20, 's', 0.0000001, 'dec', CAST(1.50 AS DECIMAL(4,2)), 'i', CAST(100 AS DOUBLE), "
             "'neg', -1.5e-16, 'z', CAST('-0.0' AS DOUBLE), 'f', 12345.678e0, 'big', 9007199254740993)"),
            "JSON_ARRAY(1e15, 123456789012345.6e0, 5e-324, 1.7976931348623157e308)"]
    streamed, snap = _stream_documents(mysql_source, db, docs)
    server = {i: text for i, text in q(f"SELECT id, CAST(j AS CHAR) FROM `{db}`.j")}
    assert streamed == snap and len(snap) == len(docs)
    if is_mysql(mysql_source):  # the server's spaced text, closed up, is the stream's (MariaDB: the column is text)
        assert {i: t.replace(", ", ",").replace(": ", ":") for i, t in server.items()} == snap
        assert '"e":1e20' in snap[0] and '"dec":1.50' in snap[0] and '"s":0.0000001' in snap[0], snap[0]
