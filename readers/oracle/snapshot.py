"""Initial snapshot of an Oracle source: a flashback read ``AS OF SCN`` at the starting SCN.

Oracle gives a consistent read at any recent SCN without locks (undo), so
the snapshot pins one SCN ``S`` (``CURRENT_SCN`` of the standby, or the
configured ``start_scn``), reads every captured table ``AS OF SCN S``
chunked by primary key (keyset paging, ``FETCH FIRST n ROWS ONLY``) and
publishes each chunk as one transaction of ``op: r`` records. Then LogMiner
streaming starts with the resume state

    {"low_watermark_scn": L, "commit_scn": S + 1, "xids_at_commit_scn": []}

so every transaction committed at or below S (already inside the flashback
image) is dropped and every later one is published after the snapshot. L is
the start SCN of the oldest transaction open at S (``V$TRANSACTION``), so a
transaction that began before S and commits after it is mined whole; where
that view cannot be read (a standby), L = S and such a straddling
transaction must be covered by ``start_scn`` chosen before it began.

Resume: each chunk's END carries the streaming resume state above plus
``{"snapshot": {"scn": S, "table": ..., "after": [...]}}``; a restart reads
the remaining chunks AS OF the same S (flashback needs the undo to still
cover S: ORA-01555 otherwise, reported with the table and SCN).

No Oracle server runs where this project is built: the SQL here is what
Oracle accepts, exercised against a flashback stand-in in the tests, never
against a real database. Values are passed through as the driver returns
them, converted like the MySQL snapshot (cdc.compare.repair.event_value).
"""

from __future__ import annotations

import time
from typing import Any, Iterator

from cdc.compare.repair import event_value
from cdc.errors import CdcError, Terminal
from cdc.events import Begin, Change, Column, Commit, Event, Heartbeat, TableId, TableSchema


class FlashbackError(CdcError, Terminal):
    """The flashback read failed (typically ORA-01555: undo no longer covers the SCN)."""


def _family(data_type: str) -> str:
    t = data_type.upper()
    if t.startswith("TIMESTAMP") and "TIME ZONE" in t:
        return "timestamptz"
    if t.startswith(("TIMESTAMP", "DATE")):
        return "datetime"
    return "other"


class OracleSnapshot:
    """Chunks of every table AS OF one SCN, as Begin/Change('r')/Commit transactions."""

    def __init__(self, conn: Any, tables: list[TableId], progress: dict[str, Any] | None = None,
                 chunk_rows: int = 5_000, scn: int | None = None) -> None:
        self.conn, self.tables, self.chunk_rows = conn, sorted(tables), chunk_rows
        self.progress = dict(progress or {})
        if "scn" not in self.progress:
            self.progress.update(scn=scn if scn is not None else self._current_scn(), table=None, after=None)
        self.scn = int(self.progress["scn"])
        self.low_watermark = self._oldest_open(self.scn)

    def streaming_resume(self) -> dict[str, Any]:
        """Where LogMiner streaming starts once the snapshot is complete."""
        return {"low_watermark_scn": self.low_watermark, "commit_scn": self.scn + 1, "xids_at_commit_scn": []}

    def events(self) -> Iterator[Event]:
        start = self.progress.get("table")
        for table in self.tables:
            if start is not None and table < TableId.parse(start):
                continue
            after = self.progress.get("after") if start == str(table) else None
            schema = self._schema(table)
            n = 0
            while True:
                rows = self._chunk(table, schema, after)
                if not rows:
                    break
                after = [rows[-1][k] for k in schema.primary_key]
                self.progress.update(table=str(table), after=after)
                ts = int(time.time() * 1000)
                txid = f"snapshot:{table}:{self.scn}:{n}"
                yield Begin(txid, ts)
                for i, row in enumerate(rows):
                    yield Change(table, "r", None, row, {"scn": self.scn, "snapshot_row": i}, schema)
                yield Commit(txid, ts, {**self.streaming_resume(), "snapshot": dict(self.progress)},
                             {"scn": self.scn})
                n += 1
                if len(rows) < self.chunk_rows:
                    break
        yield Heartbeat(int(time.time() * 1000), self.streaming_resume())

    # ---------------------------------------------------------------- SQL
    def _query(self, sql: str, binds: dict | None = None) -> list[tuple]:
        cur = self.conn.cursor()
        try:
            cur.execute(sql, binds or {})
            return list(cur.fetchall())
        except CdcError:
            raise
        except Exception as exc:  # oracledb.DatabaseError: name what and where
            raise FlashbackError(f"flashback read failed: {exc}", scn=getattr(self, "scn", None), sql=sql[:200]) \
                from exc
        finally:
            cur.close()

    def _current_scn(self) -> int:
        return int(self._query("SELECT CURRENT_SCN FROM V$DATABASE")[0][0])

    def _oldest_open(self, scn: int) -> int:
        try:
            rows = self._query("SELECT MIN(START_SCN) FROM V$TRANSACTION")
        except FlashbackError:
            return scn  # a standby has no V$TRANSACTION of the primary: see the module docstring
        return min(scn, int(rows[0][0])) if rows and rows[0][0] is not None else scn

    def _schema(self, table: TableId) -> TableSchema:
        binds = {"owner": table.db, "name": table.table}
        cols = self._query("SELECT COLUMN_NAME, DATA_TYPE, NULLABLE FROM ALL_TAB_COLUMNS WHERE OWNER = :owner "
                           "AND TABLE_NAME = :name ORDER BY COLUMN_ID", binds)
        pk = self._query("SELECT COLUMN_NAME FROM ALL_CONS_COLUMNS WHERE OWNER = :owner AND TABLE_NAME = :name "
                         "AND CONSTRAINT_NAME = (SELECT CONSTRAINT_NAME FROM ALL_CONSTRAINTS WHERE OWNER = :owner "
                         "AND TABLE_NAME = :name AND CONSTRAINT_TYPE = 'P') ORDER BY POSITION", binds)
        if not cols:
            raise FlashbackError(f"table {table} does not exist", table=str(table))
        if not pk:
            raise FlashbackError(f"table {table} has no primary key: cannot page a flashback snapshot by key",
                                 table=str(table))
        return TableSchema(table, tuple(Column(c, t.lower(), n == "Y") for c, t, n in cols),
                           tuple(r[0] for r in pk))

    def _chunk(self, table: TableId, schema: TableSchema, after: list | None) -> list[dict[str, Any]]:
        q = lambda n: '"' + n.replace('"', '""') + '"'  # noqa: E731
        cols = ", ".join(q(c.name) for c in schema.columns)
        keys = schema.primary_key
        sql = f"SELECT {cols} FROM {q(table.db)}.{q(table.table)} AS OF SCN :scn"
        binds: dict[str, Any] = {"scn": self.scn}
        if after is not None:  # keyset condition for a composite key: (k1 > a1) OR (k1 = a1 AND k2 > a2) ...
            ors = []
            for i in range(len(keys)):
                eqs = [f"{q(keys[j])} = :a{j}" for j in range(i)] + [f"{q(keys[i])} > :a{i}"]
                ors.append("(" + " AND ".join(eqs) + ")")
            sql += " WHERE " + " OR ".join(ors)
            binds.update({f"a{i}": v for i, v in enumerate(after)})
        sql += " ORDER BY " + ", ".join(q(k) for k in keys) + f" FETCH FIRST {int(self.chunk_rows)} ROWS ONLY"
        fams = [_family(c.type) for c in schema.columns]
        return [{c.name: event_value(v, f) for c, v, f in zip(schema.columns, r, fams)}
                for r in self._query(sql, binds)]
