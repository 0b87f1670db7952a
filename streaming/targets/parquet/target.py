"""Parquet changelog sink. Config: ``{name, kind: parquet, path: DIR}``.

Not a mirror but a changelog: every micro-batch writes, per table, one file
``DIR/<table>/part-<last sequence of the batch>.parquet`` holding the batch's
NET changes in apply order (a batch in which the table's columns change -- a
DDL -- writes one file per shape, ``part-<last sequence>-<n>.parquet``, so a
file never carries a column its rows did not have), with columns ``_op`` (``d`` delete / ``u``
upsert / ``t`` truncate), ``_batch`` (Spark batch id), ``_last_sequence`` and
the row's columns (stream values: DECIMAL and dates as text). Readers take
the files in name order and rows in file order; the last ``u``/``d`` per key
is the current state.

Transaction: files are written into ``DIR/_staging/`` and renamed into place
at commit, then ``DIR/_cdc/progress-<source>.json`` and the schema memory are
replaced atomically (write + rename). A crash before the progress rename
makes the batch replay, which rewrites files of the same names: no
duplicates. ``cursor()`` is not available (no SQL): maintained views need a
SQL target.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from cdc.config.models import TargetConfig
from cdc.stream.events import TableSchema
from streaming.errors import ApplyError, TargetError
from streaming.targets.base import Row, Target, arrow_array
from streaming.targets.progress_row import Progress, utc_now


def _runs_of_one_shape(parts: list[pa.Table]) -> list[list[pa.Table]]:
    """``parts`` cut where the columns change (a DDL inside the batch): each run is one file, so a row never
    shows a column its table did not have when it was written (a NULL there would read as a value)."""
    runs: list[list[pa.Table]] = []
    for part in parts:
        if runs and runs[-1][0].schema.names == part.schema.names:
            runs[-1].append(part)
        else:
            runs.append([part])
    return runs


class ParquetTarget(Target):
    dialect = "parquet"
    batch_commit = "per_table"  # each table's files renamed into place, the progress file last (docstring)
    upsert = "append"
    schema_kinds = frozenset({"changelog"})  # each batch's files carry the columns of their rows
    resync_ranges = False  # no delete by key range over stored files: a resync range record stops the apply

    def __init__(self, config: TargetConfig) -> None:
        super().__init__(config)
        if not (config.path or config.dsn):
            raise TargetError(f"target {config.name!r} (parquet) needs a path", target=config.name)
        self.root = config.path or config.dsn
        self._pending: list[tuple[str, str, int, dict[str, list]]] = []  # (table, op, rows, columns)
        self._meta: dict[str, Any] = {}
        self._batch = (-1, 0)
        self._dead: list[tuple[str, bytes]] = []  # (file, line): dead letters of the batch, written at its commit

    def _connect(self) -> Any:
        os.makedirs(os.path.join(self.root, "_cdc"), exist_ok=True)
        return self

    def ensure_meta(self) -> None:
        pass

    def cursor(self) -> Any:
        raise ApplyError("the parquet target has no SQL cursor: maintained views need a SQL target", target=self.name)

    def begin(self) -> None:
        self._pending = []
        self._meta = {}
        self._dead = []

    def rollback(self) -> None:
        self._pending = []
        self._meta = {}
        self._dead = []

    def _meta_path(self, kind: str, source: str) -> str:
        return os.path.join(self.root, "_cdc", f"{kind}-{source}.json")

    def _read_json(self, path: str) -> Any:
        try:
            with open(path, "rb") as f:
                return orjson.loads(f.read())
        except FileNotFoundError:
            return None

    def _write_json(self, path: str, value: Any) -> None:
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(orjson.dumps(value, default=str))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def commit(self) -> None:
        staging = os.path.join(self.root, "_staging")
        os.makedirs(staging, exist_ok=True)
        files: dict[str, list[pa.Table]] = {}
        batch, last_seq = self._batch
        for table, op, n, cols in self._pending:
            files.setdefault(table, []).append(pa.table({"_op": [op] * n, "_batch": [batch] * n,
                                                         "_last_sequence": [last_seq] * n,
                                                         **{c: arrow_array(v) for c, v in cols.items()}}))
        moves = []
        for table, parts in files.items():
            shapes = _runs_of_one_shape(parts)
            for i, run in enumerate(shapes):
                name = f"part-{last_seq:020d}.parquet" if len(shapes) == 1 else f"part-{last_seq:020d}-{i:04d}.parquet"
                tmp = os.path.join(staging, f"{table}-{name}")
                pq.write_table(pa.concat_tables(run, promote_options="permissive"), tmp)
                moves.append((tmp, os.path.join(self.root, table, name)))
        for tmp, dst in moves:
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.replace(tmp, dst)
        for path, line in self._dead:  # once per committed batch (a retried batch rolled its own back)
            with open(path, "ab") as f:
                f.write(line)
        for path, value in self._meta.items():
            self._write_json(path, value)
        self._pending, self._meta, self._dead = [], {}, []

    def table_columns(self, table: str) -> list[str] | None:
        return None  # a changelog has no fixed table; every batch's files carry their own columns

    def create_table(self, table: str, schema: TableSchema) -> None:
        pass

    def add_column(self, table: str, name: str, source_type: str) -> None:
        pass

    def widen_column(self, table: str, name: str, source_type: str) -> None:
        pass

    def read_progress(self, source: str) -> Progress | None:
        d = self._read_json(self._meta_path("progress", source))
        return None if d is None else Progress(source, d["last_sequence"], d["batch_id"], d.get("last_position") or {},
                                               d.get("last_commit_ts_ms"))

    def write_progress(self, p: Progress) -> None:
        self._batch = (p.batch_id, p.last_sequence)
        self._meta[self._meta_path("progress", p.source)] = {
            "source": p.source, "last_sequence": p.last_sequence, "batch_id": p.batch_id,
            "last_position": p.last_position, "last_commit_ts_ms": p.last_commit_ts_ms}

    def load_schemas(self, source: str) -> dict[str, tuple[str, TableSchema]]:
        d = self._read_json(self._meta_path("schema", source)) or {}
        return {k: (v[0], TableSchema.from_json(v[1])) for k, v in d.items()}

    def save_schema(self, source: str, source_table: str, target_table: str, schema: TableSchema, sequence: int) -> None:
        path = self._meta_path("schema", source)
        d = self._meta.get(path) or self._read_json(path) or {}
        d[source_table] = [target_table, schema.to_json()]
        self._meta[path] = d

    # ---- schema-change decisions (`cdc schema`): a JSON file beside the progress file ----------------
    def schema_decisions(self, source: str) -> list[tuple[int, str, str, Any]]:
        return sorted(tuple(d) for d in self._read_json(self._meta_path("decisions", source)) or [])

    def schema_decision(self, source: str, sequence: int) -> tuple[str, str] | None:
        found = [d for d in self.schema_decisions(source) if d[0] == sequence]
        return (found[-1][2], found[-1][1]) if found else None

    def skipped_tables(self, source: str) -> set[str]:
        return {d[1] for d in self.schema_decisions(source) if d[2] == "skip"}

    def save_schema_decision(self, source: str, sequence: int, table: str, decision: str) -> None:
        kept = [d for d in self.schema_decisions(source) if d[0] != sequence]
        os.makedirs(os.path.dirname(self._meta_path("decisions", source)), exist_ok=True)
        self._write_json(self._meta_path("decisions", source), [*kept, (sequence, table, decision, utc_now())])

    def _add(self, table: str, op: str, columns: Sequence[str], rows: list[Row]) -> None:
        if rows:
            self._pending.append((table, op, len(rows), {c: [r.get(c) for r in rows] for c in columns}))

    def delete_rows(self, table: str, key: Sequence[str], rows: list[Row]) -> None:
        self._add(table, "d", list(rows[0].keys()) if rows else key, rows)

    def upsert_rows(self, table: str, columns: Sequence[str], key: Sequence[str], rows: list[Row]) -> None:
        self._add(table, "u", columns, rows)

    def insert_rows(self, table: str, columns: Sequence[str], rows: list[Row]) -> None:
        self._add(table, "u", columns, rows)

    def delete_copies(self, table: str, columns: Sequence[str], rows: list[Row]) -> None:
        self._add(table, "d", columns, rows)

    def truncate(self, table: str) -> None:
        self._pending.append((table, "t", 1, {}))

    def dead_letter(self, source: str, sequence: int | None, table: str | None, key: Any, value: Any, error: str) -> None:
        """Kept with the batch, appended to ``_cdc/dead-letter-<source>.jsonl`` at its commit (never on a retry)."""
        path = os.path.join(self.root, "_cdc", f"dead-letter-{source}.jsonl")
        self._dead.append((path, orjson.dumps({"sequence": sequence, "table": table, "key": key, "value": value,
                                               "error": error}, default=str) + b"\n"))

    def close(self) -> None:
        shutil.rmtree(os.path.join(self.root, "_staging"), ignore_errors=True)
        self.conn = None
