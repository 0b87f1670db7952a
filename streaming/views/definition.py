"""View definitions: the YAML form or the SQL subset, validated into ``ViewDef``.

In ``apply[].views`` of the config, each view is a mapping, either::

    - name: sales_by_region
      sql: >
        SELECT c.region, COUNT(*) AS orders, SUM(o.amount) AS total
        FROM orders o JOIN customers c ON o.customer_id = c.id
        WHERE o.status = 'paid' GROUP BY c.region

or the same in parts::

    - name: sales_by_region
      from: [orders o, customers c]          # or {o: orders, c: customers}
      join: [o.customer_id = c.id]
      where: [o.status = 'paid']             # AND of simple conditions
      group_by: [c.region]
      select: [c.region, COUNT(*) AS orders, SUM(o.amount) AS total]

Supported: up to four tables, inner equi-joins that connect them all,
conjunctive selections, GROUP BY, COUNT(*)/COUNT/SUM/MIN/MAX/AVG of a
column. A view without aggregates keeps one row per distinct output tuple
with its multiplicity in ``__count``. Errors name the view and the
unsupported construct.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cdc.config.models import ViewConfig
from streaming.views.errors import ViewDefinitionError
from streaming.views.sqlparse import Col, Cond, Item, Lit, parse_fragment, parse_select

MAX_TABLES = 4
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,47}$")
_YAML_KEYS = {"name", "sql", "select", "from", "join", "where", "group_by"}


@dataclass(frozen=True)
class Output:
    """A visible view column: a grouping/projected column (func None) or an aggregate."""

    name: str
    func: str | None  # count, sum, min, max, avg
    arg: Col | None  # None only for COUNT(*)


@dataclass(frozen=True)
class ViewDef:
    name: str
    tables: tuple[tuple[str, str], ...]  # (alias, table)
    joins: tuple[tuple[Col, Col], ...]
    filters: tuple[Cond, ...]
    group_by: tuple[Col, ...]
    outputs: tuple[Output, ...]

    @property
    def aggregate(self) -> bool:
        return any(o.func for o in self.outputs)

    @property
    def keys(self) -> tuple[tuple[str, Col], ...]:
        """(view column, base column) of the row key: the GROUP BY columns, or every
        output of a view without aggregates and GROUP BY. Unselected GROUP BY columns
        are kept as hidden ``__g<i>`` columns."""
        if not self.group_by:
            return tuple((o.name, o.arg) for o in self.outputs if not self.aggregate)
        named = {o.arg: o.name for o in self.outputs if o.func is None}
        return tuple((named.get(g, f"__g{i}"), g) for i, g in enumerate(self.group_by))

    @property
    def aggs(self) -> tuple[tuple[int, Output], ...]:
        return tuple((i, o) for i, o in enumerate(self.outputs) if o.func)

    @property
    def atoms(self) -> tuple[Col, ...]:
        """Distinct base columns a derivation contributes: keys then aggregate arguments."""
        seen: dict[Col, None] = {}
        for _, c in self.keys:
            seen.setdefault(c)
        for _, o in self.aggs:
            if o.arg is not None:
                seen.setdefault(o.arg)
        return tuple(seen)

    def columns_of(self, alias: str) -> list[str]:
        """Every column of ``alias`` the view reads (joins, filters, keys, arguments)."""
        cols = {c.name for c in self.atoms if c.alias == alias}
        for a, b in self.joins:
            cols.update(c.name for c in (a, b) if c.alias == alias)
        for f in self.filters:
            cols.update(c.name for c in (f.left, f.right) if isinstance(c, Col) and c.alias == alias)
        return sorted(cols)

    def table_of(self, alias: str) -> str:
        return dict(self.tables)[alias]

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(repr(self).encode()).hexdigest()[:16]


def view_mappings(raw: Iterable[ViewConfig | dict[str, Any]] | None) -> list[dict[str, Any]]:
    """``apply[].views`` (cdc.config.models.ViewConfig, or mappings as written) as mappings."""
    return [v.as_mapping() if isinstance(v, ViewConfig) else v for v in raw or []]


def parse_views(raw: Iterable[ViewConfig | dict[str, Any]] | None) -> list[ViewDef]:
    """Validate every view of one apply job; names must be unique."""
    views: list[ViewDef] = []
    for i, entry in enumerate(view_mappings(raw)):
        v = parse_view(entry, position=i)
        if any(v.name == w.name for w in views):
            raise ViewDefinitionError(f"view {v.name!r} is defined twice", view=v.name)
        views.append(v)
    return views


def parse_view(entry: dict[str, Any], position: int = 0) -> ViewDef:
    """One view from its config mapping; raises ViewDefinitionError."""
    if not isinstance(entry, dict):
        raise ViewDefinitionError(f"views[{position}] must be a mapping, got {type(entry).__name__}",
                                  view=None, key=f"views[{position}]")
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ViewDefinitionError(f"views[{position}].name must be an identifier of at most 48 characters "
                                  f"(got {name!r})", view=name, key=f"views[{position}].name")
    unknown = set(entry) - _YAML_KEYS
    if unknown:
        raise ViewDefinitionError(f"view {name!r}: unknown keys {sorted(unknown)} (known: {sorted(_YAML_KEYS)})",
                                  view=name, construct=min(unknown))
    if "sql" in entry:
        if set(entry) - {"name", "sql"}:
            raise ViewDefinitionError(f"view {name!r}: give either sql or select/from/..., not both", view=name)
        tree = parse_select(str(entry["sql"]), name)
    else:
        tree = _parse_parts(entry, name)
    return _resolve(name, tree)


def _as_list(value: Any) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _parse_parts(entry: dict[str, Any], view: str) -> dict:
    for key in ("select", "from"):
        if not entry.get(key):
            raise ViewDefinitionError(f"view {view!r}: key {key!r} is required (or give sql)", view=view, key=key)
    frm = entry["from"]
    if isinstance(frm, dict):
        tables = [(str(a), str(t)) for a, t in frm.items()]
    else:
        tables = [parse_fragment(t, view, "from", "table_ref") for t in _as_list(frm)]
    conds: list[Cond] = []
    for key in ("join", "where"):
        for text in _as_list(entry.get(key)):
            conds.extend(parse_fragment_conds(text, view, key))
    return {
        "items": [parse_fragment(s, view, "select", "item") for s in _as_list(entry["select"])],
        "tables": tables,
        "conds": conds,
        "group_by": [parse_fragment(g, view, "group_by", "col") for g in _as_list(entry.get("group_by"))],
    }


def parse_fragment_conds(text: str, view: str, what: str) -> list[Cond]:
    return parse_fragment(text, view, what, "conds")


def _resolve(view: str, tree: dict) -> ViewDef:
    def fail(msg: str, construct: str | None = None):
        raise ViewDefinitionError(f"view {view!r}: {msg}", view=view, construct=construct)

    tables = tree["tables"]
    if len(tables) > MAX_TABLES:
        fail(f"joins {len(tables)} tables; at most {MAX_TABLES} are supported", construct="more than 4 tables")
    aliases = [a for a, _ in tables]
    if len(set(aliases)) != len(aliases):
        fail(f"alias used twice in FROM: {aliases}", construct="duplicate alias")

    def col(c: Col) -> Col:
        if c.alias is None:
            if len(aliases) > 1:
                fail(f"column {c.name!r} must be qualified (alias.column) in a view over several tables")
            return Col(aliases[0], c.name)
        if c.alias not in aliases:
            fail(f"column {c} names unknown table alias {c.alias!r} (known: {aliases})")
        return c

    joins, filters = [], []
    for cond in tree["conds"]:
        left = col(cond.left)
        right = col(cond.right) if isinstance(cond.right, Col) else cond.right
        if isinstance(right, Col) and right.alias != left.alias:
            if cond.op != "=":
                fail(f"join condition {left} {cond.op} {right} is not an equi-join", construct="non-equi join")
            joins.append((left, right))
        else:
            filters.append(Cond(left, cond.op, right))
    _check_connected(aliases, joins, fail)

    outputs: list[Output] = []
    for item in tree["items"]:
        outputs.append(_output(item, col, fail))
    names = [o.name for o in outputs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        fail(f"output column names must be unique; repeated: {sorted(dup)} (use AS)", construct="duplicate name")
    group_by = tuple(dict.fromkeys(col(g) for g in tree["group_by"]))
    aggregate = any(o.func for o in outputs)
    if aggregate or group_by:
        for o in outputs:
            if o.func is None and o.arg not in group_by:
                fail(f"column {o.arg} is selected but not in GROUP BY", construct="ungrouped column")
    return ViewDef(view, tuple(tables), tuple(joins), tuple(filters), group_by, tuple(outputs))


def _output(item: Item, col, fail) -> Output:
    arg = col(item.arg) if item.arg is not None else None
    if item.func is None:
        name = item.name or arg.name
    else:
        name = item.name or (item.func if arg is None else f"{item.func}_{arg.name}")
    if not _NAME.match(name) or name.startswith("__") or name.lower() == "__count":
        fail(f"output name {name!r} must be an identifier not starting with '__'", construct="output name")
    return Output(name, item.func, arg)


def _check_connected(aliases: list[str], joins: list[tuple[Col, Col]], fail) -> None:
    parent = {a: a for a in aliases}

    def find(a: str) -> str:
        while parent[a] != a:
            a = parent[a]
        return a

    for left, right in joins:
        parent[find(left.alias)] = find(right.alias)
    roots = {find(a) for a in aliases}
    if len(roots) > 1:
        fail(f"tables {aliases} are not all connected by equi-join conditions (cross products are not "
             "supported)", construct="cross join")


__all__ = ["Col", "Cond", "Lit", "Output", "ViewDef", "parse_view", "parse_views"]
