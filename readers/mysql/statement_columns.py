"""The columns an ALTER TABLE statement defines, read from the statement itself: ``ADD/MODIFY/CHANGE [COLUMN]
c <type> [NOT NULL] [DEFAULT <constant>] [FIRST | AFTER x]``.

A reader behind the server reaches a DDL whose definition the catalog no longer shows (readers/mysql/verify.py);
the statement is then the one exact source for what it defines, the default above all: the value every row
written before the statement holds, which no table map carries. Only what is read for sure is taken: an
expression default, a generated column, a type this reader does not know leave the column undefined (None),
never guessed. Type text is spelled as readers/mysql/schema.py spells it (lower case, no integer display width).
"""

from __future__ import annotations

import re
from dataclasses import replace

from cdc.stream.events import Column, TableSchema
from readers.mysql.definitions import alter_clauses, clause_tokens
from readers.mysql.tables import _name
from readers.mysql.types import logical_type

_ENDS = frozenset({"NOT", "NULL", "DEFAULT", "AUTO_INCREMENT", "COMMENT", "PRIMARY", "UNIQUE", "KEY", "FIRST",
                   "AFTER", "COLLATE", "CHARACTER", "CHARSET", "GENERATED", "AS", "INVISIBLE", "VISIBLE", "ON",
                   "CHECK", "REFERENCES", "STORAGE", "COLUMN_FORMAT", "CONSTRAINT", "SERIAL", "COMPRESSED",
                   "PERSISTENT", "VIRTUAL", "STORED", "WITH", "ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE"})
_ALIASES = {"integer": "int", "bool": "tinyint", "boolean": "tinyint", "dec": "decimal", "numeric": "decimal",
            "fixed": "decimal", "real": "double", "double precision": "double", "int1": "tinyint",
            "int2": "smallint", "int3": "mediumint", "int4": "int", "int8": "bigint", "middleint": "mediumint"}
_DISPLAY_WIDTH = re.compile(r"^(tinyint|smallint|mediumint|int|bigint)\(\d+\)")


def column_definition(toks: list[str]) -> tuple[Column, str | None] | None:
    """The column a clause's ``<name> <type> [attributes]`` tokens define, and where it goes (``FIRST``, the
    column it comes AFTER, or None: last); None when a part is not one this reader reads for sure (an
    expression default, a generated column, a type it does not know): never guessed."""
    if not toks or _name(toks[0]) is None:
        return None
    name, i, words = _name(toks[0]), 1, []
    while i < len(toks) and (toks[i].startswith(("(", ")", ",", "'")) or toks[i][0].isdigit()
                             or toks[i].upper() not in _ENDS):
        tok = toks[i]
        words.append(tok if tok.startswith("'") else tok.lower())
        i += 1
    text = _type_text(words)
    if text is None:
        return None
    nullable, default, where = True, None, None
    while i < len(toks):
        word = toks[i].upper() if not toks[i].startswith(("'", "`")) else ""
        if word == "NOT" and i + 1 < len(toks) and toks[i + 1].upper() == "NULL":
            nullable, i = False, i + 2
        elif word == "NULL":
            i += 1
        elif word == "DEFAULT" and i + 1 < len(toks):
            default, i = _literal(toks, i + 1)
            if default is False:
                return None
        elif word in ("PRIMARY", "SERIAL"):
            nullable, i = False, i + 1
        elif word in ("COMMENT", "COLLATE", "CHARSET"):
            i += 2
        elif word == "CHARACTER":
            i += 3
        elif word in ("UNIQUE", "KEY", "INVISIBLE", "VISIBLE"):
            i += 1
        elif word == "FIRST":
            where, i = "FIRST", i + 1
        elif word == "AFTER" and i + 1 < len(toks):
            where, i = _name(toks[i + 1]), i + 2
        else:
            return None  # AUTO_INCREMENT, GENERATED, ON UPDATE, CHECK, REFERENCES ...: not read here
    return Column(name, text, nullable, default, logical_type(text)), where


def _type_text(words: list[str]) -> str | None:
    if not words:
        return None
    head, rest = words[0], words[1:]
    if head == "double" and rest[:1] == ["precision"]:
        rest = rest[1:]
    head = _ALIASES.get(head, head)
    args = ""
    if rest[:1] == ["("]:
        close = rest.index(")") if ")" in rest else -1
        if close < 0:
            return None
        args, rest = "(" + "".join(rest[1:close]) + ")", rest[close + 1:]
    flags = [w for w in rest if w in ("unsigned", "signed", "zerofill")]
    if len(flags) != len(rest):
        return None  # BINARY, ARRAY, a charset after the type ...
    if head == "decimal" and not args:
        args = "(10,0)"
    if head in ("char", "binary") and not args:
        args = "(1)"
    text = _DISPLAY_WIDTH.sub(r"\1", head + args) + (" unsigned" if "unsigned" in flags else "")
    if logical_type(text).family == "other":
        return None
    return text


def _literal(toks: list[str], i: int) -> tuple[str | None | bool, int]:
    """(the default as cdc.stream.events.Column.default spells it, next index); False when it is not a constant."""
    tok = toks[i]
    if tok.upper() == "NULL":
        return None, i + 1
    sign = ""
    if tok in ("-", "+") and i + 1 < len(toks):
        sign, i, tok = ("-" if tok == "-" else ""), i + 1, toks[i + 1]
    if re.fullmatch(r"\d+(\.\d*)?([eE][-+]?\d+)?", tok):
        if i + 2 < len(toks) and toks[i + 1] == "." and toks[i + 2].isdigit():  # 1.5 comes as 1 . 5
            return sign + tok + "." + toks[i + 2], i + 3
        return sign + tok, i + 1
    if tok.startswith("'") and not sign:
        if "\\" in tok:
            return False, i + 1  # an escape sequence: left to the catalog
        return tok, i + 1
    return False, i + 1


def at_statement(shape: TableSchema | None, query: str, db: str, forward: bool) -> tuple[TableSchema | None,
                                                                                       tuple[str, ...],
                                                                                       tuple[str, ...]]:
    """``shape`` with the columns the ALTER ``query`` defines taken from the statement, and (the columns taken,
    the lower-case columns it adds). ``forward``: ``shape`` is the table BEFORE the statement (the reader's last
    sight of it): every clause is applied (None when one is not read); else ``shape`` is a later one (the
    catalog's) and only the statement's column definitions replace its own."""
    clauses, parts = alter_clauses(query, db), clause_tokens(query, db)
    if clauses is not None and all(c.kind == "none" for c in clauses):
        return shape, (), ()  # CREATE INDEX, an option: no column changes
    if shape is None or clauses is None or parts is None or len(clauses) != len(parts):
        return (None if forward else shape), (), ()
    cols, pk = list(shape.columns), list(shape.primary_key)
    defined: list[str] = []
    added = tuple(c.columns[0].lower() for c in clauses if c.kind == "add")

    def at(name: str) -> int | None:
        return next((k for k, c in enumerate(cols) if c.name.lower() == name.lower()), None)

    renamed: dict[str, str] = {}
    for clause, toks in zip(clauses, parts, strict=True):
        head = 1 + (len(toks) > 1 and toks[1].upper() == "COLUMN")
        if clause.kind == "add":
            k = head + (3 if [t.upper() for t in toks[head:head + 3]] == ["IF", "NOT", "EXISTS"] else 0)
            got = column_definition(toks[k:])
        elif clause.kind in ("modify", "change") and toks[0].upper() != "ALTER":
            k = head + (2 if [t.upper() for t in toks[head:head + 2]] == ["IF", "EXISTS"] else 0)
            got = column_definition(toks[k + (clause.kind == "change"):])
        elif clause.kind == "drop" and forward:
            k = at(clause.columns[0])
            if k is not None:
                del cols[k]
            continue
        elif clause.kind == "rename" and forward:
            if renamed:
                continue  # all of them at once, below
            renamed = {a.lower(): b for a, b in (c.columns for c in clauses if c.kind == "rename")}
            if any(at(a) is None for a in renamed):
                return None, (), ()
            # the clauses name the columns as they were before the statement: a swap renames at once
            pk = [renamed.get(p.lower(), p) for p in pk]
            cols = [replace(c, name=renamed.get(c.name.lower(), c.name)) for c in cols]
            continue
        elif clause.kind == "none" or not forward:
            continue
        else:
            return None, (), ()  # a key change, ALTER COLUMN ... SET DEFAULT: not followed on a shape it only saw
        if got is None:
            if forward:
                return None, (), ()
            continue
        col, where = got
        old = at(clause.columns[0])
        if old is None and clause.kind == "change" and not forward:
            old = at(clause.columns[1])  # the catalog: under its new name
        if old is not None and (forward or clause.kind != "add" or where is None):
            if clause.kind == "change":
                pk = [col.name if p.lower() == cols[old].name.lower() else p for p in pk]
            if where is None:
                cols[old] = col
                defined.append(col.name)
                continue
            del cols[old]
        elif old is None and not forward and clause.kind != "add":
            continue  # the catalog no longer has it: its place is not known here
        if where == "FIRST":
            cols.insert(0, col)
        elif where is not None:
            k = at(where)
            if k is None:
                if forward:
                    return None, (), ()
                continue
            cols.insert(k + 1, col)
        else:
            cols.append(col)
        defined.append(col.name)
    return TableSchema(shape.table, tuple(cols), tuple(pk)), tuple(defined), added
