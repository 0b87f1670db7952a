"""DuckDB target (embedded; the demo's default). Config: ``{name, kind: duckdb, path}``.

Bulk path: the rows become an Arrow table registered as a view and merged
with one ``INSERT ... ON CONFLICT DO UPDATE`` / ``DELETE ... USING``. The
database file is opened by this process only (DuckDB allows one writer
process); readers open it read-only between batches.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import duckdb
import pyarrow as pa

from cdc.config.models import TargetConfig
from cdc.schema.sql_dialects import DUCKDB
from streaming.errors import TargetError
from streaming.targets.base import ErrorKind, Row, SqlTarget, arrow_array

_stage_ids = itertools.count()


class DuckDbTarget(SqlTarget):
    dialect = "duckdb"
    upsert = "on_conflict"
    text_lengths = False  # VARCHAR(n) takes any length in DuckDB
    columnar = True
    row_id_column = "rowid"
    sql = DUCKDB
    who_sql = "SELECT 'you', 'main'"
    text = "varchar"
    foreign_keys_sql = ("SELECT constraint_name, table_name, referenced_table, false, unnest(constraint_column_names), "
                        "unnest(referenced_column_names) FROM duckdb_constraints() WHERE constraint_type = "
                        "'FOREIGN KEY' AND schema_name = coalesce(?, current_schema())")

    def __init__(self, config: TargetConfig) -> None:
        super().__init__(config)
        self.path = config.path or config.dsn or ":memory:"
        self._stale: list[str] = []  # staged views to drop once the transaction is rolled back

    def _connect(self) -> Any:
        try:
            con = duckdb.connect(self.path)
        except duckdb.Error as exc:
            raise TargetError(f"cannot open DuckDB target {self.name!r} at {self.path}: {exc}", target=self.name) from None
        con.begin()
        return con

    def is_driver_error(self, exc: BaseException) -> bool:
        return isinstance(exc, duckdb.Error)

    def classify(self, exc: BaseException) -> ErrorKind:
        """DuckDB's DataError (conversion, range, type) and IntegrityError (constraints) are data; a write
        conflict with another connection of this process and a lost connection are transient; the rest
        (including "Current transaction is aborted": the first error is the one that counts) is fatal."""
        if isinstance(exc, (duckdb.DataError, duckdb.IntegrityError)):
            return ErrorKind.DATA
        if isinstance(exc, (duckdb.SerializationException, duckdb.ConnectionException)) or (
                isinstance(exc, duckdb.TransactionException) and "conflict" in str(exc).lower()):
            return ErrorKind.TRANSIENT
        if isinstance(exc, duckdb.Error):
            return ErrorKind.FATAL
        return super().classify(exc)

    def begin(self) -> None:
        pass  # a transaction is always open: commit() and rollback() start the next one

    def commit(self) -> None:
        self.conn.commit()
        self.conn.begin()

    def rollback(self) -> None:
        self.conn.rollback()
        self.conn.begin()
        while self._stale:
            self.conn.unregister(self._stale.pop())

    def cursor(self) -> Any:
        return self.conn  # a DuckDB connection is its own DB-API cursor; cursor() would open a new one

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        return self.conn.execute(sql, params) if params is not None else self.conn.execute(sql)

    def table_columns(self, table: str) -> list[str] | None:
        rows = self.conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = coalesce(?, current_schema()) "
            "AND table_name = ? ORDER BY ordinal_position", [self.schema, table]).fetchall()
        return [r[0] for r in rows] or None

    def widen_column(self, table: str, name: str, source_type: str) -> None:
        pass  # DuckDB VARCHAR has no length

    def _unregister(self, stage: str) -> None:
        """Drop a staged view. After a failed statement DuckDB refuses everything but ROLLBACK
        ("Current transaction is aborted"): the view is dropped at rollback() instead, so the
        statement's own error is the one that reaches the caller (and the dead-letter table)."""
        try:
            self.conn.unregister(stage)
        except duckdb.Error:
            self._stale.append(stage)

    def _register(self, columns: Sequence[str], rows: list[Row]) -> str:
        name = f"_cdc_stage_{next(_stage_ids)}"
        arrays = {c: arrow_array([r.get(c) for r in rows]) for c in columns}
        self.conn.register(name, pa.table(arrays))
        return name

    def delete_rows(self, table: str, key: Sequence[str], rows: list[Row]) -> None:
        if not rows:
            return
        stage = self._register(key, rows)
        try:
            on = " AND ".join(f"t.{self.quote(k)} = s.{self.quote(k)}" for k in key)
            self.conn.execute(f"DELETE FROM {self.qualified(table)} t USING {stage} s WHERE {on}")
        finally:
            self._unregister(stage)

    def upsert_rows(self, table: str, columns: Sequence[str], key: Sequence[str], rows: list[Row]) -> None:
        if not rows:
            return
        stage = self._register(columns, rows)
        try:
            cols = ", ".join(self.quote(c) for c in columns)
            self.conn.execute(f"INSERT INTO {self.qualified(table)} ({cols}) SELECT {cols} FROM {stage} "
                              f"{self.sql.upsert_clause(columns, key)}")
        finally:
            self._unregister(stage)

    def insert_rows(self, table: str, columns: Sequence[str], rows: list[Row]) -> None:
        if not rows:
            return
        stage = self._register(columns, rows)
        try:
            cols = ", ".join(self.quote(c) for c in columns)
            self.conn.execute(f"INSERT INTO {self.qualified(table)} ({cols}) SELECT {cols} FROM {stage}")
        finally:
            self._unregister(stage)
