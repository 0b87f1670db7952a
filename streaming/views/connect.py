"""A minimal SQL target for views outside the apply job (``cdc views``, tests, bench).

``DbTarget`` offers what the maintainer needs from the engine's target:
``dialect`` and ``cursor()`` inside one open transaction, plus ``commit()``
and ``close()``. ``open_target`` opens one from a ``TargetConfig``.
"""

from __future__ import annotations

from typing import Any

from cdc.dsn import parse_mysql_dsn
from cdc.sql_dialects import sql_dialect
from streaming.views.errors import ViewError


class DbTarget:
    def __init__(self, conn: Any, dialect: str) -> None:
        self.conn, self.dialect = conn, dialect

    def cursor(self) -> Any:
        # a DuckDB "cursor" is a second connection with its own transaction: use the connection
        return sql_dialect(self.dialect).cursor(self.conn)

    def begin(self) -> None:
        if self.dialect == "duckdb":
            self.conn.execute("BEGIN TRANSACTION")

    def commit(self) -> None:
        self.conn.commit()

    def rollback(self) -> None:
        self.conn.rollback()

    def close(self) -> None:
        self.conn.close()


def open_target(cfg: Any) -> DbTarget:
    """Connect to a target from its config (kind postgres, duckdb or mysql)."""
    if cfg.kind == "postgres":
        import psycopg

        return DbTarget(psycopg.connect(cfg.dsn, **cfg.login_kwargs()), "postgres")
    if cfg.kind == "duckdb":
        import duckdb

        return DbTarget(duckdb.connect(cfg.path or cfg.dsn or ":memory:"), "duckdb")
    if cfg.kind == "mysql":
        import pymysql

        dsn = parse_mysql_dsn(cfg.dsn, f"target {cfg.name} dsn")
        conn = pymysql.connect(**{**dsn.connect_args(cfg.tls), **cfg.login_kwargs()}, autocommit=False)
        return DbTarget(conn, "mysql")
    raise ViewError(f"maintained views are not supported on target {cfg.name!r} of kind {cfg.kind!r}",
                    target=cfg.name, kind=cfg.kind)
