"""What the lakehouse targets (Delta, Iceberg) share: the batch buffer, exactly once, the progress log.

A lake table format commits each table on its own: there is no transaction
over several tables. So a micro-batch is applied like this (``commit()``):

1. per table the batch touched, ONE commit of the table holding the batch's
   net effect per key, which records the source and the batch's last
   sequence in the table itself (Delta: an application transaction,
   ``app_id`` = source, ``version`` = last sequence; Iceberg: the snapshot
   summary properties ``cdc.source`` / ``cdc.last-sequence``). A table that
   already records a sequence at or above the batch's is skipped: a replay
   after a crash between two table commits applies nothing twice;
2. new or changed table definitions into the schema log ``_cdc_schema``;
3. LAST, one row in the progress log table ``_cdc_progress`` (same format):
   source, last sequence, batch id, commit position (with the Kafka offsets,
   as every target's progress row), source commit time, applied time, and
   ``tables``: JSON ``{table: version or snapshot id}`` of EVERY table of
   the source as of this batch.

The newest progress-log row is the latest consistent point: reading each
table as of the version it names never shows half of a source transaction,
even while later batches are being committed (``latest_point``,
``cdc lake snapshot``). A reader of the tables' latest versions instead sees
each table atomically per batch, but may see one table a batch ahead of
another.

Batches are buffered in memory between ``begin()`` and ``commit()``: the
engine's calls (deletes, upserts, truncates, several runs when a batch holds
barriers) are folded per key into each table's final state. Keys new to a
table (the net effect says so, and no earlier attempt of this batch reached
the table) are appended; everything else is merged by key. Keyless tables
with deletes are rewritten whole (meant for small tables).

Table DDL commits at once too: DROP TABLE (with ``apply[].drop_table: drop``)
removes the table, RENAME TABLE renames it with its rows and history (Delta:
its directory, on local storage; Iceberg: in the catalog), and a change of the
primary key changes the key the batches merge by (a lake table holds no key).

Column DDL commits at once, one table commit per change: CREATE TABLE, ADD
COLUMN (a constant default fills the stored rows in the same commit), DROP,
RENAME and type changes (Delta rewrites the table's files with the new schema
in one overwrite; Iceberg changes its schema in place, and rewrites the files
in one transaction only to fill a new column). Each change is safe to run
again: a replay after a crash before the progress row finds the column already
added, renamed, dropped or retyped (streaming/apply/catalog.py skips or repeats
it). Narrowings are checked against the stored values first (DuckDB over
the table's Arrow data). With rows buffered for the table a SCHEMA record
names, the engine first commits what precedes the record with its
progress-log row (``commit_before_ddl``), so the DDL meets a table holding
every row before it.
"""

from __future__ import annotations

import abc
import collections
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa

from cdc.config.models import TargetConfig
from cdc.stream.events import Column, TableSchema
from streaming.errors import ApplyError, TargetError
from streaming.targets import lake_types
from streaming.targets.base import Row, Target
from streaming.targets.progress_row import Progress, ms_from_ts, ts_from_ms, utc_now

PROGRESS_LOG = "_cdc_progress"
SCHEMA_LOG = "_cdc_schema"
DECISIONS_LOG = "_cdc_schema_decisions"  # `cdc schema accept|skip|evolve` (streaming/apply/schema_cmd.py)

PROGRESS_SCHEMA = pa.schema([
    ("source", pa.string()), ("last_sequence", pa.int64()), ("batch_id", pa.int64()),
    ("last_position", pa.string()), ("last_commit_ts", pa.timestamp("us")), ("applied_at", pa.timestamp("us")),
    ("tables", pa.string())])
SCHEMA_LOG_SCHEMA = pa.schema([
    ("source", pa.string()), ("source_table", pa.string()), ("target_table", pa.string()),
    ("schema_json", pa.string()), ("sequence", pa.int64())])
DECISIONS_SCHEMA = pa.schema([
    ("source", pa.string()), ("sequence", pa.int64()), ("source_table", pa.string()), ("decision", pa.string()),
    ("decided_at", pa.string())])
DEAD_LETTER_SCHEMA = pa.schema([
    ("source", pa.string()), ("sequence", pa.int64()), ("source_table", pa.string()), ("record_key", pa.string()),
    ("record_value", pa.string()), ("error", pa.string()), ("at_time", pa.timestamp("us"))])


@dataclass
class _Pending:
    """One table's share of the open batch: its operations in call order."""

    key: tuple[str, ...]
    truncated: bool = False
    parts: list[tuple[str, pa.Table, Any]] = field(default_factory=list)  # ("d"|"u"|"i"|"x", rows, new mask)


class LakeTarget(Target):
    """Base of the Delta and Iceberg targets (see the module docstring for the commit protocol)."""

    batch_commit = "per_table"
    upsert = "merge_by_key"
    columnar = True
    json_rows = True
    bulk_min_rows = 1
    schema_kinds = frozenset({"add", "backfill", "drop", "rename", "type"})  # every column stays nullable
    table_ddl = "all"  # CREATE, DROP (apply[].drop_table), RENAME TABLE, a key change: streaming/apply/table_ddl.py
    resync_ranges = False  # no delete by key range over stored files: a resync range record stops the apply

    def __init__(self, config: TargetConfig) -> None:
        super().__init__(config)
        self._pending: dict[str, _Pending] = {}
        self._schemas: list[dict[str, Any]] = []
        self._dead: list[dict[str, Any]] = []
        self._progress: Progress | None = None
        self._applied: dict[str, Progress] = {}  # source -> last progress-log row (read or written)
        self._versions: dict[str, dict[str, int]] = {}  # source -> {table: version} at the last point
        self._arrow: dict[str, pa.Schema] = {}  # table -> Arrow schema of the stored table
        self._duck: Any = None
        self._key_memory: dict[str, tuple[str, ...]] = {}  # target table -> primary key (from the schemas)

    # ---- what each format implements --------------------------------------------------
    @abc.abstractmethod
    def _table_schema(self, table: str) -> pa.Schema | None:
        """The stored table's Arrow schema, or None when it does not exist."""

    @abc.abstractmethod
    def _create(self, table: str, schema: pa.Schema) -> None: ...

    @abc.abstractmethod
    def _add_field(self, table: str, schema: pa.Schema, name: str) -> None:
        """Add column ``name`` (its type in ``schema``, the table's new Arrow schema)."""

    @abc.abstractmethod
    def _add_filled(self, table: str, schema: pa.Schema, name: str, fill: pa.Scalar) -> None:
        """Add column ``name`` holding ``fill`` in every stored row, in ONE table commit."""

    @abc.abstractmethod
    def _drop_field(self, table: str, name: str) -> None: ...

    @abc.abstractmethod
    def _rename_field(self, table: str, old: str, new: str) -> None: ...

    @abc.abstractmethod
    def _retype_field(self, table: str, schema: pa.Schema, name: str) -> None:
        """Give column ``name`` its type in ``schema`` (the table's new Arrow schema); stored values are cast."""

    @abc.abstractmethod
    def _rewrite_data(self, table: str, data: pa.Table) -> None:
        """Replace the table's whole content with ``data`` (same schema) in ONE table commit."""

    def arrow_retype_refusal(self, old: pa.DataType, new: pa.DataType) -> str | None:
        """Why this format cannot change a column from ``old`` to ``new`` (None: it can)."""
        return None

    def retype_refusal(self, old_type: str, new_type: str) -> str | None:
        return self.arrow_retype_refusal(lake_types.arrow_type(old_type, self.dialect),
                                         lake_types.arrow_type(new_type, self.dialect))

    @abc.abstractmethod
    def _drop(self, table: str) -> None:
        """Remove the table (its data and metadata); nothing when it does not exist."""

    @abc.abstractmethod
    def _rename(self, old: str, new: str) -> None:
        """Give table ``old`` the name ``new``, with its rows and history."""

    @abc.abstractmethod
    def _recorded(self, table: str, source: str) -> int | None:
        """The last sequence of ``source`` the table records (None: none)."""

    @abc.abstractmethod
    def _write(self, table: str, source: str, seq: int, *, truncate: bool, deletes: pa.Table | None,
               upserts: pa.Table | None, append_only: bool, replace: pa.Table | None,
               existing: pa.Table | None = None) -> int:
        """ONE commit of ``table`` recording (source, seq); returns the table's new version / snapshot id.

        ``replace``: the table's whole new content (keyless tables, or after a TRUNCATE); else ``deletes``
        (key columns) and ``upserts`` (full rows) merged by key, or appended when ``append_only``;
        ``existing``: the upserts whose key may already be in the table (None: any of them)."""

    @abc.abstractmethod
    def _version(self, table: str) -> int | None: ...

    @abc.abstractmethod
    def _read_all(self, table: str) -> pa.Table: ...

    @abc.abstractmethod
    def _append_log(self, table: str, rows: pa.Table) -> None:
        """Append to a meta table (progress or schema log, dead letters), creating it when missing."""

    # ---- connection and transaction ---------------------------------------------------
    def commit_before_ddl(self, tables: set[str] | None = None) -> bool:
        """A DDL is its own table commit: rows buffered for the tables it names are committed first."""
        return bool(self._pending) if tables is None else any(t in self._pending for t in tables)

    def ensure_meta(self) -> None:
        self._duckdb()  # started with the target, not inside the first batch (import + connect: ~0.3 s)

    def cursor(self) -> Any:
        raise ApplyError(f"the {self.dialect} target has no SQL cursor: maintained views need a SQL target",
                         target=self.name)

    def begin(self) -> None:
        self.rollback()

    def rollback(self) -> None:
        self._pending, self._schemas, self._dead, self._progress = {}, [], [], None

    def close(self) -> None:
        if self._duck is not None:
            self._duck.close()
            self._duck = None
        self.conn = None

    def commit(self) -> None:
        p = self._progress
        if p is None:  # DDL only (the engine commits after create/alter): nothing is buffered
            self.rollback()
            return
        prev = self._applied.get(p.source)
        versions = dict(self._versions.get(p.source) or {})
        for table, pend in self._pending.items():
            recorded = self._recorded(table, p.source)
            if recorded is not None and recorded >= p.last_sequence:
                versions[table] = self._version(table)  # replay: this table has the batch already
                continue
            # "new" keys are only trusted when no attempt of this batch (or a later one) reached the table
            trust_new = recorded is None or (prev is not None and recorded <= prev.last_sequence)
            versions[table] = self._commit_table(table, pend, p.source, p.last_sequence, trust_new)
        for t in self._touched_tables():
            if t not in versions and (v := self._version(t)) is not None:
                versions[t] = v
        if self._schemas:
            self._append_log(SCHEMA_LOG, pa.Table.from_pylist(self._schemas, SCHEMA_LOG_SCHEMA))
        if self._dead:
            self._append_log(self.config.dead_letter_table, pa.Table.from_pylist(self._dead, DEAD_LETTER_SCHEMA))
        row = {"source": p.source, "last_sequence": p.last_sequence, "batch_id": p.batch_id,
               "last_position": orjson.dumps(p.last_position).decode(), "last_commit_ts": ts_from_ms(p.last_commit_ts_ms),
               "applied_at": utc_now(), "tables": orjson.dumps(dict(sorted(versions.items()))).decode()}
        self._append_log(PROGRESS_LOG, pa.Table.from_pylist([row], PROGRESS_SCHEMA))
        self._applied[p.source] = p
        self._versions[p.source] = versions
        self.rollback()

    def _touched_tables(self) -> list[str]:
        return [s["target_table"] for s in self._schemas if s["target_table"] is not None]

    # ---- one table's commit -------------------------------------------------------------
    def _commit_table(self, table: str, pend: _Pending, source: str, seq: int, trust_new: bool) -> int:
        schema = self._arrow_schema(table)
        if not pend.key:
            return self._commit_keyless(table, pend, schema, source, seq)
        deletes, upserts, new = self._fold(pend)
        if pend.truncated:  # the table is empty before the batch's later rows: they are its whole content
            return self._write(table, source, seq, truncate=True, deletes=None, upserts=None, append_only=False,
                               replace=_conform(upserts, schema))
        append_only = trust_new and deletes is None and upserts is not None and bool(new.all())
        existing = upserts.filter(pa.array(~new)) if trust_new and upserts is not None else None
        return self._write(table, source, seq, truncate=False, deletes=deletes, upserts=_conform(upserts, schema),
                           append_only=append_only, replace=None, existing=existing)

    def _fold(self, pend: _Pending) -> tuple[pa.Table | None, pa.Table | None, Any]:
        """The final state per key: (deleted keys, upserted rows, per upserted row: new to the table)."""
        import numpy as np

        parts = pend.parts
        if len(parts) <= 2 and [p[0] for p in parts] in (["d"], ["u"], ["d", "u"]):
            d = next((p[1] for p in parts if p[0] == "d"), None)
            u = next(((p[1], p[2]) for p in parts if p[0] == "u"), None)
            # within one run the net effect has deleted and upserted keys disjoint
            return d, (u[0] if u else None), (np.asarray(u[1], dtype=bool) if u else np.zeros(0, dtype=bool))
        last: dict[tuple, tuple[int, int]] = {}  # key -> (part, row) of its last change
        first_new: dict[tuple, bool] = {}
        for pi, (op, rows, new) in enumerate(parts):
            keys = zip(*(rows.column(k).to_pylist() for k in pend.key))
            for ri, k in enumerate(keys):
                last[k] = (pi, ri)
                if k not in first_new:
                    first_new[k] = op == "u" and bool(new[ri])
        dels, ups, flags = [], [], []
        for k, (pi, ri) in last.items():
            op, rows, _ = parts[pi]
            if op == "d":
                dels.append(rows.select(list(pend.key)).slice(ri, 1))
            else:
                ups.append(rows.slice(ri, 1))
                flags.append(first_new[k])
        d = pa.concat_tables(dels, promote_options="permissive") if dels else None
        u = pa.concat_tables(ups, promote_options="permissive") if ups else None
        return d, u, np.asarray(flags, dtype=bool)

    def _commit_keyless(self, table: str, pend: _Pending, schema: pa.Schema, source: str, seq: int) -> int:
        inserts: list[pa.Table] = []
        gone: collections.Counter = collections.Counter()
        for op, rows, _ in pend.parts:
            rows = _conform(rows, schema)
            if op == "i":
                inserts.append(rows)
                continue
            want = collections.Counter(_row_tuples(rows))  # delete copies: cancel pending inserts first
            kept = []
            for t in inserts:
                tuples = _row_tuples(t)
                mask = []
                for r in tuples:
                    drop = want[r] > 0
                    if drop:
                        want[r] -= 1
                    mask.append(not drop)
                kept.append(t.filter(pa.array(mask, pa.bool_())))
            inserts = kept
            gone.update(+want)
        added = pa.concat_tables(inserts) if inserts else schema.empty_table()
        if not gone and not pend.truncated:
            return self._write(table, source, seq, truncate=False, deletes=None, upserts=added, append_only=True,
                               replace=None)
        base = schema.empty_table() if pend.truncated else _conform(self._read_all(table), schema)
        mask = []
        for r in _row_tuples(base):
            drop = gone[r] > 0
            if drop:
                gone[r] -= 1
            mask.append(not drop)
        content = pa.concat_tables([base.filter(pa.array(mask, pa.bool_())), added])
        return self._write(table, source, seq, truncate=pend.truncated, deletes=None, upserts=None, append_only=False,
                           replace=content)

    # ---- catalogue ----------------------------------------------------------------------
    def table_columns(self, table: str) -> list[str] | None:
        schema = self._arrow_schema(table, missing_ok=True)
        return None if schema is None else schema.names

    def _arrow_schema(self, table: str, missing_ok: bool = False) -> pa.Schema | None:
        if table not in self._arrow:
            schema = self._table_schema(table)
            if schema is None:
                if missing_ok:
                    return None
                raise TargetError(f"{self.dialect} table {table} of target {self.name!r} does not exist",
                                  target=self.name, table=table)
            self._arrow[table] = schema
        return self._arrow[table]

    def create_table(self, table: str, schema: TableSchema) -> None:
        arrow = lake_types.arrow_schema(schema, self.dialect)
        arrow = pa.schema([f.with_nullable(True) for f in arrow])
        self._create(table, arrow)
        self._arrow[table] = arrow

    # ---- table-level DDL (streaming/apply/table_ddl.py): each its own commit, like column DDL ----------
    def drop_table(self, table: str) -> None:
        self._drop(table)
        self._forget(table)

    def rename_table(self, old: str, new: str) -> None:
        """The table and its history under the new name; the consistent point names it so from the next
        progress-log row on."""
        self._rename(old, new)
        key = self._key_memory.get(old)
        self._forget(old)
        self._arrow.pop(new, None)
        if key is not None:
            self._key_memory[new] = key

    def rekey(self, table: str, key: Sequence[str]) -> None:
        """ADD / DROP / change of the primary key: a lake table has no key of its own, only the merge key
        the batches use (the rows are the source's, unique under the new key when the source took it)."""
        self._key_memory[table] = tuple(key)

    def _forget(self, table: str) -> None:
        self._arrow.pop(table, None)
        self._key_memory.pop(table, None)
        for versions in self._versions.values():  # the next consistent point no longer names it
            versions.pop(table, None)

    def add_column(self, table: str, name: str, source_type: str) -> None:
        old = self._arrow_schema(table)
        new = old.append(pa.field(name, lake_types.arrow_type(source_type, self.dialect), nullable=True))
        self._add_field(table, new, name)
        self._arrow[table] = new

    def widen_column(self, table: str, name: str, source_type: str) -> None:
        pass  # lake strings have no length

    def column_type(self, source_type: str) -> str:
        return str(lake_types.arrow_type(source_type, self.dialect))

    def evolve_add(self, table: str, col: Column, const: str | None, after: str | None | bool = False) -> None:
        """Add ``col`` (appended, nullable); stored rows take ``const`` (the source default's text) or NULL."""
        if const is None:
            self.add_column(table, col.name, col.type)
            return
        field = pa.field(col.name, lake_types.arrow_type(col.type, self.dialect), nullable=True)
        fill = lake_types.rows_to_table([{col.name: const}], pa.schema([field]), table).column(0)[0]
        new = self._arrow_schema(table).append(field)
        self._add_filled(table, new, col.name, fill)
        self._arrow[table] = new

    def evolve_drop(self, table: str, name: str) -> None:
        self._drop_field(table, name)
        self._arrow.pop(table, None)

    def evolve_rename(self, table: str, old: str, new: str) -> None:
        self._rename_field(table, old, new)
        self._arrow.pop(table, None)
        key = self._key_memory.get(table)
        if key and old in key:
            self._key_memory[table] = tuple(new if k == old else k for k in key)

    def evolve_alter(self, table: str, col: Column, const_default: str | None, what: set[str]) -> None:
        """Only ``type`` reaches a lake table (columns stay nullable, defaults are not kept)."""
        if "type" not in what:
            return
        old = self._arrow_schema(table)
        want = lake_types.arrow_type(col.type, self.dialect)
        if old.field(col.name).type == want:
            return  # e.g. a replay after the change committed
        why = self.arrow_retype_refusal(old.field(col.name).type, want)
        if why:
            raise TargetError(f"{self.dialect} target {self.name!r}: column {table}.{col.name}: {why}",
                              target=self.name, table=table)
        new = old.set(old.get_field_index(col.name), pa.field(col.name, want, nullable=True))
        self._retype_field(table, new, col.name)
        self._arrow.pop(table, None)

    def evolve_copy(self, table: str, src: str, dst: str) -> None:
        """dst = src in every stored row (lenient: a renamed column kept under both names): one rewrite."""
        data = _conform(self._read_all(table), self._arrow_schema(table))
        i = data.schema.get_field_index(dst)
        self._rewrite_data(table, data.set_column(i, data.schema.field(i),
                                                  data.column(src).cast(data.schema.field(i).type)))

    def first_value(self, table: str, column: str, key: Sequence[str], where: str) -> tuple | None:
        """(key values..., value) of one stored row where ``where`` holds (``{c}``: the column), or None:
        DuckDB over the table's Arrow data."""
        data = self._read_all(table).select([*key, column])  # noqa: F841 - DuckDB reads it by name
        c = _dq(column)
        cols = ", ".join([_dq(k) for k in key] + [c])
        rows = self._duckdb().execute(f"SELECT {cols} FROM data WHERE {where.format(c=c)} LIMIT 1").fetchall()
        return tuple(rows[0]) if rows else None

    def misfit_sql(self, check: tuple) -> str:
        from cdc.schema.sql_dialects import DUCKDB

        if check[0] == "chars":
            return f"{DUCKDB.char_length('{c}')} > {check[1]}"
        if check[0] == "bytes":
            return f"octet_length({{c}}) > {check[1]}"
        return super().misfit_sql(check)

    def has_rows(self, table: str) -> bool:
        """Rows stored or buffered in this batch (a buffered delete counts too: the answer may say yes)."""
        return table in self._pending or (self._table_schema(table) is not None and len(self._read_all(table)) > 0)

    # ---- schema-change decisions: a meta table like the progress log (`cdc schema`) ----------------
    def _decisions(self, source: str) -> list[dict[str, Any]]:
        if self._table_schema(DECISIONS_LOG) is None:
            return []
        return [r for r in self._read_all(DECISIONS_LOG).to_pylist() if r["source"] == source]

    def schema_decision(self, source: str, sequence: int) -> tuple[str, str] | None:
        rows = [r for r in self._decisions(source) if r["sequence"] == sequence]
        latest = max(rows, key=lambda r: r["decided_at"]) if rows else None
        return (latest["decision"], latest["source_table"]) if latest else None

    def schema_decisions(self, source: str) -> list[tuple[int, str, str, Any]]:
        return sorted((r["sequence"], r["source_table"], r["decision"], r["decided_at"]) for r in self._decisions(source))

    def skipped_tables(self, source: str) -> set[str]:
        return {r["source_table"] for r in self._decisions(source) if r["decision"] == "skip"}

    def save_schema_decision(self, source: str, sequence: int, table: str, decision: str) -> None:
        row = {"source": source, "sequence": sequence, "source_table": table, "decision": decision,
               "decided_at": utc_now().isoformat()}
        self._append_log(DECISIONS_LOG, pa.Table.from_pylist([row], DECISIONS_SCHEMA))

    # ---- progress and schema memory -------------------------------------------------------
    def read_progress(self, source: str) -> Progress | None:
        row = self._latest_row(source)
        if row is None:
            return None
        p = Progress(source, int(row["last_sequence"]), int(row["batch_id"]), orjson.loads(row["last_position"] or "{}"),
                     ms_from_ts(row["last_commit_ts"]), row["applied_at"])
        self._applied[source] = p
        self._versions[source] = orjson.loads(row["tables"] or "{}")
        return p

    def _latest_row(self, source: str) -> dict[str, Any] | None:
        log = self._read_all(PROGRESS_LOG) if self._table_schema(PROGRESS_LOG) is not None else None
        if log is None or not len(log):
            return None
        rows = [r for r in log.to_pylist() if r["source"] == source]
        return max(rows, key=lambda r: (r["last_sequence"], r["batch_id"])) if rows else None

    def write_progress(self, p: Progress) -> None:
        self._progress = p

    def load_schemas(self, source: str) -> dict[str, tuple[str, TableSchema]]:
        if self._table_schema(SCHEMA_LOG) is None:
            return {}
        out: dict[str, tuple[int, str, TableSchema | None]] = {}
        for r in self._read_all(SCHEMA_LOG).to_pylist():
            if r["source"] == source and (r["source_table"] not in out or r["sequence"] >= out[r["source_table"]][0]):
                out[r["source_table"]] = (r["sequence"], r["target_table"], None if r["schema_json"] is None else
                                          TableSchema.from_json(orjson.loads(r["schema_json"])))
        out = {k: v for k, v in out.items() if v[2] is not None}  # the last word on a table was forget_schema
        self._key_memory.update({v[1]: tuple(v[2].primary_key) for v in out.values()})
        return {k: (v[1], v[2]) for k, v in out.items()}

    def forget_schema(self, source: str, source_table: str) -> None:
        """A source table dropped or renamed away: a row without definition in the (append-only) schema log,
        at a sequence no earlier than any definition saved before it (the last applied one + 1, or the newest
        of this batch), so load_schemas ends on it; a later definition of the name (re-created) wins again."""
        applied = self._applied.get(source)
        seq = max([applied.last_sequence + 1 if applied else 0,
                   *(r["sequence"] for r in self._schemas if r["source"] == source)])
        self._schemas.append({"source": source, "source_table": source_table, "target_table": None,
                              "schema_json": None, "sequence": seq})

    def save_schema(self, source: str, source_table: str, target_table: str, schema: TableSchema, sequence: int) -> None:
        self._key_memory[target_table] = tuple(schema.primary_key)
        self._schemas.append({"source": source, "source_table": source_table, "target_table": target_table,
                              "schema_json": orjson.dumps(schema.to_json()).decode(), "sequence": sequence})

    # ---- data (buffered until commit) -------------------------------------------------------
    def _pend(self, table: str, key: Sequence[str]) -> _Pending:
        if table not in self._pending:
            self._pending[table] = _Pending(tuple(key))
        return self._pending[table]

    def _rows(self, table: str, columns: Sequence[str], rows: list[Row]) -> pa.Table:
        schema = self._arrow_schema(table)
        return lake_types.rows_to_table(rows, pa.schema([schema.field(c) for c in columns]), table)

    def delete_rows(self, table: str, key: Sequence[str], rows: list[Row]) -> None:
        if rows:
            self._pend(table, key).parts.append(("d", self._rows(table, key, rows), None))

    def upsert_rows(self, table: str, columns: Sequence[str], key: Sequence[str], rows: list[Row]) -> None:
        if rows:
            self._pend(table, key).parts.append(("u", self._rows(table, columns, rows), [False] * len(rows)))

    def insert_rows(self, table: str, columns: Sequence[str], rows: list[Row]) -> None:
        if rows:
            self._pend(table, ()).parts.append(("i", self._rows(table, columns, rows), None))

    def delete_copies(self, table: str, columns: Sequence[str], rows: list[Row]) -> None:
        if rows:
            self._pend(table, ()).parts.append(("x", self._rows(table, columns, rows), None))

    def truncate(self, table: str) -> None:
        key = self._pending[table].key if table in self._pending else self._key_memory.get(table, ())
        self._pending[table] = _Pending(key, truncated=True)

    def delete_json(self, table: str, key: Sequence[str], images: Any, binary: set[str]) -> None:
        schema = self._arrow_schema(table)
        rows = lake_types.json_to_table(images, pa.schema([schema.field(k) for k in key]), table, self._duckdb(),
                                        check=False)
        self._pend(table, key).parts.append(("d", rows, None))

    def upsert_json(self, table: str, columns: Sequence[str], key: Sequence[str], images: Any, new: Any,
                    binary: set[str]) -> None:
        schema = self._arrow_schema(table)
        rows = lake_types.json_to_table(images, pa.schema([schema.field(c) for c in columns]), table, self._duckdb())
        self._pend(table, key).parts.append(("u", rows, new))

    def _duckdb(self) -> Any:
        if self._duck is None:
            import duckdb
            self._duck = duckdb.connect()
        return self._duck

    def dead_letter(self, source: str, sequence: int | None, table: str | None, key: Any, value: Any, error: str) -> None:
        self._dead.append({"source": source, "sequence": sequence, "source_table": table,
                           "record_key": _json_text(key), "record_value": _json_text(value), "error": error,
                           "at_time": utc_now()})

    # ---- the consistent point -----------------------------------------------------------------
    def latest_point(self, source: str | None = None) -> dict[str, Any] | None:
        """The latest consistent point: ``{"source", "last_sequence", "batch_id", "last_commit_ts",
        "applied_at", "tables": {table: version or snapshot id}}``, or None before the first batch.

        ``source`` may be omitted when the target holds one source only."""
        if self._table_schema(PROGRESS_LOG) is None:
            return None
        log = self._read_all(PROGRESS_LOG)
        sources = sorted(set(log.column("source").to_pylist()))
        if source is None:
            if len(sources) > 1:
                raise TargetError(f"target {self.name!r} holds several sources {sources}: name one",
                                  target=self.name)
            source = sources[0] if sources else None
        row = self._latest_row(source) if source else None
        if row is None:
            return None
        return {"source": source, "last_sequence": row["last_sequence"], "batch_id": row["batch_id"],
                "last_commit_ts": _iso(row["last_commit_ts"]), "applied_at": _iso(row["applied_at"]),
                "position": orjson.loads(row["last_position"] or "{}"), "tables": orjson.loads(row["tables"] or "{}")}

    def point_versions(self) -> dict[str, set[int]]:
        """Per table, the versions / snapshot ids the latest consistent point of each source names (what
        compaction must keep readable)."""
        if self._table_schema(PROGRESS_LOG) is None:
            return {}
        out: dict[str, set[int]] = {}
        for source in set(self._read_all(PROGRESS_LOG).column("source").to_pylist()):
            for table, v in ((self.latest_point(source) or {}).get("tables") or {}).items():
                if v is not None:
                    out.setdefault(table, set()).add(int(v))
        return out


def _conform(rows: pa.Table | None, schema: pa.Schema) -> pa.Table | None:
    """``rows`` with exactly the columns of ``schema`` (a column added later is NULL), in its order."""
    if rows is None:
        return None
    cols = []
    for f in schema:
        if f.name in rows.column_names:
            c = rows.column(f.name)
            cols.append(c if c.type == f.type else c.cast(f.type))
        else:
            cols.append(pa.nulls(len(rows), f.type))
    return pa.Table.from_arrays(cols, schema=pa.schema([f.with_nullable(True) for f in schema]))


def _dq(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _row_tuples(t: pa.Table) -> list[tuple]:
    return list(zip(*(c.to_pylist() for c in t.columns))) if t.num_columns else [() for _ in range(len(t))]


def _json_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return orjson.dumps(value, default=str).decode()


def _iso(ts: Any) -> str | None:
    if ts is None:
        return None
    if isinstance(ts, dt.datetime):
        return ts.replace(tzinfo=None).isoformat() + "Z"
    return str(ts)
