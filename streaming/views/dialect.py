"""The SQL spellings that differ between the targets views run on.

Builds on the database's cdc.schema.sql_dialects.SqlDialect (quoting, placeholder,
text cast, length, md5, null-safe equality: shared with compare and the
targets) and adds what only views need (scratch tables, AVG's type, bulk
loads, the catalog queries and DDL options of ``build``, and how maintenance
runs: the class attributes of ``Dialect``). One subclass per database spells
what differs from the base class. Everything else in ``delta``/``build`` is plain SQL that PostgreSQL,
DuckDB and MySQL/MariaDB read alike. Oracle is not supported for views (no
server to test against here): ``dialect_for("oracle")`` raises ViewError.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cdc.config.dsn import parse_mysql_dsn
from cdc.schema.sql_dialects import DUCKDB, MYSQL, POSTGRES, SqlDialect
from streaming.views.errors import ViewError

_registered = itertools.count()


@dataclass(frozen=True)
class Dialect:
    """What views spell the same way everywhere; each database's subclass below overrides what differs."""

    sql: SqlDialect
    temp: str  # CREATE <temp> TABLE
    numeric_type: str  # type AVG divides in

    # how maintenance runs here (streaming/views/maintainer.py, delta_rules.py)
    ddl_commits = False  # CREATE TABLE commits the open transaction: view tables are built before a batch
    temp_outlives_rollback = False  # scratch tables of a rolled-back batch remain: drop them first
    drop_scratch_after = False  # scratch tables are dropped after each view's delta
    temp_read_once = False  # a temporary table is read at most once per statement: derivations go to ``raw``
    columnar_load = False  # deltas load column-wise (load_columns)
    merge_in_one_statement = False  # DeltaPlan.merge_statement rewrites the view rows at once
    merge_in_place = False  # the merge UPDATEs the rows it keeps (else: DELETE + INSERT)
    probe_indexes = True  # joins probe indexes on the join columns (build.support_indexes)

    @property
    def name(self) -> str:
        return self.sql.name

    @property
    def param(self) -> str:
        return self.sql.param

    def q(self, ident: str) -> str:
        """Quote an identifier; ``schema.table`` is quoted part by part."""
        return ".".join(self.sql.quote(part) for part in ident.split("."))

    def null_safe_eq(self, a: str, b: str) -> str:
        return self.sql.null_safe_eq(a, b)

    def key_expr(self, exprs: Sequence[str]) -> str:
        """An md5 over the key values, unambiguous for NULLs and separators: the row
        key of a view table, so matching view rows is a plain indexed equality."""
        if not exprs:
            return self.sql.md5("''")
        parts = []
        for e in exprs:
            t = f"CAST({e} AS {self.sql.text_type})"
            parts.append(f"CASE WHEN {e} IS NULL THEN 'N' ELSE CONCAT('V', {self.sql.char_length(t)}, ':', {t}) END")
        return self.sql.md5(f"CONCAT({', '.join(parts)})" if len(parts) > 1 else parts[0])

    def avg(self, total: str, count: str) -> str:
        return f"CAST({total} AS {self.numeric_type}) / {count}"

    def create_temp(self, name: str, select: str) -> str:
        """Scratch table for this transaction."""
        return f"CREATE {self.temp} TABLE {self.q(name)} AS {select}"

    def drop_temp(self, name: str) -> str:
        return f"DROP TABLE IF EXISTS {self.q(name)}"

    def load(self, cur: Any, table: str, cols: Sequence[str], rows: list[tuple]) -> None:
        """Bulk-insert ``rows`` into ``table`` through the open cursor (same transaction)."""
        if not rows:
            return
        collist = ", ".join(self.q(c) for c in cols)
        if self._bulk_load(cur, self.q(table), collist, rows):
            return
        marks = ", ".join([self.param] * len(cols))
        cur.executemany(f"INSERT INTO {self.q(table)} ({collist}) VALUES ({marks})", rows)

    def _bulk_load(self, cur: Any, table: str, collist: str, rows: list[tuple]) -> bool:
        """Load ``rows`` the database's fast way when ``cur`` offers it; False: use INSERTs."""
        return False

    def load_columns(self, cur: Any, table: str, cols: Sequence[str], columns: list[list]) -> None:
        """``load`` from one list of values per column (DuckDB takes them as Arrow arrays)."""
        if not columns or not columns[0]:
            return
        self.load(cur, table, cols, list(zip(*columns)))

    def analyze(self, cur: Any, table: str) -> None:
        """Give the planner statistics of the (quoted) scratch ``table`` where it needs them."""

    # ---- DDL and catalog (streaming/views/build.py) ----------------------------------------
    def table_options(self, aggregate: bool) -> str:
        """What follows CREATE TABLE <view table>."""
        return ""

    def index_include(self, columns: Sequence[str]) -> str:
        """What follows CREATE INDEX ... (column) so the index also carries ``columns`` (quoted)."""
        return ""

    def leading_index_columns_sql(self, table: str) -> tuple[str, tuple]:
        """(SELECT, parameters) of the leading column of each index of ``table`` (``schema.table`` or not)."""
        schema, _, name = table.rpartition(".")
        sql = ("SELECT column_name FROM information_schema.statistics WHERE table_schema = "
               f"{'%s' if schema else 'DATABASE()'} AND table_name = %s AND seq_in_index = 1")
        return sql, (schema, name) if schema else (name,)

    def existing_tables_sql(self, marks: str) -> str:
        """SELECT of which of the names in ``marks`` (placeholders) are tables in the current schema."""
        return (f"SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() "
                f"AND table_name IN ({marks})")

    current_schema = "current_schema()"  # the SQL of the current schema

    # ---- a connection outside the apply job (streaming/views/connect.py) ------------------
    def connect(self, cfg: Any) -> Any:
        """A DB-API connection (not autocommit) to the target of TargetConfig ``cfg``."""
        raise NotImplementedError(f"{type(self).__name__} does not connect")

    def begin(self, conn: Any) -> None:
        """Open the transaction of a batch where the driver does not open one by itself."""


class _PostgresViews(Dialect):
    """Scratch tables dropped at commit; merge in one statement; COPY loads; fillfactor and INCLUDE."""

    merge_in_one_statement = True

    def connect(self, cfg: Any) -> Any:
        import psycopg

        return psycopg.connect(cfg.dsn, **cfg.login_kwargs())

    def create_temp(self, name: str, select: str) -> str:
        return f"CREATE TEMP TABLE {self.q(name)} ON COMMIT DROP AS {select}"  # dropped at commit/rollback

    def _bulk_load(self, cur: Any, table: str, collist: str, rows: list[tuple]) -> bool:
        if not hasattr(cur, "copy"):
            return False
        _postgres_load(cur, table, collist, rows)
        return True

    def analyze(self, cur: Any, table: str) -> None:
        cur.execute(f"ANALYZE {table}")

    def table_options(self, aggregate: bool) -> str:
        # leave room in each page so maintenance updates stay HOT (no index churn). A batch may touch
        # every group of an aggregate view: below half full, a page takes a new version of each of its rows.
        return f" WITH (fillfactor = {45 if aggregate else 80})"

    def index_include(self, columns: Sequence[str]) -> str:
        return f" INCLUDE ({', '.join(columns)})" if columns else ""

    def leading_index_columns_sql(self, table: str) -> tuple[str, tuple]:
        sql = ("SELECT a.attname FROM pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a "
               "ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] WHERE i.indrelid = to_regclass(%s)")
        return sql, (self.q(table),)

    def existing_tables_sql(self, marks: str) -> str:  # the catalog directly: information_schema costs ms per call
        return ("SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON "
                f"n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') "
                f"AND c.relname IN ({marks})")


class _DuckDbViews(Dialect):
    """Scratch tables replaced and dropped after use; column-wise Arrow loads; no probe indexes (hash joins)."""

    drop_scratch_after = True
    columnar_load = True
    merge_in_place = True  # an update leaves the __key index alone
    probe_indexes = False  # DuckDB joins by hashing and does not use such indexes

    def connect(self, cfg: Any) -> Any:
        import duckdb

        return duckdb.connect(cfg.path or cfg.dsn or ":memory:")

    def begin(self, conn: Any) -> None:
        conn.execute("BEGIN TRANSACTION")

    def create_temp(self, name: str, select: str) -> str:  # a leftover of an earlier batch is replaced
        return f"CREATE OR REPLACE TEMP TABLE {self.q(name)} AS {select}"

    def _bulk_load(self, cur: Any, table: str, collist: str, rows: list[tuple]) -> bool:
        if not hasattr(cur, "register"):
            return False
        _duckdb_load(cur, table, collist, [list(c) for c in zip(*rows)])
        return True

    def load_columns(self, cur: Any, table: str, cols: Sequence[str], columns: list[list]) -> None:
        if columns and columns[0] and hasattr(cur, "register"):
            _duckdb_load(cur, self.q(table), ", ".join(self.q(c) for c in cols), columns)
            return
        super().load_columns(cur, table, cols, columns)

    def existing_tables_sql(self, marks: str) -> str:  # its information_schema costs milliseconds too
        return ("SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND "
                f"schema_name = current_schema() AND NOT temporary AND table_name IN ({marks})")


class _MySqlViews(Dialect):
    """DDL commits; temporary tables outlive a rollback and are read once per statement; AVG divides exactly."""

    ddl_commits = True
    temp_outlives_rollback = True
    temp_read_once = True
    current_schema = "DATABASE()"

    def connect(self, cfg: Any) -> Any:
        import pymysql

        dsn = parse_mysql_dsn(cfg.dsn, f"target {cfg.name} dsn")
        return pymysql.connect(**{**dsn.connect_args(cfg.tls), **cfg.login_kwargs()}, autocommit=False)

    def avg(self, total: str, count: str) -> str:
        return f"{total} / {count}"

    def drop_temp(self, name: str) -> str:
        return f"DROP TEMPORARY TABLE IF EXISTS {self.q(name)}"


# PostgreSQL types whose binary COPY form psycopg writes straight from the delta's JSON-ready
# values (int, float, str, bool): about 40% cheaper than text COPY on both ends.
_BINARY_OIDS = frozenset({16, 20, 21, 23, 25, 700, 701, 1043})  # bool int8 int2 int4 text float4 float8 varchar


def _postgres_load(cur: Any, table: str, collist: str, rows: list[tuple]) -> None:
    """COPY into ``table``: binary when every column's type allows it, else text.
    A value binary COPY cannot write (e.g. a str in an integer column, which text COPY
    parses) ends the binary try; it is rolled back to a savepoint and the rows go as text."""
    cur.execute(f"SELECT {collist} FROM {table} WHERE false")
    oids = [c.type_code for c in cur.description]
    if all(o in _BINARY_OIDS for o in oids):
        cur.execute("SAVEPOINT __cdcv_load")
        try:
            with cur.copy(f"COPY {table} ({collist}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(oids)
                for row in rows:
                    copy.write_row(row)
        except Exception:  # noqa: BLE001 - the text try below raises the real error if there is one
            cur.execute("ROLLBACK TO SAVEPOINT __cdcv_load")
        else:
            cur.execute("RELEASE SAVEPOINT __cdcv_load")
            return
    with cur.copy(f"COPY {table} ({collist}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def _duckdb_load(cur: Any, table: str, collist: str, columns: list[list]) -> None:
    import pyarrow as pa

    arrays = []
    for values in columns:
        try:
            arrays.append(pa.array(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):  # mixed types: let DuckDB cast text
            arrays.append(pa.array([None if v is None else str(v) for v in values], pa.string()))
    name = f"__cdc_views_load_{next(_registered)}"
    cur.register(name, pa.Table.from_arrays(arrays, names=[f"c{i}" for i in range(len(arrays))]))
    try:
        cur.execute(f"INSERT INTO {table} ({collist}) SELECT * FROM {name}")
    finally:
        cur.unregister(name)


# keyed by the SQL dialect's name (a target's ``dialect``): views are offered per SQL dialect, and a
# target kind without one here has none (dialect_for says so)
DIALECTS: dict[str, Dialect] = {d.name: d for d in (
    _PostgresViews(POSTGRES, "TEMP", "NUMERIC"),
    _DuckDbViews(DUCKDB, "TEMP", "DOUBLE"),
    _MySqlViews(MYSQL, "TEMPORARY", "DECIMAL(65,10)"),
)}


def dialect_for(name: str, view: str | None = None) -> Dialect:
    try:
        return DIALECTS[name]
    except KeyError:
        raise ViewError(f"maintained views are not supported on a {name!r} target "
                        f"(supported: {sorted(DIALECTS)})", view=view, dialect=name) from None
