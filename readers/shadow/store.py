"""The shadow copy and its undo/redo journal, kept in the source's own database.

Per captured table ``db.t`` a shadow table ``<shadow_schema>.db__t`` holds
the key columns (same types), ``_cdc_md5`` (the row's fingerprint, see
cdc.compare.fingerprint) and ``_cdc_row`` (the last published row image as
JSON, which becomes ``before`` of the next update or delete). Two more
tables: ``_cdc_state`` (source, applied cycle) and ``_cdc_journal`` (one row
per change of a cycle: key, before and after md5/image).

Exactly-once across a crash. A merge cycle n writes its journal, applies it
to the shadow tables and sets ``applied = n`` in ONE database transaction,
and only then are its events handed to the publisher, whose END record
carries ``resume = {"cycle": n}``. On restart with the stream's resume
cycle k:

- applied == k: nothing to do;
- applied  > k: cycles k+1..applied never reached the stream; they are
  undone from the journal (before images restored) and computed afresh;
- applied  < k: impossible unless the shadow was restored from an older
  backup: ShadowStateError (re-initialise by starting a new stream).

The journal keeps the last ``journal_cycles`` cycles; a stream further
behind than that also raises ShadowStateError.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from typing import Any

from cdc.compare.endpoints import Endpoint
from cdc.compare.fingerprint import quote
from cdc.compare.shapes import TableShape, describe
from cdc.errors import CdcError, Terminal


class ShadowStateError(CdcError, Terminal):
    """The shadow copy cannot be reconciled with the stream's checkpoint."""


class ShadowStore:
    def __init__(self, ep: Endpoint, conn, schema: str, source: str, keep_cycles: int = 100) -> None:
        self.ep, self.conn, self.schema, self.source, self.keep = ep, conn, schema, source, keep_cycles
        self.q = lambda n: quote(ep.dialect, n)
        self.ph = ep.placeholder
        self.shapes: dict[str, TableShape] = {}  # source table -> shadow table shape

    # ---------------------------------------------------------------- names and DDL
    def shadow_name(self, src: TableShape) -> str:
        return f"{src.schema}__{src.table}"

    def qualified(self, name: str) -> str:
        return f"{self.q(self.schema)}.{self.q(name)}"

    def ensure(self, sources: list[TableShape]) -> None:
        """Create the shadow schema, state, journal and one shadow table per source table."""
        d, q = self.ep.dialect, self.q
        self._exec(f"CREATE {self.ep.sql.schema_noun} IF NOT EXISTS {q(self.schema)}")
        text = self.ep.sql.long_text
        self._exec(f"CREATE TABLE IF NOT EXISTS {self.qualified('_cdc_state')} (source VARCHAR(200) PRIMARY KEY, "
                   "applied BIGINT NOT NULL)")
        self._exec(f"CREATE TABLE IF NOT EXISTS {self.qualified('_cdc_journal')} (source VARCHAR(200) NOT NULL, "
                   "tbl VARCHAR(400) NOT NULL, cycle BIGINT NOT NULL, seq BIGINT NOT NULL, key_json " + text +
                   f" NOT NULL, before_md5 CHAR(32), before_row {text}, after_md5 CHAR(32), after_row {text}, "
                   "PRIMARY KEY (source, cycle, seq))")
        for src in sources:
            name = self.shadow_name(src)
            if not self._exists(name):
                keys = ", ".join(q(k) for k in src.primary_key)
                self._exec(f"CREATE TABLE {self.qualified(name)} AS SELECT {keys} FROM "
                           f"{q(src.schema)}.{q(src.table)} WHERE 1 = 0")
                self._exec(f"ALTER TABLE {self.qualified(name)} ADD COLUMN _cdc_md5 CHAR(32)")
                self._exec(f"ALTER TABLE {self.qualified(name)} ADD COLUMN _cdc_row {text}")
                if self.ep.sql.late_primary_key:  # DuckDB cannot add one afterwards; ORDER BY still works
                    self._exec(f"ALTER TABLE {self.qualified(name)} ADD PRIMARY KEY ({keys})")
            self.shapes[str(src)] = describe(d, self.conn, self.schema, name)

    def _exists(self, name: str) -> bool:
        rows = self.ep.query(self.conn, "SELECT 1 FROM information_schema.tables WHERE table_schema = "
                             f"{self.ph} AND table_name = {self.ph}", (self.schema, name))
        return bool(rows)

    def _exec(self, sql: str, params: tuple = ()) -> None:
        cur = self.ep.cursor(self.conn)
        try:
            cur.execute(sql, params or None)
        finally:
            if cur is not self.conn:
                cur.close()

    def transaction(self) -> AbstractContextManager[None]:
        return self.ep.compare.transaction(self.conn)

    # ---------------------------------------------------------------- state
    def applied(self) -> int:
        rows = self.ep.query(self.conn, f"SELECT applied FROM {self.qualified('_cdc_state')} WHERE source = {self.ph}",
                             (self.source,))
        return int(rows[0][0]) if rows else 0

    def _set_applied(self, cycle: int) -> None:
        self._exec(f"DELETE FROM {self.qualified('_cdc_state')} WHERE source = {self.ph}", (self.source,))
        self._exec(f"INSERT INTO {self.qualified('_cdc_state')} VALUES ({self.ph}, {self.ph})", (self.source, cycle))

    def reset(self, sources: list[TableShape]) -> None:
        """Forget everything (a new stream starts from the tables' full contents)."""
        with self.transaction():
            for src in sources:
                self._exec(f"DELETE FROM {self.qualified(self.shadow_name(src))}")
            self._exec(f"DELETE FROM {self.qualified('_cdc_journal')} WHERE source = {self.ph}", (self.source,))
            self._set_applied(0)

    # ---------------------------------------------------------------- cycles
    def record_cycle(self, cycle: int, entries: list[tuple[str, dict, Any, Any, Any, Any]]) -> None:
        """Journal and apply one cycle atomically. entries: (table, key, before_md5, before, after_md5, after)."""
        with self.transaction():
            for seq, (table, key, b_md5, before, a_md5, after) in enumerate(entries):
                self._exec(f"INSERT INTO {self.qualified('_cdc_journal')} VALUES ({', '.join([self.ph] * 9)})",
                           (self.source, table, cycle, seq, json.dumps(key), b_md5, _dump(before), a_md5,
                            _dump(after)))
                self._put(table, key, a_md5, after)
            self._exec(f"DELETE FROM {self.qualified('_cdc_journal')} WHERE source = {self.ph} AND cycle <= "
                       f"{self.ph}", (self.source, cycle - self.keep))
            self._set_applied(cycle)

    def reconcile(self, stream_cycle: int) -> None:
        """Bring the shadow back to ``stream_cycle`` (see module docstring)."""
        applied = self.applied()
        if applied == stream_cycle:
            return
        if applied < stream_cycle:
            raise ShadowStateError(f"shadow copy of source {self.source} is at cycle {applied} but the stream "
                                   f"already holds cycle {stream_cycle}; restore it or start a new stream",
                                   source=self.source, applied=applied, stream=stream_cycle)
        oldest = self.ep.query(self.conn, f"SELECT MIN(cycle) FROM {self.qualified('_cdc_journal')} WHERE source = "
                               f"{self.ph}", (self.source,))[0][0]
        if oldest is None or int(oldest) > stream_cycle + 1:
            raise ShadowStateError(f"shadow copy of source {self.source} is {applied - stream_cycle} cycles ahead "
                                   "of the stream and the journal no longer holds them",
                                   source=self.source, applied=applied, stream=stream_cycle)
        rows = self.ep.query(self.conn, f"SELECT tbl, key_json, before_md5, before_row FROM "
                             f"{self.qualified('_cdc_journal')} WHERE source = {self.ph} AND cycle > {self.ph} "
                             "ORDER BY cycle DESC, seq DESC", (self.source, stream_cycle))
        with self.transaction():
            for table, key_json, b_md5, before in rows:
                self._put(table, json.loads(key_json), b_md5, json.loads(before) if before else None)
            self._exec(f"DELETE FROM {self.qualified('_cdc_journal')} WHERE source = {self.ph} AND cycle > {self.ph}",
                       (self.source, stream_cycle))
            self._set_applied(stream_cycle)

    def _put(self, table: str, key: dict, md5: Any, row: Any) -> None:
        """Make the shadow row of ``key`` hold (md5, row), or delete it when row is None."""
        shape = self.shapes[table]
        where = " AND ".join(f"{self.q(k)} = {self._param(shape, k)}" for k in key)
        self._exec(f"DELETE FROM {self.qualified(shape.table)} WHERE {where}", tuple(key.values()))
        if row is not None:
            cols = list(key) + ["_cdc_md5", "_cdc_row"]
            vals = ", ".join([self._param(shape, k) for k in key] + [self.ph, self.ph])
            self._exec(f"INSERT INTO {self.qualified(shape.table)} ({', '.join(self.q(c) for c in cols)}) "
                       f"VALUES ({vals})", (*key.values(), md5, _dump(row)))

    def _param(self, shape: TableShape, column: str) -> str:
        return self.ep.sql.typed_param(shape.column(column).type)  # JSON gave text/ints: cast to the key type

    def before_images(self, table: str, keys: list[dict]) -> dict[tuple, tuple[str, dict]]:
        """(md5, row image) of the shadow rows of ``keys``, by key tuple."""
        shape = self.shapes[table]
        out: dict[tuple, tuple[str, dict]] = {}
        for i in range(0, len(keys), 500):
            batch = keys[i:i + 500]
            one = "(" + " AND ".join(f"{self.q(k)} = {self._param(shape, k)}" for k in batch[0]) + ")"
            sql = (f"SELECT _cdc_md5, _cdc_row FROM {self.qualified(shape.table)} WHERE "
                   + " OR ".join([one] * len(batch)))
            for md5, row in self.ep.query(self.conn, sql, tuple(v for k in batch for v in k.values())):
                img = json.loads(row)
                out[tuple(img[k] for k in batch[0])] = (md5, img)
        return out


def _dump(row: Any) -> str | None:
    return None if row is None else json.dumps(row, sort_keys=True)
