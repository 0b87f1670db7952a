"""Oracle target (python-oracledb, thin mode). Config: ``{name, kind: oracle, dsn: user@host:port/service,
password_file: ...}`` (or ``user``/``password`` keys; a ``user/pw@host:port/service`` DSN still works: cdc.config.credentials)
and optionally ``tls:`` wallet settings (cdc/config/tls.py ``OracleTls``; TCPS via ``tcps://`` in the dsn).

NOT RUN HERE: no Oracle server can run where this project is built and
tested, so this module is written to the documented oracledb API and the
Oracle SQL dialect but has never executed against a database. Upserts are
``MERGE`` via executemany, deletes executemany by key, keyless deletes by
ROWID; one transaction per batch (Oracle DDL commits implicitly, as in MySQL).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from cdc.config.models import TargetConfig
from cdc.schema.sql_dialects import ORACLE
from streaming.errors import TargetError
from streaming.targets.base import ErrorKind, Row, SqlTarget

_PARAM = re.compile(r"%s")
# NULL into NOT NULL, unique, check, foreign keys, precision/size, invalid number, date conversions, overflow,
# division by zero, value too long for a bind
ORACLE_DATA = frozenset(f"ORA-{n:05d}" for n in (
    1400, 1407, 1, 2290, 2291, 2292, 1438, 12899, 1722, 1426, 1476, 1830, 1839, 1840, 1841, 1843, 1847, 1858,
    1861, 1862, 1878, 1884, 1461, 1480, 1489, 1741, 22835))
# deadlock, resource busy, cannot serialize, cancelled / timed-out call, end of file on the channel, lost
# contact, not connected, session killed, idle time exceeded, instance starting or shutting down, read-only
# standby, listener unreachable; the thin driver's closed / lost connection and call timeout
ORACLE_TRANSIENT = frozenset(
    [f"ORA-{n:05d}" for n in (60, 54, 30006, 8177, 1013, 3113, 3114, 3135, 3156, 28, 1012, 2396, 1033, 1034,
                              1089, 1090, 1092, 16000, 25402, 25408, 12170, 12514, 12528, 12537, 12541, 12547,
                              12571)]
    + ["DPY-1001", "DPY-4011", "DPY-4024", "DPY-6005"])


class OracleTarget(SqlTarget):
    dialect = "oracle"
    upsert = "merge"
    ddl_commits = True
    row_id_column = "ROWID"
    sql = ORACLE  # its placeholder %s is rewritten to :1, :2, ... in execute()
    who_sql = "SELECT USER, SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA') FROM DUAL"
    bigint = "number(19)"
    text = "clob"
    foreign_keys_sql = ("SELECT c.constraint_name, c.table_name, p.table_name, CASE c.deferrable WHEN 'DEFERRABLE' "
                        "THEN 1 ELSE 0 END, cc.column_name, pc.column_name FROM all_constraints c JOIN all_constraints "
                        "p ON p.owner = c.r_owner AND p.constraint_name = c.r_constraint_name JOIN all_cons_columns cc "
                        "ON cc.owner = c.owner AND cc.constraint_name = c.constraint_name JOIN all_cons_columns pc ON "
                        "pc.owner = p.owner AND pc.constraint_name = p.constraint_name AND pc.position = cc.position "
                        "WHERE c.constraint_type = 'R' AND p.owner = c.owner AND c.owner = "
                        "coalesce(%s, SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA')) ORDER BY c.table_name, "
                        "c.constraint_name, cc.position")

    def __init__(self, config: TargetConfig) -> None:
        super().__init__(config)
        if not config.dsn:
            raise TargetError(f"target {config.name!r} (oracle) needs a dsn [user@]host:port/service",
                              target=config.name)

    def grant_hint(self, user: str, schema: str, missing: bool) -> str:
        return f"GRANT CREATE TABLE TO {user}; ALTER USER {user} QUOTA UNLIMITED ON <its tablespace>;"

    def _connect(self) -> Any:
        import oracledb

        user, _, address = self.config.dsn.rpartition("@")  # the password was taken out at config load
        try:
            con = oracledb.connect(**{"user": user, **self.config.login_kwargs()}, dsn=address,
                                   **(self.config.tls.connect_kwargs() if self.config.tls else {}),
                                   **self.connect_options())
        except oracledb.Error as exc:
            raise TargetError(f"cannot connect to target {self.name!r}: {exc}", target=self.name) from None
        reply = self.config.timeouts.reply_bound_s
        if reply:
            con.call_timeout = round(reply * 1000)  # ms; every round trip, client side
        return con

    # ---- bounded waits and what an error means ------------------------------------------
    def connect_options(self) -> dict[str, Any]:
        """oracledb's bounds: the TCP connect timeout and keepalive probes (``expire_time``, minutes). Oracle
        has no per-session statement or lock timeout: a DML lock wait is bounded by the call timeout
        (``timeouts.reply_s``), set on the connection after connect."""
        t = self.config.timeouts
        return {"tcp_connect_timeout": t.connect_s, "expire_time": max(1, math.ceil(t.keepalive_idle_s / 60))}

    def is_driver_error(self, exc: BaseException) -> bool:
        import oracledb

        return isinstance(exc, oracledb.Error)

    def classify(self, exc: BaseException) -> ErrorKind:
        """By the ORA-/DPY- code: value and constraint errors (SQLSTATE classes 22 and 23) are data; deadlock,
        resource busy, serialization, cancelled or timed-out calls, lost or killed sessions, an instance
        shutting down or read-only (a standby during failover), and any error oracledb marks recoverable are
        transient; the rest is fatal."""
        import oracledb

        if isinstance(exc, oracledb.Error):
            err = exc.args[0] if exc.args else None
            code = getattr(err, "full_code", None) or ""
            if code in ORACLE_DATA:
                return ErrorKind.DATA
            if code in ORACLE_TRANSIENT or getattr(err, "isrecoverable", False):
                return ErrorKind.TRANSIENT
            return ErrorKind.FATAL
        return super().classify(exc)

    def key_text(self) -> str:
        return "varchar2(255)"

    @staticmethod
    def _binds(sql: str) -> str:
        n = iter(range(1, 100_000))
        return _PARAM.sub(lambda _m: f":{next(n)}", sql)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        cur = self.cursor()
        cur.execute(self._binds(sql), list(params) if params is not None else [])
        return cur

    def executemany(self, sql: str, rows: list[Sequence[Any]]) -> None:
        if rows:
            self.cursor().executemany(self._binds(sql), rows)

    def table_columns(self, table: str) -> list[str] | None:
        if self.schema:
            cur = self.execute("SELECT column_name FROM all_tab_columns WHERE owner = %s AND table_name = %s "
                               "ORDER BY column_id", [self.schema, table])
        else:
            cur = self.execute("SELECT column_name FROM user_tab_columns WHERE table_name = %s ORDER BY column_id",
                               [table])
        return [r[0] for r in cur.fetchall()] or None

    def add_column(self, table: str, name: str, source_type: str) -> None:
        self.execute(f"ALTER TABLE {self.qualified(table)} ADD ({self.quote(name)} {self.column_type(source_type)})")

    def widen_column(self, table: str, name: str, source_type: str) -> None:
        self.execute(f"ALTER TABLE {self.qualified(table)} MODIFY ({self.quote(name)} {self.column_type(source_type)})")

    def upsert_rows(self, table: str, columns: Sequence[str], key: Sequence[str], rows: list[Row]) -> None:
        src = ", ".join(f"%s AS {self.quote(c)}" for c in columns)
        on = " AND ".join(f"t.{self.quote(k)} = s.{self.quote(k)}" for k in key)
        rest = [c for c in columns if c not in key]
        upd = (" WHEN MATCHED THEN UPDATE SET " + ", ".join(f"t.{self.quote(c)} = s.{self.quote(c)}" for c in rest)) \
            if rest else ""
        ins = (f" WHEN NOT MATCHED THEN INSERT ({', '.join(self.quote(c) for c in columns)}) VALUES "
               f"({', '.join('s.' + self.quote(c) for c in columns)})")
        self.executemany(f"MERGE INTO {self.qualified(table)} t USING (SELECT {src} FROM dual) s ON ({on}){upd}{ins}",
                         [[r.get(c) for c in columns] for r in rows])

    def delete_one_sql(self, table: str, columns: Sequence[str]) -> str:
        match = " AND ".join(self.sql.null_safe_eq(self.quote(c), self.param) for c in columns)
        rid = self.row_id_column
        return (f"DELETE FROM {self.qualified(table)} WHERE {rid} = (SELECT {rid} FROM {self.qualified(table)} "
                f"WHERE {match} AND ROWNUM = 1)")
