"""Each target says what its driver's errors mean (Target.classify): data, transient or fatal; and which
bounds its connections get from ``targets[].timeouts``."""

from __future__ import annotations

import duckdb
import oracledb
import psycopg
import pymysql
import pytest
from oracledb.errors import _Error

from cdc.config.models import TargetConfig, TargetTimeouts
from streaming.errors import TargetError
from streaming.targets.base import ErrorKind
from streaming.targets.duckdb.target import DuckDbTarget
from streaming.targets.mysql.target import MySqlTarget
from streaming.targets.oracle.target import OracleTarget
from streaming.targets.parquet.target import ParquetTarget
from streaming.targets.postgres.target import PostgresTarget

DATA, TRANSIENT, FATAL = ErrorKind.DATA, ErrorKind.TRANSIENT, ErrorKind.FATAL


def _pg(**timeouts) -> PostgresTarget:
    return PostgresTarget(TargetConfig(name="pg", kind="postgres", dsn="postgresql://u:p@127.0.0.1:1/db",
                                       timeouts=TargetTimeouts(**timeouts)))


@pytest.mark.parametrize(("state", "kind"), [
    ("22P02", DATA), ("22003", DATA), ("23505", DATA), ("23514", DATA), ("23502", DATA),  # classes 22, 23
    ("55P03", TRANSIENT), ("40P01", TRANSIENT), ("40001", TRANSIENT), ("57014", TRANSIENT),  # lock, deadlock...
    ("25P03", TRANSIENT), ("57P01", TRANSIENT), ("08006", TRANSIENT), ("53300", TRANSIENT),
    ("42501", FATAL), ("42P01", FATAL), ("42703", FATAL), ("XX000", FATAL), ("0A000", FATAL),
])
def test_postgres_by_sqlstate(state, kind):
    assert _pg().classify(psycopg.errors.lookup(state)("x")) is kind


def test_postgres_lost_connection_and_own_errors():
    t = _pg()
    assert t.classify(psycopg.OperationalError("server closed the connection unexpectedly")) is TRANSIENT
    assert t.classify(psycopg.InterfaceError("the connection is closed")) is TRANSIENT
    assert t.classify(psycopg.ProgrammingError("no results to fetch")) is FATAL
    assert t.classify(TargetError("cannot connect", target="pg")) is TRANSIENT
    assert t.classify(ValueError("a row image has columns outside [...]")) is DATA
    assert t.classify(RuntimeError("?")) is FATAL


@pytest.mark.parametrize(("code", "kind"), [
    (1366, DATA), (1264, DATA), (1406, DATA), (1062, DATA), (1452, DATA), (1048, DATA), (4025, DATA),
    (1205, TRANSIENT), (1213, TRANSIENT), (1969, TRANSIENT), (3024, TRANSIENT), (2013, TRANSIENT),
    (2006, TRANSIENT), (1927, TRANSIENT), (1290, TRANSIENT),
    (1142, FATAL), (1146, FATAL), (1054, FATAL), (1064, FATAL),
])
def test_mysql_by_error_number(code, kind):
    t = MySqlTarget(TargetConfig(name="my", kind="mysql", dsn="mysql://u:p@127.0.0.1:1/db"))
    assert t.classify(pymysql.err.OperationalError(code, "x")) is kind
    assert t.classify(pymysql.err.InterfaceError(0, "")) is TRANSIENT


@pytest.mark.parametrize(("exc", "kind"), [
    (duckdb.ConversionException("Could not convert string 'x' to INT32"), DATA),
    (duckdb.OutOfRangeException("out of range"), DATA),
    (duckdb.ConstraintException("NOT NULL constraint failed"), DATA),
    (duckdb.TransactionException("TransactionContext Error: Conflict on tuple deletion"), TRANSIENT),
    (duckdb.TransactionException("Current transaction is aborted (please ROLLBACK)"), FATAL),
    (duckdb.CatalogException("Table with name t does not exist"), FATAL),
])
def test_duckdb_by_exception_class(exc, kind):
    assert DuckDbTarget(TargetConfig(name="d", kind="duckdb", path=":memory:")).classify(exc) is kind


@pytest.mark.parametrize(("error", "kind"), [
    (_Error("ORA-01400: cannot insert NULL", code=1400), DATA),
    (_Error("ORA-12899: value too large for column", code=12899), DATA),
    (_Error("ORA-00001: unique constraint violated", code=1), DATA),
    (_Error("ORA-00060: deadlock detected", code=60), TRANSIENT),
    (_Error("ORA-03113: end-of-file on communication channel", code=3113), TRANSIENT),
    (_Error("DPY-4011: the database or network closed the connection"), TRANSIENT),
    (_Error("DPY-4024: call timeout of 3000 ms exceeded"), TRANSIENT),
    (_Error("ORA-00942: table or view does not exist", code=942), FATAL),
    (_Error("ORA-01031: insufficient privileges", code=1031), FATAL),
    (_Error("ORA-99999: anything recoverable", code=99999, isrecoverable=True), TRANSIENT),
])
def test_oracle_by_error_code(error, kind):
    t = OracleTarget(TargetConfig(name="o", kind="oracle", dsn="u@127.0.0.1:1521/svc", password="p"))
    assert t.classify(oracledb.DatabaseError(error)) is kind


def test_targets_that_are_not_databases_take_pyarrow_value_errors_as_data(tmp_path):
    import pyarrow as pa

    t = ParquetTarget(TargetConfig(name="pq", kind="parquet", path=str(tmp_path)))
    assert t.classify(pa.ArrowInvalid("Could not convert '1e40'")) is DATA
    assert t.classify(ConnectionResetError()) is TRANSIENT
    assert t.classify(PermissionError("read-only store")) is FATAL


def test_postgres_connection_bounds_follow_the_config():
    t = _pg(connect_s=2.5, statement_s=20, lock_s=0.5, idle_in_transaction_s=60, keepalive_idle_s=5,
            keepalive_interval_s=2, keepalive_count=4)
    assert t.connect_options() == {"connect_timeout": 3, "keepalives": 1, "keepalives_idle": 5,
                                   "keepalives_interval": 2, "keepalives_count": 4, "tcp_user_timeout": 13_000}
    assert t.session_settings() == {"statement_timeout": 20_000, "lock_timeout": 500,
                                    "idle_in_transaction_session_timeout": 60_000}
    assert t.config.timeouts.reply_bound_s == 50  # statement_s + 30
    off = _pg(statement_s=0, idle_in_transaction_s=0)  # 0: the server's own settings stay
    assert off.session_settings() == {} and off.config.timeouts.reply_bound_s is None
    assert _pg(reply_s=7).config.timeouts.reply_bound_s == 7


def test_mysql_connection_bounds_follow_the_config():
    t = MySqlTarget(TargetConfig(name="my", kind="mysql", dsn="mysql://u:p@127.0.0.1:1/db",
                                 timeouts=TargetTimeouts(connect_s=4, statement_s=15, lock_s=2.5, reply_s=20)))
    assert t.connect_options() == {"connect_timeout": 4, "read_timeout": 20, "write_timeout": 20}
    assert t.session_settings(mariadb=True) == {"innodb_lock_wait_timeout": 3, "max_statement_time": 15,
                                                "idle_transaction_timeout": 120}
    assert t.session_settings(mariadb=False) == {"innodb_lock_wait_timeout": 3, "max_execution_time": 15_000}
