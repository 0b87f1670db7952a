"""PostgreSQL target (psycopg 3).

Bulk path: rows are COPYed into a temporary staging table (``LIKE`` the
target, dropped at commit) and merged with one ``INSERT ... ON CONFLICT DO
UPDATE`` or ``DELETE ... USING`` statement; small sets go through
executemany. Config: ``{name, kind: postgres, dsn, schema (optional)}``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import psycopg

from cdc.config import TargetConfig
from streaming.errors import TargetError
from streaming.targets.base import Row, Target

BULK_MIN_ROWS = 200
_stage_ids = itertools.count()


class PostgresTarget(Target):
    dialect = "postgres"
    param = "%s"

    def __init__(self, config: TargetConfig) -> None:
        super().__init__(config)
        if not config.dsn:
            raise TargetError(f"target {config.name!r} (postgres) needs a dsn", target=config.name)

    def _connect(self) -> Any:
        try:
            return psycopg.connect(self.config.dsn, autocommit=False)
        except psycopg.OperationalError as exc:
            raise TargetError(f"cannot connect to target {self.name!r}: {exc}", target=self.name) from None

    def table_columns(self, table: str) -> list[str] | None:
        cur = self.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = coalesce(%s, current_schema()) "
            "AND table_name = %s ORDER BY ordinal_position", [self.schema, table])
        cols = [r[0] for r in cur.fetchall()]
        return cols or None

    def _stage(self, table: str, columns: Sequence[str], rows: list[Row]) -> str:
        stage = f"_cdc_stage_{next(_stage_ids)}"
        cols = ", ".join(self.quote(c) for c in columns)
        cur = self.cursor()
        cur.execute(f"CREATE TEMP TABLE {stage} ON COMMIT DROP AS SELECT {cols} FROM {self.qualified(table)} WITH NO DATA")
        with cur.copy(f"COPY {stage} ({cols}) FROM STDIN") as copy:
            for r in rows:
                copy.write_row([r.get(c) for c in columns])
        return stage

    def delete_rows(self, table: str, key: Sequence[str], rows: list[Row]) -> None:
        if len(rows) < BULK_MIN_ROWS:
            return super().delete_rows(table, key, rows)
        stage = self._stage(table, key, rows)
        on = " AND ".join(f"t.{self.quote(k)} = s.{self.quote(k)}" for k in key)
        self.execute(f"DELETE FROM {self.qualified(table)} t USING {stage} s WHERE {on}")

    def upsert_rows(self, table: str, columns: Sequence[str], key: Sequence[str], rows: list[Row]) -> None:
        if not rows:
            return
        cols = ", ".join(self.quote(c) for c in columns)
        conflict = ", ".join(self.quote(k) for k in key)
        rest = [c for c in columns if c not in key]
        action = ("DO UPDATE SET " + ", ".join(f"{self.quote(c)} = EXCLUDED.{self.quote(c)}" for c in rest)) \
            if rest else "DO NOTHING"
        if len(rows) < BULK_MIN_ROWS:
            self.executemany(f"INSERT INTO {self.qualified(table)} ({cols}) VALUES ({self.placeholders(len(columns))}) "
                             f"ON CONFLICT ({conflict}) {action}", [[r.get(c) for c in columns] for r in rows])
            return
        stage = self._stage(table, columns, rows)
        self.execute(f"INSERT INTO {self.qualified(table)} ({cols}) SELECT {cols} FROM {stage} "
                     f"ON CONFLICT ({conflict}) {action}")

    def insert_rows(self, table: str, columns: Sequence[str], rows: list[Row]) -> None:
        if len(rows) < BULK_MIN_ROWS:
            return super().insert_rows(table, columns, rows)
        cols = ", ".join(self.quote(c) for c in columns)
        with self.cursor().copy(f"COPY {self.qualified(table)} ({cols}) FROM STDIN") as copy:
            for r in rows:
                copy.write_row([r.get(c) for c in columns])
