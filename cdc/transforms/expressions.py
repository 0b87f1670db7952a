"""Row filters and computed columns: a SQL expression over a row's columns, in MySQL's spelling.

The text is parsed by sqlglot (``sqlglot.parse_one(text, read="mysql")``); this module only walks the tree it
gives, and accepts a small documented subset (anything else is refused when the config is loaded, naming the
construct):

- column names, string and number literals, ``NULL``, ``TRUE``/``FALSE``, parentheses;
- ``=  <>  !=  <  <=  >  >=``, ``AND  OR  NOT``, ``IS [NOT] NULL``, ``[NOT] IN (...)``, ``[NOT] BETWEEN``,
  ``[NOT] LIKE`` (``%`` and ``_``);
- ``+  -  *  /  %`` and unary minus;
- ``UPPER  LOWER  LENGTH/CHAR_LENGTH  COALESCE  CONCAT  SUBSTRING  ABS``, ``CASE WHEN ... END``, ``IF(c, a, b)``.

SQL's three-valued logic holds: a comparison with NULL is NULL, and a row passes a filter only when the
expression is TRUE; a computed column takes the expression's value (NULL: None). Values are the stream's (DECIMAL and temporal columns arrive as text: a number compared
with such a text compares as a number; a date as its ISO text, so ``created >= '2024-01-01'`` works).
Strings compare exactly (case-sensitive), as a ``_bin`` collation would.

:meth:`Expression.sql` renders the same tree back as MySQL SQL for ``cdc compare``'s WHERE on the source and its computed columns.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

import sqlglot
from sqlglot import exp

from cdc.transforms.errors import TransformError

_COMPARE = {exp.EQ: lambda a, b: a == b, exp.NEQ: lambda a, b: a != b, exp.GT: lambda a, b: a > b,
            exp.GTE: lambda a, b: a >= b, exp.LT: lambda a, b: a < b, exp.LTE: lambda a, b: a <= b}
_ARITH = {exp.Add: lambda a, b: a + b, exp.Sub: lambda a, b: a - b, exp.Mul: lambda a, b: a * b,
          exp.Div: lambda a, b: None if b == 0 else Decimal(a) / Decimal(b),
          exp.Mod: lambda a, b: None if b == 0 else a % b}
_ALLOWED = (exp.Column, exp.Identifier, exp.Literal, exp.Null, exp.Boolean, exp.Paren, exp.Not, exp.And, exp.Or,
            exp.Is, exp.In, exp.Between, exp.Like, exp.Neg, exp.Upper, exp.Lower, exp.Length, exp.Coalesce,
            exp.Concat, exp.Substring, exp.Case, exp.If, exp.Abs, *_COMPARE, *_ARITH)


class Expression:
    """One parsed filter. ``columns``: the column names it reads."""

    def __init__(self, text: str, where: str) -> None:
        """``where`` names the config place in errors (e.g. "sources[].transforms rule 'shop.*' filter")."""
        self.text, self.where = text, where
        try:
            self.tree = sqlglot.parse_one(text, read="mysql")
        except sqlglot.errors.ParseError as exc:
            raise TransformError(f"{where}: {text!r} is not an expression: {str(exc).splitlines()[0]}") from None
        for node in self.tree.walk():
            if not isinstance(node, _ALLOWED):
                raise TransformError(f"{where}: {node.sql(dialect='mysql')!r} ({type(node).__name__}) is not "
                                     "supported in a filter (docs/transforms.md lists what is)")
            if isinstance(node, exp.Is) and not isinstance(node.expression, exp.Null):
                raise TransformError(f"{where}: {node.sql(dialect='mysql')!r}: only IS [NOT] NULL is supported")
        self.columns = frozenset(c.name for c in self.tree.find_all(exp.Column))

    def value(self, row: dict[str, Any]) -> Any:
        """The expression's value over ``row`` (a computed column): None for SQL NULL."""
        return _eval(self.tree, row)

    def matches(self, row: dict[str, Any]) -> bool:
        """Whether ``row`` passes: the expression is TRUE (NULL and FALSE do not pass)."""
        return _eval(self.tree, row) is True

    def sql(self) -> str:
        """The expression as MySQL SQL, identifiers quoted (``cdc compare``'s WHERE on the source)."""
        return self.tree.sql(dialect="mysql", identify=True)


def _number(v: Any) -> Any:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, str):
        try:
            return Decimal(v)
        except InvalidOperation:
            return v
    return Decimal(str(v)) if isinstance(v, float) else v


def _pair(a: Any, b: Any) -> tuple[Any, Any]:
    """Operands made comparable: a number and a text compare as numbers when the text is one."""
    if isinstance(a, str) and isinstance(b, str):
        return a, b
    if isinstance(a, (str, int, float, Decimal, bool)) and isinstance(b, (str, int, float, Decimal, bool)):
        return _number(a), _number(b)
    return a, b


def _like(value: str, pattern: str) -> bool:
    rx = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern)
    return re.fullmatch(rx, value, re.DOTALL) is not None


def _eval(node: exp.Expression, row: dict[str, Any]) -> Any:
    t = type(node)
    if t is exp.Column:
        return row.get(node.name)
    if t is exp.Literal:
        return node.this if node.is_string else (Decimal(node.this) if "." in node.this or "e" in node.this.lower()
                                                 else int(node.this))
    if t is exp.Null:
        return None
    if t is exp.Boolean:
        return bool(node.this)
    if t is exp.Paren:
        return _eval(node.this, row)
    if t is exp.Not:
        v = _eval(node.this, row)
        return None if v is None else not _truth(v)
    if t is exp.And:
        a, b = _eval(node.this, row), _eval(node.expression, row)
        if a is not None and not _truth(a) or b is not None and not _truth(b):
            return False
        return None if a is None or b is None else True
    if t is exp.Or:
        a, b = _eval(node.this, row), _eval(node.expression, row)
        if a is not None and _truth(a) or b is not None and _truth(b):
            return True
        return None if a is None or b is None else False
    if t is exp.Is:
        return _eval(node.this, row) is None  # the parser only builds IS NULL (IS TRUE etc. are refused below)
    if t in _COMPARE:
        a, b = _eval(node.this, row), _eval(node.expression, row)
        if a is None or b is None:
            return None
        try:
            return _COMPARE[t](*_pair(a, b))
        except TypeError:
            return _COMPARE[t](str(a), str(b))
    if t in _ARITH:
        a, b = _eval(node.this, row), _eval(node.expression, row)
        if a is None or b is None:
            return None
        return _ARITH[t](*_pair(a, b))
    if t is exp.Neg:
        v = _eval(node.this, row)
        return None if v is None else -_number(v)
    if t is exp.In:
        v = _eval(node.this, row)
        items = [_eval(e, row) for e in node.expressions]
        if v is None:
            return None
        if any(_pair(v, i)[0] == _pair(v, i)[1] for i in items if i is not None):
            return True
        return None if any(i is None for i in items) else False
    if t is exp.Between:
        v, lo, hi = _eval(node.this, row), _eval(node.args["low"], row), _eval(node.args["high"], row)
        if v is None or lo is None or hi is None:
            return None
        a, lo = _pair(v, lo)
        b, hi = _pair(v, hi)
        return lo <= a and b <= hi
    if t is exp.Like:  # sqlglot parses `a NOT LIKE p` as one Like with negate=True
        v, p = _eval(node.this, row), _eval(node.expression, row)
        if v is None or p is None:
            return None
        return _like(str(v), str(p)) is not bool(node.args.get("negate"))
    if t in (exp.Upper, exp.Lower):
        v = _eval(node.this, row)
        return None if v is None else str(v).upper() if t is exp.Upper else str(v).lower()
    if t is exp.Length:
        v = _eval(node.this, row)
        return None if v is None else len(str(v))
    if t is exp.Coalesce:
        for e in [node.this, *node.expressions]:
            v = _eval(e, row)
            if v is not None:
                return v
        return None
    if t is exp.Concat:  # MySQL's CONCAT: NULL when any part is NULL
        parts = [_eval(e, row) for e in node.expressions]
        return None if any(v is None for v in parts) else "".join(_text(v) for v in parts)
    if t is exp.Substring:  # SUBSTRING(s, start[, length]), 1-based; a start < 0 counts from the end
        v, start = _eval(node.this, row), _eval(node.args["start"], row)
        n = _eval(node.args["length"], row) if node.args.get("length") is not None else None
        if v is None or start is None or node.args.get("length") is not None and n is None:
            return None
        text, start = _text(v), int(start)
        i = start - 1 if start > 0 else len(text) + start if start < 0 else len(text)
        return "" if i < 0 or start == 0 else text[i:] if n is None else text[i:i + max(int(n), 0)]
    if t is exp.Case:
        for branch in node.args["ifs"]:
            c = _eval(branch.this, row)
            if c is not None and _truth(c):
                return _eval(branch.args["true"], row)
        return _eval(node.args["default"], row) if node.args.get("default") is not None else None
    if t is exp.If:
        c = _eval(node.this, row)
        if c is not None and _truth(c):
            return _eval(node.args["true"], row)
        return _eval(node.args["false"], row) if node.args.get("false") is not None else None
    if t is exp.Abs:
        v = _eval(node.this, row)
        return None if v is None else abs(_number(v))
    raise TransformError(f"{node.sql(dialect='mysql')!r} cannot be evaluated")  # refused at parse time


def _text(v: Any) -> str:
    return str(int(v)) if isinstance(v, bool) else str(v)


def _truth(v: Any) -> bool:
    """A value as a condition, as MySQL takes it: a number is TRUE when not 0; a text that is no number is FALSE."""
    if isinstance(v, bool):
        return v
    n = _number(v)
    return n != 0 if isinstance(n, (int, Decimal)) else False
