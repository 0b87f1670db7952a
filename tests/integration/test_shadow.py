"""``kind: shadow`` on real MariaDB, PostgreSQL and DuckDB: the merge yields exactly the changes,
and a crash between the shadow update and the publisher never loses or repeats a cycle."""

from __future__ import annotations

import pytest

from cdc.contract import SourceContext
from cdc.metrics import SourceMetrics
from cdc.stream.events import Begin, Change, Commit, Heartbeat
from readers.shadow.config import ShadowSourceConfig
from readers.shadow.reader import ShadowSource

pytestmark = [pytest.mark.mysql, pytest.mark.postgres]


class Db:
    """One database kind: run SQL, name the table, give the DSN."""

    def __init__(self, kind, dsn, run, table, shadow_schema):
        self.kind, self.dsn, self.run, self.table, self.shadow_schema = kind, dsn, run, table, shadow_schema


@pytest.fixture(params=["mariadb", "postgres", "duckdb"])
def db(request, tmp_path):
    if request.param == "mariadb":
        primary = request.getfixturevalue("mariadb_primary")
        name = request.getfixturevalue("tmp_mysql_db")
        conn = primary.connect(name)

        def run(sql):
            with conn.cursor() as cur:
                cur.execute(sql)
        run("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(8,2)) DEFAULT CHARSET=utf8mb4")
        yield Db("mariadb", f"mysql://root@127.0.0.1:{primary.port}/{name}", run, f"{name}.t", f"{name}_shadow")
        run(f"DROP DATABASE IF EXISTS {name}_shadow")
        conn.close()
    elif request.param == "postgres":
        pg = request.getfixturevalue("postgres")
        conn = pg.connect()
        schema = f"sh_{abs(hash(request.node.name)) % 10**8}"
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"DROP SCHEMA IF EXISTS {schema}_shadow CASCADE")
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.t (id int PRIMARY KEY, name varchar(20), price numeric(8,2))")
        conn.execute(f"SET search_path TO {schema}")
        yield Db("postgres", pg.dsn, conn.execute, f"{schema}.t", f"{schema}_shadow")
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"DROP SCHEMA IF EXISTS {schema}_shadow CASCADE")
        conn.close()
    else:
        import duckdb

        path = str(tmp_path / "src.duckdb")
        holder: dict = {}

        def run(sql):  # short-lived connections: the source opens the same file
            con = holder.get("con") or duckdb.connect(path)
            con.execute(sql)
            con.close()
        run("CREATE TABLE t (id INTEGER PRIMARY KEY, name VARCHAR, price DECIMAL(8,2))")
        yield Db("duckdb", f"duckdb://{path}", run, "main.t", "cdc_shadow")


def source(db, name="sh") -> ShadowSource:
    cfg = ShadowSourceConfig(name=name, dsn=db.dsn, tables=[db.table], interval_s=0.1,
                             shadow_schema=db.shadow_schema, passwordless=db.kind == "mariadb")  # fixture root
    return ShadowSource(cfg, SourceContext(metrics=SourceMetrics(name)))


def cycle(src: ShadowSource) -> list:
    return list(src.run_cycle())


def changes(events) -> list[tuple]:
    return [(e.op, e.before, e.after) for e in events if isinstance(e, Change)]


def test_merge_yields_exactly_the_changes(db):
    db.run("INSERT INTO t VALUES (1, 'a', 1.50), (2, NULL, 2.00), (3, 'c', NULL)")
    src = source(db)
    src.start(None)
    try:
        first = cycle(src)
        assert isinstance(first[0], Begin) and isinstance(first[-1], Commit)
        assert first[-1].resume == {"cycle": 1}
        assert changes(first) == [("r", None, {"id": 1, "name": "a", "price": "1.50"}),
                                  ("r", None, {"id": 2, "name": None, "price": "2.00"}),
                                  ("r", None, {"id": 3, "name": "c", "price": None})]
        db.run("UPDATE t SET name = '' WHERE id = 2")          # NULL -> '' is a change
        db.run("UPDATE t SET name = 'c ' WHERE id = 3")        # trailing space is a change
        db.run("DELETE FROM t WHERE id = 1")
        db.run("INSERT INTO t VALUES (4, 'd', 4.00)")
        second = cycle(src)
        assert second[-1].resume == {"cycle": 2}
        assert changes(second) == [
            ("d", {"id": 1, "name": "a", "price": "1.50"}, None),
            ("u", {"id": 2, "name": None, "price": "2.00"}, {"id": 2, "name": "", "price": "2.00"}),
            ("u", {"id": 3, "name": "c", "price": None}, {"id": 3, "name": "c ", "price": None}),
            ("c", None, {"id": 4, "name": "d", "price": "4.00"}),
        ]
        third = cycle(src)
        assert len(third) == 1 and isinstance(third[0], Heartbeat) and third[0].resume == {"cycle": 2}
    finally:
        src.close()


def test_restart_redoes_a_cycle_the_stream_never_got(mariadb_primary, tmp_mysql_db):
    conn = mariadb_primary.connect(tmp_mysql_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
        cur.execute("INSERT INTO t VALUES (1, 1), (2, 2)")
    db = Db("mariadb", f"mysql://root@127.0.0.1:{mariadb_primary.port}/{tmp_mysql_db}", None, f"{tmp_mysql_db}.t",
            f"{tmp_mysql_db}_shadow")
    src = source(db)
    src.start(None)
    cycle(src)  # cycle 1 published (its END carried {"cycle": 1})
    src.close()
    with conn.cursor() as cur:
        cur.execute("UPDATE t SET v = 20 WHERE id = 2")
    src = source(db)
    src.start({"cycle": 1})
    lost = cycle(src)  # cycle 2: shadow updated, then the daemon "crashes" before the publisher wrote it
    assert changes(lost) == [("u", {"id": 2, "v": 2}, {"id": 2, "v": 20})]
    src.close()
    with conn.cursor() as cur:
        cur.execute("INSERT INTO t VALUES (3, 3)")
    src = source(db)
    src.start({"cycle": 1})  # the stream's checkpoint is still cycle 1: cycle 2 is undone and redone
    redone = cycle(src)
    assert redone[-1].resume == {"cycle": 2}
    assert changes(redone) == [("u", {"id": 2, "v": 2}, {"id": 2, "v": 20}), ("c", None, {"id": 3, "v": 3})]
    src.close()
    src = source(db)
    src.start({"cycle": 2})  # published: nothing is repeated
    assert [type(e) for e in cycle(src)] == [Heartbeat]
    src.close()
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {tmp_mysql_db}_shadow")
    conn.close()


def test_table_without_primary_key_is_refused(mariadb_primary, tmp_mysql_db):
    mariadb_primary.query(f"CREATE TABLE {tmp_mysql_db}.nokey (a INT)")
    db = Db("mariadb", f"mysql://root@127.0.0.1:{mariadb_primary.port}/{tmp_mysql_db}", None,
            f"{tmp_mysql_db}.nokey", f"{tmp_mysql_db}_shadow")
    src = source(db)
    with pytest.raises(Exception, match="has no primary key"):
        src.start(None)
    src.close()
