"""`cdc compare` on real MariaDB, MySQL 9.7, PostgreSQL and DuckDB: finds exactly the injected differences.

The source tests run on both MySQL flavours (``mysql_source``). MySQL 9 has no MD5(): there compare
fingerprints rows with SHA-256 and runs the row pass only (cdc.compare.table_diff)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from decimal import Decimal

import duckdb
import pytest

from cdc.compare.endpoints import Endpoint, from_dsn
from cdc.compare.errors import CompareError
from cdc.compare.table_diff import TableCompare
from tests.fixtures.services import documented_capture_user

pytestmark = [pytest.mark.mysql, pytest.mark.postgres]

TOKYO = timezone(timedelta(hours=9))
N = 300


def source_rows() -> list[tuple]:
    rows = []
    for i in range(1, N + 1):
        ts = datetime(2024, 3, 1, tzinfo=timezone.utc) + timedelta(minutes=7 * i, microseconds=i)
        name = f"näme-{i}-日" if i % 3 == 0 else f"name-{i}"  # multibyte: byte vs character lengths
        rows.append((i, name, Decimal(i) / 4, ts, datetime(2024, 1, 1) + timedelta(seconds=i),
                     None if i % 5 == 0 else f"n{i}", i % 2, bytes([i % 256, 7])))
    return rows


# Injected differences (applied to the target copy): key -> what changes
#   5 deleted (missing), 1000 added (extra), 7 name changed, 8 NULL -> '' (note),
#   9 'n9' -> 'n9 ' (trailing space), 11 the instant moves by one hour.
# Row 12's timestamp is written in another time zone but is the same instant: equal.
EXPECT = {"missing": [(5,)], "extra": [(1000,)], "different": [(7,), (8,), (9,), (11,)]}


def target_rows() -> list[tuple]:
    rows = {r[0]: list(r) for r in source_rows()}
    del rows[5]
    rows[7][1] = "changed"
    rows[8][5] = ""
    rows[9][5] = rows[9][5] + " "
    rows[11][3] = rows[11][3] + timedelta(hours=1)
    rows[12][3] = rows[12][3].astimezone(TOKYO)
    rows[1000] = [1000, "extra", Decimal("1.5"), None, datetime(2024, 1, 1), None, 0, b""]
    return [tuple(r) for _, r in sorted(rows.items())]


def bucketed(db) -> bool:
    """Whether compare can run its bucket pass on ``db`` (MD5 aggregates: not on MySQL 9)."""
    return not db.query("SELECT VERSION()")[0][0].startswith("9.")


@pytest.fixture
def maria_source(mysql_source, tmp_source_db):
    conn = mysql_source.connect(tmp_source_db)
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+02:00'")  # TIMESTAMP input is local time: compare must see instants
        cur.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, price DECIMAL(10,2), "
                    "ts TIMESTAMP(6) NULL, dt DATETIME(6), note VARCHAR(20) NULL, flag TINYINT(1), "
                    "data VARBINARY(10)) DEFAULT CHARSET=utf8mb4")
        cur.executemany("INSERT INTO items VALUES (%s,%s,%s,%s,%s,%s,%s,%s)",
                        [(r[0], r[1], r[2], r[3].astimezone(timezone(timedelta(hours=2))).replace(tzinfo=None),
                          *r[4:]) for r in source_rows()])
    conn.close()
    port = mysql_source.port
    return from_dsn("src", f"mysql://root@127.0.0.1:{port}/{tmp_source_db}"), tmp_source_db


@pytest.fixture
def pg_target(postgres, request):
    schema = "cmp_" + request.node.name.lower().replace("[", "_").replace("]", "")[:40]
    with postgres.connect() as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute("SET TIME ZONE 'America/New_York'")
        conn.execute(f"CREATE TABLE {schema}.items (id integer PRIMARY KEY, name varchar(40) NOT NULL, "
                     "price numeric(10,3), ts timestamptz, dt timestamp, note varchar(20), flag boolean, data bytea)")
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO {schema}.items VALUES (%s,%s,%s,%s,%s,%s,%s,%s)",
                            [(*r[:6], bool(r[6]), r[7]) for r in target_rows()])
    ep = Endpoint("tgt", "postgres", {"dsn": postgres.dsn}, schema)
    yield ep, schema
    with postgres.connect() as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _keys(report, kind):
    return sorted(report.keys(kind))


@pytest.mark.parametrize("buckets", [True, False], ids=["bucket", "row"])
def test_source_vs_postgres_finds_exactly_the_injected_differences(maria_source, pg_target, buckets, mysql_source):
    src, db = maria_source
    tgt, schema = pg_target
    report = TableCompare(src, f"{db}.items", tgt, f"{schema}.items", use_buckets=buckets, bucket_rows=16).run()
    buckets = buckets and bucketed(mysql_source)
    assert report.mode == ("bucket+row" if buckets else "row")
    for kind, keys in EXPECT.items():
        assert _keys(report, kind) == keys, (kind, report.render())
    assert report.source_rows == N and report.target_rows == N
    assert report.same == N - 5
    if buckets:  # equal buckets digest alike on both databases: only the differing ones are rechecked
        assert 0 < report.rechecked_rows < N // 2, report.rechecked_rows
    # type differences are named, and compared by canonical value (12.50 == 12.500, 1 == true)
    text = "\n".join(report.type_mismatches)
    assert "column price" in text and "scale 2" in text and "scale 3" in text
    assert "column flag" in text


def test_source_vs_duckdb(maria_source, tmp_path, mysql_source):
    src, db = maria_source
    path = str(tmp_path / "t.duckdb")
    con = duckdb.connect(path)
    con.execute("SET TimeZone='Asia/Tokyo'")
    con.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, price DECIMAL(10,2), "
                "ts TIMESTAMPTZ, dt TIMESTAMP, note VARCHAR, flag BOOLEAN, data BLOB)")
    con.executemany("INSERT INTO items VALUES (?,?,?,?,?,?,?,?)",
                    [(*r[:6], bool(r[6]), r[7]) for r in target_rows()])
    con.close()
    report = TableCompare(src, f"{db}.items", from_dsn("duck", path), "main.items", bucket_rows=16).run()
    for kind, keys in EXPECT.items():
        assert _keys(report, kind) == keys, (kind, report.render())
    if bucketed(mysql_source):
        assert report.mode == "bucket+row" and 0 < report.rechecked_rows < N // 2, report.rechecked_rows
    else:
        assert report.mode == "row"
    assert not any("price" in m for m in report.type_mismatches)  # same scale: no mismatch


def test_source_vs_itself_equal_then_string_keys(mysql_source, tmp_source_db):
    conn = mysql_source.connect(tmp_source_db)
    with conn.cursor() as cur:
        for t in ("a", "b"):
            cur.execute(f"CREATE TABLE {t} (k VARCHAR(20) PRIMARY KEY, v INT) DEFAULT CHARSET=utf8mb4 "
                        "COLLATE utf8mb4_general_ci")
            # collation order differs from binary order ('B' < 'a' in bytes, 'a' < 'B' in general_ci)
            cur.executemany(f"INSERT INTO {t} VALUES (%s,%s)", [("a", 1), ("B", 2), ("é", 3), ("z", 4), ("C", 5)])
        cur.execute("UPDATE b SET v = 9 WHERE k = 'é'")
    conn.close()
    ep = from_dsn("m", f"mysql://root@127.0.0.1:{mysql_source.port}/{tmp_source_db}")
    report = TableCompare(ep, f"{tmp_source_db}.a", ep, f"{tmp_source_db}.b").run()
    assert report.mode == "row"
    assert report.keys("different") == [("é",)] and not report.keys("missing") and not report.keys("extra")


def test_mariadb_vs_mariadb_bucket_pass_rechecks_only_differing_buckets(mariadb_primary, tmp_mysql_db):
    conn = mariadb_primary.connect(tmp_mysql_db)
    with conn.cursor() as cur:
        for t in ("a", "b"):
            cur.execute(f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, name VARCHAR(20), ts DATETIME(6)) "
                        "DEFAULT CHARSET=utf8mb4")
            cur.execute(f"INSERT INTO {t} SELECT seq, IF(seq % 7 = 0, NULL, CONCAT('nä', seq)), "
                        f"TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND FROM seq_1_to_5000")
        cur.execute("UPDATE b SET name = 'x' WHERE id = 1234")
        cur.execute("DELETE FROM b WHERE id = 4321")
        cur.execute("INSERT INTO b VALUES (6000, 'new', NULL)")
        cur.execute("ANALYZE TABLE a, b")
    conn.close()
    ep = from_dsn("m", f"mysql://root@127.0.0.1:{mariadb_primary.port}/{tmp_mysql_db}")
    report = TableCompare(ep, f"{tmp_mysql_db}.a", ep, f"{tmp_mysql_db}.b", bucket_rows=64).run()
    assert report.mode == "bucket+row"
    assert (report.keys("different"), report.keys("missing"), report.keys("extra")) == ([(1234,)], [(4321,)],
                                                                                       [(6000,)])
    assert report.same == 4998 and report.source_rows == 5000 and report.target_rows == 5000
    assert 0 < report.rechecked_rows <= 3 * 200, report.rechecked_rows  # three buckets, not the table


def test_table_without_primary_key_is_compared_by_full_row_with_a_warning(mysql_source, tmp_source_db):
    conn = mysql_source.connect(tmp_source_db)
    with conn.cursor() as cur:
        for t in ("a", "b"):
            cur.execute(f"CREATE TABLE {t} (x INT, y VARCHAR(5))")
            cur.executemany(f"INSERT INTO {t} VALUES (%s,%s)", [(1, "a"), (1, "a"), (2, None), (3, "c")])
        cur.execute("DELETE FROM b WHERE x = 1 LIMIT 1")
        cur.execute("UPDATE b SET y = '' WHERE x = 2")
    conn.close()
    ep = from_dsn("m", f"mysql://root@127.0.0.1:{mysql_source.port}/{tmp_source_db}")
    report = TableCompare(ep, f"{tmp_source_db}.a", ep, f"{tmp_source_db}.b").run()
    assert report.mode == "full-row"
    assert any("no primary key" in w for w in report.warnings)
    assert report.count("missing") == 2 and report.count("extra") == 1  # one copy of (1,a); (2,NULL) vs (2,'')


def test_missing_table_is_a_clear_error(mysql_source, tmp_source_db):
    ep = from_dsn("m", f"mysql://root@127.0.0.1:{mysql_source.port}/{tmp_source_db}")
    with pytest.raises(CompareError, match="does not exist"):
        TableCompare(ep, f"{tmp_source_db}.nope", ep, f"{tmp_source_db}.nope").run()


def test_compare_from_config_reads_the_promoted_replica_after_a_mysql97_failover(mysql97_pair):
    """The configured source lists the old primary first: after it died and the replica was promoted,
    compare reads the promoted one (the host the daemon would stream from), and says so when none is."""
    from types import SimpleNamespace

    from cdc.compare.endpoints import from_config
    from readers.mysql.config import MySqlSourceConfig

    primary, replica = mysql97_pair
    for server in (primary, replica):  # compare reads the source as its capture user: the documented grant
        user, password = documented_capture_user(server, "cdc_doc", "doc-pw")
    primary.query("CREATE TABLE test.a (id INT PRIMARY KEY, v VARCHAR(10))")
    primary.query("INSERT INTO test.a VALUES (1, 'x'), (2, 'y')")
    replica.wait_caught_up(primary)
    src = MySqlSourceConfig(name="shop", hosts=[primary.address, replica.address], user=user, password=password,
                            tables=["test.a"], connect_timeout_s=2)
    config = SimpleNamespace(sources=[src], targets=[])
    primary.kill()
    with pytest.raises(CompareError, match="current primary"):  # replica still read-only: nobody to read
        from_config(config, "shop")
    replica.promote()
    replica.query("INSERT INTO test.a VALUES (3, 'z')")
    ep = from_config(config, "shop")
    assert ep.params["port"] == replica.port
    report = TableCompare(ep, "test.a", from_dsn("r", f"mysql://root@{replica.address}/test"), "test.a").run()
    assert report.equal and report.source_rows == 3, report.render()
