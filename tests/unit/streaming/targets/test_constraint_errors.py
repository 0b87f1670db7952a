"""Target.is_constraint: which driver errors the engine retries in stream order before calling a row bad."""

from __future__ import annotations

import duckdb
import psycopg
import pymysql

from cdc.config.models import TargetConfig
from streaming.targets import make_target


def _pg():
    return make_target(TargetConfig(name="pg", kind="postgres", dsn="postgresql://u:p@127.0.0.1:1/db"))


def _my():
    return make_target(TargetConfig(name="my", kind="mysql", dsn="mysql://u:p@127.0.0.1:1/db"))


def test_postgres_class_23_only():
    t = _pg()
    assert t.is_constraint(psycopg.errors.ForeignKeyViolation("fk"))
    assert t.is_constraint(psycopg.errors.UniqueViolation("uq"))
    assert not t.is_constraint(psycopg.errors.NumericValueOutOfRange("range"))  # 22003: the row's value
    assert not t.is_constraint(psycopg.errors.LockNotAvailable("lock"))
    assert not t.is_constraint(ValueError("not the driver's"))


def test_mysql_error_numbers():
    t = _my()
    for n in (1062, 1451, 1452):
        assert t.is_constraint(pymysql.err.IntegrityError(n, "x"))
    assert not t.is_constraint(pymysql.err.OperationalError(1205, "lock wait timeout"))
    assert not t.is_constraint(pymysql.err.DataError(1406, "data too long"))


def test_duckdb_constraint_errors(tmp_path):
    t = make_target(TargetConfig(name="d", kind="duckdb", path=str(tmp_path / "t.duckdb")))
    assert t.is_constraint(duckdb.ConstraintException("fk"))
    assert not t.is_constraint(duckdb.ConversionException("conv"))


def test_postgres_defers_only_the_bulk_pass():
    t, seen = _pg(), []
    t.execute = lambda sql, params=None: seen.append(sql)
    t.defer_constraints(True)
    t.defer_constraints(False)
    assert seen == ["SET CONSTRAINTS ALL DEFERRED", "SET CONSTRAINTS ALL IMMEDIATE"]
    m, seen_m = _my(), []
    m.execute = lambda sql, params=None: seen_m.append(sql)
    m.defer_constraints(True)
    assert seen_m == []
