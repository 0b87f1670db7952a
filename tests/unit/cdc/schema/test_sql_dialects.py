"""One SQL dialect object per database: the spellings compare, views and targets share."""

from __future__ import annotations

import hashlib

import duckdb
import pytest

from cdc.errors import ConfigError
from cdc.schema.sql_dialects import DUCKDB, MYSQL, SQL_DIALECTS, sql_dialect
from streaming.targets.duckdb.target import DuckDbTarget
from streaming.targets.mysql.target import MySqlTarget
from streaming.targets.postgres.target import PostgresTarget
from streaming.views.dialect import DIALECTS as VIEW_DIALECTS


def test_quoting_doubles_the_quote_character():
    assert MYSQL.quote("a`b") == "`a``b`"
    assert sql_dialect("postgres").quote('a"b') == '"a""b"'


def test_unknown_dialect_names_the_known_ones():
    with pytest.raises(ConfigError, match="'sybase'.*duckdb") as exc:
        sql_dialect("sybase")
    assert exc.value.dialect == "sybase"


def test_views_and_targets_use_the_same_objects():
    for name, d in VIEW_DIALECTS.items():
        assert d.sql is SQL_DIALECTS[name] and d.param == SQL_DIALECTS[name].param
    for cls in (PostgresTarget, DuckDbTarget, MySqlTarget):
        assert cls.sql is SQL_DIALECTS[cls.dialect]


def test_spellings_evaluate_as_promised_on_duckdb():
    con = duckdb.connect()
    d = DUCKDB
    one = lambda sql: con.execute(f"SELECT {sql}").fetchone()[0]
    assert one(d.md5("'héllo'")) == hashlib.md5("héllo".encode()).hexdigest()
    assert (one(d.char_length("'héllo'")), one(d.byte_length("'héllo'"))) == (5, 6)
    assert one(d.null_safe_eq("NULL", "NULL")) is True and one(d.null_safe_eq("1", "NULL")) is False
    assert one(f"CAST(12.5 AS {d.text_type})") == "12.5"
    assert d.cursor(con) is con


def test_upsert_clause_per_database():
    assert sql_dialect("postgres").upsert_clause(["id", "v"], ["id"]) == \
        'ON CONFLICT ("id") DO UPDATE SET "v" = EXCLUDED."v"'
    assert DUCKDB.upsert_clause(["id"], ["id"]) == 'ON CONFLICT ("id") DO NOTHING'
    assert MYSQL.upsert_clause(["id", "v"], ["id"]) == "ON DUPLICATE KEY UPDATE `v` = VALUES(`v`)"
    assert MYSQL.upsert_clause(["id"], ["id"]) == "ON DUPLICATE KEY UPDATE `id` = VALUES(`id`)"
    with pytest.raises(NotImplementedError, match="oracle"):
        sql_dialect("oracle").upsert_clause(["id"], ["id"])


def test_upsert_clause_runs_on_duckdb():
    con = duckdb.connect()
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR)")
    for v in ("a", "b"):
        con.execute(f"INSERT INTO t (id, v) VALUES (1, ?) {DUCKDB.upsert_clause(['id', 'v'], ['id'])}", [v])
    assert con.execute("SELECT id, v FROM t").fetchall() == [(1, "b")]
