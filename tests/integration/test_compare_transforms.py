"""`cdc compare` of a shaped table (sources[].transforms) on real MariaDB/MySQL and PostgreSQL: the source is
rendered as the stream shaped it (the masks in SQL, cdc/compare/transformed.py), so a target holding the
masked values compares EQUAL and a tampered masked value is found."""

from __future__ import annotations

import pytest

from cdc.compare.endpoints import Endpoint, from_dsn
from cdc.compare.merge import DIFFERENT, EXTRA
from cdc.compare.table_diff import TableCompare
from cdc.stream.events import Column, TableId, TableSchema
from cdc.transforms.config import TransformsConfig
from cdc.transforms.mapper import SourceTransforms
from readers.mysql.types import logical_type

pytestmark = [pytest.mark.mysql, pytest.mark.postgres]
N = 120


def _rows():
    return [(i, f"PII-SECRET-{i}@example.com", f"secret note {i}", f"Näme-{i}", None if i % 7 == 0 else
             f"4111-1111-{i:04d}", f"123-45-{i:04d}") for i in range(1, N + 1)]


@pytest.fixture
def shaped(mysql_source, tmp_source_db, postgres, tmp_path, request):
    (tmp_path / "h").write_bytes(b"a-hash-key-of-32-bytes-for-tests")
    (tmp_path / "a").write_text("cd" * 32)
    transforms = SourceTransforms("src", TransformsConfig.model_validate({
        "hash_key_file": str(tmp_path / "h"), "encryption_key_file": str(tmp_path / "a"),
        "tables": [{"match": f"{tmp_source_db}.people", "exclude": ["notes"],
                    "columns": {"email": {"mask": "hash"}, "name": {"mask": "truncate", "length": 3},
                                "card": {"mask": "keep_last", "length": 4}, "ssn": {"mask": "encrypt"}}}]}))
    conn = mysql_source.connect(tmp_source_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE people (id INT PRIMARY KEY, email VARCHAR(80), notes TEXT, name VARCHAR(40), "
                    "card VARCHAR(19) NULL, ssn CHAR(11)) DEFAULT CHARSET=utf8mb4")
        cur.executemany("INSERT INTO people VALUES (%s,%s,%s,%s,%s,%s)", _rows())
    conn.close()
    cols = [("id", "int"), ("email", "varchar(80)"), ("notes", "text"), ("name", "varchar(40)"),
            ("card", "varchar(19)"), ("ssn", "char(11)")]
    schema = TableSchema(TableId(tmp_source_db, "people"), tuple(Column(n, t, True, None, logical_type(t))
                                                                 for n, t in cols), ("id",))
    mapper = transforms.mapper(schema)  # the target holds what the stream carried
    pg_schema = "cmpx_" + request.node.name.lower().replace("[", "_").replace("]", "")[:40]
    with postgres.connect() as pg:
        pg.execute(f"DROP SCHEMA IF EXISTS {pg_schema} CASCADE")
        pg.execute(f"CREATE SCHEMA {pg_schema}")
        pg.execute(f"CREATE TABLE {pg_schema}.people (id integer PRIMARY KEY, email varchar(64), name varchar(3), "
                   "card varchar(19), ssn text)")
        with pg.cursor() as cur:
            for r in _rows():
                out = mapper.row(dict(zip([c for c, _ in cols], r)))
                cur.execute(f"INSERT INTO {pg_schema}.people VALUES (%s,%s,%s,%s,%s)",
                            (out["id"], out["email"], out["name"], out["card"], out["ssn"]))
    src = from_dsn("src", f"mysql://root@127.0.0.1:{mysql_source.port}/{tmp_source_db}")
    yield src, f"{tmp_source_db}.people", Endpoint("tgt", "postgres", {"dsn": postgres.dsn}, pg_schema), \
        f"{pg_schema}.people", transforms, postgres
    with postgres.connect() as pg:
        pg.execute(f"DROP SCHEMA IF EXISTS {pg_schema} CASCADE")


@pytest.mark.parametrize("buckets", [True, False], ids=["bucket", "row"])
def test_a_masked_target_compares_equal_and_a_tampered_value_is_found(shaped, buckets):
    src, s_name, tgt, t_name, transforms, postgres = shaped
    report = TableCompare(src, s_name, tgt, t_name, use_buckets=buckets, bucket_rows=16,
                          transforms=transforms).run()
    assert report.equal and report.same == N, report.render()
    text = "\n".join(report.warnings)
    assert "column notes: left out" in text and "column ssn: encrypted" in text
    unshaped = TableCompare(src, s_name, tgt, t_name, use_buckets=buckets, bucket_rows=16).run()
    assert not unshaped.equal  # the control: without the transforms the masked values differ
    with postgres.connect() as pg:
        pg.execute(f"UPDATE {t_name} SET email = md5(email) || md5(email) WHERE id = 9")
        pg.execute(f"UPDATE {t_name} SET card = '****-****-0010' WHERE id = 10")
    report = TableCompare(src, s_name, tgt, t_name, use_buckets=buckets, bucket_rows=16,
                          transforms=transforms).run()
    assert sorted(report.keys(DIFFERENT)) == [(9,), (10,)], report.render()


def test_a_filtered_target_with_computed_columns_compares_equal(mysql_source, tmp_source_db, postgres):
    """The target holds what the daemon's mapper makes of the rows (Python evaluation); the compare renders the
    filter and the computed columns in SQL on the source: the two must agree."""
    transforms = SourceTransforms("src", TransformsConfig.model_validate({"tables": [
        {"match": f"{tmp_source_db}.orders", "filter": "region IN ('eu', 'uk') AND amount >= 10",
         "computed": {"label": {"expr": "CONCAT(UPPER(region), '-', SUBSTRING(note, 1, 3))", "type": "varchar(12)"},
                      "doubled": {"expr": "amount * 2 + 0.005", "type": "decimal(10,2)"},
                      "size": {"expr": "CASE WHEN amount > 20 THEN 2 ELSE 1 END", "type": "int"}}}]}))
    rows = [(i, ("eu", "us", "uk", None)[i % 4], f"{i % 30}.{i % 100:02d}", None if i % 5 == 0 else f"note{i}")
            for i in range(1, N + 1)]
    conn = mysql_source.connect(tmp_source_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE orders (id INT PRIMARY KEY, region VARCHAR(4), amount DECIMAL(8,2), note TEXT)")
        cur.executemany("INSERT INTO orders VALUES (%s,%s,%s,%s)", rows)
    conn.close()
    schema = TableSchema(TableId(tmp_source_db, "orders"), tuple(Column(n, t, True, None, logical_type(t)) for n, t in
                         [("id", "int"), ("region", "varchar(4)"), ("amount", "decimal(8,2)"), ("note", "text")]),
                         ("id",))
    kept = transforms.mapper(schema).rows([dict(zip(("id", "region", "amount", "note"), r)) for r in rows])
    assert 0 < len(kept) < N and {r["size"] for r in kept} == {1, 2}
    with postgres.connect() as pg:
        pg.execute("DROP SCHEMA IF EXISTS cmpx_filter CASCADE")
        pg.execute("CREATE SCHEMA cmpx_filter")
        pg.execute("CREATE TABLE cmpx_filter.orders (id integer PRIMARY KEY, region varchar(4), amount numeric(8,2), "
                   "note text, label varchar(12), doubled numeric(10,2), size integer)")
        with pg.cursor() as cur:
            cur.executemany("INSERT INTO cmpx_filter.orders VALUES (%(id)s, %(region)s, %(amount)s, %(note)s, "
                            "%(label)s, %(doubled)s, %(size)s)", kept)
    try:
        src = from_dsn("src", f"mysql://root@127.0.0.1:{mysql_source.port}/{tmp_source_db}")
        tgt = Endpoint("tgt", "postgres", {"dsn": postgres.dsn}, "cmpx_filter")
        for buckets in (True, False):
            report = TableCompare(src, f"{tmp_source_db}.orders", tgt, "cmpx_filter.orders", use_buckets=buckets,
                                  bucket_rows=16, transforms=transforms).run()
            assert report.equal and report.same == len(kept), report.render()
            assert any("rows filtered at the source" in w for w in report.warnings)
            assert not report.type_mismatches, report.type_mismatches  # the computed columns are paired
        assert not TableCompare(src, f"{tmp_source_db}.orders", tgt, "cmpx_filter.orders").run().equal  # control
        with postgres.connect() as pg:  # a row the filter keeps out, and a wrong computed value: both found
            pg.execute("INSERT INTO cmpx_filter.orders (id, region, amount) VALUES (2, 'us', 2)")
            pg.execute(f"UPDATE cmpx_filter.orders SET doubled = doubled + 1 WHERE id = {kept[0]['id']}")
        report = TableCompare(src, f"{tmp_source_db}.orders", tgt, "cmpx_filter.orders", bucket_rows=16,
                              transforms=transforms).run()
        assert report.keys(EXTRA) == [(2,)] and report.keys(DIFFERENT) == [(kept[0]["id"],)], report.render()
    finally:
        with postgres.connect() as pg:
            pg.execute("DROP SCHEMA IF EXISTS cmpx_filter CASCADE")
