"""The delta rules of the counting model, as SQL run inside the target transaction.

Each base table's batch delta is loaded into a scratch table ``D`` with a
weight column ``__w``: -1 for a before-image (deleted/replaced row), +1 for
an after-image. So ``D = New - Old`` as signed multisets and ``Old = New - D``.
When ``maintain`` runs, the base tables already hold ``New``. Expanding

    dV = V(New_1..New_n) - V(Old_1..Old_n),   Old_j = New_j - D_j

by inclusion-exclusion gives the exact delta-join rule (seed 001, eq. 1):

    dV = SUM over non-empty S of {1..n}:  (-1)^(|S|+1)  JOIN_{j in S} D_j  JOIN_{j not in S} New_j

with the weight of a joined row the product of its D weights. Terms whose S
holds a table that did not change are empty and skipped; the ``|S| = 1``
terms join a small delta to indexed base tables, the others join deltas
only. This is exact for any batch touching several tables at once.

The signed rows are netted per view tuple (so a derivation that appears and
disappears in one batch leaves nothing), then folded per view row key into
``__count``/``__nn``/``SUM`` deltas and the MIN/MAX of inserted and deleted
values. Merge: every touched row is rewritten as old + delta; rows at count
0 disappear; a negative count means the view was out of sync
(ViewInconsistent). A group whose deleted value held its MIN or MAX is
recomputed from the base tables (only those groups).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

from streaming.views.build import build_select, col_sql, from_where, layout
from streaming.views.definition import ViewDef
from streaming.views.dialect import Dialect
from streaming.views.errors import ViewInconsistent


class DeltaPlan:
    """The statements that maintain one view for one batch, with scratch names under ``prefix``."""

    def __init__(self, view: ViewDef, d: Dialect, prefix: str) -> None:
        self.view, self.d, self.prefix = view, d, prefix
        self.atoms = view.atoms
        self.atom_index = {c: i for i, c in enumerate(self.atoms)}
        # a view of COUNT(*) alone has no atoms: derivations are netted under one constant
        self.atom_sql = [col_sql(d, c) for c in self.atoms] or ["1"]
        self.minmax = [(i, o) for i, o in view.aggs if o.func in ("min", "max")]

    def name(self, what: str) -> str:
        return f"{self.prefix}_{what}"

    def scratch(self, changed: list[str]) -> list[str]:
        """The scratch tables maintaining this view creates (not on PostgreSQL, where
        they are dropped at commit and the merge needs no ``nw``)."""
        made = [f"d_{a}" for a in changed] + (["raw"] if self.d.temp_read_once else [])
        made += ["dv", "rc", "nw"] if self.minmax else ["nw"]
        return [self.name(w) for w in made]

    # -- 1. deltas and the signed derivations ------------------------------
    def create_delta(self, alias: str) -> tuple[str, str, list[str]]:
        d, cols = self.d, self.view.columns_of(alias)
        sel = ", ".join([d.q(c) for c in cols] + ["0 AS __w"])
        table = self.name(f"d_{alias}")
        return table, d.create_temp(table, f"SELECT {sel} FROM {d.q(self.view.table_of(alias))} WHERE 1=0"), cols

    def create_raw(self) -> str:
        frm, _ = from_where(self.view, self.d)
        atoms = ", ".join(f"{e} AS a{i}" for i, e in enumerate(self.atom_sql))
        return self.d.create_temp(self.name("raw"), f"SELECT {atoms}, 0 AS __w FROM {frm} WHERE 1=0")

    def term_selects(self, changed: list[str]) -> list[str]:
        """One SELECT per non-empty subset S of the changed aliases (see module doc)."""
        d, out = self.d, []
        atoms = ", ".join(f"{e} AS a{i}" for i, e in enumerate(self.atom_sql))
        for size in range(1, len(changed) + 1):
            for subset in combinations(changed, size):
                sign = "1" if size % 2 else "-1"
                weight = " * ".join([sign] + [f"{d.q(a)}.__w" for a in subset])
                frm, where = from_where(self.view, d, {a: self.name(f"d_{a}") for a in subset})
                sql = f"SELECT {atoms}, {weight} AS __w FROM {frm}"
                out.append(sql + (" WHERE " + " AND ".join(where) if where else ""))
        return out

    def union(self, changed: list[str]) -> str:
        """All signed derivations as one derived table (not on MySQL, see ``derive``)."""
        return f"({' UNION ALL '.join(self.term_selects(changed))})"

    def derive(self, changed: list[str]) -> tuple[list[str], str]:
        """(statements to run first, the signed derivations to fold). PostgreSQL and DuckDB
        read them in the statement that folds them; MySQL cannot read a temporary table
        twice in one statement, so there each term is its own INSERT into a ``raw`` table."""
        if not self.d.temp_read_once:
            return [], self.union(changed)
        cols = ", ".join([f"a{i}" for i in range(len(self.atom_sql))] + ["__w"])
        raw = self.d.q(self.name("raw"))
        inserts = [f"INSERT INTO {raw} ({cols}) {sql}" for sql in self.term_selects(changed)]
        return [self.create_raw(), *inserts], raw

    # -- 2. net per view tuple, fold per view row --------------------------
    def fold(self, raw: str) -> str:
        """Materialise the folded delta as ``dv`` (needed by the MIN/MAX recompute set)."""
        return self.d.create_temp(self.name("dv"), self.fold_select(raw))

    def fold_select(self, raw: str) -> str:
        """The folded delta: one row per touched view row key (``__key``, ``k<j>``, ``d_*``)."""
        d, v = self.d, self.view
        a = [f"a{i}" for i in range(len(self.atom_sql))]
        keys = [f"a{self.atom_index[c]}" for _, c in v.keys]
        sel = [f"{d.key_expr(keys)} AS __key"] + [f"{k} AS k{j}" for j, k in enumerate(keys)]
        sel.append("SUM(w) AS d_count")
        for i, o in v.aggs:
            if o.arg is None:
                continue
            x = f"a{self.atom_index[o.arg]}"
            sel.append(f"SUM(CASE WHEN {x} IS NOT NULL THEN w ELSE 0 END) AS d_nn_{i}")
            if o.func in ("sum", "avg"):
                sel.append(f"SUM(w * {x}) AS d_sum_{i}")
            elif o.func in ("min", "max"):
                sel.append(f"{o.func.upper()}(CASE WHEN w > 0 THEN {x} END) AS d_ins_{i}")
                sel.append(f"{o.func.upper()}(CASE WHEN w < 0 THEN {x} END) AS d_del_{i}")
        if self.minmax:  # MIN/MAX must see only tuples that really came or went
            net = (f"(SELECT {', '.join(a)}, SUM(__w) AS w FROM {raw} r__ "
                   f"GROUP BY {', '.join(a)} HAVING SUM(__w) <> 0)")
        else:  # COUNT/SUM are linear: cancelling derivations add up to zero without netting
            net = f"(SELECT {', '.join(a)}, __w AS w FROM {raw} r__)"
        sql = f"SELECT {', '.join(sel)} FROM {net} n"
        if keys:
            sql += " GROUP BY " + ", ".join(keys)
        return sql + " HAVING COUNT(*) > 0"

    # -- 3. merge into the view table ---------------------------------------
    def recompute_set(self) -> str | None:
        """Touched groups whose deleted value held the MIN/MAX: recomputed later."""
        if not self.minmax:
            return None
        d, conds = self.d, []
        for i, o in self.minmax:
            cur, dele = f"v.{d.q(o.name)}", f"d.d_del_{i}"
            cmp = "<=" if o.func == "min" else ">="
            conds.append(f"({dele} IS NOT NULL AND ({cur} IS NULL OR {dele} {cmp} {cur}))")
        keys = ", ".join(f"d.k{j}" for j in range(len(self.view.keys)))
        sel = "d.__key" + (f", {keys}" if keys else "")
        return d.create_temp(self.name("rc"), f"SELECT {sel} FROM {d.q(self.name('dv'))} d JOIN "
                             f"{d.q(self.view.name)} v ON v.__key = d.__key WHERE {' OR '.join(conds)}")

    def new_rows(self, dv: str | None = None) -> str:
        """Old + delta for every touched view row key, in ``layout`` order, then ``__old``
        (the row exists). ``dv``: the folded delta's table, CTE or ``(SELECT ...)``."""
        d, v = self.d, self.view
        q = d.q
        exprs: dict[str, str] = {}
        for j, (name, _) in enumerate(v.keys):
            exprs[name] = f"d.k{j}"
        exprs["__key"] = "d.__key"
        exprs["__count"] = "COALESCE(v.__count, 0) + d.d_count"
        for i, o in v.aggs:
            if o.arg is None:
                exprs[o.name] = exprs["__count"]
                continue
            nn = f"(COALESCE(v.{q(f'__nn_{i}')}, 0) + d.d_nn_{i})"
            exprs[f"__nn_{i}"] = nn
            old = f"v.{q(o.name)}"
            if o.func == "count":
                exprs[o.name] = nn
            elif o.func == "sum":
                exprs[o.name] = f"CASE WHEN {nn} = 0 THEN NULL ELSE COALESCE({old}, 0) + COALESCE(d.d_sum_{i}, 0) END"
            elif o.func == "avg":
                total = f"(COALESCE(v.{q(f'__sum_{i}')}, 0) + COALESCE(d.d_sum_{i}, 0))"
                exprs[f"__sum_{i}"] = f"CASE WHEN {nn} = 0 THEN NULL ELSE {total} END"
                exprs[o.name] = f"CASE WHEN {nn} = 0 THEN NULL ELSE {d.avg(total, nn)} END"
            else:
                ins, better = f"d.d_ins_{i}", "<=" if o.func == "min" else ">="
                exprs[o.name] = (f"CASE WHEN {nn} = 0 THEN NULL WHEN {old} IS NULL THEN {ins} "
                                 f"WHEN {ins} IS NULL OR {old} {better} {ins} THEN {old} ELSE {ins} END")
        cols = layout(v)
        sel = ", ".join(f"{exprs[c]} AS {q(c)}" for c in cols)
        dv = dv or q(self.name("dv"))
        return f"SELECT {sel}, v.__key IS NOT NULL AS __old FROM {dv} d LEFT JOIN {q(v.name)} v ON v.__key = d.__key"

    def merge_statement(self, dv: str) -> str:
        """PostgreSQL: the whole merge in one statement (data-modifying CTEs on one snapshot):
        rows reaching count 0 go, the other touched rows are updated in place, new keys are
        inserted. ``dv``: the folded delta's table, or ``(SELECT ...)`` to fold inside the
        statement. Returns one row: how many view rows would get a negative count (the
        caller raises; its transaction is rolled back, so nothing of it is applied)."""
        q, v = self.d.q, self.view
        cols = layout(v)
        keys = {name for name, _ in v.keys}
        sets = ", ".join(f"{q(c)} = n.{q(c)}" for c in cols if c != "__key" and c not in keys)
        with_dv = f"dv AS MATERIALIZED {dv}, " if dv.startswith("(") else ""
        source = "dv" if with_dv else dv
        collist = ", ".join(q(c) for c in cols)
        return (f"WITH {with_dv}n AS MATERIALIZED ({self.new_rows(source)}), "
                f"del AS (DELETE FROM {q(v.name)} v USING n WHERE v.__key = n.__key AND n.__old AND n.__count = 0), "
                f"upd AS (UPDATE {q(v.name)} v SET {sets} FROM n WHERE v.__key = n.__key AND n.__old "
                "AND n.__count > 0), "
                f"ins AS (INSERT INTO {q(v.name)} ({collist}) SELECT {collist} FROM n "
                "WHERE NOT n.__old AND n.__count > 0) "
                "SELECT COUNT(*) FROM n WHERE n.__count < 0")

    def merge(self, cur: Any, dv: str | None = None) -> None:
        """Rewrite every touched view row as old + delta; rows reaching count 0 go.
        ``dv``: the folded delta as ``(SELECT ...)``, or None for the ``dv`` table.
        Raises ViewInconsistent when a count would go negative: before any change, except
        on PostgreSQL (after its one statement; the caller's transaction is rolled back)."""
        d, v = self.d, self.view
        q, cols = d.q, ", ".join(d.q(c) for c in layout(v))
        source = dv or q(self.name("dv"))
        if d.merge_in_one_statement:  # rows updated in place (fewer dead tuples than delete + insert)
            cur.execute(self.merge_statement(source))
            self._check(cur.fetchone()[0])
            return
        nw = q(self.name("nw"))
        cur.execute(d.create_temp(self.name("nw"), self.new_rows(source)))
        cur.execute(f"SELECT COUNT(*) FROM {nw} WHERE __count < 0")
        self._check(cur.fetchone()[0])
        if d.merge_in_place:  # an update leaves the __key index alone
            keys = {name for name, _ in v.keys}
            sets = ", ".join(f"{q(c)} = n.{q(c)}" for c in layout(v) if c != "__key" and c not in keys)
            cur.execute(f"UPDATE {q(v.name)} SET {sets} FROM {nw} n WHERE {q(v.name)}.__key = n.__key "
                        "AND n.__old AND n.__count > 0")
            cur.execute(f"DELETE FROM {q(v.name)} WHERE __key IN (SELECT __key FROM {nw} WHERE __old AND __count = 0)")
            cur.execute(f"INSERT INTO {q(v.name)} ({cols}) SELECT {cols} FROM {nw} WHERE NOT __old AND __count > 0")
            return
        cur.execute(f"DELETE FROM {q(v.name)} WHERE __key IN (SELECT __key FROM {nw} WHERE __old)")
        cur.execute(f"INSERT INTO {q(v.name)} ({cols}) SELECT {cols} FROM {nw} WHERE __count > 0")

    def _check(self, negative: int) -> None:
        if negative:
            raise ViewInconsistent(f"view {self.view.name!r}: {negative} rows would get a negative derivation count; "
                                   "the view is out of sync with its base tables (run `cdc views rebuild`)",
                                   view=self.view.name)

    def recompute_groups(self, cur: Any) -> int:
        """Replace the groups in the recompute set by their from-scratch rows."""
        d, v = self.d, self.view
        q, rc = d.q, d.q(self.name("rc"))
        cur.execute(f"SELECT COUNT(*) FROM {rc}")
        n = cur.fetchone()[0]
        if not n:
            return 0
        d.analyze(cur, rc)  # a few groups: let the planner probe indexes instead of scanning
        cols = ", ".join(q(c) for c in layout(v))
        cur.execute(f"DELETE FROM {q(v.name)} WHERE __key IN (SELECT __key FROM {rc})")
        keys = [(f"k{j}", col_sql(d, c)) for j, (_, c) in enumerate(v.keys)]
        if not keys:
            cur.execute(f"INSERT INTO {q(v.name)} ({cols}) {build_select(v, d)}")
            return n
        kl = ", ".join(k for k, _ in keys)
        not_null = " AND ".join(f"{k} IS NOT NULL" for k, _ in keys)
        some_null = " OR ".join(f"{k} IS NULL" for k, _ in keys)
        for filt, eq in ((not_null, lambda a, b: f"{a} = {b}"), (some_null, d.null_safe_eq)):
            sub = f"(SELECT DISTINCT {kl} FROM {rc} WHERE {filt}) r__"
            cond = [eq(f"r__.{k}", e) for k, e in keys]
            cur.execute(f"INSERT INTO {q(v.name)} ({cols}) {build_select(v, d, [sub], cond)}")
        return n
