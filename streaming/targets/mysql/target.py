"""MySQL / MariaDB target (PyMySQL). Config: ``{name, kind: mysql, dsn: mysql://user@host:port/db}``
plus the password (``password_file``, ``password``, or in the dsn: cdc.config.credentials), and optionally
``tls: {ca, cert, key, verify_identity}`` (cdc/config/tls.py), as a MySQL source's.

Upserts are multi-row ``INSERT ... ON DUPLICATE KEY UPDATE`` (PyMySQL folds
executemany into one statement per chunk) guarded to replace only the row with the same primary key (a
collision on another unique key is an error, never an overwrite of that other row: upsert_rows); deletes are ``DELETE ... WHERE
(key) IN (...)`` per chunk. All in one InnoDB transaction. DDL (CREATE /
ALTER of a table seen for the first time or ADD COLUMN) commits implicitly in
MySQL: the engine applies it at a batch barrier and it is idempotent
(existing tables and columns are checked first).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pymysql

from cdc.config.dsn import parse_mysql_dsn
from cdc.config.models import TargetConfig
from cdc.config.tls import mysql_tls_problem
from cdc.schema.sql_dialects import MYSQL
from streaming.errors import TargetError
from streaming.targets.base import ErrorKind, Row, SqlTarget, keepalive

CHUNK = 1000
# server errors whose SQLSTATE is of class 22 (data exception) or 23 (integrity constraint violation)
MYSQL_DATA = frozenset({
    1048,  # 23000 column cannot be null
    1062, 1586,  # 23000 duplicate entry
    1216, 1217, 1451, 1452,  # 23000 foreign key
    1263, 1264,  # 22004 / 22003 NULL for NOT NULL, out of range
    1265, 1406,  # 01000 / 22001 data truncated (an error in strict mode), data too long
    1292, 1366, 1367, 1411,  # 22007 / HY000 incorrect value (datetime, integer, string...)
    1690,  # 22003 value out of range
    1365,  # 22012 division by zero
    3140,  # 22032 invalid JSON text
    3819, 4025,  # HY000 / 23000 CHECK constraint violated (MySQL / MariaDB)
    4078,  # 22007 (MariaDB) illegal value for a type
})
# a retry may cure: lock wait timeout, deadlock, query interrupted/timed out (MariaDB 1969, MySQL 3024),
# connection killed/aborted, server shutdown, too many connections, read-only (a failover in progress),
# the client was disconnected for being idle (MySQL 4031)
MYSQL_TRANSIENT = frozenset({1205, 1213, 1317, 1969, 3024, 1927, 1053, 1040, 1152, 1153, 1158, 1159, 1160, 1161,
                             1290, 1792, 1836, 4031, 1180, 1181, 1614})


class MySqlTarget(SqlTarget):
    dialect = "mysql"
    upsert = "on_conflict"
    columnar = True
    ddl_commits = True
    sql = MYSQL
    who_sql = "SELECT CURRENT_USER(), DATABASE()"
    timestamp = "datetime(6)"
    text = "longtext"
    foreign_keys_sql = ("SELECT constraint_name, table_name, referenced_table_name, 0, column_name, "
                        "referenced_column_name FROM information_schema.key_column_usage WHERE table_schema = "
                        "coalesce(%s, DATABASE()) AND referenced_table_schema = table_schema AND "
                        "referenced_table_name IS NOT NULL ORDER BY table_name, constraint_name, ordinal_position")

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

    def grant_hint(self, user: str, schema: str, missing: bool) -> str:
        if missing:
            return f"CREATE DATABASE `{schema}`; then the GRANT for {user} on `{schema}`.*"
        at = user.replace("@", "'@'")
        return f"GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX ON `{schema}`.* TO '{at}';"

    def _connect(self) -> Any:
        try:
            con = pymysql.connect(**{**self._kw, **self.config.login_kwargs(), **self.connect_options()})
        except pymysql.MySQLError as exc:
            problem = mysql_tls_problem(exc, self.config.tls)
            raise TargetError(f"cannot connect to target {self.name!r}: {exc}" + (f" ({problem})" if problem else ""),
                              target=self.name) from None
        with con.cursor() as cur:
            cur.execute("SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION', time_zone = '+00:00'")
            settings = self.session_settings("mariadb" in con.get_server_info().lower())
            if settings:
                cur.execute("SET SESSION " + ", ".join(f"{k} = {v}" for k, v in settings.items()))
        keepalive(con._sock, self.config.timeouts)  # PyMySQL exposes its socket nowhere else
        return con

    # ---- bounded waits and what an error means ------------------------------------------
    def connect_options(self) -> dict[str, Any]:
        """PyMySQL's own bounds: connect, and every socket read and write (``timeouts.reply_s``: a call
        that hears nothing that long ends the connection with error 2013)."""
        t = self.config.timeouts
        reply = t.reply_bound_s
        return {"connect_timeout": max(1, math.ceil(t.connect_s)),
                **({"read_timeout": reply, "write_timeout": reply} if reply else {})}

    def session_settings(self, mariadb: bool) -> dict[str, Any]:
        """Server-side bounds per session: the InnoDB lock wait; the statement time (MariaDB
        ``max_statement_time`` bounds every statement, MySQL's ``max_execution_time`` only SELECTs); the
        idle time inside a transaction (MariaDB ``idle_transaction_timeout``; MySQL has none: the
        client's reply bound and TCP keepalives stand in)."""
        t = self.config.timeouts
        out: dict[str, Any] = {}
        if t.lock_s:
            out["innodb_lock_wait_timeout"] = max(1, math.ceil(t.lock_s))
        if t.statement_s:
            out["max_statement_time" if mariadb else "max_execution_time"] = \
                t.statement_s if mariadb else round(t.statement_s * 1000)
        if t.idle_in_transaction_s and mariadb:
            out["idle_transaction_timeout"] = max(1, math.ceil(t.idle_in_transaction_s))
        return out

    def is_driver_error(self, exc: BaseException) -> bool:
        return isinstance(exc, pymysql.MySQLError)

    def classify(self, exc: BaseException) -> ErrorKind:
        """By the server's error number: the SQLSTATE 22xxx/23xxx errors (conversion, range, truncation,
        NULL into NOT NULL, duplicate key, foreign key, CHECK) are data; lock wait timeout, deadlock,
        statement timeouts, a killed or lost connection, a server shutting down or read-only (failover)
        are transient; the rest is fatal."""
        if isinstance(exc, pymysql.err.InterfaceError):  # PyMySQL: "(0, '')", the connection is closed
            return ErrorKind.TRANSIENT
        if isinstance(exc, pymysql.MySQLError):
            code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
            if code in MYSQL_DATA:
                return ErrorKind.DATA
            if code in MYSQL_TRANSIENT or (code is not None and 2000 <= code < 3000):  # 2xxx: client-side (CR_*)
                return ErrorKind.TRANSIENT
            return ErrorKind.FATAL
        return super().classify(exc)

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
        """``INSERT ... ON DUPLICATE KEY UPDATE`` that replaces only the row with the same PRIMARY key.

        MySQL's clause fires on a duplicate of ANY unique key: a new row whose unique e-mail another row
        still holds would overwrite that other row (its key kept, the new row lost) without an error. So
        every assignment is guarded by the primary key being the one that collided (``k <=> VALUES(k)``;
        InnoDB checks the primary key first, so a row whose key exists is replaced, and a unique value it
        takes from another row is refused with 1062), and a chunk whose rows are not all there afterwards
        (a new row that collided on another unique key was left out) raises a duplicate-key error (1062):
        the engine retries the batch in stream order, where only a row that really collides is bad."""
        q = self.quote
        cols = ", ".join(q(c) for c in columns)
        same = " AND ".join(f"{q(k)} <=> VALUES({q(k)})" for k in key)
        sets = ", ".join(f"{q(c)} = IF({same}, VALUES({q(c)}), {q(c)})"
                         for c in [c for c in columns if c not in key] or key)
        sql = (f"INSERT INTO {self.qualified(table)} ({cols}) VALUES ({self.placeholders(len(columns))}) "
               f"ON DUPLICATE KEY UPDATE {sets}")
        keys = ", ".join(q(k) for k in key)
        one = "(" + ", ".join(["%s"] * len(key)) + ")"
        for i in range(0, len(rows), CHUNK):
            chunk = rows[i:i + CHUNK]
            self.executemany(sql, [[r.get(c) for c in columns] for r in chunk])
            found = self.execute(f"SELECT COUNT(*) FROM {self.qualified(table)} WHERE ({keys}) IN "
                                 f"({', '.join([one] * len(chunk))})", [r[k] for r in chunk for k in key]).fetchone()[0]
            if found < len(chunk):
                which = f" (key {[chunk[0][k] for k in key]})" if len(chunk) == 1 else ""
                raise pymysql.err.IntegrityError(
                    1062, f"{len(chunk) - found} of {len(chunk)} row(s) upserted into {table}{which} collide on a "
                          f"unique key other than the primary key with another row of the table (MySQL's ON "
                          f"DUPLICATE KEY UPDATE would have overwritten that row): duplicate entry")

    def delete_one_sql(self, table: str, columns: Sequence[str]) -> str:
        match = " AND ".join(self.sql.null_safe_eq(self.quote(c), self.param) for c in columns)
        return f"DELETE FROM {self.qualified(table)} WHERE {match} LIMIT 1"
