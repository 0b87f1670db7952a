"""Parser for the SQL subset a maintained view may use.

Supported::

    SELECT item, ...            item: [alias.]col | COUNT(*) | COUNT|SUM|MIN|MAX|AVG([alias.]col)
                                      each optionally followed by [AS] name
    FROM table [AS] alias       then ", table alias" or "[INNER] JOIN table alias ON a.x = b.y [AND ...]"
    [WHERE cond AND cond ...]   cond: col op col|literal, col IS [NOT] NULL; op: = <> != < <= > >=
    [GROUP BY col, ...]

Anything else (OUTER joins, OR, subqueries, DISTINCT, HAVING, ORDER BY,
expressions, other functions...) raises ``ViewDefinitionError`` naming the
view and the construct. The parser only builds the syntax tree; the checks
that need the whole definition (aliases, grouping) live in ``definition``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from streaming.views.errors import ViewDefinitionError

AGGREGATES = ("COUNT", "SUM", "MIN", "MAX", "AVG")
OPERATORS = ("=", "<>", "!=", "<", "<=", ">", ">=")
_UNSUPPORTED = {
    "DISTINCT": "DISTINCT", "LEFT": "outer joins", "RIGHT": "outer joins", "FULL": "outer joins",
    "OUTER": "outer joins", "CROSS": "CROSS JOIN", "NATURAL": "NATURAL JOIN", "USING": "JOIN ... USING",
    "OR": "OR in conditions (only AND of simple conditions)", "HAVING": "HAVING", "ORDER": "ORDER BY",
    "LIMIT": "LIMIT", "UNION": "UNION", "INTERSECT": "INTERSECT", "EXCEPT": "EXCEPT", "WITH": "WITH (CTEs)",
    "OVER": "window functions", "CASE": "CASE expressions", "IN": "IN lists", "BETWEEN": "BETWEEN",
    "LIKE": "LIKE", "EXISTS": "EXISTS", "NOT": "NOT (other than IS NOT NULL)", "SELECT": "subqueries",
    "OFFSET": "OFFSET", "WINDOW": "WINDOW",
}
_KEYWORDS = {"SELECT", "FROM", "WHERE", "GROUP", "BY", "JOIN", "INNER", "ON", "AND", "AS", "IS", "NULL"}
_TOKEN = re.compile(r"""\s*(?:
    (?P<string>'(?:[^']|'')*')
  | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_$]*|"[^"]+"|`[^`]+`)
  | (?P<op><=|>=|<>|!=|=|<|>)
  | (?P<punct>[(),.*;\-+/%|])
)""", re.VERBOSE)


@dataclass(frozen=True)
class Col:
    """A column reference; ``alias`` is None until resolved (single-table views)."""

    alias: str | None
    name: str

    def __str__(self) -> str:
        return f"{self.alias}.{self.name}" if self.alias else self.name


@dataclass(frozen=True)
class Lit:
    """A literal, kept as SQL text (numbers, 'strings', TRUE/FALSE)."""

    sql: str


@dataclass(frozen=True)
class Item:
    """One SELECT item: a column (func None) or an aggregate (arg None = COUNT(*))."""

    func: str | None
    arg: Col | None
    name: str | None


@dataclass(frozen=True)
class Cond:
    """``left op right``; op ``IS NULL`` / ``IS NOT NULL`` has right None."""

    left: Col
    op: str
    right: Col | Lit | None


class Parser:
    """Recursive-descent parser over one text; ``what`` names it in errors."""

    def __init__(self, text: str, view: str, what: str) -> None:
        self.view, self.what, self.text = view, what, text
        self.toks: list[tuple[str, str]] = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                self.fail(f"unexpected character {text[pos:].lstrip()[:1]!r} at offset {pos}")
            kind = m.lastgroup
            self.toks.append((kind, m.group(kind)))
            pos = m.end()
        self.toks.append(("eof", ""))
        self.i = 0

    def fail(self, msg: str, construct: str | None = None):
        raise ViewDefinitionError(f"view {self.view!r}: {msg} in {self.what}: {self.text!r}",
                                  view=self.view, construct=construct)

    # -- token helpers ---------------------------------------------------
    def peek(self, k: int = 0) -> tuple[str, str]:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def word(self, k: int = 0) -> str:
        kind, val = self.peek(k)
        return val.upper() if kind == "ident" else val

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        self.i += 1
        return tok

    def accept(self, *words: str) -> bool:
        if self.word() in words and self.peek()[0] in ("ident", "punct", "op"):
            self.i += 1
            return True
        return False

    def expect(self, word: str) -> None:
        if not self.accept(word):
            self.unexpected(f"expected {word}")

    def unexpected(self, expectation: str):
        kind, val = self.peek()
        up = val.upper()
        if kind == "ident" and up in _UNSUPPORTED:
            self.fail(f"unsupported construct: {_UNSUPPORTED[up]}", construct=_UNSUPPORTED[up])
        if kind == "punct" and val in "+-/%|*":
            self.fail(f"expressions ({val!r}) are not supported: only columns and aggregates of a column",
                      construct="expression")
        if kind == "punct" and val == "(":
            self.fail("subqueries and parenthesised expressions are not supported", construct="subquery")
        self.fail(f"{expectation}, found {val or 'end of text'!r}")

    def ident(self) -> str:
        kind, val = self.peek()
        if kind != "ident" or (val.upper() in _KEYWORDS | set(_UNSUPPORTED)):
            self.unexpected("expected a name")
        self.i += 1
        return val[1:-1] if val[0] in '"`' else val

    def end(self) -> None:
        self.accept(";")
        if self.peek()[0] != "eof":
            self.unexpected("expected the end")

    # -- grammar ---------------------------------------------------------
    def col(self) -> Col:
        first = self.ident()
        if self.accept("."):
            return Col(first, self.ident())
        return Col(None, first)

    def item(self) -> Item:
        if self.word() == "*" or (self.peek(1)[1] == "." and self.peek(2)[1] == "*"):
            self.fail("SELECT * is not supported: list the columns", construct="SELECT *")
        kind, val = self.peek()
        if kind == "ident" and self.peek(1)[1] == "(":
            func = val.upper()
            if func not in AGGREGATES:
                self.fail(f"function {val}() is not supported (only {', '.join(AGGREGATES)})",
                          construct=f"{val}()")
            self.i += 2
            if self.accept("DISTINCT"):
                self.fail(f"{func}(DISTINCT ...) is not supported", construct="DISTINCT aggregate")
            if func == "COUNT" and self.accept("*"):
                arg = None
            else:
                arg = self.col()
            if self.word() != ")":
                self.unexpected(f"expected ) closing {func}(")
            self.i += 1
            return Item(func.lower(), arg, self.alias_name())
        return Item(None, self.col(), self.alias_name())

    def alias_name(self) -> str | None:
        if self.accept("AS"):
            return self.ident()
        kind, val = self.peek()
        if kind == "ident" and val.upper() not in _KEYWORDS and val.upper() not in _UNSUPPORTED:
            return self.ident()
        return None

    def operand(self) -> Col | Lit:
        kind, val = self.peek()
        if kind in ("string", "number"):
            self.i += 1
            return Lit(val)
        if kind == "punct" and val == "-" and self.peek(1)[0] == "number":
            self.i += 2
            return Lit("-" + self.toks[self.i - 1][1])
        if kind == "ident" and val.upper() in ("TRUE", "FALSE"):
            self.i += 1
            return Lit(val.upper())
        if kind == "ident" and val.upper() == "NULL":
            self.fail("comparison with NULL is never true: use IS NULL / IS NOT NULL", construct="= NULL")
        return self.col()

    def cond(self) -> Cond:
        left = self.operand()
        if isinstance(left, Lit):
            self.fail("a condition must start with a column (write col op literal)", construct="literal first")
        if self.accept("IS"):
            op = "IS NOT NULL" if self.accept("NOT") else "IS NULL"
            self.expect("NULL")
            return Cond(left, op, None)
        kind, val = self.peek()
        if kind != "op":
            self.unexpected("expected a comparison operator")
        self.i += 1
        return Cond(left, "<>" if val == "!=" else val, self.operand())

    def conds(self) -> list[Cond]:
        out = [self.cond()]
        while self.accept("AND"):
            out.append(self.cond())
        return out

    def table_ref(self) -> tuple[str, str]:
        name = self.ident()
        if self.accept("."):  # schema.table
            name = f"{name}.{self.ident()}"
        alias = self.alias_name() or name.split(".")[-1]
        return alias, name

    def select(self) -> dict:
        self.expect("SELECT")
        if self.word() == "DISTINCT":
            self.unexpected("")
        items = [self.item()]
        while self.accept(","):
            items.append(self.item())
        self.expect("FROM")
        tables = [self.table_ref()]
        joins: list[Cond] = []
        while True:
            if self.accept(","):
                tables.append(self.table_ref())
            elif self.word() in ("JOIN", "INNER"):
                self.accept("INNER")
                self.expect("JOIN")
                tables.append(self.table_ref())
                self.expect("ON")
                joins.extend(self.conds())
            else:
                break
        where = self.conds() if self.accept("WHERE") else []
        group: list[Col] = []
        if self.accept("GROUP"):
            self.expect("BY")
            group.append(self.col())
            while self.accept(","):
                group.append(self.col())
        self.end()
        return {"items": items, "tables": tables, "conds": joins + where, "group_by": group}


def parse_select(text: str, view: str) -> dict:
    """Parse a whole ``SELECT``; returns items, tables [(alias, table)], conds, group_by."""
    return Parser(text, view, "sql").select()


def parse_fragment(text: str, view: str, what: str, rule: str):
    """Parse one YAML fragment: rule is ``item``, ``cond``, ``col`` or ``table_ref``."""
    p = Parser(str(text), view, what)
    out = getattr(p, rule)()
    p.end()
    return out
