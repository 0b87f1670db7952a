"""The hook the apply engine calls to maintain views, inside its target transaction.

    maintain(target, deltas, batch_id, *, views=None, last_sequence=None)

Called once per micro-batch AFTER the base tables were written and BEFORE
the commit; ``deltas`` maps target table name -> ``TableDelta`` (net effect
of the batch). ``target.cursor()`` is a DB-API cursor in the open
transaction, ``target.dialect`` one of postgres/mysql/duckdb (oracle raises).
``views`` is ``ApplyConfig.views``.

Guarantee: when the transaction commits, every view equals its definition
evaluated on the committed base tables, and ``cdc_views`` says which batch
and sequence it reflects: base tables, views and freshness move together or
not at all (seed 003). A view whose table is missing or whose definition
changed is (re)built from the base tables instead (the initial build from
the snapshot). MySQL/MariaDB commits implicitly on CREATE TABLE: call
``prepare(target, views)`` once before the first batch there.

A SCHEMA barrier on a base table (``after_schema``, called by the engine right
after the DDL, in the same transaction; the batch's earlier rows were maintained
just before it, in the old shape): a view that still reads only columns and
tables the target has is rebuilt from the base tables in their new shape; one
that reads a dropped or renamed column or table is stopped (``cdc_views`` mode
``stopped``) and the engine commits the DDL with its progress row, then raises
the ViewError naming view, table, statement, sequence and the way back. A
stopped view is refused (the same error) until its definition is edited and
``cdc views rebuild`` (or the next start) builds it.

Raises ViewDefinitionError for a bad definition, ViewError when a delta row
lacks a column the view reads, ViewInconsistent when a count goes negative.
After a raise the caller must roll the transaction back (the engine does): on
PostgreSQL the negative count is found by the statement that merged the view.

Per view and batch on PostgreSQL: the changed tables' delta rows go into
scratch tables by binary COPY (text COPY for types binary cannot take from
JSON-ready values), then one statement derives, folds and merges them; a view
with MIN/MAX folds into a table first, to find the groups to recompute.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from operator import itemgetter
from typing import Any

from streaming.apply.table_delta import TableDelta
from streaming.views import build
from streaming.views.definition import ViewDef, parse_views, view_mappings
from streaming.views.delta_rules import DeltaPlan
from streaming.views.dialect import Dialect, dialect_for
from streaming.views.errors import ViewError

_parsed: dict[str, list[ViewDef]] = {}


def view_defs(views: Iterable[dict[str, Any]] | None) -> list[ViewDef]:
    """Parse (and cache) the view definitions of one apply job."""
    specs = view_mappings(views)
    key = json.dumps(specs, sort_keys=True, default=str)
    if key not in _parsed:
        _parsed[key] = parse_views(specs)
    return _parsed[key]




def maintain(target: Any, deltas: Mapping[str, TableDelta], batch_id: int, *,
             views: Iterable[dict[str, Any]] | None = None, last_sequence: int | None = None,
             truncated: Iterable[str] = (), mid_batch: bool = False) -> dict[str, str]:
    """Maintain every view from one batch's deltas; returns {view: "build"|"incremental"|"recompute"}.

    ``mid_batch``: the transaction goes on and maintains again (before a SCHEMA barrier): scratch tables
    are dropped at once instead of at commit (PostgreSQL's ON COMMIT DROP would collide).

    ``truncated``: tables the batch truncated (their rows are not in ``deltas``); views reading
    them are recomputed from the base tables (DML only, so also safe on MySQL)."""
    defs = view_defs(views)
    if not defs:
        return {}
    d = dialect_for(target.dialect)
    cur = target.cursor()
    prints = build.fingerprints(cur, d, defs)
    tables = _normalise(deltas)
    wiped = {t.split(".")[-1].lower() for t in truncated}
    done = []
    for view in defs:
        if prints[view.name] == view.fingerprint and any(t.split(".")[-1].lower() in wiped for _, t in view.tables):
            build.refill(cur, view, d)
            done.append((view, "recompute"))
            continue
        if prints[view.name] != view.fingerprint:
            check_reads(cur, d, view)
            if d.ddl_commits:  # CREATE TABLE would commit half a batch
                raise ViewError(f"view {view.name!r} is missing or its definition changed: on MySQL/MariaDB build "
                                "it before the batch (maintainer.prepare, or `cdc views rebuild`)", view=view.name)
            build.create_view_table(cur, view, d)
            done.append((view, "build"))
        else:
            _apply_delta(cur, d, view, tables, drop_after=mid_batch)
            done.append((view, "incremental"))
    build.record(cur, d, done, batch_id, last_sequence)
    return {v.name: mode for v, mode in done}


def prepare(target: Any, views: Iterable[dict[str, Any]] | None = None) -> list[str]:
    """Build missing or outdated view tables from the current base tables, before the
    first batch (needed on MySQL, where CREATE TABLE ends the batch transaction). Views
    whose base tables do not exist yet are left for the first batch (not on MySQL:
    call prepare again once they exist). Returns the names built."""
    defs = view_defs(views)
    if not defs:
        return []
    d = dialect_for(target.dialect)
    cur = target.cursor()
    prints = build.fingerprints(cur, d, defs)
    base = build.existing_tables(cur, d, sorted({t for v in defs for _, t in v.tables}))
    # a view whose base tables do not exist yet is built by the first batch that creates them
    built = [v for v in defs if prints[v.name] != v.fingerprint and all(t in base for _, t in v.tables)]
    for view in built:
        check_reads(cur, d, view)
        build.create_view_table(cur, view, d)
    build.record(cur, d, [(v, "build") for v in built], None, None)
    return [v.name for v in built]


def rebuild(target: Any, views: Iterable[dict[str, Any]] | None = None, names: Iterable[str] | None = None,
            batch_id: int | None = None, last_sequence: int | None = None,
            on_view: Callable[[str], None] | None = None) -> list[str]:
    """Recompute views from their base tables and reset all counts; returns the names rebuilt.
    ``on_view(name)`` after each view's table is rebuilt (progress: one statement per view reports no rows)."""
    defs = view_defs(views)
    wanted = set(names or [v.name for v in defs])
    unknown = wanted - {v.name for v in defs}
    if unknown:
        raise ViewError(f"no view named {sorted(unknown)} (known: {[v.name for v in defs]})", view=min(unknown))
    d = dialect_for(target.dialect)
    cur = target.cursor()
    build.fingerprints(cur, d, defs)  # creates the registry when missing
    done = [(v, "rebuild") for v in defs if v.name in wanted]
    for view, _ in done:
        check_reads(cur, d, view)
    for view, _ in done:
        build.create_view_table(cur, view, d)
        if on_view is not None:
            on_view(view.name)
    build.record(cur, d, done, batch_id, last_sequence)
    return [v.name for v, _ in done]


def after_schema(target: Any, views: Iterable[dict[str, Any]] | None, tables: Iterable[str], batch_id: int,
                 sequence: int, ddl: str | None) -> ViewError | None:
    """After a SCHEMA barrier that touched target ``tables``: rebuild each built view over them whose definition
    still reads only what the target has; mark every view that reads a missing table or column stopped and
    return the error naming the first (the caller commits the DDL, then raises it). None: every view goes on."""
    defs = view_defs(views)
    if not defs:
        return None
    touched = {_bare(t) for t in tables if t}
    d = dialect_for(target.dialect)
    cur = target.cursor()
    prints = build.fingerprints(cur, d, defs)  # creates the registry when missing
    rebuilt, stopped, error = [], [], None
    for view in defs:
        if prints[view.name] != view.fingerprint or not touched & {_bare(t) for _, t in view.tables}:
            continue  # not built yet (its first batch builds it) or not over a changed table
        missing = build.missing_reads(cur, d, view)
        if missing:
            stopped.append((view, "stopped"))
            error = error or _stopped_error(cur, d, view, missing, sequence, ddl)
            continue
        build.create_view_table(cur, view, d)  # the base tables' new shape: new column types, new rows
        rebuilt.append((view, "rebuild"))
    build.record(cur, d, rebuilt, batch_id, sequence)
    build.record(cur, d, stopped, batch_id, sequence)
    return error


def check_reads(cur: Any, d: Dialect, view: ViewDef) -> None:
    """Raise the named ViewError when the view reads a table or column its base tables lack."""
    missing = build.missing_reads(cur, d, view)
    if missing:
        table, column = missing[0]
        what = f"table {table!r}, which the target does not have" if column is None else \
            f"column {column!r} of table {table!r}, which that table does not have"
        raise ViewError(f"view {view.name!r} reads {what} (dropped or renamed by a schema change?); the view "
                        f"cannot be built. Way back: {_WAY_BACK.format(view=view.name, table=table)}",
                        view=view.name, table=table, column=column)


_WAY_BACK = ("edit the view's definition (apply[].views in the config) to read what {table} has now, then run "
             "`cdc views rebuild --config <file> --view {view}` and restart `cdc apply`")


def _stopped_error(cur: Any, d: Dialect, view: ViewDef, missing: list[tuple[str, str | None]], sequence: int,
                   ddl: str | None) -> ViewError:
    table, column = missing[0]
    what = f"table {table!r}, which the schema change dropped or renamed" if column is None else \
        f"column {column!r} of table {table!r}, which the schema change dropped or renamed"
    return ViewError(f"maintained view {view.name!r} is stopped: it reads {what} (statement: {ddl}, at sequence "
                     f"{sequence}). The base tables are applied up to and including that statement; the view keeps "
                     f"its rows as of just before it, and the apply stops until the view is fixed. Way back: "
                     f"{_WAY_BACK.format(view=view.name, table=table)}", view=view.name, table=table, column=column,
                     sequence=sequence, ddl=ddl)


def _bare(table: str) -> str:
    return table.split(".")[-1].lower()


def _normalise(deltas: Mapping[str, TableDelta]) -> dict[str, TableDelta]:
    """Index deltas by exact, lower-case and unqualified table name."""
    out: dict[str, TableDelta] = {}
    for name, delta in deltas.items():
        for k in (name.split(".")[-1].lower(), name.lower(), name):
            out[k] = delta
    return out


def _apply_delta(cur: Any, d: Dialect, view: ViewDef, tables: dict[str, TableDelta], drop_after: bool = False) -> None:
    changed = {}
    for alias, table in view.tables:
        delta = tables.get(table) or tables.get(table.lower()) or tables.get(table.split(".")[-1].lower())
        if delta:
            changed[alias] = delta
    if not changed:
        return
    plan = DeltaPlan(view, d, prefix=f"__cdcv_{view.fingerprint[:10]}")
    # MySQL's temporary tables outlive a rolled-back batch; PostgreSQL drops them at commit or
    # rollback (ON COMMIT DROP), DuckDB replaces them (CREATE OR REPLACE)
    scratch = plan.scratch(list(changed)) if d.temp_outlives_rollback else []
    for name in scratch:
        cur.execute(d.drop_temp(name))
    try:
        for alias, delta in changed.items():
            table, ddl, cols = plan.create_delta(alias)
            cur.execute(ddl)
            if d.columnar_load:  # column-wise into Arrow: no row tuples
                d.load_columns(cur, table, [*cols, "__w"], _signed_columns(view, alias, cols, delta))
            else:
                d.load(cur, table, [*cols, "__w"], _signed_rows(view, alias, cols, delta))
            if len(delta) <= 5000:  # PostgreSQL stats: memoized index probes
                d.analyze(cur, d.q(table))
        first, raw = plan.derive(list(changed))
        for sql in first:
            cur.execute(sql)
        if not plan.minmax:  # fold and merge in one go (PostgreSQL: one statement)
            plan.merge(cur, f"({plan.fold_select(raw)})")
            return
        cur.execute(plan.fold(raw))
        cur.execute(plan.recompute_set())
        plan.merge(cur)
        plan.recompute_groups(cur)
    finally:
        for name in scratch or (plan.scratch(list(changed)) if d.drop_scratch_after or drop_after else []):
            try:
                cur.execute(d.drop_temp(name))
            except Exception:  # noqa: BLE001 - the transaction is failing anyway; the engine rolls it back
                break


def _signed_rows(view: ViewDef, alias: str, cols: list[str], delta: TableDelta) -> list[tuple]:
    """(values of the columns the view reads..., weight): -1 per before-image, +1 per after-image.
    Pairs that cancel (an update of columns the view does not read) are left to the SQL fold,
    where they add up to nothing: cheaper than netting them here."""
    get = itemgetter(*cols)
    key = (lambda row: (get(row),)) if len(cols) == 1 else get
    try:
        return [(*v, -1) for v in map(key, delta.deleted)] + [(*v, 1) for v in map(key, delta.inserted)]
    except KeyError:
        return ([(*_lenient(view, alias, cols, r), -1) for r in delta.deleted]
                + [(*_lenient(view, alias, cols, r), 1) for r in delta.inserted])


def _signed_columns(view: ViewDef, alias: str, cols: list[str], delta: TableDelta) -> list[list]:
    """``_signed_rows`` transposed: one list per column, the weights last."""
    try:
        out = [[*map(get, delta.deleted), *map(get, delta.inserted)] for get in map(itemgetter, cols)]
    except KeyError:
        return [list(c) for c in zip(*_signed_rows(view, alias, cols, delta))]
    return [*out, [-1] * len(delta.deleted) + [1] * len(delta.inserted)]


def _lenient(view: ViewDef, alias: str, cols: list[str], row: dict) -> tuple:
    lower = {k.lower(): v for k, v in row.items()}
    missing = [c for c in cols if c not in row and c.lower() not in lower]
    if missing:
        raise ViewError(f"view {view.name!r}: a change to table {view.table_of(alias)!r} lacks column "
                        f"{missing[0]!r} the view reads", view=view.name, table=view.table_of(alias),
                        column=missing[0], value=row)
    return tuple(row[c] if c in row else lower[c.lower()] for c in cols)
