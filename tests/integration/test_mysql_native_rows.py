"""On a real MariaDB and MySQL 9.7 (``mysql_source``), the native rows pass (and the TABLE_MAP cache) publish the same records as the Python path.

One mixed workload (inserts, updates, deletes of every column type the reader decodes,
NULLs, negative and long DECIMALs, fractional and zero temporal values, BINARY padding,
latin1 text, JSON, BIT, SET/ENUM, generated and invisible columns; a big and many small
transactions) is captured twice from the same GTID state: once with the native pass
and the TABLE_MAP cache (fastrows.install()), once without them (install(native=False,
table_map_cache=False)). The data records the
publisher builds of both (cdc.stream.envelope.data_record, serialized as the publisher does)
must be byte-identical, and the native capture must really have taken the native pass.
"""

from __future__ import annotations

import time

import orjson
import pytest
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import TableMapEvent, WriteRowsEvent

from cdc.stream.envelope import data_record
from cdc.stream.events import Change, ChangeBatch, Heartbeat, Idle, expand
from readers.mysql.binlog import fastrows, native_rows
from readers.mysql.binlog.decode import ConvertedRow, RowConverter
from readers.mysql.position import GtidSet
from tests.fixtures.services import capture_login
from tests.integration.mysql_helpers import collect, fill, is_mysql, source_for, transactions
from tests.unit.cdc.publish.fakes import publisher

pytestmark = pytest.mark.mysql

COLUMNS = ("id INT PRIMARY KEY, tm TIME(6), tm2 TIME(2), tm0 TIME, d DECIMAL(20,6), big DECIMAL(65,30), "
           "f FLOAT, g DOUBLE, ts TIMESTAMP(6) NULL, ts0 TIMESTAMP NULL, dt DATETIME(6), dt3 DATETIME(3), "
           "dt0 DATETIME, day DATE, y YEAR, bt BIT(10), b1 BIT(1), b64 BIT(64), s SET('p','q','r'), "
           "e ENUM('x','y'), bn BINARY(4), vb VARBINARY(8), bl BLOB, tx TEXT, lt VARCHAR(20) CHARACTER SET latin1, "
           "vc VARCHAR(300), ch CHAR(4), j JSON, ti TINYINT, us SMALLINT UNSIGNED, m MEDIUMINT, "
           "um MEDIUMINT UNSIGNED, ub BIGINT UNSIGNED, gen INT AS (id * 2) VIRTUAL, "
           "gst VARCHAR(40) AS (CONCAT(LEFT(vc, 5), '!')) STORED, hid INT INVISIBLE DEFAULT 7")
ROWS = [
    ("(1, '-00:00:01.25', '-00:00:01.25', '-00:00:01', -1.5, -12345678901234567890123456789012345.5, 0.1, 0.1, "
     "'2024-01-02 03:04:05.123456', '2024-01-02 03:04:05', '2024-01-02 03:04:05.5', '2024-01-02 03:04:05.123', "
     "'2024-01-02 03:04:05', '2024-02-29', 2024, b'1000000001', b'1', b'1111111111111111111111111111111111111111111"
     "111111111111111111111', 'r,p', 'y', x'01', x'00ff', x'0102', 'tëxt', 'café', REPEAT('é', 300), 'ab', "
     "'{\"k\": [1, \"v\"]}', -128, 65535, -8388608, 16777215, 18446744073709551615, DEFAULT, DEFAULT)"),
    ("(2, '-838:59:59.999999', '838:59:59.99', '-00:00:00', 0.000001, 0, 123456789, 1e300, "
     "'1970-01-01 00:00:01', NULL, '1000-01-01 00:00:00', '9999-12-31 23:59:59.999', '9999-12-31 23:59:59', "
     "'1000-01-01', 1901, b'0', b'0', b'0', '', 'x', x'', x'', x'', '', '', '', '', '[]', 127, 0, 0, 0, 0, "
     "DEFAULT, DEFAULT)"),
    ("(3, '-00:00:00.000001', '00:00:00.01', '12:00:00', -99999999999999.999999, "
     "0.000000000000000000000000000001, -3.4e38, -0.0, '2038-01-19 03:14:07.999999', '2038-01-19 03:14:07', "
     "'2024-01-02 03:04:05.000001', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00', 0, "
     "b'1111111111', b'1', b'1', 'p,q,r', 'x', x'ff000000', x'ff', x'ff00', 'a\\nb', 'ÿ', 'é', 'é', 'null', 0, "
     "1, -1, 1, 1, DEFAULT, DEFAULT)"),
    ("(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
     "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, DEFAULT, DEFAULT)"),
]


def zero_dates(server, sql: str) -> None:
    """Run ``sql`` where zero dates are accepted: MariaDB's default sql_mode does, MySQL's (NO_ZERO_DATE,
    NO_ZERO_IN_DATE) does not, so there the session's sql_mode is emptied first."""
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            if is_mysql(server):
                cur.execute("SET SESSION sql_mode = ''")
            cur.execute(sql)
        conn.commit()
    finally:
        conn.close()


def _records(events: list) -> list[bytes]:
    out = []
    for i, (gtid, rows) in enumerate(transactions(events)):
        for n, ch in enumerate(rows):
            key, value = data_record(ch, sequence=i, source_name="src", connector="mysql", txid=gtid,
                                     commit_ts_ms=0, total_order=n, data_collection_order=n, now_ms=0)
            out.append(orjson.dumps([key, value], default=str, option=orjson.OPT_NON_STR_KEYS))
    return out


def _published(events: list) -> list:
    """What the JSON publisher writes of ``events`` (its hot path for ChangeBatch and Change alike)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(time, "time", lambda: 1_700_000_000.5)  # the records' ts_ms
        pub, fake, _ = publisher()
        for ev in events:
            if type(ev) not in (Heartbeat, Idle):  # when the reader idles differs from run to run
                pub.publish(ev)
    return fake.records


def _capture(server, db: str, start: str, end: GtidSet, native: bool, **kw) -> list:
    fastrows.install(native=native, table_map_cache=native)  # the new path whole against the old one
    src = source_for(server, [f"{db}.*"], snapshot="never", **kw)
    try:
        src.start({"gtid_set": start})
        return collect(src, lambda evs: src.state.issuperset(end), timeout=60, expand=False)
    finally:
        src.close()
        fastrows.install()


def test_native_and_python_paths_publish_identical_records(mysql_source, tmp_source_db):
    db, q = tmp_source_db, mysql_source.query
    q(f"CREATE TABLE `{db}`.v ({COLUMNS})")
    start = mysql_source.gtid_binlog_pos()
    zero_dates(mysql_source, f"INSERT INTO `{db}`.v (id, tm, tm2, tm0, d, big, f, g, ts, ts0, dt, dt3, dt0, day, y, bt, b1, b64, s, e, bn, "
               "vb, bl, tx, lt, vc, ch, j, ti, us, m, um, ub) VALUES " + ", ".join(r.replace(", DEFAULT, DEFAULT)", ")")
                                                                            for r in ROWS))
    q(f"UPDATE `{db}`.v SET d = -d - 0.5, big = -big, tm = '-01:02:03.4', j = '{{\"a\": null}}', s = '', "
      "bn = x'02', hid = 9 WHERE id IN (1, 3)")
    q(f"DELETE FROM `{db}`.v WHERE id = 2")
    q(f"CREATE TABLE `{db}`.o (id BIGINT PRIMARY KEY, amount DECIMAL(12,2), created DATETIME(6), "
      "status ENUM('new','paid','shipped'), note VARCHAR(255))")
    fill(mysql_source, f"`{db}`.o", 3000, "seq, (seq % 100000) / 100 - 500, TIMESTAMP('2024-01-01') + INTERVAL seq "
         "SECOND + INTERVAL seq MICROSECOND, 1 + seq % 3, REPEAT('x', seq % 40)")
    conn = mysql_source.connect()
    try:
        with conn.cursor() as cur:
            for i in range(40):  # small transactions: one row each way
                cur.execute("BEGIN")
                cur.execute(f"INSERT INTO `{db}`.o VALUES ({10000 + i}, -{i}.25, NOW(6), 'paid', 'n')")
                cur.execute(f"UPDATE `{db}`.o SET amount = amount + 1, status = 'shipped' WHERE id = {1 + i}")
                cur.execute(f"DELETE FROM `{db}`.o WHERE id = {2000 + i}")
                cur.execute("COMMIT")
    finally:
        conn.close()
    end = GtidSet.parse(mysql_source.gtid_binlog_pos())

    python = _capture(mysql_source, db, start, end, native=False)
    native = _capture(mysql_source, db, start, end, native=True)

    assert not any(type(ev) is ChangeBatch for ev in python)
    if native_rows.NATIVE:  # without a C compiler both captures take the Python path
        # every row really took the native pass, and left the reader serialized, one ChangeBatch per rows event
        assert not any(type(ev) is Change for ev in native)
        assert sum(len(ev) for ev in native if type(ev) is ChangeBatch) == 4 + 2 + 1 + 3000 + 3 * 40
    changes = [ev for ev in expand(native) if isinstance(ev, Change) and ev.op != "t"]
    assert len(changes) == 4 + 2 + 1 + 3000 + 3 * 40
    assert not any(type(im) is ConvertedRow for ev in python if isinstance(ev, Change)
                   for im in (ev.before, ev.after) if im is not None)
    assert _records(list(expand(native))) == _records(python)
    assert _published(native) == _published(python)  # the stream's bytes, BEGIN to END


def test_table_map_cache_keeps_one_table_per_definition(mysql_source, tmp_source_db):
    """The same definition gives the same Table object (and its plans) in every transaction; an ALTER that
    changes the TABLE_MAP gives a new one, with the new column, and the rows decode with it."""
    db, q = tmp_source_db, mysql_source.query
    q(f"CREATE TABLE `{db}`.c (id INT PRIMARY KEY, d DECIMAL(8,2))")
    start = mysql_source.gtid_binlog_pos()
    q(f"INSERT INTO `{db}`.c VALUES (1, -1.5)")
    q(f"INSERT INTO `{db}`.c VALUES (2, 2.25)")
    q(f"ALTER TABLE `{db}`.c ADD COLUMN s VARCHAR(10) DEFAULT 'new'")
    q(f"INSERT INTO `{db}`.c (id, d) VALUES (3, 3)")
    q(f"INSERT INTO `{db}`.c (id, d) VALUES (4, 4)")
    fastrows.install()
    user, password = capture_login(mysql_source)
    stream = BinLogStreamReader(
        connection_settings={"host": mysql_source.host, "port": mysql_source.port, "user": user,
                             "passwd": password}, server_id=880002, blocking=False, auto_position=start,
        is_mariadb=not is_mysql(mysql_source), only_events=[TableMapEvent, WriteRowsEvent], only_schemas=[db], enable_logging=False)
    try:
        maps, rows = [], []
        for ev in stream:
            if isinstance(ev, TableMapEvent):
                maps.append(ev.get_table())
            else:  # the stream's values on either path (RowConverter leaves the native pass's rows as they are)
                convert = RowConverter("c", maps[-1].columns)
                rows.extend(dict(convert(r["values"], "-")) for r in ev.rows)
    finally:
        stream.close()
    assert len(maps) == 4
    assert maps[0] is maps[1] and maps[2] is maps[3]
    assert maps[1] is not maps[2]
    assert [c.name for c in maps[3].columns] == ["id", "d", "s"]
    assert rows == [{"id": 1, "d": "-1.50"}, {"id": 2, "d": "2.25"},
                                       {"id": 3, "d": "3.00", "s": "new"}, {"id": 4, "d": "4.00", "s": "new"}]


def test_shaped_table_native_and_python_paths_publish_identical_records(mysql_source, tmp_source_db, tmp_path):
    """A shaped table (one hashed, one excluded column, a filter) keeps the native pass: the mapper shapes the
    decoded rows before any record byte is made, byte-identical to the Python path, no clear value in a record."""
    db, q = tmp_source_db, mysql_source.query
    q(f"CREATE TABLE `{db}`.c (id INT PRIMARY KEY, email VARCHAR(80), note TEXT, amount DECIMAL(8,2))")
    start = mysql_source.gtid_binlog_pos()
    fill(mysql_source, f"`{db}`.c", 300, "seq, CONCAT('clear-mail-', seq, '@x.io'), CONCAT('clear-note-', seq), seq")
    q(f"UPDATE `{db}`.c SET email = CONCAT('clear-new-', id), amount = amount + 500 WHERE id <= 20")
    q(f"UPDATE `{db}`.c SET amount = 1 WHERE id BETWEEN 280 AND 290")  # leaves the filter: deletes
    q(f"DELETE FROM `{db}`.c WHERE id BETWEEN 100 AND 109")
    end = GtidSet.parse(mysql_source.gtid_binlog_pos())
    (tmp_path / "hash.key").write_bytes(b"h" * 32)
    transforms = {"hash_key_file": str(tmp_path / "hash.key"),
                  "tables": [{"match": f"{db}.c", "exclude": ["note"], "columns": {"email": {"mask": "hash"}},
                              "filter": "amount > 5"}]}

    python = _capture(mysql_source, db, start, end, native=False, transforms=transforms)
    native = _capture(mysql_source, db, start, end, native=True, transforms=transforms)

    assert not any(type(ev) is ChangeBatch for ev in python)
    if native_rows.NATIVE:
        assert not any(type(ev) is Change and ev.op != "t" for ev in native)
        assert sum(len(ev) for ev in native if type(ev) is ChangeBatch) == 295 + 20 + 11 + 10
    assert _records(list(expand(native))) == _records(python)
    published = _published(native)
    assert published == _published(python)
    assert not any(b"clear-" in (k or b"") + (v or b"") for _, v, k in published)


def test_natively_shaped_table_publishes_the_python_paths_records(mariadb_primary, tmp_mysql_db, tmp_path):
    """A table shaped by column selection and the masks the C pass implements (no filter, no computed column) is
    shaped in the native pass (after decoding for the first rows event of a TABLE_MAP, while decoding for the
    rest): byte-identical to the Python path over multibyte, empty and NULL values, no clear value in a record."""
    db, q = tmp_mysql_db, mariadb_primary.query
    q(f"CREATE TABLE `{db}`.c (id INT PRIMARY KEY, email VARCHAR(80), note TEXT, name VARCHAR(40) CHARACTER SET "
      f"utf8mb4, card VARCHAR(20), kind ENUM('a','b'), n BIGINT, amount DECIMAL(8,2))")
    start = mariadb_primary.gtid_binlog_pos()
    q(f"INSERT INTO `{db}`.c SELECT seq, IF(seq % 7 = 0, NULL, CONCAT('clear-mail-', seq, '@x.io')), "
      f"CONCAT('clear-note-', seq, REPEAT('é', seq % 50)), IF(seq % 5 = 0, '', CONCAT('clear-ñämé-', seq)), "
      f"IF(seq % 11 = 0, NULL, CONCAT('clear-card-', seq)), IF(seq % 2, 'a', 'b'), seq * 1000003, seq "
      f"FROM `{db}`.seq_1_to_3000")
    q(f"UPDATE `{db}`.c SET email = CONCAT('clear-new-', id), note = NULL WHERE id <= 700")
    q(f"DELETE FROM `{db}`.c WHERE id BETWEEN 100 AND 1200")
    end = GtidSet.parse(mariadb_primary.gtid_binlog_pos())
    (tmp_path / "hash.key").write_bytes(b"h" * 32)
    transforms = {"hash_key_file": str(tmp_path / "hash.key"), "tables": [{
        "match": f"{db}.c", "exclude": ["note"], "columns": {
            "email": {"mask": "hash"}, "n": {"mask": "hash"}, "name": {"mask": "truncate", "length": 4},
            "card": {"mask": "keep_last", "length": 3}, "kind": {"mask": "replace", "value": "k"},
            "amount": {"mask": "null"}}}]}

    python = _capture(mariadb_primary, db, start, end, native=False, transforms=transforms)
    native = _capture(mariadb_primary, db, start, end, native=True, transforms=transforms)

    if native_rows.NATIVE:
        assert not any(type(ev) is Change and ev.op != "t" for ev in native)
        assert sum(len(ev) for ev in native if type(ev) is ChangeBatch) == 3000 + 700 + 1101
    assert _records(list(expand(native))) == _records(python)
    published = _published(native)
    assert published == _published(python)
    assert not any(b"clear-" in (k or b"") + (v or b"") for _, v, k in published)
