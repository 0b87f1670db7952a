"""`cdc check` of a target names the GRANT that fixes a refused write: each SQL target spells its own."""

from __future__ import annotations

import pytest

from cdc.config.models import TargetConfig
from streaming.apply.target_check import _grant
from streaming.targets.duckdb.target import DuckDbTarget
from streaming.targets.mysql.target import MySqlTarget
from streaming.targets.oracle.target import OracleTarget
from streaming.targets.postgres.target import PostgresTarget

TARGETS = {
    "postgres": lambda: PostgresTarget(TargetConfig(name="pg", kind="postgres", dsn="postgresql://u:p@127.0.0.1:1/db")),
    "mysql": lambda: MySqlTarget(TargetConfig(name="my", kind="mysql", dsn="mysql://u:p@127.0.0.1:1/db")),
    "oracle": lambda: OracleTarget(TargetConfig(name="o", kind="oracle", dsn="u@127.0.0.1:1521/svc", password="p")),
    "duckdb": lambda: DuckDbTarget(TargetConfig(name="d", kind="duckdb", path=":memory:")),
}


@pytest.mark.parametrize(("kind", "error", "want"), [
    ("postgres", 'schema "s" does not exist', "CREATE SCHEMA s AUTHORIZATION cdc;"),
    ("postgres", "permission denied for schema s", "GRANT USAGE, CREATE ON SCHEMA s TO cdc;"),
    ("mysql", "(1049, \"Unknown database 's'\")", "CREATE DATABASE `s`; then the GRANT for cdc@% on `s`.*"),
    ("mysql", "(1142, 'CREATE command denied')",
     "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX ON `s`.* TO 'cdc'@'%';"),
    ("oracle", "ORA-01031: insufficient privileges",
     "GRANT CREATE TABLE TO cdc@%; ALTER USER cdc@% QUOTA UNLIMITED ON <its tablespace>;"),
    ("duckdb", "IO Error: read-only", "make s writable by the user that runs `cdc apply`"),
])
def test_each_target_names_its_grant(kind, error, want):
    user = "cdc" if kind == "postgres" else "cdc@%"
    assert _grant(TARGETS[kind](), user, "s", error) == want


@pytest.mark.parametrize("kind", sorted(TARGETS))
def test_each_sql_target_says_who_we_are(kind):
    assert TARGETS[kind]().who_sql.startswith("SELECT ")
