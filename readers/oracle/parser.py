"""The SQL_REDO parser: one LogMiner DML statement -> op, table, before, after.

A hand-written single-pass scanner. It never runs a regular expression per
value: it walks the statement once, jumping with ``str.find`` (C speed) to
the next quote, and only looks at the few characters between values.

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

from typing import Any

from readers.oracle.errors import DictionaryMismatch, RedoParseError
from readers.oracle.redo_values import Bad as _Bad
from readers.oracle.redo_values import ident as _ident
from readers.oracle.redo_values import string as _string
from readers.oracle.redo_values import value as _value

Parsed = tuple[str, str, str, "dict[str, Any] | None", "dict[str, Any] | None"]

def parse_redo(sql: str) -> Parsed:
    """Parse one SQL_REDO statement. Raises RedoParseError / DictionaryMismatch (without scn/xid:
    the caller adds them)."""
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


def _split_clause(clause: str, sep: str, out: dict[str, Any]) -> bool:
    """Fast path for a SET or WHERE clause: split on ``sep`` (``', "'`` or ``' and "'``) with
    C-speed str.split, then verify every piece.

    Valid only without doubled quotes: then every quote delimits a literal, and a
    separator inside a literal leaves a piece with an odd number of quotes, which
    sends the whole clause back to the scanner. Returns False to fall back.
    """
    if "''" in clause or '""' in clause or clause[0] != '"':
        return False
    r = clause.rfind(" and ROWID = '")
    if r > 0:
        if clause[-1] != "'" or clause.count("'", r) != 2:
            return False
        clause = clause[:r]
    for piece in clause[1:].split(sep):
        q = piece.find('"')
        if q < 0 or piece.count("'") & 1:
            return False
        name = piece[:q]
        if piece.startswith(" = ", q + 1):
            val = piece[q + 4:]
            if val[0] == "'" and val[-1] == "'" and val.count("'") == 2:
                out[name] = val[1:-1]
            elif val == "NULL" or val == "Unsupported Type":
                out[name] = None
            else:
                v, e = _value(val, 0)
                if e != len(val):
                    return False
                out[name] = v
        elif len(piece) == q + 9 and piece.endswith(" IS NULL"):
            out[name] = None
        else:
            return False
    return True


def _update(s: str) -> Parsed:
    schema, table, p = _table(s, 7)
    p = _skip_alias(s, p, " set ")
    if not s.startswith(" set ", p):
        raise _Bad("expected ' set '", p)
    p += 5
    w = s.find(" where ", p)
    end = len(s) - 1 if s.endswith(";") else len(s)
    if w > 0 and s[p] == '"':
        sets, before = {}, {}
        if (_split_clause(s[p:w], ', "', sets) and _split_clause(s[w + 7:end], ' and "', before)
                and len(sets) == s[p:w].count(', "') + 1):
            after = dict(before)
            after.update(sets)
            return "u", schema, table, before, after
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
    end = len(s) - 1 if s.endswith(";") else len(s)
    if s[p] == '"' and _split_clause(s[p:end], ' and "', out):
        return out
    out = {}
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
