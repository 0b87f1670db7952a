"""PostgreSQL target (psycopg 3).

Bulk path: rows are COPYed into a temporary staging table (``LIKE`` the
target, dropped at commit) and merged with one ``INSERT ... ON CONFLICT DO
UPDATE`` or ``DELETE ... USING`` statement; small sets go through
executemany. Config: ``{name, kind: postgres, dsn, schema (optional)}`` plus the
password (``password_file``, ``password``, or in the dsn: cdc.config.credentials), passed as a conninfo keyword.

Columnar path (``delete_json``/``upsert_json``, used by the engine for a
batch's net rows): the row images arrive as JSON text; an in-process DuckDB
turns them into one text column per target column (base64 binary into
bytea hex), pyarrow writes them as CSV and one ``COPY ... (FORMAT csv)``
sends them. Rows whose key did not exist before the batch (the net effect
says so) are COPYed straight into the table; the rest go through the
staging table and ``ON CONFLICT``. A row that does conflict anyway (the
target was changed behind our back) fails the COPY; the engine then applies
the batch again record by record.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import math
from collections.abc import Iterator, Sequence
from typing import Any

import orjson
import psycopg

from cdc.config.models import TargetConfig
from cdc.config.tls import postgres_tls_problem
from cdc.schema.sql_dialects import POSTGRES
from streaming.errors import TargetError
from streaming.targets.base import ErrorKind, Row, SqlTarget, sqlstate_kind

# SQLSTATEs a retry may cure: serialization_failure, deadlock_detected, lock_not_available (lock_timeout),
# query_canceled (statement_timeout), idle_in_transaction_session_timeout, read_only_sql_transaction (a
# failover to a standby in progress), admin/crash shutdown and cannot_connect_now; and the classes
# 08 (connection exception), 40 (transaction rollback), 53 (insufficient resources)
PG_TRANSIENT = frozenset({"40001", "40P01", "55P03", "57014", "25P03", "25006", "57P01", "57P02", "57P03",
                          "57P05"})
PG_TRANSIENT_CLASSES = frozenset({"08", "40", "53"})
BULK_MIN_ROWS = 200
CSV_CHUNK_ROWS = 32_768  # rows decoded per COPY chunk
_stage_ids = itertools.count()


class _LostConnectionNoise(logging.Filter):
    """psycopg warns "error ignored terminating <Pipeline [BAD]>: the connection is closed" when a lost
    connection ends an executemany; the apply reports the loss itself (once, naming target and batch)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.getMessage().startswith("error ignored terminating") and "connection is closed" in
                    record.getMessage())


logging.getLogger("psycopg").addFilter(_LostConnectionNoise())


class PostgresTarget(SqlTarget):
    dialect = "postgres"
    upsert = "on_conflict"
    sql = POSTGRES
    who_sql = "SELECT current_user, current_schema()"
    row_id_column = "ctid"
    defer_sql = "SET CONSTRAINTS ALL {}"  # DEFERRABLE constraints: checked at the commit, or at once
    foreign_keys_sql = ("SELECT k.conname, c.relname, p.relname, k.condeferrable, ca.attname, pa.attname FROM "
                        "pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid "
                        "JOIN pg_namespace n ON n.oid = c.relnamespace CROSS JOIN LATERAL unnest(k.conkey, k.confkey) "
                        "WITH ORDINALITY AS u(ck, pk, i) JOIN pg_attribute ca ON ca.attrelid = k.conrelid AND "
                        "ca.attnum = u.ck JOIN pg_attribute pa ON pa.attrelid = k.confrelid AND pa.attnum = u.pk "
                        "WHERE k.contype = 'f' AND p.relnamespace = c.relnamespace AND n.nspname = "
                        "coalesce(%s, current_schema()) ORDER BY c.relname, k.conname, u.i")

    def __init__(self, config: TargetConfig) -> None:
        super().__init__(config)
        if not config.dsn:
            raise TargetError(f"target {config.name!r} (postgres) needs a dsn", target=config.name)
        self._duck: Any = None  # in-process DuckDB that decodes JSON row images (columnar path)

    def grant_hint(self, user: str, schema: str, missing: bool) -> str:
        if missing:
            return f"CREATE SCHEMA {schema} AUTHORIZATION {user};"
        return f"GRANT USAGE, CREATE ON SCHEMA {schema} TO {user};"

    def _connect(self) -> Any:
        try:
            con = BoundedConnection.connect(self.config.dsn, autocommit=False, **self.config.login_kwargs(),
                                            **self.connect_options())
        except psycopg.OperationalError as exc:
            problem = postgres_tls_problem(str(exc))
            raise TargetError(f"cannot connect to target {self.name!r}: {exc}" + (f" ({problem})" if problem else ""),
                              target=self.name) from None
        con.reply_timeout_s = self.config.timeouts.reply_bound_s
        if con.reply_timeout_s and not _WAIT_TAKES_TIMEOUT:
            con.close()
            raise TargetError(f"target {self.name!r}: targets[].timeouts.reply_s needs psycopg 3.3 or later "
                              f"(installed: {psycopg.__version__}); upgrade psycopg, or set reply_s: 0 to go "
                              f"without the client-side bound", target=self.name, key="timeouts.reply_s")
        settings = self.session_settings()
        if settings:
            with con.cursor() as cur:
                for name, value in settings.items():
                    cur.execute(f"SET {name} = {int(value)}")
            con.commit()
        return con

    # ---- bounded waits and what an error means ------------------------------------------
    def connect_options(self) -> dict[str, Any]:
        """libpq options bounding the connection (``targets[].timeouts``): connect timeout, TCP keepalives
        (a peer that vanished is noticed while we wait for a reply) and tcp_user_timeout (data we sent
        that stays unacknowledged that long ends the connection)."""
        t = self.config.timeouts
        dead_after_s = t.keepalive_idle_s + t.keepalive_interval_s * t.keepalive_count
        out = {"connect_timeout": max(2, math.ceil(t.connect_s)), "keepalives": 1,
               "keepalives_idle": t.keepalive_idle_s, "keepalives_interval": t.keepalive_interval_s,
               "keepalives_count": t.keepalive_count}
        if psycopg.pq.version() >= 120000:  # libpq learnt tcp_user_timeout in 12
            out["tcp_user_timeout"] = dead_after_s * 1000
        return out

    def session_settings(self) -> dict[str, int]:
        """Server-side bounds set on every new session, in milliseconds (a 0 leaves the server's own)."""
        t = self.config.timeouts
        wanted = {"statement_timeout": t.statement_s, "lock_timeout": t.lock_s,
                  "idle_in_transaction_session_timeout": t.idle_in_transaction_s}
        return {name: round(s * 1000) for name, s in wanted.items() if s}

    def is_driver_error(self, exc: BaseException) -> bool:
        return isinstance(exc, psycopg.Error)

    def classify(self, exc: BaseException) -> ErrorKind:
        """By SQLSTATE: classes 22 and 23 are data; lock, deadlock, serialization, cancel (statement or
        lock timeout), connection, shutdown and resource errors are transient; a psycopg error without an
        SQLSTATE is a lost or unusable connection (transient); anything else is fatal."""
        if isinstance(exc, psycopg.Error):
            state = getattr(exc, "sqlstate", None)
            if state is None:
                return ErrorKind.TRANSIENT if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)) \
                    else ErrorKind.FATAL
            return sqlstate_kind(state, PG_TRANSIENT, PG_TRANSIENT_CLASSES)
        return super().classify(exc)

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._duck is not None:
                self._duck.close()
                self._duck = None

    def table_columns(self, table: str) -> list[str] | None:
        cur = self.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = coalesce(%s, current_schema()) "
            "AND table_name = %s ORDER BY ordinal_position", [self.schema, table])
        cols = [r[0] for r in cur.fetchall()]
        return cols or None

    def _new_stage(self, table: str, columns: Sequence[str]) -> tuple[str, str, Any]:
        """A temporary table shaped like ``columns`` of ``table``, dropped at commit: (name, column list, cursor)."""
        stage = f"_cdc_stage_{next(_stage_ids)}"
        cols = ", ".join(self.quote(c) for c in columns)
        cur = self.cursor()
        cur.execute(f"CREATE TEMP TABLE {stage} ON COMMIT DROP AS SELECT {cols} FROM {self.qualified(table)} WITH NO DATA")
        return stage, cols, cur

    def _stage(self, table: str, columns: Sequence[str], rows: list[Row]) -> str:
        stage, cols, cur = self._new_stage(table, columns)
        with cur.copy(f"COPY {stage} ({cols}) FROM STDIN") as copy:
            for r in rows:
                copy.write_row([r.get(c) for c in columns])
        return stage

    def delete_rows(self, table: str, key: Sequence[str], rows: list[Row]) -> None:
        if len(rows) < BULK_MIN_ROWS:
            return super().delete_rows(table, key, rows)
        self._delete_using(table, key, self._stage(table, key, rows))

    def _delete_using(self, table: str, key: Sequence[str], stage: str) -> None:
        on = " AND ".join(f"t.{self.quote(k)} = s.{self.quote(k)}" for k in key)
        self.execute(f"DELETE FROM {self.qualified(table)} t USING {stage} s WHERE {on}")

    def _merge_stage(self, table: str, columns: Sequence[str], key: Sequence[str], stage: str) -> None:
        cols = ", ".join(self.quote(c) for c in columns)
        self.execute(f"INSERT INTO {self.qualified(table)} ({cols}) SELECT {cols} FROM {stage} "
                     f"{self.sql.upsert_clause(columns, key)}")

    def upsert_rows(self, table: str, columns: Sequence[str], key: Sequence[str], rows: list[Row]) -> None:
        if not rows:
            return
        if len(rows) < BULK_MIN_ROWS:
            cols = ", ".join(self.quote(c) for c in columns)
            self.executemany(f"INSERT INTO {self.qualified(table)} ({cols}) VALUES ({self.placeholders(len(columns))}) "
                             f"{self.sql.upsert_clause(columns, key)}", [[r.get(c) for c in columns] for r in rows])
            return
        self._merge_stage(table, columns, key, self._stage(table, columns, rows))

    def insert_rows(self, table: str, columns: Sequence[str], rows: list[Row]) -> None:
        if len(rows) < BULK_MIN_ROWS:
            return super().insert_rows(table, columns, rows)
        cols = ", ".join(self.quote(c) for c in columns)
        with self.cursor().copy(f"COPY {self.qualified(table)} ({cols}) FROM STDIN") as copy:
            for r in rows:
                copy.write_row([r.get(c) for c in columns])

    # ---- columnar path: JSON row images in bulk --------------------------------------------
    columnar = True
    json_rows = True

    def delete_json(self, table: str, key: Sequence[str], images: Any, binary: set[str]) -> None:
        """Delete the rows whose key the before-images ``images`` (pyarrow strings) hold."""
        self._delete_using(table, key, self._stage_csv(table, key, self._csv(images, key, binary, check=False)))

    def upsert_json(self, table: str, columns: Sequence[str], key: Sequence[str], images: Any, new: Any,
                    binary: set[str]) -> None:
        """Insert or replace the after-images ``images``; ``new[i]``: key i cannot exist yet (plain COPY).

        Raises ValueError when an image has a column outside ``columns``."""
        import numpy as np

        cols = ", ".join(self.quote(c) for c in columns)
        fresh = np.flatnonzero(new)
        if len(fresh):
            data = self._csv(images.take(fresh) if len(fresh) < len(images) else images, columns, binary)
            with self.cursor().copy(f"COPY {self.qualified(table)} ({cols}) FROM STDIN (FORMAT csv)") as copy:
                for chunk in data:
                    copy.write(chunk)
        rest = np.flatnonzero(~np.asarray(new, dtype=bool))
        if not len(rest):
            return
        self._merge_stage(table, columns, key, self._stage_csv(table, columns, self._csv(images.take(rest), columns, binary)))

    def _stage_csv(self, table: str, columns: Sequence[str], data: Any) -> str:
        stage, cols, cur = self._new_stage(table, columns)
        with cur.copy(f"COPY {stage} ({cols}) FROM STDIN (FORMAT csv)") as copy:
            for chunk in data:
                copy.write(chunk)
        return stage

    def _csv(self, images: Any, columns: Sequence[str], binary: set[str], check: bool = True) -> Iterator[Any]:
        """JSON row images -> CSV chunks (one text field per column, NULL as an unquoted empty field).

        Chunked so that PostgreSQL ingests one chunk while the next is decoded. Raises ValueError
        (``check``) when an image has a column outside ``columns``."""
        import duckdb
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pacsv

        if self._duck is None:
            self._duck = duckdb.connect()
        spec = orjson.dumps({c: "VARCHAR" for c in columns}).decode().replace("'", "''")

        def q(c: str) -> str:
            return '"' + c.replace('"', '""') + '"'

        fields = [f"'\\x' || hex(from_base64(s.{q(c)}))" if c in binary else f"s.{q(c)}" for c in columns]
        names = ", ".join("'" + c.replace("'", "''") + "'" for c in columns)
        extra = f", NOT list_has_all([{names}]::VARCHAR[], json_keys(j)) AS _extra" if check else ""
        options = pacsv.WriteOptions(include_header=False, quoting_style="needed")
        for start in range(0, len(images), CSV_CHUNK_ROWS):
            src = pa.table({"j": images.slice(start, CSV_CHUNK_ROWS)})  # noqa: F841 - DuckDB reads it by name
            out = self._duck.sql(f"SELECT {', '.join(fields)}{extra} FROM "
                                 f"(SELECT j, json_transform(j, '{spec}') AS s FROM src)").to_arrow_table()
            if check:
                if pc.any(out.column("_extra")).as_py():
                    raise ValueError(f"a row image has columns outside {list(columns)}")
                out = out.drop_columns(["_extra"])
            sink = pa.BufferOutputStream()
            pacsv.write_csv(out, sink, options)
            yield memoryview(sink.getvalue())


_WAIT_TAKES_TIMEOUT = "timeout" in inspect.signature(psycopg.Connection.wait).parameters


class BoundedConnection(psycopg.Connection):
    """A psycopg connection whose every call waits at most ``reply_timeout_s`` for the server.

    The server's statement_timeout cancels a long statement, and TCP keepalives notice a peer that
    vanished, but neither ends a wait on a path that still acknowledges packets and delivers nothing (a
    hung proxy or pooler, a half-dead NAT): there the client would wait forever. After this bound the
    connection is closed (its state is unknown) and the call raises OperationalError, which the apply
    treats as a lost connection: the batch is rolled back and retried on a new connection."""

    reply_timeout_s: float | None = None

    def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
        bound = self.reply_timeout_s if timeout is None else timeout
        try:
            return super().wait(gen, interval, bound)
        except psycopg.errors._WaitTimeout:  # psycopg's own signal for its timeout argument
            if timeout is not None:
                raise
            self.pgconn.finish()
            raise psycopg.OperationalError(f"no reply from the server for {bound:g} s "
                                           f"(targets[].timeouts.reply_s): connection closed") from None
