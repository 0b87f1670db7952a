"""`cdc compare` of a shaped table (sources[].transforms) on real MariaDB/MySQL and PostgreSQL: the source is
rendered as the stream shaped it (the masks in SQL, cdc/compare/transformed.py), so a target holding the
masked values compares EQUAL and a tampered masked value is found."""

from __future__ import annotations

import pytest

from cdc.compare.endpoints import Endpoint, from_dsn
from cdc.compare.merge import DIFFERENT
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
