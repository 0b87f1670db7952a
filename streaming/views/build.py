"""Full build of a view table from its base tables, and the ``cdc_views`` registry.

A view table holds, in order: the visible outputs (in SELECT order), hidden
GROUP BY columns that were not selected (``__g<i>``), ``__key`` (md5 of the
row key, unique-indexed), ``__count`` (the derivation count: how many joined
base rows produce this view row), and per aggregate ``i`` the state the
counting model needs: ``__nn_<i>`` (non-NULL argument count) and, for AVG,
``__sum_<i>``.

``cdc_views`` records per view: the definition fingerprint, the last batch
id and source sequence it reflects, and when it was last maintained: the
view's freshness, written in the same transaction as the view.
"""

from __future__ import annotations

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
    """(Re)create the view table and fill it from the base tables' current state."""
    cur.execute(f"DROP TABLE IF EXISTS {d.q(view.name)}")
    # PostgreSQL: leave room in each page so maintenance updates stay HOT (no index churn)
    options = " WITH (fillfactor = 80)" if d.name == "postgres" else ""
    cur.execute(f"CREATE TABLE {d.q(view.name)}{options} AS {build_select(view, d)}")
    cur.execute(f"CREATE UNIQUE INDEX {d.q(view.name + '__key')} ON {d.q(view.name)} ({d.q('__key')})")


def refill(cur: Any, view: ViewDef, d: Dialect) -> None:
    """Recompute the whole view table in place (the table must exist)."""
    cols = ", ".join(d.q(c) for c in layout(view))
    cur.execute(f"DELETE FROM {d.q(view.name)}")
    cur.execute(f"INSERT INTO {d.q(view.name)} ({cols}) {build_select(view, d)}")


def existing_tables(cur: Any, d: Dialect, names: Sequence[str]) -> set[str]:
    """Which of ``names`` exist as tables in the current schema (one catalog query)."""
    marks = ", ".join([d.param] * len(names))
    if d.name == "postgres":  # the catalog directly: information_schema costs ms per call
        cur.execute("SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON "
                    f"n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') "
                    f"AND c.relname IN ({marks})", tuple(names))
        return {r[0] for r in cur.fetchall()}
    schema = "DATABASE()" if d.name == "mysql" else "current_schema()"
    cur.execute(f"SELECT table_name FROM information_schema.tables WHERE table_schema = {schema} "
                f"AND table_name IN ({marks})", tuple(names))
    return {r[0] for r in cur.fetchall()}


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
    """Write the freshness rows of ``done`` [(view, mode)] (same transaction as the views)."""
    if not done:
        return
    p = d.param
    cur.execute(f"DELETE FROM {d.q(REGISTRY)} WHERE view_name IN ({', '.join([p] * len(done))})",
                tuple(v.name for v, _ in done))
    values = ", ".join([f"({p}, {p}, {p}, {p}, {p}, CURRENT_TIMESTAMP)"] * len(done))
    params = [x for v, mode in done for x in (v.name, v.fingerprint, batch_id, last_sequence, mode)]
    cur.execute(f"INSERT INTO {d.q(REGISTRY)} (view_name, fingerprint, last_batch_id, last_sequence, mode, "
                f"updated_at) VALUES {values}", params)
