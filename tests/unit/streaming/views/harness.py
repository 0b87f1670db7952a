"""Shared harness for the view property tests (DuckDB here, PostgreSQL in integration).

It plays the apply engine: keeps the base tables as a Python model, applies a
batch of row changes to the model and to the target, reduces the batch to
its net effect per key (``TableDelta``), calls ``maintain`` in the same
transaction, commits. ``oracle`` evaluates a ViewDef on the model in plain
Python (nested loops), independently of the SQL under test.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from itertools import product
from typing import Any

from hypothesis import strategies as st

from streaming.apply.table_delta import TableDelta
from streaming.views import maintainer
from streaming.views.definition import ViewDef
from streaming.views.sqlparse import Col, Lit

SCHEMA = {
    "r": {"id": "INTEGER PRIMARY KEY", "k": "INTEGER", "g": "INTEGER", "v": "INTEGER"},
    "s": {"id": "INTEGER PRIMARY KEY", "k": "INTEGER", "m": "INTEGER", "x": "INTEGER"},
    "t": {"id": "INTEGER PRIMARY KEY", "m": "INTEGER", "h": "VARCHAR(8)", "y": "INTEGER"},
    "u": {"id": "INTEGER PRIMARY KEY", "h": "VARCHAR(8)", "z": "INTEGER"},
}

VIEWS = [
    {"name": "v_spj", "sql": "SELECT r.g, s.x FROM r JOIN s ON r.k = s.k WHERE r.v > -3"},
    {"name": "v_agg2", "sql": "SELECT r.g, COUNT(*) AS n, SUM(s.x) AS sx, AVG(r.v) AS av, MIN(s.x) AS mn, "
                              "MAX(r.v) AS mx, COUNT(s.x) AS cx FROM r JOIN s ON r.k = s.k GROUP BY r.g"},
    {"name": "v_agg3", "from": ["r", "s", "t"], "join": ["r.k = s.k", "s.m = t.m"], "where": "t.y >= 0",
     "group_by": ["t.h"], "select": ["t.h", "COUNT(*) AS n", "SUM(r.v) AS sv", "MIN(r.v) AS mn", "MAX(s.x) AS mx"]},
    {"name": "v_agg4", "sql": "SELECT u.z, r.g, COUNT(*) AS n, MAX(t.y) AS my, MIN(s.x) AS mnx, AVG(u.z) AS az "
                              "FROM r JOIN s ON r.k = s.k JOIN t ON s.m = t.m JOIN u ON t.h = u.h "
                              "WHERE u.h <> 'c' GROUP BY u.z, r.g, s.k"},
    {"name": "v_global", "sql": "SELECT COUNT(*) AS n, SUM(v) AS sv, MIN(v) AS mn, MAX(v) AS mx FROM r"},
    {"name": "v_count", "sql": "SELECT COUNT(*) AS n FROM r WHERE r.v IS NOT NULL AND r.g <> 1"},
]

_small = st.one_of(st.none(), st.integers(0, 2))
VALUES = {
    "r": {"k": _small, "g": _small, "v": st.one_of(st.none(), st.integers(-5, 5))},
    "s": {"k": _small, "m": _small, "x": st.one_of(st.none(), st.integers(-3, 3))},
    "t": {"m": _small, "h": st.sampled_from([None, "a", "b", "c"]), "y": st.integers(-2, 4)},
    "u": {"h": st.sampled_from([None, "a", "b", "c"]), "z": st.integers(0, 3)},
}
IDS = st.integers(0, 9)


def row_of(table: str) -> st.SearchStrategy:
    return st.fixed_dictionaries(VALUES[table])


op = st.one_of(
    st.tuples(st.just("upsert"), st.sampled_from(sorted(SCHEMA)), IDS, st.none()).flatmap(
        lambda t: st.tuples(st.just(t[0]), st.just(t[1]), st.just(t[2]), row_of(t[1]))),
    st.tuples(st.just("delete"), st.sampled_from(sorted(SCHEMA)), IDS, st.none()),
    st.tuples(st.just("rekey"), st.sampled_from(sorted(SCHEMA)), IDS, IDS),
)
initial = st.fixed_dictionaries({t: st.dictionaries(IDS, row_of(t), max_size=6) for t in SCHEMA})
batches = st.lists(st.lists(op, max_size=10), min_size=1, max_size=4)


class Harness:
    def __init__(self, target, views=VIEWS, param: str = "?") -> None:
        self.target, self.views, self.param = target, views, param
        self.state: dict[str, dict[int, dict]] = {t: {} for t in SCHEMA}
        self.batch_id = 0

    def setup(self, init: dict[str, dict[int, dict]]) -> None:
        self.target.begin()
        cur = self.target.cursor()
        for t, cols in SCHEMA.items():
            cur.execute(f"DROP TABLE IF EXISTS {t}")
            cur.execute(f"CREATE TABLE {t} ({', '.join(f'{c} {ty}' for c, ty in cols.items())})")
            for pk, vals in init.get(t, {}).items():
                self._insert(cur, t, {"id": pk, **vals})
                self.state[t][pk] = {"id": pk, **vals}
        self.target.commit()
        self.target.begin()
        maintainer.prepare(self.target, self.views)  # the initial build from the "snapshot"
        self.target.commit()

    def _insert(self, cur, table: str, row: dict) -> None:
        cols = list(SCHEMA[table])
        marks = ", ".join([self.param] * len(cols))
        cur.execute(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks})", [row[c] for c in cols])

    def run_batch(self, ops: list[tuple]) -> dict[str, TableDelta]:
        before = {t: dict(rows) for t, rows in self.state.items()}
        for kind, table, pk, arg in ops:
            rows = self.state[table]
            if kind == "upsert":
                rows[pk] = {"id": pk, **arg}
            elif kind == "delete":
                rows.pop(pk, None)
            elif pk in rows and arg not in rows:  # rekey: the primary key changes
                rows[arg] = {**rows.pop(pk), "id": arg}
        deltas = {}
        for t in SCHEMA:
            deleted, inserted = [], []
            for pk in before[t].keys() | self.state[t].keys():
                old, new = before[t].get(pk), self.state[t].get(pk)
                if old != new:
                    deleted += [old] if old else []
                    inserted += [new] if new else []
            if deleted or inserted:
                deltas[t] = TableDelta(deleted=deleted, inserted=inserted)
        self.batch_id += 1
        self.target.begin()
        cur = self.target.cursor()
        for t, delta in deltas.items():
            for row in delta.deleted:
                cur.execute(f"DELETE FROM {t} WHERE id = {self.param}", [row["id"]])
            for row in delta.inserted:
                self._insert(cur, t, row)
        modes = maintainer.maintain(self.target, deltas, self.batch_id, views=self.views,
                                    last_sequence=self.batch_id * 10)
        assert set(modes.values()) == {"incremental"}, modes  # maintained, not rebuilt
        self.target.commit()
        return deltas

    def view_rows(self, view: ViewDef) -> Counter:
        cur = self.target.cursor()
        cols = ", ".join([o.name for o in view.outputs] + ["__count"])
        cur.execute(f"SELECT {cols} FROM {view.name}")
        return Counter(tuple(norm(v) for v in row) for row in cur.fetchall())

    def recomputed_rows(self, view: ViewDef) -> Counter:
        """The view's from-scratch SQL on the target's base tables."""
        from streaming.views.build import build_select
        from streaming.views.dialect import dialect_for

        cur = self.target.cursor()
        cols = ", ".join([o.name for o in view.outputs] + ["__count"])
        cur.execute(f"SELECT {cols} FROM ({build_select(view, dialect_for(self.target.dialect))}) q")
        return Counter(tuple(norm(v) for v in row) for row in cur.fetchall())


def norm(v: Any) -> Any:
    if isinstance(v, (float, Decimal)):
        return round(float(v), 6)
    return v


def _lit(lit: Lit) -> Any:
    s = lit.sql
    return s[1:-1].replace("''", "'") if s.startswith("'") else float(s)


def _cmp(a: Any, op: str, b: Any) -> bool:
    if a is None or b is None:
        return False
    return {"=": a == b, "<>": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def oracle(view: ViewDef, state: dict[str, dict[int, dict]]) -> Counter:
    """The view evaluated in Python: visible columns plus the derivation count."""
    aliases = [a for a, _ in view.tables]
    groups: dict[tuple, list[dict]] = {}
    for combo in product(*(list(state[t].values()) for _, t in view.tables)):
        env = dict(zip(aliases, combo))

        def val(c: Col, env: dict = env) -> Any:
            return env[c.alias][c.name]

        if not all(_cmp(val(a), "=", val(b)) for a, b in view.joins):
            continue
        ok = True
        for f in view.filters:
            left = val(f.left)
            if f.op in ("IS NULL", "IS NOT NULL"):
                ok &= (left is None) == (f.op == "IS NULL")
            else:
                ok &= _cmp(left, f.op, val(f.right) if isinstance(f.right, Col) else _lit(f.right))
        if ok:
            groups.setdefault(tuple(val(c) for _, c in view.keys), []).append(env)
    out: Counter = Counter()
    for key, envs in groups.items():
        keyed = dict(zip([c for _, c in view.keys], key))
        row = [_aggregate(o, envs, keyed) for o in view.outputs]
        out[tuple(norm(v) for v in row) + (len(envs),)] += 1
    return out


def _aggregate(o, envs: list[dict], keyed: dict) -> Any:
    if o.func is None:
        return keyed[o.arg]
    if o.arg is None:
        return len(envs)
    nn = [x for x in (e[o.arg.alias][o.arg.name] for e in envs) if x is not None]
    if o.func == "count":
        return len(nn)
    if not nn:
        return None
    return {"sum": sum(nn), "min": min(nn), "max": max(nn), "avg": sum(nn) / len(nn)}[o.func]
