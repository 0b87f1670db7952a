"""Full build of a view table from its base tables, and the ``cdc_views`` registry.

A view table holds, in order: the visible outputs (in SELECT order), hidden
GROUP BY columns that were not selected (``__g<i>``), ``__key`` (md5 of the
row key, unique-indexed), ``__count`` (the derivation count: how many joined
base rows produce this view row), and per aggregate ``i`` the state the
counting model needs: ``__nn_<i>`` (non-NULL argument count) and, for AVG,
``__sum_<i>``.

Building a view also indexes the base-table columns maintenance looks rows
up by (the join keys) where no index leads with them yet: a batch touching a
few rows of one table then probes the others through an index instead of
scanning them (PostgreSQL, MySQL/MariaDB).

``cdc_views`` records per view: the definition fingerprint, the last batch
id and source sequence it reflects, and when it was last maintained: the
view's freshness, written in the same transaction as the view.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from streaming.views.definition import ViewDef
from streaming.views.dialect import Dialect
from streaming.views.sqlparse import Col, Lit

REGISTRY = "cdc_views"


def col_sql(d: Dialect, c: Col) -> str:
    return f"{d.q(c.alias)}.{d.q(c.name)}"


def from_where(view: ViewDef, d: Dialect, source: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """FROM list and WHERE conjuncts; ``source`` replaces some aliases' tables (deltas)."""
    source = source or {}
    frm = ", ".join(f"{d.q(source.get(a, t))} {d.q(a)}" for a, t in view.tables)
    where = [f"{col_sql(d, a)} = {col_sql(d, b)}" for a, b in view.joins]
    for f in view.filters:
        if f.right is None:
            where.append(f"{col_sql(d, f.left)} {f.op}")
        else:
            right = f.right.sql if isinstance(f.right, Lit) else col_sql(d, f.right)
            where.append(f"{col_sql(d, f.left)} {f.op} {right}")
    return frm, where


def layout(view: ViewDef) -> list[str]:
    """Column names of the view table, in table order."""
    cols = [o.name for o in view.outputs]
    cols += [name for name, _ in view.keys if name.startswith("__g")]
    cols += ["__key", "__count"]
    for i, o in view.aggs:
        if o.arg is not None:
            cols.append(f"__nn_{i}")
            if o.func == "avg":
                cols.append(f"__sum_{i}")
    return cols


def build_select(view: ViewDef, d: Dialect, extra_from: Sequence[str] = (), extra_where: Sequence[str] = ()) -> str:
    """The from-scratch query of the whole view table (columns in ``layout`` order)."""
    exprs: dict[str, str] = {}
    for o in view.outputs:
        if o.func is None:
            exprs[o.name] = col_sql(d, o.arg)
        else:
            arg = "*" if o.arg is None else col_sql(d, o.arg)
            exprs[o.name] = f"{o.func.upper()}({arg})"
    keys = [col_sql(d, c) for _, c in view.keys]
    for name, c in view.keys:
        exprs.setdefault(name, col_sql(d, c))
    exprs["__key"] = d.key_expr(keys)
    exprs["__count"] = "COUNT(*)"
    for i, o in view.aggs:
        if o.arg is not None:
            exprs[f"__nn_{i}"] = f"COUNT({col_sql(d, o.arg)})"
            if o.func == "avg":
                exprs[f"__sum_{i}"] = f"SUM({col_sql(d, o.arg)})"
    frm, where = from_where(view, d)
    frm = ", ".join([frm, *extra_from])
    where = [*where, *extra_where]
    sql = f"SELECT {', '.join(f'{e} AS {d.q(n)}' for n, e in exprs.items())} FROM {frm}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    if keys:
        sql += " GROUP BY " + ", ".join(keys)
    return sql + " HAVING COUNT(*) > 0"


def create_view_table(cur: Any, view: ViewDef, d: Dialect) -> None:
    """(Re)create the view table and fill it from the base tables' current state; make sure
    the base tables have the indexes maintenance probes (``support_indexes``)."""
    support_indexes(cur, view, d)
    cur.execute(f"DROP TABLE IF EXISTS {d.q(view.name)}")
    options = d.table_options(view.aggregate)  # PostgreSQL: a fillfactor that keeps updates HOT
    cur.execute(f"CREATE TABLE {d.q(view.name)}{options} AS {build_select(view, d)}")
    cur.execute(f"CREATE UNIQUE INDEX {d.q(view.name + '__key')} ON {d.q(view.name)} ({d.q('__key')})")


def support_columns(view: ViewDef) -> list[tuple[str, str, tuple[str, ...]]]:
    """(table, column, other columns the view reads from that table) for both sides of
    every join: a delta of one table probes the others by the join key."""
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    for pair in view.joins:
        for c in pair:
            out.setdefault((view.table_of(c.alias), c.name),
                           tuple(x for x in view.columns_of(c.alias) if x != c.name))
    return [(t, c, rest) for (t, c), rest in out.items()]


def support_indexes(cur: Any, view: ViewDef, d: Dialect) -> list[str]:
    """Create an index on each ``support_columns`` column that is not already the leading
    column of an index (a primary key counts); returns the names created. On PostgreSQL
    the index also carries (INCLUDE) the other columns the view reads, so the probes and
    the MIN/MAX group recomputes read the index alone instead of one heap page per row.
    PostgreSQL and MySQL/MariaDB only: DuckDB joins by hashing and does not use such indexes."""
    if not d.probe_indexes:
        return []
    made = []
    for table, column, rest in support_columns(view):
        if column.lower() in _leading_index_columns(cur, d, table):
            continue
        name = _index_name(table, column)
        include = d.index_include([d.q(c) for c in rest])
        cur.execute(f"CREATE INDEX {d.q(name)} ON {d.q(table)} ({d.q(column)}){include}")
        made.append(name)
    return made


def _leading_index_columns(cur: Any, d: Dialect, table: str) -> set[str]:
    cur.execute(*d.leading_index_columns_sql(table))
    return {r[0].lower() for r in cur.fetchall()}


def _index_name(table: str, column: str) -> str:
    """``<table>__cdcv_<column>``, shortened with a hash to fit PostgreSQL's 63 and MySQL's 64 characters."""
    name = f"{table.split('.')[-1]}__cdcv_{column}"
    if len(name) <= 60:
        return name
    return f"{name[:47]}_{hashlib.sha256(name.encode()).hexdigest()[:12]}"


def refill(cur: Any, view: ViewDef, d: Dialect) -> None:
    """Recompute the whole view table in place (the table must exist)."""
    cols = ", ".join(d.q(c) for c in layout(view))
    cur.execute(f"DELETE FROM {d.q(view.name)}")
    cur.execute(f"INSERT INTO {d.q(view.name)} ({cols}) {build_select(view, d)}")


def existing_tables(cur: Any, d: Dialect, names: Sequence[str]) -> set[str]:
    """Which of ``names`` exist as tables in the current schema (one catalog query)."""
    marks = ", ".join([d.param] * len(names))
    cur.execute(d.existing_tables_sql(marks), tuple(names))
    return {r[0] for r in cur.fetchall()}


def base_columns(cur: Any, d: Dialect, table: str) -> set[str] | None:
    """Lower-case column names of base table ``table`` in the target, or None when it does not exist."""
    schema, _, name = table.rpartition(".")
    where = f"table_schema = {d.param}" if schema else f"table_schema = {d.current_schema}"
    cur.execute(f"SELECT column_name FROM information_schema.columns WHERE {where} AND table_name = {d.param}",
                (schema, name) if schema else (name,))
    cols = {str(r[0]).lower() for r in cur.fetchall()}
    return cols or None


def missing_reads(cur: Any, d: Dialect, view: ViewDef) -> list[tuple[str, str | None]]:
    """What the view reads that its base tables lack: [(table, column)], column None for a missing table."""
    out: list[tuple[str, str | None]] = []
    for alias, table in view.tables:
        have = base_columns(cur, d, table)
        if have is None:
            out.append((table, None))
            continue
        out.extend((table, c) for c in view.columns_of(alias) if c.lower() not in have)
    return out


def fingerprints(cur: Any, d: Dialect, views: Sequence[ViewDef]) -> dict[str, str | None]:
    """View name -> fingerprint its table was built from, or None when it must be (re)built.
    Creates the registry table on first use."""
    existing = existing_tables(cur, d, [REGISTRY, *(v.name for v in views)])
    if REGISTRY not in existing:
        cur.execute(f"CREATE TABLE {d.q(REGISTRY)} (view_name VARCHAR(64) PRIMARY KEY, fingerprint VARCHAR(32), "
                    "last_batch_id BIGINT, last_sequence BIGINT, mode VARCHAR(16), updated_at TIMESTAMP)")
        return {v.name: None for v in views}
    cur.execute(f"SELECT view_name, fingerprint FROM {d.q(REGISTRY)}")
    known = dict(cur.fetchall())
    return {v.name: known.get(v.name) if v.name in existing else None for v in views}


def record(cur: Any, d: Dialect, done: Sequence[tuple[ViewDef, str]], batch_id: int | None,
           last_sequence: int | None) -> None:
    """Write the freshness rows of ``done`` [(view, mode)] (same transaction as the views). A view in mode
    ``stopped`` keeps its batch and sequence and loses its fingerprint: it is rebuilt (or refused) before
    it is maintained again."""
    if not done:
        return
    p = d.param
    stopped = [v.name for v, mode in done if mode == "stopped"]
    if stopped:
        cur.execute(f"UPDATE {d.q(REGISTRY)} SET fingerprint = NULL, mode = 'stopped', updated_at = CURRENT_TIMESTAMP "
                    f"WHERE view_name IN ({', '.join([p] * len(stopped))})", tuple(stopped))
        done = [(v, mode) for v, mode in done if mode != "stopped"]
        if not done:
            return
    cur.execute(f"DELETE FROM {d.q(REGISTRY)} WHERE view_name IN ({', '.join([p] * len(done))})",
                tuple(v.name for v, _ in done))
    values = ", ".join([f"({p}, {p}, {p}, {p}, {p}, CURRENT_TIMESTAMP)"] * len(done))
    params = [x for v, mode in done for x in (v.name, v.fingerprint, batch_id, last_sequence, mode)]
    cur.execute(f"INSERT INTO {d.q(REGISTRY)} (view_name, fingerprint, last_batch_id, last_sequence, mode, "
                f"updated_at) VALUES {values}", params)
