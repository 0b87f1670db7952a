"""Delta Lake target (delta-rs, no JVM). Config: ``{name, kind: delta, path: DIR_OR_URI, storage_options: {...}}``.

``storage_options`` settings named like a secret (``AWS_SECRET_ACCESS_KEY``,
cdc.config.credentials.STORE_SECRET) are SecretStr, ``<key>_file`` reads one from a file;
:attr:`DeltaTarget.storage` unwraps them for each deltalake call only.

One Delta table per source table at ``<path>/<table>`` (DROP and RENAME TABLE remove or move that
directory: followed on local storage; on an object store they stop, naming the table); the progress log at
``<path>/_cdc_progress`` and the schema log at ``<path>/_cdc_schema``
(streaming.targets.lake has the commit protocol). Types: streaming.targets.lake_types.

Per batch and table, ONE Delta commit with the application transaction
``(app_id = source, version = the batch's last sequence)``: a MERGE by key
(deletes and upserts together), a plain append when every row is new to
the table, an overwrite for a TRUNCATE or a keyless table with deletes.
A table whose ``transaction_version(source)`` is at or above the batch's
last sequence is skipped (replay).

Read the tables as of the latest consistent point::

    point = DeltaTarget(cfg).latest_point()   # or `cdc lake snapshot --config F --target T`
    DeltaTable(f"{path}/acct", version=point["tables"]["acct"])
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import pyarrow as pa

from cdc.config.credentials import reveal
from cdc.config.models import TargetConfig
from streaming.errors import TargetError
from streaming.targets.lake import LakeTarget, _conform

_DEL = "_cdc_del"
COMMIT_ATTEMPTS = 3


class DeltaTarget(LakeTarget):
    dialect = "delta"

    def __init__(self, config: TargetConfig) -> None:
        super().__init__(config)
        if not config.path:
            raise TargetError(f"target {config.name!r} (delta) needs a path (a directory or s3://... URI)",
                              target=config.name, key=f"targets.{config.name}.path")
        self.root = config.path.rstrip("/")
        self._tables: dict[str, Any] = {}  # table -> DeltaTable (we are its only writer: kept, not reloaded)

    @property
    def storage(self) -> dict[str, str] | None:
        """``storage_options`` as deltalake takes them: secrets unwrapped here, for the call at hand only."""
        return reveal(self.config.storage_options) or None

    def _connect(self) -> Any:
        if "://" not in self.root:
            os.makedirs(self.root, exist_ok=True)
        return self

    def close(self) -> None:
        self._tables.clear()  # drop delta-rs handles before interpreter exit (their runtime aborts otherwise)
        super().close()

    def uri(self, table: str) -> str:
        return f"{self.root}/{table}"

    def _dt(self, table: str) -> Any | None:
        from deltalake import DeltaTable

        if table not in self._tables:
            if not DeltaTable.is_deltatable(self.uri(table), storage_options=self.storage):
                return None
            self._tables[table] = DeltaTable(self.uri(table), storage_options=self.storage)
        return self._tables[table]

    def _props(self, source: str, seq: int) -> Any:
        from deltalake import CommitProperties, Transaction

        return CommitProperties(app_transactions=[Transaction(source, seq)],
                                custom_metadata={"cdc.source": source, "cdc.last-sequence": str(seq)})

    # ---- LakeTarget ------------------------------------------------------------------------
    def _table_schema(self, table: str) -> pa.Schema | None:
        d = self._dt(table)
        return None if d is None else pa.schema(d.schema().to_arrow())

    def _create(self, table: str, schema: pa.Schema) -> None:
        from deltalake import DeltaTable

        self._tables[table] = DeltaTable.create(self.uri(table), schema, mode="ignore", name=table,
                                                storage_options=self.storage)

    def _add_field(self, table: str, schema: pa.Schema, name: str) -> None:
        from deltalake import Schema

        field = Schema.from_arrow(pa.schema([schema.field(name)])).fields[0]
        d = self._dt(table)
        d.alter.add_columns(field)
        d.update_incremental()

    # column DDL other than a plain ADD: the table's files rewritten with the new schema, ONE overwrite commit
    def _rewrite_data(self, table: str, data: pa.Table) -> None:
        from deltalake import write_deltalake

        d = self._dt(table)
        d.update_incremental()
        write_deltalake(d, data, mode="overwrite", schema_mode="overwrite")
        d.update_incremental()

    def _stored(self, table: str) -> pa.Table:
        return _conform(self._read_all(table), self._arrow_schema(table))

    def _add_filled(self, table: str, schema: pa.Schema, name: str, fill: pa.Scalar) -> None:
        data = self._stored(table)
        data = data.append_column(schema.field(name), pa.repeat(fill, len(data)))
        self._rewrite_data(table, _conform(data, schema))

    def _drop_field(self, table: str, name: str) -> None:
        self._rewrite_data(table, self._stored(table).drop_columns([name]))

    def _rename_field(self, table: str, old: str, new: str) -> None:
        data = self._stored(table)
        self._rewrite_data(table, data.rename_columns([new if c == old else c for c in data.column_names]))

    def _retype_field(self, table: str, schema: pa.Schema, name: str) -> None:
        self._rewrite_data(table, _conform(self._stored(table), schema))

    def _drop(self, table: str) -> None:
        self._tables.pop(table, None)
        if "://" in self.root:
            raise TargetError(f"target {self.name!r} (delta at {self.root}): DROP TABLE of {table} is followed on "
                              "local storage only; remove the table's directory by hand, or set "
                              "apply[].drop_table: keep", target=self.name, table=table)
        shutil.rmtree(self.uri(table), ignore_errors=True)

    def _rename(self, old: str, new: str) -> None:
        # a Delta table is its directory (its log holds paths relative to it): a rename is a directory move,
        # which object stores do not have
        self._tables.pop(old, None)
        self._tables.pop(new, None)
        if "://" in self.root:
            raise TargetError(f"target {self.name!r} (delta at {self.root}): RENAME TABLE {old} TO {new} is followed "
                              "on local storage only (an object store has no directory move); copy the table to "
                              f"{self.uri(new)} by hand", target=self.name, table=old)
        os.rename(self.uri(old), self.uri(new))

    def _recorded(self, table: str, source: str) -> int | None:
        d = self._dt(table)
        return None if d is None else d.transaction_version(source)

    def _version(self, table: str) -> int | None:
        d = self._dt(table)
        return None if d is None else d.version()

    def _read_all(self, table: str) -> pa.Table:
        d = self._dt(table)
        d.update_incremental()
        schema = pa.schema(d.schema().to_arrow())
        if "://" in self.root:
            return d.to_pyarrow_table()
        # Local tables: pyarrow reads the files of the current version (we write no deletion vectors and no
        # column mapping, so they ARE the table). deltalake 1.6.6's own scan leaves a thread that aborts the
        # interpreter at exit about one run in ten ("terminate called without an active exception").
        import pyarrow.dataset as ds

        return ds.dataset(d.file_uris(), schema=schema, format="parquet").to_table()

    def _write(self, table: str, source: str, seq: int, *, truncate: bool, deletes: pa.Table | None,
               upserts: pa.Table | None, append_only: bool, replace: pa.Table | None,
               existing: pa.Table | None = None) -> int:
        from deltalake import write_deltalake
        from deltalake.exceptions import CommitFailedError

        d = self._dt(table)
        props = self._props(source, seq)
        for attempt in range(COMMIT_ATTEMPTS):
            d.update_incremental()  # someone else may have committed (`cdc lake compact`)
            if attempt and (d.transaction_version(source) or -1) >= seq:
                break  # the failed attempt did commit after all
            try:
                if replace is not None:
                    write_deltalake(d, replace, mode="overwrite", commit_properties=props)
                elif append_only:
                    write_deltalake(d, upserts, mode="append", commit_properties=props)
                else:
                    self._merge(d, table, deletes, upserts, props)
                break
            except CommitFailedError as exc:  # a concurrent commit (compaction) conflicted: the batch is redone
                if attempt + 1 == COMMIT_ATTEMPTS:
                    raise TargetError(f"Delta table {self.uri(table)} of target {self.name!r}: commit of sequence "
                                      f"{seq} conflicted {COMMIT_ATTEMPTS} times: {exc}", target=self.name,
                                      table=table, sequence=seq) from None
        d.update_incremental()
        return d.version()

    def _merge(self, d: Any, table: str, deletes: pa.Table | None, upserts: pa.Table | None, props: Any) -> None:
        schema = pa.schema([f.with_nullable(True) for f in self._arrow_schema(table)])
        parts = []
        if deletes is not None and len(deletes):
            cols = [deletes.column(f.name) if f.name in deletes.column_names else pa.nulls(len(deletes), f.type)
                    for f in schema]
            parts.append(pa.Table.from_arrays(cols + [pa.array([True] * len(deletes))],
                                              schema=schema.append(pa.field(_DEL, pa.bool_()))))
        if upserts is not None and len(upserts):
            parts.append(upserts.append_column(pa.field(_DEL, pa.bool_()), pa.array([False] * len(upserts))))
        if not parts:
            # nothing to change, but the commit records the sequence (an empty append is a commit)
            from deltalake import write_deltalake
            write_deltalake(d, schema.empty_table(), mode="append", commit_properties=props)
            return
        source = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        key = self._key_memory.get(table) or ()
        on = " AND ".join(f"t.{_q(k)} = s.{_q(k)}" for k in key)
        (d.merge(source, on, source_alias="s", target_alias="t", commit_properties=props)
         .when_matched_delete(f"s.{_DEL}")
         .when_matched_update_all(f"NOT s.{_DEL}", except_cols=[_DEL])
         .when_not_matched_insert_all(f"NOT s.{_DEL}", except_cols=[_DEL])
         .execute())

    def _append_log(self, table: str, rows: pa.Table) -> None:
        from deltalake import write_deltalake

        d = self._dt(table)
        if d is None:
            write_deltalake(self.uri(table), rows, mode="append", storage_options=self.storage, name=table)
            self._dt(table)
        else:
            write_deltalake(d, rows, mode="append")
            d.update_incremental()

    # ---- maintenance (`cdc lake compact`) ---------------------------------------------------------
    def tables(self) -> list[str]:
        """Every Delta table under the root (local paths; an object store lists the known ones)."""
        if "://" in self.root:
            return sorted(set(self._tables))
        from deltalake import DeltaTable
        return sorted(n for n in os.listdir(self.root)
                      if DeltaTable.is_deltatable(self.uri(n), storage_options=self.storage))

    def compact(self, retention_hours: float) -> dict[str, Any]:
        """Optimize (compact small files) and vacuum every table, keeping ``retention_hours`` of history and
        always the versions the latest consistent point names (they stay readable)."""
        keep = self.point_versions()
        out = {}
        for name in self.tables():
            d = self._dt(name)
            d.update_incremental()
            metrics = d.optimize.compact()
            d.update_incremental()
            removed = d.vacuum(retention_hours=int(retention_hours), dry_run=False, enforce_retention_duration=False,
                               keep_versions=sorted(keep.get(name, ())))
            d.cleanup_metadata()
            d.update_incremental()
            out[name] = {"files_added": metrics.get("numFilesAdded"), "files_removed": metrics.get("numFilesRemoved"),
                         "vacuumed": len(removed), "version": d.version()}
        return out


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
