"""Apache Iceberg target (pyiceberg, SQL catalog, no JVM).

Config::

    {name: ice, kind: iceberg, catalog_uri: "sqlite:////data/ice/catalog.db", warehouse: /data/ice/warehouse,
     namespace: cdc, catalog: {...other pyiceberg catalog settings...}}

``catalog_uri`` is any pyiceberg SQL catalog URI (SQLite, PostgreSQL);
``warehouse`` a directory or an object-store URI (settings such as
``s3.endpoint`` go in ``catalog``; ``catalog.name``, default ``default``, is
the catalog name readers open it with). Secrets: ``catalog_uri`` is a SecretDsn
(its password masked in every message; ``catalog_uri_file`` reads the whole URI
from a file) and a ``catalog`` setting named like a secret (``s3.secret-access-key``,
cdc.config.credentials.STORE_SECRET) is a SecretStr (``<key>_file`` reads it); both are
unwrapped only in the props handed to SqlCatalog. One Iceberg table per source table
``<namespace>.<table>`` (DROP TABLE purges it, RENAME TABLE renames it in
the catalog with its snapshots), plus the progress log ``<namespace>._cdc_progress``
and the schema log ``<namespace>._cdc_schema`` (streaming.targets.lake has
the commit protocol; streaming.targets.lake_types the types).

Per batch and table, ONE catalog commit (a pyiceberg transaction: delete of
the touched keys + append of the new images, or an overwrite for a TRUNCATE
or a keyless table with deletes, or a plain append when every row is new);
each snapshot's summary carries ``cdc.source`` and ``cdc.last-sequence``,
and a table whose latest such snapshot is at or above the batch's last
sequence is skipped (replay).

Read the tables as of the latest consistent point::

    point = IcebergTarget(cfg).latest_point()   # or `cdc lake snapshot --config F --target T`
    catalog.load_table("cdc.acct").scan(snapshot_id=point["tables"]["acct"]).to_arrow()
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import pyarrow as pa
from pydantic import SecretStr

from cdc.config.credentials import reveal, scrub
from cdc.config.dsn import mask, split_password
from cdc.config.models import TargetConfig
from streaming.errors import TargetError
from streaming.targets.lake import LakeTarget, _conform

SOURCE_PROP, SEQUENCE_PROP = "cdc.source", "cdc.last-sequence"


class IcebergTarget(LakeTarget):
    dialect = "iceberg"

    def __init__(self, config: TargetConfig) -> None:
        super().__init__(config)
        if not config.catalog_uri or not config.warehouse:
            raise TargetError(f"target {config.name!r} (iceberg) needs catalog_uri (a SQL catalog URI) and "
                              f"warehouse", target=config.name, key=f"targets.{config.name}.catalog_uri")
        self.namespace = config.namespace
        self._catalog: Any = None
        self._tables: dict[str, Any] = {}

    def _connect(self) -> Any:
        from pyiceberg.catalog.sql import SqlCatalog

        wh = self.config.warehouse
        if "://" not in wh:
            os.makedirs(wh, exist_ok=True)
            wh = "file://" + os.path.abspath(wh)
        # secrets unwrapped here, for pyiceberg only; messages show the URI masked and never a secret
        extra = {k: str(v) for k, v in reveal(self.config.catalog).items() if k != "name"}
        uri = self.config.catalog_uri.get_secret_value()
        props = {"uri": uri, "warehouse": wh, **extra}
        try:
            self._catalog = SqlCatalog(str(self.config.catalog.get("name", "default")), **props)
            self._catalog.create_namespace_if_not_exists(self.namespace)
        except Exception as exc:  # noqa: BLE001 - the catalog's own error classes
            secrets = [split_password(uri)[1] or "",
                       *(v.get_secret_value() for v in self.config.catalog.values() if isinstance(v, SecretStr))]
            raise TargetError(f"cannot open the Iceberg catalog of target {self.name!r} at {mask(uri)}: "
                              f"{scrub(str(exc), secrets, uri)}", target=self.name) from None
        return self

    @property
    def catalog(self) -> Any:
        if self._catalog is None:
            self._connect()
        return self._catalog

    def _t(self, table: str) -> Any | None:
        from pyiceberg.exceptions import NoSuchTableError

        if table not in self._tables:
            try:
                self._tables[table] = self.catalog.load_table((self.namespace, table))
            except NoSuchTableError:
                return None
        return self._tables[table]

    # ---- LakeTarget ------------------------------------------------------------------------
    def _table_schema(self, table: str) -> pa.Schema | None:
        t = self._t(table)
        return None if t is None else t.schema().as_arrow()

    def _create(self, table: str, schema: pa.Schema) -> None:
        self._tables[table] = self.catalog.create_table_if_not_exists((self.namespace, table), schema=schema)

    def _add_field(self, table: str, schema: pa.Schema, name: str) -> None:
        t = self._t(table)
        with t.update_schema() as u:
            u.union_by_name(schema)

    # column DDL: the schema changes in place (field ids keep the stored files valid); a filled new column
    # rewrites the files in the same transaction
    def _add_filled(self, table: str, schema: pa.Schema, name: str, fill: pa.Scalar) -> None:
        t = self._t(table)
        data = _conform(self._read_all(table), schema)
        data = data.set_column(schema.get_field_index(name), schema.field(name).with_nullable(True),
                               pa.repeat(fill, len(data)))
        with t.transaction() as tx:
            with tx.update_schema() as u:
                u.union_by_name(schema)
            tx.overwrite(data.cast(tx.table_metadata.schema().as_arrow()))

    def _rewrite_data(self, table: str, data: pa.Table) -> None:
        t = self._t(table)
        t.overwrite(data.cast(t.schema().as_arrow()))

    def _drop_field(self, table: str, name: str) -> None:
        with self._t(table).update_schema() as u:
            u.delete_column(name)

    def _rename_field(self, table: str, old: str, new: str) -> None:
        with self._t(table).update_schema() as u:
            u.rename_column(old, new)

    def _retype_field(self, table: str, schema: pa.Schema, name: str) -> None:
        with self._t(table).update_schema() as u:
            u.union_by_name(schema)  # a promotion Iceberg allows (arrow_retype_refusal checked it)

    def arrow_retype_refusal(self, old: pa.DataType, new: pa.DataType) -> str | None:
        if old == new or (old, new) in ((pa.int32(), pa.int64()), (pa.float32(), pa.float64())):
            return None
        if pa.types.is_decimal(old) and pa.types.is_decimal(new) and old.scale == new.scale \
                and new.precision >= old.precision:
            return None
        return (f"Iceberg changes a column type in place only by its promotions (int -> long, float -> double, "
                f"decimal(P,S) -> decimal(P2,S) with P2 > P), not {old} -> {new}")

    def _drop(self, table: str) -> None:
        from pyiceberg.exceptions import NoSuchTableError

        self._tables.pop(table, None)
        try:
            self.catalog.purge_table((self.namespace, table))
        except NoSuchTableError:
            pass  # a replay of the barrier after the drop

    def _rename(self, old: str, new: str) -> None:
        self._tables.pop(old, None)
        self._tables.pop(new, None)
        self.catalog.rename_table((self.namespace, old), (self.namespace, new))

    def _recorded(self, table: str, source: str) -> int | None:
        t = self._t(table)
        if t is None:
            return None
        snap = t.current_snapshot()
        while snap is not None:  # the newest snapshot that this source wrote (compaction writes none)
            if snap.summary is not None and snap.summary.get(SOURCE_PROP) == source:
                return int(snap.summary.get(SEQUENCE_PROP))
            snap = t.snapshot_by_id(snap.parent_snapshot_id) if snap.parent_snapshot_id is not None else None
        return None

    def _version(self, table: str) -> int | None:
        t = self._t(table)
        snap = None if t is None else t.current_snapshot()
        return None if snap is None else snap.snapshot_id

    def _read_all(self, table: str) -> pa.Table:
        t = self._t(table)
        t.refresh()
        return t.scan().to_arrow()

    def _write(self, table: str, source: str, seq: int, *, truncate: bool, deletes: pa.Table | None,
               upserts: pa.Table | None, append_only: bool, replace: pa.Table | None,
               existing: pa.Table | None = None) -> int:
        t = self._t(table)
        props = {SOURCE_PROP: source, SEQUENCE_PROP: str(seq)}
        schema = t.schema().as_arrow()
        key = self._key_memory.get(table) or ()
        with t.transaction() as tx:
            if replace is not None:
                tx.overwrite(replace.cast(schema), snapshot_properties=props)
            else:
                may_exist = upserts if existing is None else existing
                gone = [x.select(list(key)) for x in (deletes, None if append_only else may_exist)
                        if x is not None and len(x)]
                new = upserts.cast(schema) if upserts is not None and len(upserts) else None
                if gone:  # rewrite the key range the touched keys span, less those keys, plus the new images
                    where, kept = self._rewrite(t, key, gone)
                    data = kept.cast(schema) if new is None else pa.concat_tables([kept.cast(schema), new])
                    tx.overwrite(data, overwrite_filter=where, snapshot_properties=props)
                else:  # an empty append still records the sequence (a snapshot)
                    tx.append(new if new is not None else schema.empty_table(), snapshot_properties=props)
        return t.current_snapshot().snapshot_id

    @staticmethod
    def _rewrite(t: Any, key: tuple[str, ...], parts: list[pa.Table]) -> tuple[Any, pa.Table]:
        """(filter, rows to keep): the filter is each key column between the touched keys' min and max (a
        superset of them that prunes files by their column bounds, cheap to bind however many keys there
        are); the kept rows are the ones it matches whose key was not touched."""
        import pyarrow.compute as pc
        from pyiceberg.expressions import And, GreaterThanOrEqual, LessThanOrEqual

        touched = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        terms = []
        for k in key:
            lo, hi = pc.min_max(touched.column(k)).values()
            terms += [GreaterThanOrEqual(k, lo.as_py()), LessThanOrEqual(k, hi.as_py())]
        where = And(*terms)
        current = t.scan(row_filter=where).to_arrow()
        if len(key) == 1:
            gone = pc.is_in(current.column(key[0]), value_set=touched.column(key[0]).combine_chunks()
                            .cast(current.schema.field(key[0]).type))
            return where, current.filter(pc.invert(gone))
        keys = set(zip(*(touched.column(k).to_pylist() for k in key)))
        mask = [tk not in keys for tk in zip(*(current.column(k).to_pylist() for k in key))]
        return where, current.filter(pa.array(mask, pa.bool_()))

    def _append_log(self, table: str, rows: pa.Table) -> None:
        t = self._t(table)
        if t is None:
            t = self._tables[table] = self.catalog.create_table_if_not_exists((self.namespace, table),
                                                                              schema=rows.schema)
        t.append(rows)

    # ---- maintenance (`cdc lake compact`) ---------------------------------------------------------
    def tables(self) -> list[str]:
        return sorted(ident[-1] for ident in self.catalog.list_tables(self.namespace))

    def compact(self, retention_hours: float) -> dict[str, Any]:
        """Rewrite each table's files into few (an overwrite carrying the same cdc.* summary properties, run
        with the apply job stopped) and expire snapshots older than ``retention_hours``, never the ones the
        latest consistent point names."""
        keep = {v for versions in self.point_versions().values() for v in versions}
        cutoff = int((dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=retention_hours)).timestamp() * 1000)
        out = {}
        for name in self.tables():
            t = self._t(name)
            t.refresh()
            snap = t.current_snapshot()
            before = len(list(t.inspect.files().column("file_path").to_pylist())) if snap else 0
            if snap is not None and before > 1:
                props = {k: snap.summary.get(k) for k in (SOURCE_PROP, SEQUENCE_PROP)
                         if snap.summary is not None and snap.summary.get(k) is not None}
                data = t.scan().to_arrow()
                t.overwrite(data, snapshot_properties=props)
                t.refresh()
            current = t.current_snapshot()
            old = [s.snapshot_id for s in t.snapshots() if s.timestamp_ms < cutoff and s.snapshot_id not in keep
                   and (current is None or s.snapshot_id != current.snapshot_id)]
            if old:
                t.maintenance.expire_snapshots().by_ids(old).commit()
                t.refresh()
            after = len(list(t.inspect.files().column("file_path").to_pylist())) if t.current_snapshot() else 0
            out[name] = {"files_before": before, "files_after": after, "expired_snapshots": len(old),
                         "snapshot_id": t.current_snapshot().snapshot_id if t.current_snapshot() else None}
        return out

