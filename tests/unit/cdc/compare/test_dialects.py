"""Every database compare reads is one CompareDialect: the whole interface, and no name tests elsewhere."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from cdc.compare.columns import ColumnInfo
from cdc.compare.dialects import COMPARE_DIALECTS, CompareDialect, compare_dialect
from cdc.compare.dialects.mysql_compare import MySqlCompare
from cdc.errors import ConfigError
from cdc.schema.sql_dialects import SQL_DIALECTS

COMPARE_DIR = Path(__file__).resolve().parents[4] / "cdc" / "compare"
DATABASES = r"(mysql|mariadb|postgres|postgresql|duckdb|oracle)"
# ``dialect == "mysql"``, ``self.dialect in ("postgres", ...)``, ``kind != 'duckdb'``, ``{"mysql": ...}[dialect]``
NAME_TEST = re.compile(r"(dialect|kind|\.name)\s*(==|!=|\bin\b|\bnot in\b)\s*[(\[{]?\s*[\"']" + DATABASES + "[\"']"
                       r"|[\"']" + DATABASES + r"[\"']\s*(==|!=)\s*[\w.]*(dialect|kind)"
                       r"|\{\s*[\"']" + DATABASES + r"[\"']\s*:.*\}\s*\[[\w.]*dialect")


def test_the_interface_is_abstract():
    assert inspect.isabstract(CompareDialect)
    assert {"int_text", "float_digits", "bucket_digest", "connect", "dsn_params", "target_params",
            "one_row", "row_estimate_sql"} <= CompareDialect.__abstractmethods__


@pytest.mark.parametrize("name", sorted(COMPARE_DIALECTS))
def test_every_dialect_implements_every_abstract_method(name):
    d = compare_dialect(name)
    assert not inspect.isabstract(type(d))
    missing = [m for m in sorted(CompareDialect.__abstractmethods__)
               if getattr(type(d), m) is getattr(CompareDialect, m)]
    assert missing == [], f"{type(d).__name__} does not implement {missing}"
    assert d.name == name and d.sql is SQL_DIALECTS[name]


def test_one_compare_dialect_per_sql_dialect():
    assert set(COMPARE_DIALECTS) == set(SQL_DIALECTS)
    with pytest.raises(ConfigError, match="no SQL dialect 'sqlite'"):
        compare_dialect("sqlite")


@pytest.mark.parametrize("name", sorted(COMPARE_DIALECTS))
def test_every_family_renders(name):
    d = compare_dialect(name)
    for family in ("int", "bool", "decimal", "float", "string", "binary", "date", "datetime", "timestamptz", "time",
                   "json", "other"):
        assert '"c"' in d.render(ColumnInfo("c", "x", family, 2), True).replace("`", '"')


def test_the_bucket_pass_runs_where_the_dialect_says():
    assert [n for n, d in sorted(COMPARE_DIALECTS.items()) if d.buckets] == ["duckdb", "mysql", "postgres"]
    mysql, pg = compare_dialect("mysql"), compare_dialect("postgres")
    assert isinstance(mysql, MySqlCompare)
    assert not mysql.ordered_digest_with(mysql)  # two MariaDB sides: rows reach GROUP_CONCAT in the same order
    assert mysql.ordered_digest_with(pg) and pg.ordered_digest_with(mysql)


def test_the_pattern_finds_name_tests():
    for line in ('if dialect == "mysql":', "elif self.dialect == 'postgres':", 'if kind in ("duckdb", "x")',
                 'div = {"mysql": "DIV", "postgres": "/"}[side.dialect]', 'if side.dialect != "oracle"',
                 'if "mysql" == ep.dialect'):
        assert NAME_TEST.search(line), line
    assert not NAME_TEST.search('if src.kind == "shadow":')


def test_compare_modules_do_not_test_the_database_name():
    """What differs per database is a method of its CompareDialect (cdc/compare/dialects/), never an
    ``if dialect == "..."`` chain in the compare modules (the dialect classes included)."""
    found = []
    for path in sorted(COMPARE_DIR.rglob("*.py")):
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if NAME_TEST.search(line):
                found.append(f"{path.relative_to(COMPARE_DIR)}:{no}: {line.strip()}")
    assert found == []


def test_json_is_a_family_of_its_own_read_as_the_driver_hands_it():
    mysql, pg, duck = (compare_dialect(n) for n in ("mysql", "postgres", "duckdb"))
    assert mysql.classify("json") == pg.classify("jsonb") == pg.classify("json") == duck.classify("JSON") == ("json", None)
    assert mysql.classify("longtext") == ("string", None)  # MariaDB's JSON: a LONGTEXT alias
    assert mysql.value_kind("json", "json") == "json"  # PyMySQL hands the spaced text (cdc.schema.values)
    assert pg.value_kind("jsonb", "json") == duck.value_kind("json", "json") == "other"  # as before: no re-parse
    assert mysql.render(ColumnInfo("j", "json", "json"), False) == "CAST(`j` AS CHAR)"
    assert mysql.render(ColumnInfo("j", "longtext", "json"), False) == "CAST(CAST(`j` AS JSON) AS CHAR)"
    assert pg.render(ColumnInfo("j", "text", "json"), False) == '"j"::jsonb::text'


@pytest.mark.parametrize("doc", ['{"k":[1,2.5,"v",null,true],"u":"é"}', "[]", "{}", "null", '"s,:"', "3.5",
                                 '{"a,:\\"b":"x:y,z\\\\","bb":[{"c":1,"d":"q,"}]}', '{"a":"\\\\","b":",\\""}',
                                 '{"a": 1,  "b" : [ 1 , "x,y" ]}', '{"t":"line\\nbreak/"}'])
def test_duckdb_prints_a_json_text_as_mysql_and_jsonb_do(doc):
    """DuckDB's VARCHAR holds the stream's compact text; MySQL and jsonb print ', ' and ': ' outside strings,
    which is Python's default json.dumps spacing: commas and colons inside strings stay as they are."""
    import json

    import duckdb

    sql = compare_dialect("duckdb").render(ColumnInfo("x", "varchar", "json"), False)
    con = duckdb.connect()
    try:
        got = con.execute(f"SELECT {sql} FROM (SELECT CAST(? AS VARCHAR) AS x)", [doc]).fetchone()[0]
        null = con.execute(f"SELECT {sql} FROM (SELECT CAST(NULL AS VARCHAR) AS x)").fetchone()[0]
    finally:
        con.close()
    assert (got, null) == (json.dumps(json.loads(doc), ensure_ascii=False), None)
