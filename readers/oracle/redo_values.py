"""SQL_REDO value scanning: literals, identifiers, function forms (used by parser.py).

Every function takes the statement ``s`` and a position ``p`` and returns what
it read plus the index after it; malformed input raises ``Bad(why, pos)``,
which parser.py turns into RedoParseError with the offset.
"""

from __future__ import annotations

from typing import Any

_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$#")
_BARE_END = frozenset(",); ")
_INTERVAL_WORDS = frozenset({"YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND", "TO"})


class Bad(Exception):
    def __init__(self, why: str, pos: int) -> None:
        self.why, self.pos = why, pos


def ident(s: str, p: int) -> tuple[str, int]:
    """A quoted identifier at p (``"A""B"`` -> ``A"B``); returns (name, index after it)."""
    if s[p] != '"':
        raise Bad('expected a quoted identifier', p)
    q = s.find('"', p + 1)
    if q < 0:
        raise Bad("unterminated identifier", p)
    if s.startswith('"', q + 1):  # doubled quote inside the name: rare, slow path
        parts = [s[p + 1:q]]
        while s.startswith('"', q + 1):
            r = s.find('"', q + 2)
            if r < 0:
                raise Bad("unterminated identifier", p)
            parts.append(s[q + 1:r])
            q = r
        return "".join(parts), q + 1
    return s[p + 1:q], q + 1


def string(s: str, p: int) -> tuple[str, int]:
    """A '...' literal at p; doubled quotes undone."""
    q = s.find("'", p + 1)
    if q < 0:
        raise Bad("unterminated string literal", p)
    if not s.startswith("'", q + 1):
        return s[p + 1:q], q + 1
    parts = [s[p + 1:q]]
    while s.startswith("'", q + 1):
        r = s.find("'", q + 2)
        if r < 0:
            raise Bad("unterminated string literal", p)
        parts.append(s[q + 2:r])
        q = r
    return "'".join(parts), q + 1


def _call_end(s: str, p: int) -> int:
    """p is at '(' of a function call: index after the matching ')' (quotes respected)."""
    q = p + 1  # fast path: NAME('..'[, '..']) -- the shapes LogMiner writes for dates and raw values
    while s.startswith("'", q):
        _, q = string(s, q)
        if s.startswith(")", q):
            return q + 1
        if s.startswith(", ", q):
            q += 2
        else:
            break
    if s.startswith(")", p + 1):
        return p + 2
    depth, n = 0, len(s)
    while p < n:
        c = s[p]
        if c == "'":
            _, p = string(s, p)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return p + 1
        p += 1
    raise Bad("unterminated function call", p)


def _unistr(body: str) -> str:
    """Decode UNISTR text: ``\\XXXX`` code units (surrogate pairs joined), ``\\\\`` a backslash."""
    if "\\" not in body:
        return body
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        j = body.find("\\", i)
        if j < 0:
            out.append(body[i:])
            break
        out.append(body[i:j])
        if body.startswith("\\", j + 1):
            out.append("\\")
            i = j + 2
            continue
        out.append(chr(int(body[j + 1:j + 5], 16)))
        i = j + 5
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16")


def value(s: str, p: int) -> tuple[Any, int]:
    """One value at p; returns (value, index after it)."""
    c = s[p]
    if c == "'":
        v, e = string(s, p)
        if s.startswith(" || ", e):
            return _concat(s, p, v, e)
        return v, e
    if c in _WORD or c == "-" or c == "+" or c == ".":
        n = len(s)
        e = s.find("('", p, p + 20)  # fast path: a function call such as TO_DATE('..
        if e < 0 or not s[p:e].isidentifier():
            e = p + 1
            while e < n and s[e] in _WORD:
                e += 1
        word = s[p:e]
        if e < n and s[e] == "(":
            e = _call_end(s, e)
            if word == "UNISTR":
                v, _ = string(s, p + 7)
                v = _unistr(v)
                return (_concat(s, p, v, e) if s.startswith(" || ", e) else (v, e))
            if s.startswith(" || ", e):
                return _concat(s, p, None, e)
            return s[p:e], e
        if word == "NULL":
            return None, e
        if word == "Unsupported" and s.startswith(" Type", e):
            return None, e + 5
        if word == "INTERVAL":
            return _interval(s, p, e)
        while e < n and s[e] not in _BARE_END:  # bare number such as 1.5E+10 or -3
            e += 1
        return word if e == p + len(word) else s[p:e], e
    raise Bad(f"unexpected character {c!r} where a value should start", p)


def _concat(s: str, start: int, first: Any, e: int) -> tuple[Any, int]:
    """``piece || piece ...``: decoded text when every piece is a literal or UNISTR, else kept whole."""
    pieces = [first]
    literal = s[start] == "'" or s.startswith("UNISTR(", start)
    while s.startswith(" || ", e):
        q = e + 4
        literal = literal and (s[q] == "'" or s.startswith("UNISTR(", q))
        v, e = value(s, q)
        pieces.append(v)
    if not literal:
        return s[start:e], e
    return "".join(pieces), e


def _interval(s: str, p: int, e: int) -> tuple[str, int]:
    """``INTERVAL '1-2' YEAR(2) TO MONTH``: kept whole."""
    if not s.startswith(" '", e):
        raise Bad("expected the INTERVAL literal's string", e)
    _, e = string(s, e + 1)
    while s.startswith(" ", e):
        q = e + 1
        while q < len(s) and s[q] in _WORD:
            q += 1
        if s[e + 1:q] not in _INTERVAL_WORDS:
            break
        e = _call_end(s, q) if s.startswith("(", q) else q
    return s[p:e], e
