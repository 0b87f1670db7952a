"""The target contract (``Target``) and the SQL body the database targets share (``SqlTarget``).

A target is opened once per apply job (on the driver). The engine drives it
per micro-batch::

    target.begin()
    target.delete_rows / upsert_rows / delete_copies / insert_rows ...
    target.write_progress(progress)          # same transaction
    target.commit()                          # or rollback() on any error

Everything between begin() and commit() is ONE target transaction; a reader
of the target sees all of a batch or none of it. ``cursor()`` gives a DB-API
cursor inside that transaction (maintained views use it with ``dialect``).

``Target`` is the contract the engine drives: the abstract methods below and the declared
capabilities; ``SqlTarget`` is the body of an SQL database target (the DDL, the progress and
schema memory tables, the generic row paths, all in SQL). ``LakeTarget`` (streaming/targets/lake.py)
is the base of the table formats that commit per table. SQL targets set ``dialect`` and ``sql`` (the database's cdc.schema.sql_dialects.SqlDialect:
quoting, the DB-API placeholder ``param``, null-safe equality), implement
``_connect``/``begin``/``table_columns``/``upsert_rows`` and may override the
generic row paths with bulk ones (COPY, Arrow). Rows are dicts keyed by
target column name, already converted for the target (see typemap).

What a target can do is declared here, as class attributes, and the engine,
the job and the views read only these (no probing for methods):

- ``columnar``: the engine may reduce batches on columns (net_effect_columns)
  and hand this target only the surviving rows;
- ``json_rows``: it implements ``delete_json``/``upsert_json``, taking the
  surviving JSON row images in bulk (``bulk_min_rows`` rows at least);
- ``ddl_commits``: CREATE/ALTER TABLE commits the open transaction (MySQL,
  Oracle), so the engine applies DDL at a batch barrier;
- ``schema_kinds``: the column changes of a DDL this target follows (streaming/apply/catalog.py,
  docs/schema-evolution.md): ``add`` (a column whose existing rows are NULL), ``backfill`` (a column
  whose existing rows take a constant), ``drop``, ``rename``, ``type``, ``null``, ``default``;
  ``changelog``: the target keeps no table shape (every change is followed by writing the new rows);
- ``row_id_column``: the physical row id (PostgreSQL ``ctid``, DuckDB
  ``rowid``, Oracle ``ROWID``) with which ``delete_one_sql`` deletes ONE copy
  of a row of a keyless table; None: the target writes its own
  ``delete_one_sql`` (MySQL: ``DELETE ... LIMIT 1``) or ``delete_copies``;
- ``batch_commit``: ``atomic``: one transaction holds a whole batch over every table (its progress
  row too); ``per_table``: each table commits on its own and a progress log written last records the
  consistent point (streaming/targets/lake.py);
- ``table_ddl``: the table DDL the target follows (streaming/apply/table_ddl.py): ``all`` (create,
  replace, rename, drop, a new primary key), or ``create`` only (a file/lake target);
- ``constraints``: ``enforced``: the target keeps the primary key (a duplicate key is refused);
  ``none``: it holds no constraint, the apply's net effect per key is what keeps rows unique;
- ``upsert``: how ``upsert_rows`` replaces a row: ``on_conflict`` (INSERT ... ON CONFLICT / ON
  DUPLICATE KEY), ``merge`` (MERGE INTO), ``delete_insert`` (delete by key, then insert), ``merge_by_key``
  (the batch's net effect merged into the table's files), ``append`` (a changelog: rows are appended);
- ``text_lengths``: a text value longer than its column's declared length is refused (a bad record);
  False: the target's text type takes any length (DuckDB's VARCHAR, the table formats' strings);
- ``resync_ranges``: it applies a resync range record (cdc.stream.resync_range, ``op: "x"``) with
  ``delete_range`` in the batch transaction; False: such a record stops the apply (fail closed).
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Iterable, Sequence
from typing import Any, Literal, NamedTuple

import orjson

from cdc.config.models import TargetConfig
from cdc.schema.sql_dialects import SqlDialect
from cdc.stream.events import Column, TableSchema
from cdc.stream.resync_range import ResyncRange, ResyncRangeError, int_key, range_sql
from streaming.errors import TargetError
from streaming.targets import typemap
from streaming.targets.progress_row import PROGRESS_TABLE, SCHEMA_TABLE, Progress, ms_from_ts, ts_from_ms, utc_now

Row = dict[str, Any]
DECISIONS_TABLE = "cdc_schema_decisions"


# integrity constraint errors (SQLSTATE class 23) by driver: MySQL/MariaDB server error numbers (duplicate entry,
# foreign key, NOT NULL, CHECK) and Oracle codes (unique, NOT NULL, CHECK, parent key not found, child record found)
CONSTRAINT_ERRNOS = frozenset({1062, 1586, 1216, 1217, 1451, 1452, 1048, 3819, 4025})
CONSTRAINT_ORA = frozenset(f"ORA-{n:05d}" for n in (1, 1400, 2290, 2291, 2292))


class ErrorKind(enum.Enum):
    """What a target's error means for the batch (Target.classify)."""

    DATA = "data"
    TRANSIENT = "transient"
    FATAL = "fatal"


def sqlstate_kind(sqlstate: str | None, transient: frozenset[str], transient_classes: frozenset[str]) -> ErrorKind:
    """The ErrorKind of an SQLSTATE: classes 22 (data exception) and 23 (integrity constraint violation)
    are data; ``transient`` codes and ``transient_classes`` (two-character classes) are transient; the
    rest is fatal."""
    if not sqlstate:
        return ErrorKind.FATAL
    if sqlstate[:2] in ("22", "23"):
        return ErrorKind.DATA
    if sqlstate in transient or sqlstate[:2] in transient_classes:
        return ErrorKind.TRANSIENT
    return ErrorKind.FATAL


class ForeignKey(NamedTuple):
    """One foreign key between two tables of a target's schema: ``child_columns`` of ``child`` reference
    ``parent_columns`` of ``parent`` (pairwise, in the constraint's order); ``deferred``: checked at the commit,
    so the write order does not matter for it."""

    child: str
    parent: str
    deferred: bool
    child_columns: tuple[str, ...]
    parent_columns: tuple[str, ...]


class Target(abc.ABC):
    """The contract of a target (module docstring): what the engine calls, and what the target declares."""

    dialect: str = ""
    sql: SqlDialect | None = None  # None: not an SQL database
    # capabilities (see the module docstring)
    batch_commit: Literal["atomic", "per_table"] = "atomic"
    table_ddl: Literal["all", "create"] = "create"
    constraints: Literal["enforced", "none"] = "none"
    upsert: Literal["on_conflict", "merge", "delete_insert", "merge_by_key", "append"] = "append"
    columnar: bool = False
    json_rows: bool = False
    bulk_min_rows: int = 200
    ddl_commits: bool = False
    row_id_column: str | None = None
    text_lengths: bool = False
    resync_ranges: bool = False
    schema_kinds: frozenset[str] = frozenset()


    def __init__(self, config: TargetConfig) -> None:
        self.config = config
        self.name = config.name
        self.schema = config.schema_
        self.conn: Any = None

    @abc.abstractmethod
    def _connect(self) -> Any: ...

    def open(self) -> Target:
        if self.conn is None:
            self.conn = self._connect()
            self.ensure_meta()
        return self

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            finally:
                self.conn = None

    def begin(self) -> None:
        """Start the batch transaction (DB-API connections start one implicitly)."""

    @abc.abstractmethod
    def commit(self) -> None:
        """Commit the batch (``batch_commit`` says whether as one transaction or table by table)."""

    @abc.abstractmethod
    def rollback(self) -> None: ...


    def abandon(self) -> None:
        """Roll the open transaction back after a failure, whatever state the connection is in: a connection
        that cannot even roll back (lost, timed out) is closed, and the next open() makes a new one. The
        server rolls back what a lost connection held; whether a COMMIT that failed on the way happened is
        read from the progress row (written in the same transaction) after reconnecting."""
        try:
            self.rollback()
        except Exception:  # noqa: BLE001 - the connection is gone or unusable: drop it
            try:
                self.close()
            except Exception:  # noqa: BLE001
                self.conn = None

    def classify(self, exc: BaseException) -> ErrorKind:
        """What ``exc``, raised by this target's driver, means for the batch:

        - ``DATA``: this row's values cannot be stored (a conversion, a range, a constraint): the row is a
          bad record (named, or dead-lettered when ``dead_letter_table`` is set);
        - ``TRANSIENT``: the statement may succeed if retried (a lock wait or statement timeout, a deadlock,
          a serialization failure, a lost connection): the batch is rolled back whole and retried;
        - ``FATAL``: anything else (a permission, a table or column changed behind the apply's back, an
          error this code does not know): a stop, never a dead letter (fail closed).

        Database targets override this with their driver's SQLSTATE or error numbers; this default
        serves the targets that are not databases (Parquet, Delta, Iceberg: their values are converted
        by pyarrow, which raises ValueError/TypeError on a value it cannot hold)."""
        if isinstance(exc, (TargetError, ConnectionError, TimeoutError)):
            return ErrorKind.TRANSIENT
        if isinstance(exc, (ValueError, TypeError, ArithmeticError)):
            return ErrorKind.DATA
        return ErrorKind.FATAL

    def is_driver_error(self, exc: BaseException) -> bool:
        """``exc`` comes from this target's database driver (the database said no), not from our own code:
        a fatal one is reported as the target refusing the batch. None here; database targets say which."""
        return False

    # ---- `cdc check` (streaming/apply/target_check.py) --------------------------------
    who_sql = ""  # SELECT of (the user we are, the current schema)


    def grant_hint(self, user: str, schema: str, missing: bool) -> str:
        """The statement that lets ``user`` write in ``schema`` (``missing``: create it first)."""
        return f"make {schema} writable by the user that runs `cdc apply`"

    def cursor(self) -> Any:
        """A DB-API cursor inside the batch transaction (maintained views); SQL targets only."""
        raise TargetError(f"target {self.name!r} ({self.dialect}) has no SQL cursor", target=self.name)

    def defer_constraints(self, defer: bool) -> None:
        """Called by the engine at the start of every batch transaction (SqlTarget: deferrable constraint
        checks); nothing here."""

    def is_constraint(self, exc: BaseException) -> bool:
        """``exc`` is an integrity constraint violation the engine retries in stream order before it calls a
        row bad (SqlTarget reads the driver's error); False here."""
        return False

    def foreign_keys(self) -> list[ForeignKey]:
        """The target's foreign keys between its tables: the engine deletes children before parents and upserts
        parents before children, and orders a self-referencing table's rows by their column values
        (SqlTarget reads its catalog); none here."""
        return []

    def forget_foreign_keys(self) -> None:
        """The apply ran DDL: read the foreign keys again at the next foreign_keys()."""

    # ---- catalogue and schema memory ---------------------------------------------------
    @abc.abstractmethod
    def table_columns(self, table: str) -> list[str] | None:
        """The target table's column names, or None when it does not exist."""

    @abc.abstractmethod
    def create_table(self, table: str, schema: TableSchema) -> None: ...

    @abc.abstractmethod
    def ensure_meta(self) -> None:
        """Create what the apply keeps in the target (progress, schema memory) when missing; called by open()."""

    @abc.abstractmethod
    def read_progress(self, source: str) -> Progress | None: ...

    @abc.abstractmethod
    def write_progress(self, p: Progress) -> None:
        """The batch's progress row, in the batch (atomic) or written last (per_table)."""

    @abc.abstractmethod
    def load_schemas(self, source: str) -> dict[str, tuple[str, TableSchema]]: ...

    @abc.abstractmethod
    def save_schema(self, source: str, source_table: str, target_table: str, schema: TableSchema,
                    sequence: int) -> None: ...


    def column_type(self, source: typemap.Source) -> str:
        """The target column type of a source column (a Column: its logical type; or a type text)."""
        return typemap.target_type(source, self.dialect)

    def commit_before_ddl(self, tables: set[str] | None = None) -> bool:
        """The engine commits what precedes a SCHEMA record (with its progress row) before the DDL runs;
        ``tables``: the target tables the record names (None: unknown)."""
        return self.ddl_commits

    def retype_refusal(self, old_type: str, new_type: str) -> str | None:
        """Why this target cannot change a column's type from ``old_type`` to ``new_type`` (source type texts),
        or None: it can (checked before any DDL of the statement runs)."""
        return None

    # ---- data (inside the batch) ---------------------------------------------------------
    @abc.abstractmethod
    def delete_rows(self, table: str, key: Sequence[str], rows: list[Row]) -> None:
        """Delete the rows whose primary key matches each row's key columns."""

    @abc.abstractmethod
    def upsert_rows(self, table: str, columns: Sequence[str], key: Sequence[str], rows: list[Row]) -> None:
        """Insert each row, or replace the row with the same primary key (``upsert`` says how)."""

    @abc.abstractmethod
    def insert_rows(self, table: str, columns: Sequence[str], rows: list[Row]) -> None: ...

    @abc.abstractmethod
    def delete_copies(self, table: str, columns: Sequence[str], rows: list[Row]) -> None:
        """Keyless table: delete ONE matching row per entry of ``rows``."""

    @abc.abstractmethod
    def truncate(self, table: str) -> None: ...

    @abc.abstractmethod
    def dead_letter(self, source: str, sequence: int | None, table: str | None, key: Any, value: Any,
                    error: str) -> None: ...


    def delete_json(self, table: str, key: Sequence[str], images: Any, binary: set[str]) -> None:
        """Delete the rows whose key the before-images ``images`` (pyarrow strings) hold."""
        raise NotImplementedError(f"target {self.name!r} ({self.dialect}) declares no json_rows")

    def upsert_json(self, table: str, columns: Sequence[str], key: Sequence[str], images: Any, new: Any,
                    binary: set[str]) -> None:
        """Insert or replace the after-images ``images``; ``new[i]``: key i cannot exist yet."""
        raise NotImplementedError(f"target {self.name!r} ({self.dialect}) declares no json_rows")

    def delete_range(self, table: str, rng: ResyncRange) -> int:
        """Apply a resync range (cdc.stream.resync_range) to ``table``; a target that declares no
        ``resync_ranges`` refuses it (the apply stops: fail closed)."""
        raise ResyncRangeError(
            f"target {self.name!r} ({self.dialect}) cannot apply a resync range of {table} (a delete of the rows "
            "in a key range): a resync is for database targets; rebuild this table from a snapshot instead",
            table=table, why=f"{self.dialect} target")



class SqlTarget(Target):
    """The body of an SQL database target: every path in SQL over a DB-API connection, through ``sql``
    (the database's cdc.schema.sql_dialects.SqlDialect). A subclass implements ``_connect``,
    ``table_columns`` and ``upsert_rows`` and may override the row paths with bulk ones."""

    bigint: str = "bigint"
    text: str = "text"
    timestamp: str = "timestamp"
    batch_commit = "atomic"
    table_ddl = "all"
    constraints = "enforced"
    text_lengths = True
    resync_ranges = True
    schema_kinds: frozenset[str] = frozenset({"add", "backfill", "drop", "rename", "type", "null", "default"})

    @abc.abstractmethod
    def table_columns(self, table: str) -> list[str] | None:
        """The target table's column names, or None when it does not exist."""

    @abc.abstractmethod
    def upsert_rows(self, table: str, columns: Sequence[str], key: Sequence[str], rows: list[Row]) -> None:
        """Insert each row, or replace the row with the same primary key (``upsert`` says how)."""


    def commit(self) -> None:
        self.conn.commit()

    def rollback(self) -> None:
        self.conn.rollback()

    defer_sql: str | None = None  # "... {}": DEFERRED or IMMEDIATE, the checks of DEFERRABLE constraints

    def defer_constraints(self, defer: bool) -> None:
        """Called by the engine at the start of every batch transaction: ``defer`` (the net effect written in
        the engine's order) moves the checks the target can move to the commit there (PostgreSQL's
        ``DEFERRABLE`` constraints); not ``defer`` (the row-by-row passes) checks every row at once, even on
        ``INITIALLY DEFERRED`` constraints, so a refused row is named. Lasts for this transaction only."""
        if self.defer_sql:
            self.execute(self.defer_sql.format("DEFERRED" if defer else "IMMEDIATE"))

    # the foreign keys in the target's schema, one row per column pair: (constraint name, child table, parent
    # table, DEFERRABLE, child column, parent column), a constraint's rows together in its column order; the schema
    # (None: the session's) is the parameter; None: the target does not read them (writes in first-touch order)
    foreign_keys_sql: str | None = None
    _foreign_keys: list[ForeignKey] | None = None

    def foreign_keys(self) -> list[ForeignKey]:
        """The foreign keys between tables of the target's schema, read from its catalog (``foreign_keys_sql``)
        once and kept until forget_foreign_keys() (the engine calls it after any DDL it runs). ``deferred``: the
        constraint is DEFERRABLE and the target defers checks to the commit (``defer_sql``), so the write order
        does not matter for it. Read inside the batch's transaction."""
        if self._foreign_keys is None:
            if not self.foreign_keys_sql:
                self._foreign_keys = []
            else:
                pairs: dict[tuple[str, str], tuple[str, bool, list[str], list[str]]] = {}
                for name, c, p, d, cc, pc in self.execute(self.foreign_keys_sql, [self.schema]).fetchall():
                    _, _, child_cols, parent_cols = pairs.setdefault((str(c), str(name)), (str(p), bool(d), [], []))
                    child_cols.append(str(cc))
                    parent_cols.append(str(pc))
                self._foreign_keys = [ForeignKey(c, p, d and self.defer_sql is not None, tuple(cc), tuple(pc))
                                      for (c, _), (p, d, cc, pc) in pairs.items()]
        return self._foreign_keys

    def forget_foreign_keys(self) -> None:
        self._foreign_keys = None

    def is_constraint(self, exc: BaseException) -> bool:
        """``exc`` (from this target's driver) is an integrity constraint violation: a foreign key, a unique or
        primary key, a NOT NULL or CHECK constraint (SQLSTATE class 23; MySQL 1062/1451/1452...; ORA-00001,
        ORA-02291, ORA-02292; DuckDB's constraint errors). The engine does not call a row bad for one of these
        until the batch failed again in stream order (the write order of the net effect may have caused it)."""
        if not self.is_driver_error(exc):
            return False
        state = getattr(exc, "sqlstate", None)  # psycopg
        if isinstance(state, str):
            return state.startswith("23")
        err = exc.args[0] if exc.args else None
        if isinstance(err, int):  # pymysql: the server's error number
            return err in CONSTRAINT_ERRNOS
        code = getattr(err, "full_code", None)  # oracledb
        if isinstance(code, str):
            return code in CONSTRAINT_ORA
        return any(c.__name__ in ("IntegrityError", "ConstraintException") for c in type(exc).__mro__)  # duckdb

    def cursor(self) -> Any:
        return self.conn.cursor()

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        cur = self.cursor()
        cur.execute(sql, params) if params is not None else cur.execute(sql)
        return cur

    def executemany(self, sql: str, rows: list[Sequence[Any]]) -> None:
        if rows:
            self.cursor().executemany(sql, rows)

    @property
    def param(self) -> str:
        """The DB-API placeholder."""
        return self.sql.param

    def quote(self, name: str) -> str:
        return self.sql.quote(name)

    def qualified(self, table: str) -> str:
        return f"{self.quote(self.schema)}.{self.quote(table)}" if self.schema else self.quote(table)

    def placeholders(self, n: int) -> str:
        return ", ".join([self.param] * n)

    def create_table(self, table: str, schema: TableSchema) -> None:
        cols = [f"{self.quote(c.name)} {self.column_type(c)}" + ("" if c.nullable or c.name in
                schema.primary_key else " NOT NULL") for c in schema.columns]
        if schema.primary_key:
            cols.append("PRIMARY KEY (" + ", ".join(self.quote(k) for k in schema.primary_key) + ")")
        self.execute(f"CREATE TABLE {self.qualified(table)} ({', '.join(cols)})")

    def add_column(self, table: str, name: str, source_type: str) -> None:
        self.execute(f"ALTER TABLE {self.qualified(table)} ADD COLUMN {self.quote(name)} {self.column_type(source_type)}")

    def widen_column(self, table: str, name: str, source_type: str) -> None:
        self.execute(f"ALTER TABLE {self.qualified(table)} ALTER COLUMN {self.quote(name)} TYPE "
                     f"{self.column_type(source_type)}")

    def _run_ddl(self, statements: list[str]) -> None:
        for sql in statements:
            self.execute(sql)

    def evolve_add(self, table: str, col: Column, const: str | None, after: str | None | bool = False) -> None:
        """Add ``col``; existing rows take ``const`` (cdc.schema.evolution.default_value's text) or NULL.
        The column gets the source's default when it is a constant, else none."""
        tt = self.column_type(col)
        fill = self.sql.literal(const, tt) if const is not None else None
        self._run_ddl(self.sql.add_column(self.qualified(table), col.name, tt, fill, not col.nullable, after))
        if fill is not None and col.default is None:  # the source has no default: only the rows took it
            self._run_ddl(self.sql.alter_column(self.qualified(table), col.name, tt, not col.nullable, None,
                                                {"default"}))

    def evolve_drop(self, table: str, name: str) -> None:
        self._run_ddl(self.sql.drop_column(self.qualified(table), name))

    def evolve_rename(self, table: str, old: str, new: str) -> None:
        self._run_ddl(self.sql.rename_column(self.qualified(table), old, new))

    def evolve_alter(self, table: str, col: Column, const_default: str | None, what: set[str]) -> None:
        """Change the column's type, nullability and/or default (``what``) to ``col``'s."""
        tt = self.column_type(col)
        fill = self.sql.literal(const_default, tt) if const_default is not None else None
        self._run_ddl(self.sql.alter_column(self.qualified(table), col.name, tt, not col.nullable, fill, what))

    def evolve_copy(self, table: str, src: str, dst: str) -> None:
        """dst = src in every row (a rename the target keeps both names of)."""
        self.execute(f"UPDATE {self.qualified(table)} SET {self.quote(dst)} = {self.quote(src)}")

    def first_value(self, table: str, column: str, key: Sequence[str], where: str) -> tuple | None:
        """(key values..., value) of one row of ``table`` where ``where`` holds (``{c}``: the column), or None."""
        c = self.quote(column)
        cols = ", ".join([self.quote(k) for k in key] + [c])
        cur = self.execute(self.sql.first_row(f"SELECT {cols} FROM {self.qualified(table)} WHERE "
                                              f"{where.format(c=c)}"))
        row = cur.fetchone()
        return tuple(row) if row is not None else None

    def has_rows(self, table: str) -> bool:
        return self.execute(self.sql.first_row(f"SELECT 1 FROM {self.qualified(table)}")).fetchone() is not None

    def misfit_sql(self, check: tuple) -> str:
        """The condition (``{c}``: the column) true for a value that does not fit a narrowed type
        (cdc.schema.evolution.TypeChange.check)."""
        if check[0] == "range":
            return f"({{c}} < {check[1]} OR {{c}} > {check[2]})"
        if check[0] == "digits":
            return f"(ABS({{c}}) >= 1{'0' * check[1]} OR {{c}} <> ROUND({{c}}, {check[2]}))"
        if check[0] == "chars":
            return f"{self.sql.char_length('{c}')} > {check[1]}"
        if check[0] == "bytes":
            return f"{self.sql.blob_length('{c}')} > {check[1]}"
        return "{c} IS NOT NULL"

    def schema_decision(self, source: str, sequence: int) -> tuple[str, str] | None:
        """(decision, source table) the operator recorded for the SCHEMA record at ``sequence``, or None."""
        if self.table_columns(DECISIONS_TABLE) is None:
            return None
        row = self.execute(f"SELECT decision, source_table FROM {self.qualified(DECISIONS_TABLE)} WHERE source = "
                           f"{self.param} AND sequence = {self.param}", [source, sequence]).fetchone()
        return (row[0], row[1]) if row else None

    def schema_decisions(self, source: str) -> list[tuple[int, str, str, Any]]:
        """Every recorded decision of ``source``: (sequence, source table, decision, when)."""
        if self.table_columns(DECISIONS_TABLE) is None:
            return []
        cur = self.execute(f"SELECT sequence, source_table, decision, decided_at FROM "
                           f"{self.qualified(DECISIONS_TABLE)} WHERE source = {self.param} ORDER BY sequence", [source])
        out = [tuple(r) for r in cur.fetchall()]
        self.commit()
        return out

    def skipped_tables(self, source: str) -> set[str]:
        """Source tables a ``skip`` decision keeps at their target shape."""
        if self.table_columns(DECISIONS_TABLE) is None:
            return set()
        cur = self.execute(f"SELECT DISTINCT source_table FROM {self.qualified(DECISIONS_TABLE)} WHERE source = "
                           f"{self.param} AND decision = 'skip'", [source])
        out = {r[0] for r in cur.fetchall()}
        self.commit()
        return out

    def save_schema_decision(self, source: str, sequence: int, table: str, decision: str) -> None:
        """Record the operator's decision for the SCHEMA record at ``sequence`` (committed at once)."""
        t = self.qualified(DECISIONS_TABLE)
        if self.table_columns(DECISIONS_TABLE) is None:
            self.execute(f"CREATE TABLE {t} (source {self.key_text()} NOT NULL, sequence {self.bigint} NOT NULL, "
                         f"source_table {self.key_text()}, decision {self.key_text()}, decided_at {self.timestamp}, "
                         f"PRIMARY KEY (source, sequence))")
            self.commit()
        self.execute(f"DELETE FROM {t} WHERE source = {self.param} AND sequence = {self.param}", [source, sequence])
        self.execute(f"INSERT INTO {t} (source, sequence, source_table, decision, decided_at) VALUES "
                     f"({self.placeholders(5)})", [source, sequence, table, decision, utc_now()])
        self.commit()

    def rename_table(self, old: str, new: str) -> None:
        self.execute(f"ALTER TABLE {self.qualified(old)} RENAME TO {self.quote(new)}")

    def drop_table(self, table: str) -> None:
        self.execute(f"DROP TABLE {self.qualified(table)}")

    def forget_schema(self, source: str, source_table: str) -> None:
        """Remove a source table from the schema memory (it was dropped or renamed away)."""
        self.execute(f"DELETE FROM {self.qualified(SCHEMA_TABLE)} WHERE source = {self.param} AND source_table = "
                     f"{self.param}", [source, source_table])

    def ensure_meta(self) -> None:
        """Create cdc_progress and cdc_schema when missing (committed at once)."""
        if self.table_columns(PROGRESS_TABLE) is None:
            self.execute(
                f"CREATE TABLE {self.qualified(PROGRESS_TABLE)} (source {self.key_text()} PRIMARY KEY, "
                f"last_sequence {self.bigint} NOT NULL, last_position {self.text}, batch_id {self.bigint}, "
                f"applied_at {self.timestamp}, last_commit_ts {self.timestamp})")
        if self.table_columns(SCHEMA_TABLE) is None:
            self.execute(
                f"CREATE TABLE {self.qualified(SCHEMA_TABLE)} (source {self.key_text()} NOT NULL, "
                f"source_table {self.key_text()} NOT NULL, target_table {self.key_text()}, "
                f"schema_json {self.text}, sequence {self.bigint}, PRIMARY KEY (source, source_table))")
        self.commit()

    def key_text(self) -> str:
        return "varchar(255)"

    def read_progress(self, source: str) -> Progress | None:
        cur = self.execute(f"SELECT last_sequence, last_position, batch_id, last_commit_ts, applied_at FROM "
                           f"{self.qualified(PROGRESS_TABLE)} WHERE source = {self.param}", [source])
        row = cur.fetchone()
        self.commit()
        if row is None:
            return None
        pos = orjson.loads(row[1]) if row[1] else {}
        return Progress(source, int(row[0]), int(row[2]) if row[2] is not None else -1, pos, ms_from_ts(row[3]), row[4])

    def write_progress(self, p: Progress) -> None:
        t = self.qualified(PROGRESS_TABLE)
        self.execute(f"DELETE FROM {t} WHERE source = {self.param}", [p.source])
        self.execute(f"INSERT INTO {t} (source, last_sequence, last_position, batch_id, applied_at, last_commit_ts) "
                     f"VALUES ({self.placeholders(6)})",
                     [p.source, p.last_sequence, orjson.dumps(p.last_position).decode(), p.batch_id, utc_now(),
                      ts_from_ms(p.last_commit_ts_ms)])

    def load_schemas(self, source: str) -> dict[str, tuple[str, TableSchema]]:
        cur = self.execute(f"SELECT source_table, target_table, schema_json FROM {self.qualified(SCHEMA_TABLE)} "
                           f"WHERE source = {self.param}", [source])
        rows = cur.fetchall()
        self.commit()
        return {r[0]: (r[1], TableSchema.from_json(orjson.loads(r[2]))) for r in rows}

    def save_schema(self, source: str, source_table: str, target_table: str, schema: TableSchema, sequence: int) -> None:
        t = self.qualified(SCHEMA_TABLE)
        self.execute(f"DELETE FROM {t} WHERE source = {self.param} AND source_table = {self.param}", [source, source_table])
        self.execute(f"INSERT INTO {t} (source, source_table, target_table, schema_json, sequence) VALUES "
                     f"({self.placeholders(5)})",
                     [source, source_table, target_table, orjson.dumps(schema.to_json()).decode(), sequence])

    def delete_rows(self, table: str, key: Sequence[str], rows: list[Row]) -> None:
        """Delete the rows whose primary key matches each row's key columns."""
        where = " AND ".join(f"{self.quote(k)} = {self.param}" for k in key)
        self.executemany(f"DELETE FROM {self.qualified(table)} WHERE {where}", [[r[k] for k in key] for r in rows])

    def insert_rows(self, table: str, columns: Sequence[str], rows: list[Row]) -> None:
        cols = ", ".join(self.quote(c) for c in columns)
        self.executemany(f"INSERT INTO {self.qualified(table)} ({cols}) VALUES ({self.placeholders(len(columns))})",
                         [[r.get(c) for c in columns] for r in rows])

    def delete_copies(self, table: str, columns: Sequence[str], rows: list[Row]) -> None:
        """Keyless table: delete ONE matching row per entry of ``rows``."""
        for r in rows:
            self.execute(self.delete_one_sql(table, columns), [r.get(c) for c in columns])

    def delete_one_sql(self, table: str, columns: Sequence[str]) -> str:
        """DELETE of one row equal to the parameters (NULL matches NULL), by ``row_id_column``."""
        rid = self.row_id_column
        if rid is None:
            raise TargetError(f"target {self.name!r} ({self.dialect}) cannot delete one copy of a row of keyless "
                              f"table {table}: it declares no row_id_column", target=self.name, table=table)
        match = " AND ".join(self.sql.null_safe_eq(self.quote(c), self.param) for c in columns)
        return (f"DELETE FROM {self.qualified(table)} WHERE {rid} = (SELECT {rid} FROM {self.qualified(table)} "
                f"WHERE {match} LIMIT 1)")

    def truncate(self, table: str) -> None:
        self.execute(f"DELETE FROM {self.qualified(table)}")

    def delete_range(self, table: str, rng: ResyncRange) -> int:
        """Apply a resync range (cdc.stream.resync_range) to ``table``: delete its rows whose integer key lies in the
        range and is not kept; returns how many. The keys in the range are read first (one indexed range
        scan), the doomed ones picked in Python and deleted by key, so no statement grows with ``keep``."""
        if not self.resync_ranges:
            return super().delete_range(table, rng)
        where, params = range_sql(self.quote, self.param, rng.key, rng.after, rng.through)
        cols = ", ".join(self.quote(k) for k in rng.key)
        found = self.execute(f"SELECT {cols} FROM {self.qualified(table)} WHERE {where}", params).fetchall()
        doomed = rng.doomed([int_key(list(r)) for r in found])
        if doomed:
            self.delete_rows(table, rng.key, [dict(zip(rng.key, k, strict=True)) for k in doomed])
        return len(doomed)

    def dead_letter(self, source: str, sequence: int | None, table: str | None, key: Any, value: Any, error: str) -> None:
        name = self.config.dead_letter_table
        assert name, "dead_letter() needs targets[].dead_letter_table"
        if self.table_columns(name) is None:
            self.execute(f"CREATE TABLE {self.qualified(name)} (source {self.key_text()}, sequence {self.bigint}, "
                         f"source_table {self.key_text()}, record_key {self.text}, record_value {self.text}, "
                         f"error {self.text}, at_time {self.timestamp})")
        self.execute(f"INSERT INTO {self.qualified(name)} (source, sequence, source_table, record_key, record_value, "
                     f"error, at_time) VALUES ({self.placeholders(7)})",
                     [source, sequence, table, _json_text(key), _json_text(value), error, utc_now()])


def _json_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return orjson.dumps(value, default=str).decode()


def arrow_array(values: list[Any]) -> Any:
    """One column of stream values as an Arrow array. Integers beyond int64 (BIGINT UNSIGNED, BIT(64)
    at 2^63 and above), which Arrow's inference refuses, become uint64 when none is negative, else
    text (a SQL target casts it to the column's type on INSERT)."""
    import pyarrow as pa

    try:
        return pa.array(values)
    except (OverflowError, TypeError, pa.ArrowInvalid):  # TypeError: an Avro stream's big ints are text
        try:
            return pa.array(values, pa.uint64())
        except (OverflowError, TypeError, pa.ArrowInvalid):
            return pa.array([None if v is None else str(v) for v in values], pa.string())


def rows_as_lists(rows: Iterable[Row], columns: Sequence[str]) -> list[list[Any]]:
    return [[r.get(c) for c in columns] for r in rows]


def keepalive(sock: Any, timeouts: Any) -> None:
    """Turn TCP keepalives on for a driver's socket (``timeouts``: cdc.config.models.TargetTimeouts): a peer that
    vanished is noticed after ``keepalive_idle_s + keepalive_interval_s * keepalive_count`` seconds, and
    data left unacknowledged that long ends the connection (Linux TCP_USER_TIMEOUT). Options the platform
    lacks are left out; a socket that is not a TCP socket is left alone."""
    import socket

    if sock is None or getattr(sock, "family", None) not in (socket.AF_INET, socket.AF_INET6):
        return
    t = timeouts
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", t.keepalive_idle_s), ("TCP_KEEPINTVL", t.keepalive_interval_s),
                        ("TCP_KEEPCNT", t.keepalive_count),
                        ("TCP_USER_TIMEOUT", (t.keepalive_idle_s + t.keepalive_interval_s * t.keepalive_count) * 1000)):
        opt = getattr(socket, name, None)
        if opt is not None:
            sock.setsockopt(socket.IPPROTO_TCP, opt, int(value))
