"""The SQL_REDO parser: one LogMiner DML statement -> op, table, before, after.

Two paths. The fast path covers the shapes LogMiner writes for ordinary
values (quoted literals, ``NULL``, ``IS NULL``, one-level function forms
such as ``TO_DATE('..', '..')``): one regular expression per clause, run
with ``re.split`` so a whole SET / WHERE / VALUES list is tokenised in C;
the text between matches must be empty, which proves the tokens cover the
clause (possessive quantifiers: a doubled quote never ends a literal, so
the tokenisation is the only one). Table names and INSERT column lists are
cached per statement head. Anything else (``UNISTR``, ``||``, intervals,
bare numbers, aliases, doubled quotes in names, malformed text) goes to the
scanner: hand-written, single pass, jumping with ``str.find`` to the next
quote. Both give the same result (property tests hold them equal); errors
always come from the scanner, with the offset.

Shapes understood (as LogMiner writes them)::

    insert into "S"."T"("A","B") values ('1',NULL);
    update "S"."T" set "A" = '2', "B" = NULL where "A" = '1' and "B" IS NULL and ROWID = 'AAA..';
    update "S"."T" a set a."A" = '2' where a."A" = '1';          (table alias, 12.2+)
    update "S"."T" set "A" = '2';                                (no WHERE: no before image)
    delete from "S"."T" where "A" = '1' and "B" = TO_DATE('..', '..');

Values stay the literal text: quotes removed, doubled quotes undone,
``NULL`` and ``Unsupported Type`` -> None, function forms (``TO_DATE(..)``,
``TO_TIMESTAMP(..)``, ``TO_TIMESTAMP_TZ(..)``, ``HEXTORAW(..)``,
``EMPTY_CLOB()``, ``TO_YMINTERVAL(..)``, ...) and interval literals kept
whole, ``UNISTR('\\4F60')`` and ``||`` chains of literals decoded to text.
``ROWID = '..'`` in a WHERE clause is the row address, not a column: skipped.

For an UPDATE, ``after`` is the before image overlaid with the SET values
(LogMiner logs only changed columns in SET and the supplemental-logged
columns in WHERE). ``"UNKNOWN"."OBJ# n"`` raises DictionaryMismatch.
Anything else malformed raises RedoParseError with the offset.
"""

from __future__ import annotations

import re
from typing import Any

from readers.oracle.errors import DictionaryMismatch, RedoParseError
from readers.oracle.redo_values import Bad as _Bad
from readers.oracle.redo_values import ident as _ident
from readers.oracle.redo_values import string as _string
from readers.oracle.redo_values import value as _value

Parsed = tuple[str, str, str, "dict[str, Any] | None", "dict[str, Any] | None"]

# Fast path (see the module docstring). Two flavours of each clause pattern:
# * ONE group per value (the literal's text, the function form, or None for NULL / IS NULL), for
#   text without a doubled quote (the common case): the lookarounds make both quotes of a literal
#   required and forbid quotes around a function form;
# * TWO groups per value (literal apart from function form), when the text holds a doubled quote:
#   it is undone in literals only. Possessive quantifiers: a doubled quote never ends a literal.
_FUNCTION = r"(?!UNISTR\()[A-Z][A-Z0-9_]*+\((?:[^()']++|'[^']*+(?:''[^']*+)*+')*+\)"
_ONE = rf"(?:NULL|'?((?<=')[^']*+(?=')|(?<!'){_FUNCTION}(?!'))'?)"
_TWO = rf"(?:'([^']*+(?:''[^']*+)*+)'|NULL|({_FUNCTION}))"


def _splitters(template: str) -> tuple[Any, Any]:
    return re.compile(template.format(_ONE)).split, re.compile(template.format(_TWO)).split


# (a separator never ends the text: "'1', " is not a whole clause)
_SET = _splitters(r'"([^"]++)" = {}(?:, (?!\Z)|\Z)')
_WHERE = _splitters(r'"([^"]++)" (?:IS NULL|= {})(?: and (?!\Z)|\Z)')
_VALUES = _splitters(r"{}(?:, ?(?!\Z)|\)\Z)")
_ROWID = " and ROWID = '"
_CACHE_MAX = 4096
_heads: dict[str, tuple[str, str] | None] = {}  # '"S"."T"' (as written) -> (schema, table); None: not plain
_columns: dict[str, tuple[str, str, list[str]] | None] = {}  # INSERT text before '") values (' -> table, names


def _merge(literals: list[str | None], functions: list[str | None]) -> list[str | None]:
    """TWO-group values: literals with doubled quotes undone, function forms, None for NULL."""
    return [f if v is None else v.replace("''", "'") for v, f in zip(literals, functions)]


def _clause(splitters: tuple[Any, Any], text: str) -> dict[str, Any] | None:
    """A SET or WHERE clause (``_SET`` / ``_WHERE``) as {column: value}; None if not the plain shape."""
    if "''" not in text:
        parts = splitters[0](text)
        if any(parts[::3]):  # text the pattern did not cover
            return None
        return dict(zip(parts[1::3], parts[2::3]))
    parts = splitters[1](text)
    if any(parts[::4]):
        return None
    return dict(zip(parts[1::4], _merge(parts[2::4], parts[3::4])))


def _values(text: str, n: int) -> list[str | None] | None:
    """The n values of an INSERT's VALUES list (``text`` after '(' up to and with ')'); None if not plain."""
    if "''" not in text:
        parts = _VALUES[0](text)
        if len(parts) != 2 * n + 1 or any(parts[::2]):
            return None
        return parts[1::2]
    parts = _VALUES[1](text)
    if len(parts) != 3 * n + 1 or any(parts[::3]):
        return None
    return _merge(parts[1::3], parts[2::3])


def _where_text(s: str, p: int) -> str:
    """The WHERE clause from p, without the statement's ';' and a trailing ``and ROWID = '..'``."""
    end = len(s) - 1 if s[-1] == ";" else len(s)
    r = s.rfind(_ROWID, p)
    if r > 0 and s.find("'", r + 14) == end - 1:
        end = r
    return s[p:end]


def _head(s: str, start: int, stop: str) -> tuple[str, str, int] | None:
    """(schema, table, index of ``stop``) for a statement whose table name runs from ``start`` to
    ``stop``; None for other shapes (an alias, no ``stop``): the scanner's job."""
    end = s.find(stop, start)
    if end < 0:
        return None
    key = s[start:end]
    hit = _heads.get(key, False)
    if hit is False:
        schema, table, p = _table(s, start)
        if len(_heads) >= _CACHE_MAX:
            _heads.clear()
        hit = _heads[key] = (schema, table) if p == end else None
    return None if hit is None else (hit[0], hit[1], end)


def _fast_insert(s: str) -> Parsed | None:
    v = s.find('") values (')
    if v < 0:
        return None
    key = s[:v]
    hit = _columns.get(key, False)
    if hit is False:
        schema, table, p = _table(s, 12)
        if s[p] == " ":
            p += 1
        names = s[p + 2:v].split('","') if s[p] == "(" and '""' not in s[p + 2:v] else None
        if len(_columns) >= _CACHE_MAX:
            _columns.clear()
        hit = _columns[key] = (schema, table, names) if names else None
    if hit is None:
        return None
    values = _values(s[v + 11:-1] if s[-1] == ";" else s[v + 11:], len(hit[2]))
    return None if values is None else ("c", hit[0], hit[1], None, dict(zip(hit[2], values)))


def _fast_update(s: str) -> Parsed | None:
    hit = _head(s, 7, " set ")
    if hit is None:
        return None
    schema, table, p = hit
    w = s.find(" where ", p + 5)
    if w < 0:
        return None
    sets = _clause(_SET, s[p + 5:w])
    if sets is None:
        return None
    before = _clause(_WHERE, _where_text(s, w + 7))
    if before is None:
        return None
    after = before.copy()
    after.update(sets)
    return "u", schema, table, before, after


def _fast_delete(s: str) -> Parsed | None:
    hit = _head(s, 12, " where ")
    if hit is None:
        return None
    schema, table, p = hit
    before = _clause(_WHERE, _where_text(s, p + 7))
    return None if before is None else ("d", schema, table, before, None)


def parse_redo(sql: str) -> Parsed:
    """Parse one SQL_REDO statement. Raises RedoParseError / DictionaryMismatch (without scn/xid:
    the caller adds them)."""
    try:
        head = sql[:7]
        if head == "insert ":
            parsed = sql.startswith("into ", 7) and _fast_insert(sql)
        elif head == "update ":
            parsed = _fast_update(sql)
        elif head == "delete ":
            parsed = sql.startswith("from ", 7) and _fast_delete(sql)
        else:
            parsed = None
        if parsed:
            return parsed
    except (_Bad, IndexError):
        pass  # the scanner says what is wrong
    return scan_redo(sql)


def scan_redo(sql: str) -> Parsed:
    """``parse_redo`` by the scanner alone (every shape; the errors with their offsets)."""
    try:
        head = sql[:6].lower()
        if head == "insert":
            return _insert(sql)
        if head == "update":
            return _update(sql)
        if head == "delete":
            return _delete(sql)
        raise _Bad("not an INSERT, UPDATE or DELETE", 0)
    except _Bad as bad:
        raise RedoParseError(f"cannot parse SQL_REDO at offset {bad.pos}: {bad.why}",
                             offset=bad.pos, text=sql[:500]) from None
    except IndexError:
        raise RedoParseError("cannot parse SQL_REDO: statement ends early", offset=len(sql), text=sql[:500]) from None


def _table(s: str, p: int) -> tuple[str, str, int]:
    schema, p = _ident(s, p)
    if s[p] != ".":
        raise _Bad("expected schema.table", p)
    table, p = _ident(s, p + 1)
    if schema == "UNKNOWN" and table.startswith("OBJ# "):
        raise DictionaryMismatch(
            f"LogMiner does not know object {table[5:]} ({schema}.{table}): the dictionary is older than the "
            "table; rebuild the dictionary and restart from this SCN", table=f"{schema}.{table}", text=s[:500])
    return schema, table, p


def _skip_alias(s: str, p: int, stop: str) -> int:
    """After the table name: skip `` a`` (alias) if the next word is not ``stop``."""
    if s.startswith(" ", p) and not s.startswith(stop, p):
        q = s.find(" ", p + 1)
        if q > 0 and s.startswith(stop, q):
            return q
    return p


def _column(s: str, p: int) -> tuple[str, int]:
    if s[p] != '"':  # alias-qualified: a."COL"
        dot = s.find('."', p, p + 40)
        if dot < 0:
            raise _Bad("expected a column name", p)
        p = dot + 1
    return _ident(s, p)


def _insert(s: str) -> Parsed:
    if not s.startswith("nsert into ", 1) and not s[7:12].lower() == "into ":
        raise _Bad("expected 'insert into'", 0)
    schema, table, p = _table(s, 12)
    if s[p] == " ":
        p += 1
    if s[p] != "(":
        raise _Bad("expected '(' before the column list", p)
    v = s.find('") values (', p)
    if v > 0 and '""' not in s[p + 2:v]:  # fast path: no doubled quote in the names
        names = s[p + 2:v].split('","')
        p = v + 11
    else:
        names, p = _names(s, p + 1)
    after: dict[str, Any] = {}
    last = len(names) - 1
    for i, name in enumerate(names):
        c = s[p]
        if c == "'":  # plain literal: the common case, inline
            q = s.find("'", p + 1)
            if q > 0 and (s[q + 1] == "," or s[q + 1] == ")"):
                after[name] = s[p + 1:q]
                p = q + 1
            else:
                after[name], p = _value(s, p)
        elif c == "N" and s.startswith("NULL", p) and s[p + 4] in ",)":
            after[name] = None
            p += 4
        else:
            after[name], p = _value(s, p)
        c = s[p]
        if c == ",":
            if i == last:
                raise _Bad("more values than columns", p)
            p += 2 if s[p + 1] == " " else 1
        elif c == ")":
            if i != last:
                raise _Bad(f"fewer values than columns (no value for {names[i + 1]})", p)
        else:
            raise _Bad(f"expected ',' or ')' after the value of column {name}", p)
    return "c", schema, table, None, after


def _names(s: str, p: int) -> tuple[list[str], int]:
    names: list[str] = []
    while True:
        name, p = _ident(s, p)
        names.append(name)
        if s[p] == ",":
            p += 1
        elif s[p] == ")":
            p += 1
            break
        else:
            raise _Bad("expected ',' or ')' in the column list", p)
    v = s.find("values (", p, p + 12)
    if v < 0:
        v = s.lower().find("values (", p, p + 12)
        if v < 0:
            raise _Bad("expected 'values ('", p)
    return names, v + 8


def _update(s: str) -> Parsed:
    schema, table, p = _table(s, 7)
    p = _skip_alias(s, p, " set ")
    if not s.startswith(" set ", p):
        raise _Bad("expected ' set '", p)
    p += 5
    sets = {}
    while True:
        if s[p] == '"' and s[(q := s.find('"', p + 1)) + 1] == " ":  # plain column name, inline
            name, p = s[p + 1:q], q + 1
        else:
            name, p = _column(s, p)
        if not s.startswith(" = ", p):
            raise _Bad(f"expected ' = ' after column {name}", p)
        p += 3
        if s[p] == "'" and (q := s.find("'", p + 1)) > 0 and s[q + 1] == ",":  # plain literal, inline
            sets[name], p = s[p + 1:q], q + 1
        else:
            sets[name], p = _value(s, p)
        if s.startswith(", ", p):
            p += 2
        elif s.startswith(",", p):
            p += 1
        else:
            break
    if s.startswith(" where ", p):
        before = _where(s, p + 7)
        after = dict(before)
        after.update(sets)
        return "u", schema, table, before, after
    _end(s, p)
    return "u", schema, table, None, sets


def _delete(s: str) -> Parsed:
    schema, table, p = _table(s, 12)
    p = _skip_alias(s, p, " where ")
    if s.startswith(" where ", p):
        return "d", schema, table, _where(s, p + 7), None
    _end(s, p)
    return "d", schema, table, {}, None


def _where(s: str, p: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    n = len(s)
    while True:
        c = s[p]
        if c == '"':  # plain column name, inline
            q = s.find('"', p + 1)
            if q < 0:
                raise _Bad("unterminated identifier", p)
            if s[q + 1] == '"':
                name, p = _ident(s, p)
            else:
                name, p = s[p + 1:q], q + 1
        elif c == "R" and s.startswith("ROWID = '", p):
            _, p = _string(s, p + 8)
            name = None
        else:
            if c == "(":  # some versions parenthesise the WHERE clause
                p += 1
            name, p = _column(s, p)
        if name is not None:
            if s[p + 1] == "=" and s[p] == " ":
                p += 3
                if s[p] == "'":  # plain literal, inline
                    q = s.find("'", p + 1)
                    nc = s[q + 1] if 0 < q < n - 1 else ";"
                    if q > 0 and nc != "'" and not (nc == " " and s[q + 2] == "|"):
                        out[name] = s[p + 1:q]
                        p = q + 1
                    else:
                        out[name], p = _value(s, p)
                else:
                    out[name], p = _value(s, p)
            elif s.startswith(" IS NULL", p):
                out[name] = None
                p += 8
            else:
                raise _Bad(f"expected ' = ' or ' IS NULL' after column {name}", p)
            if p < n and s[p] == ")":
                p += 1
        if s.startswith(" and ", p):
            p += 5
        else:
            _end(s, p)
            return out


def _end(s: str, p: int) -> None:
    rest = s[p:].strip()
    if rest not in ("", ";"):
        raise _Bad(f"unexpected text {rest[:40]!r}", p)
