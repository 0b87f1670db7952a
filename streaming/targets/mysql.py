"""MySQL / MariaDB target (PyMySQL). Config: ``{name, kind: mysql, dsn: mysql://user@host:port/db}``
plus the password (``password_file``, ``password``, or in the dsn: cdc.credentials), and optionally
``tls: {ca, cert, key, verify_identity}`` (cdc/tls.py), as a MySQL source's.

Upserts are multi-row ``INSERT ... ON DUPLICATE KEY UPDATE`` (PyMySQL folds
executemany into one statement per chunk); deletes are ``DELETE ... WHERE
(key) IN (...)`` per chunk. All in one InnoDB transaction. DDL (CREATE /
ALTER of a table seen for the first time or ADD COLUMN) commits implicitly in
MySQL: the engine applies it at a batch barrier and it is idempotent
(existing tables and columns are checked first).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pymysql

from cdc.config import TargetConfig
from cdc.dsn import parse_mysql_dsn
from cdc.sql_dialects import MYSQL
from cdc.tls import mysql_tls_problem
from streaming.errors import TargetError
from streaming.targets.base import Row, Target

CHUNK = 1000


class MySqlTarget(Target):
    dialect = "mysql"
    columnar = True
    ddl_commits = True
    sql = MYSQL
    timestamp = "datetime(6)"
    text = "longtext"

    def __init__(self, config: TargetConfig) -> None:
        super().__init__(config)
        if not config.dsn:
            raise TargetError(f"target {config.name!r} (mysql) needs a dsn mysql://user:pw@host:port/db",
                              target=config.name)
        dsn = parse_mysql_dsn(config.dsn, f"target {config.name} dsn")
        self._kw = {**dsn.connect_args(config.tls), "database": dsn.database, "charset": "utf8mb4",
                    "autocommit": False}
        if self.schema is None:
            self.schema = self._kw["database"]

    def _connect(self) -> Any:
        try:
            con = pymysql.connect(**{**self._kw, **self.config.login_kwargs()})
        except pymysql.MySQLError as exc:
            problem = mysql_tls_problem(exc, self.config.tls)
            raise TargetError(f"cannot connect to target {self.name!r}: {exc}" + (f" ({problem})" if problem else ""),
                              target=self.name) from None
        with con.cursor() as cur:
            cur.execute("SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION', time_zone = '+00:00'")
        return con

    def begin(self) -> None:
        self.conn.begin()

    def table_columns(self, table: str) -> list[str] | None:
        cur = self.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = "
                           "coalesce(%s, DATABASE()) AND table_name = %s ORDER BY ordinal_position", [self.schema, table])
        return [r[0] for r in cur.fetchall()] or None

    def rename_table(self, old: str, new: str) -> None:  # ALTER TABLE ... RENAME TO would leave its database
        self.execute(f"RENAME TABLE {self.qualified(old)} TO {self.qualified(new)}")

    def widen_column(self, table: str, name: str, source_type: str) -> None:
        self.execute(f"ALTER TABLE {self.qualified(table)} MODIFY COLUMN {self.quote(name)} "
                     f"{self.column_type(source_type)}")

    def delete_rows(self, table: str, key: Sequence[str], rows: list[Row]) -> None:
        keys = ", ".join(self.quote(k) for k in key)
        one = "(" + ", ".join(["%s"] * len(key)) + ")"
        for i in range(0, len(rows), CHUNK):
            chunk = rows[i:i + CHUNK]
            args = [r[k] for r in chunk for k in key]
            self.execute(f"DELETE FROM {self.qualified(table)} WHERE ({keys}) IN ({', '.join([one] * len(chunk))})", args)

    def upsert_rows(self, table: str, columns: Sequence[str], key: Sequence[str], rows: list[Row]) -> None:
        cols = ", ".join(self.quote(c) for c in columns)
        sql = (f"INSERT INTO {self.qualified(table)} ({cols}) VALUES ({self.placeholders(len(columns))}) "
               f"{self.sql.upsert_clause(columns, key)}")
        for i in range(0, len(rows), CHUNK):
            self.executemany(sql, [[r.get(c) for c in columns] for r in rows[i:i + CHUNK]])

    def delete_one_sql(self, table: str, columns: Sequence[str]) -> str:
        match = " AND ".join(self.sql.null_safe_eq(self.quote(c), self.param) for c in columns)
        return f"DELETE FROM {self.qualified(table)} WHERE {match} LIMIT 1"
