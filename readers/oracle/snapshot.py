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

Resync (`cdc source skip --resync`, readers/oracle/skip_cmd.py): the stream's checkpoint carries a
``snapshot`` progress naming ``tables``, the SCN of a skipped transaction's commit, ``replace`` and the
``streaming`` resume state; the restarted source reads only those tables AS OF that SCN, whatever the
``snapshot`` setting, then streams from that state.

Re-snapshot (``snapshot: when_needed``): when the archived logs from the resume state's low watermark
on were deleted (ArchiveLogMissing at start), the same snapshot runs at the head SCN with ``replace``:
each table's first chunk begins with an ``op: "t"`` record (readers/mysql/snapshot.py says why: rows
deleted while the logs were gone must leave the target), and mining continues after it.

Wiring: with ``snapshot: initial`` and no stream yet (or a stream cut off
mid-snapshot), OracleSource.start() opens :meth:`OracleSnapshot.open` and
starts mining at its streaming resume state; OracleSource.events() yields the
snapshot's chunks first (the hooks are marked in readers/oracle/reader.py).

Values are rendered as SQL_REDO shows them (:func:`redo_text`), so a row
reads the same whether it came from the snapshot or from LogMiner; the
reader then runs the same Converter over both (``temporal: iso`` and
``conversions``, readers/oracle/convert.py). ``temporal`` here only names the
column types of the chunks' schemas (:func:`readers.oracle.convert.stream_schema`).

No Oracle server runs where this project is built: the SQL here is what
Oracle accepts, exercised against the LogMiner simulator's flashback reads
(readers/oracle/sim/simulator.py) and a stand-in in the tests, never against a
real database.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from cdc.errors import CdcError, Terminal
from cdc.progress_bar import progress as progress_lines
from cdc.schema import table_glob
from cdc.schema.values import stream_value
from cdc.stream.events import Begin, Change, Commit, Event, Heartbeat, TableId, TableSchema
from cdc.stream.snapshot_marks import row_mark, with_ends
from readers.oracle import columns
from readers.oracle.convert import stream_schema

log = logging.getLogger(__name__)


class FlashbackError(CdcError, Terminal):
    """The flashback read failed (typically ORA-01555: undo no longer covers the SCN)."""


def redo_text(value: Any, data_type: str) -> Any:
    """A value read by the flashback query, as LogMiner's SQL_REDO shows it (so snapshot rows and
    streamed rows look alike, and ``conversions`` apply to both the same way).

    NUMBER is selected as ``TO_CHAR(col)`` (Oracle's own text of the number, as in SQL_REDO); TIMESTAMP
    [WITH (LOCAL) TIME ZONE] as ``TO_CHAR(col, 'YYYY-MM-DD HH24:MI:SS.FF9[ TZH:TZM]')`` (oracledb's
    datetime keeps microseconds only and drops the zone of a WITH TIME ZONE value), that text becoming
    ``TO_TIMESTAMP('..')`` / ``TO_TIMESTAMP_TZ('..')``; a DATE (or a datetime from another reader)
    becomes ``TO_DATE('..', 'YYYY-MM-DD HH24:MI:SS')`` / ``TO_TIMESTAMP('..')`` in the reader's session
    formats (readers/oracle/session.py NLS); text stays text; anything else goes through
    cdc.schema.values.stream_value.
    """
    t = data_type.upper()
    if isinstance(value, str) and t.startswith("TIMESTAMP"):  # read as TO_CHAR(.., FF9[ TZH:TZM]): see _chunk
        return f"TO_TIMESTAMP_TZ('{value}')" if t.endswith(" WITH TIME ZONE") else f"TO_TIMESTAMP('{value}')"
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dt.datetime):
        if t == "DATE":
            return f"TO_DATE('{value:%Y-%m-%d %H:%M:%S}', 'YYYY-MM-DD HH24:MI:SS')"
        if "TIME ZONE" in t and value.tzinfo is not None:
            off = value.strftime("%z")
            return f"TO_TIMESTAMP_TZ('{value:%Y-%m-%d %H:%M:%S.%f} {off[:3]}:{off[3:]}')"
        return f"TO_TIMESTAMP('{value:%Y-%m-%d %H:%M:%S.%f}')"
    if isinstance(value, (int, Decimal)):
        return str(value)
    return stream_value(value, "other")


def expand_tables(conn: Any, patterns: list[str]) -> list[TableId]:
    """Configured ``SCHEMA.TABLE`` patterns (cdc.schema.table_glob, upper-cased) -> the tables of ``ALL_TABLES``
    they match, sorted (the schema part is a literal name, see OracleSourceConfig)."""
    upper = [p.upper() for p in patterns]
    out: set[TableId] = set()
    for owner in sorted({p.partition(".")[0] for p in upper}):
        cur = conn.cursor()
        try:
            cur.execute("SELECT OWNER, TABLE_NAME FROM ALL_TABLES WHERE OWNER = :owner", {"owner": owner})
            out.update(TableId(o, t) for o, t in cur.fetchall() if table_glob.matches(f"{o}.{t}", upper))
        except Exception as exc:  # oracledb.DatabaseError
            raise FlashbackError(f"cannot list the tables of schema {owner}: {exc}", schema=owner) from exc
        finally:
            cur.close()
    return sorted(out)


class OracleSnapshot:
    """Chunks of every table AS OF one SCN, as Begin/Change('r')/Commit transactions."""

    def __init__(self, conn: Any, tables: list[TableId], progress: dict[str, Any] | None = None,
                 chunk_rows: int = 5_000, scn: int | None = None, temporal: str = "redo_text",
                 replace: bool = False) -> None:
        self.conn, self.tables, self.chunk_rows, self.temporal = conn, sorted(tables), chunk_rows, temporal
        self.progress = dict(progress or {})
        if "scn" not in self.progress:
            self.progress.update(scn=scn if scn is not None else self._current_scn(), table=None, after=None,
                                 **({"replace": True} if replace else {}))
        self.scn = int(self.progress["scn"])
        if "low_watermark_scn" not in self.progress:  # a resumed snapshot keeps the one of its first start
            self.progress["low_watermark_scn"] = self._oldest_open(self.scn)
        self.low_watermark = int(self.progress["low_watermark_scn"])

    @classmethod
    def open(cls, config: Any, progress: dict[str, Any] | None, replace: bool = False) -> OracleSnapshot:
        """The initial snapshot of an Oracle source (OracleSourceConfig) on its own standby connection.

        ``progress`` is the ``snapshot`` entry of the stream's last resume state when a
        snapshot was cut off (same SCN, next chunk), else None (a new SCN: the head).
        ``replace``: a re-snapshot (``snapshot: when_needed``, logs gone past the checkpoint) at the head,
        each table's first chunk starting with ``op: "t"`` (readers/mysql/snapshot.py says why).
        """
        from readers.oracle.session import connect

        conn = connect(config.standby_dsn or config.dsn, config, "standby")
        try:
            tables = [TableId.parse(t) for t in progress["tables"]] if progress and progress.get("tables") \
                else expand_tables(conn, config.tables)  # a resync (`cdc source skip --resync`): those tables
            snap = cls(conn, tables, progress, chunk_rows=config.snapshot_chunk_rows,
                       scn=config.start_scn if progress is None and not replace else None,
                       temporal=config.temporal, replace=replace)
        except BaseException:
            conn.close()
            raise
        snap.owns_connection = True
        return snap

    owns_connection = False

    def close(self) -> None:
        """Close the connection if :meth:`open` made it (idempotent)."""
        if self.owns_connection:
            self.owns_connection = False
            self.conn.close()

    def streaming_resume(self) -> dict[str, Any]:
        """Where LogMiner streaming starts once the snapshot is complete (a resync's progress names its own:
        the checkpoint it was requested at, readers/oracle/skip_cmd.py)."""
        if self.progress.get("streaming"):
            return dict(self.progress["streaming"])
        return {"low_watermark_scn": self.low_watermark, "commit_scn": self.scn + 1, "xids_at_commit_scn": []}

    def events(self) -> Iterator[Event]:
        """Chunks as transactions, then the Heartbeat that hands over to streaming. The snapshot's first and
        last rows carry ``snapshot: first`` / ``last`` (cdc.stream.snapshot_marks). Progress: a log line of rows
        read every 10 s and at the end (no total: table statistics may be missing or stale)."""
        with progress_lines(None, f"snapshot as of SCN {self.scn}: rows", interval_s=10.0, log=log) as bar:
            yield from self._events(bar)
        yield Heartbeat(int(time.time() * 1000), self.streaming_resume())

    def _events(self, bar: Any) -> Iterator[Event]:
        for (table, stream, rows, n, replace, progress), first, last in with_ends(
                self._chunks(), lambda c: bool(c[2]), fresh=self.progress.get("table") is None, complete=lambda: True):
            ts = int(time.time() * 1000)
            txid = f"snapshot:{table}:{self.scn}:{n}"
            yield Begin(txid, ts)
            if replace:
                yield Change(table, "t", None, None, {"scn": self.scn, "snapshot_row": 0}, stream)
            for i, row in enumerate(rows):
                src = {"scn": self.scn, "snapshot_row": i}
                mark = row_mark(i, len(rows), first, last) if first or last else None
                if mark is not None:
                    src["snapshot"] = mark
                yield Change(table, "r", None, row, src, stream)
            yield Commit(txid, ts, {**self.streaming_resume(), "snapshot": progress}, {"scn": self.scn})
            bar.advance(len(rows))

    def _chunks(self) -> Iterator[tuple[TableId, TableSchema | None, list[dict], int, bool, dict[str, Any]]]:
        """(table, stream schema, rows, chunk number, replace, the resume progress after this chunk), in order;
        the progress is taken at reading time (events() reads one chunk ahead). ``replace``: the table's first
        chunk of a re-snapshot (also when the table is empty)."""
        start = self.progress.get("table")
        for table in self.tables:
            if start is not None and table < TableId.parse(start):
                continue
            after = self.progress.get("after") if start == str(table) else None
            schema = self._schema(table)
            stream = stream_schema(schema, self.temporal)
            n = 0
            replace = after is None and bool(self.progress.get("replace"))
            while True:
                rows = self._chunk(table, schema, after)
                if not rows and not replace:
                    break
                after = [rows[-1][k] for k in schema.primary_key] if rows else None
                self.progress.update(table=str(table), after=after)
                yield table, stream, rows, n, replace, dict(self.progress)
                n, replace = n + 1, False
                if len(rows) < self.chunk_rows:
                    break

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
        try:
            cols = self._query(f"SELECT {columns.SELECT} FROM ALL_TAB_COLUMNS WHERE "
                               "OWNER = :owner AND TABLE_NAME = :name ORDER BY COLUMN_ID", binds)
        except FlashbackError as exc:
            raise columns.unreadable(exc, str(table)) or exc from None
        pk = self._query("SELECT COLUMN_NAME FROM ALL_CONS_COLUMNS WHERE OWNER = :owner AND TABLE_NAME = :name "
                         "AND CONSTRAINT_NAME = (SELECT CONSTRAINT_NAME FROM ALL_CONSTRAINTS WHERE OWNER = :owner "
                         "AND TABLE_NAME = :name AND CONSTRAINT_TYPE = 'P') ORDER BY POSITION", binds)
        if not cols:
            raise FlashbackError(f"table {table} does not exist", table=str(table))
        if not pk:
            raise FlashbackError(f"table {table} has no primary key: cannot page a flashback snapshot by key",
                                 table=str(table))
        return TableSchema(table, columns.columns(str(table), cols),
                           tuple(r[0] for r in pk))

    def _chunk(self, table: TableId, schema: TableSchema, after: list | None) -> list[dict[str, Any]]:
        q = lambda n: '"' + n.replace('"', '""') + '"'
        cols = ", ".join(_select(q(c.name), c.type) for c in schema.columns)
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
        types = [c.type for c in schema.columns]
        return [{c.name: redo_text(v, t) for c, v, t in zip(schema.columns, r, types)}
                for r in self._query(sql, binds)]


def _select(quoted: str, data_type: str) -> str:
    """The select item of a column (see :func:`redo_text`): Oracle's own text where the driver's value loses."""
    t = data_type.lower()
    if t.split("(")[0] in ("number", "float"):
        return f"TO_CHAR({quoted})"
    if t.startswith("timestamp"):
        zone = " TZH:TZM" if t.endswith(" with time zone") and "local" not in t else ""
        return f"TO_CHAR({quoted}, 'YYYY-MM-DD HH24:MI:SS.FF9{zone}')"
    return quoted
