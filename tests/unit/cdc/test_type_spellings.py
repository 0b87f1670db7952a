"""Only readers read a source's type spelling (issue #35 part 3; cdc/schema/logical.py): no module of cdc/ or
streaming/ compares, prefix-matches or regex-matches a MySQL or Oracle type name. The core switches on
cdc.schema.logical.LogicalType.family instead.

The rule (ast, not grep, so docstrings and messages do not count): a string constant is a *match* where it
is an operand of a comparison (``==``, ``in``, directly or inside a tuple/list/set), an argument of
``str.startswith``/``endswith``, the pattern of a ``re`` call, or an element or key of a module-level
tuple/list/set/dict/frozenset (the tables such comparisons use). A match that names a source type spelling
(SPELLING) is an offence. Target type names written as DDL output are not matches.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

SPELLING = re.compile(r"(?<![a-z_])(varchar2?|nvarchar2|nchar|tinyint|mediumint|bigint|datetime|number(?=\\?\()|binary_float|"
                      r"binary_double|tinytext|mediumtext|longtext|tinyblob|mediumblob|longblob|varbinary|clob|"
                      r"unsigned|with local time zone)(?![a-z_])")

# cdc/compare's own family vocabulary (cdc/compare/columns.py Family) reuses one type name
COMPARE_FAMILY_NAMES = {"datetime"}
COMPARE_FAMILY_USERS = ("cdc/compare/", "cdc/schema/values.py")  # values.py's kinds are those families

_NAME = re.compile(r"[a-z0-9_ ]{1,40}")  # a table entry that names a type (not an SQL statement, not a message)
TOOLS = ("cdc/dev/", "cdc/bench/")  # tools write their own DDL and data
_RE_CALLS = {"compile", "match", "fullmatch", "search", "sub", "findall", "split"}


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _strings(e)]
    if isinstance(node, ast.Dict):
        return [s for k in node.keys if k is not None for s in _strings(k)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set", "tuple"):
        return [s for a in node.args for s in _strings(a)]
    if isinstance(node, ast.BinOp):  # "a" + "b" in regexes
        return _strings(node.left) + _strings(node.right)
    return []


def matched_strings(source: str) -> list[tuple[int, str]]:
    """(line, constant) of every string used as a match (module doc)."""
    out: list[tuple[int, str]] = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        found: list[str] = []
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                found += _strings(operand)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("startswith", "endswith"):
                found += [s for a in node.args for s in _strings(a)]
            elif node.func.attr in _RE_CALLS and isinstance(node.func.value, ast.Name) and node.func.value.id == "re":
                found += _strings(node.args[0]) if node.args else []
        out += [(node.lineno, s) for s in found]
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None \
                and not (isinstance(stmt.value, ast.Constant)):
            out += [(stmt.lineno, s) for s in _strings(stmt.value) if _NAME.fullmatch(s)]
    return out


def offences(path: Path) -> list[str]:
    rel = str(path.relative_to(ROOT))
    exempt = COMPARE_FAMILY_NAMES if rel.startswith(COMPARE_FAMILY_USERS) else set()
    return [f"{rel}:{line}: {text!r}" for line, text in matched_strings(path.read_text())
            if SPELLING.search(text.lower()) and text not in exempt]


def test_no_core_module_matches_a_source_type_spelling() -> None:
    found: dict[str, list[str]] = {}
    for top in ("cdc", "streaming"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if str(path.relative_to(ROOT)).startswith(TOOLS):
                continue
            hits = offences(path)
            if hits:
                found[str(path.relative_to(ROOT))] = hits
    assert not found, "core modules matching a source type's spelling (switch on Column.logical: " \
        "cdc/schema/logical.py; a source's spellings live in readers/<kind>/, a database's catalog spellings in " \
        "its compare dialect, a target's in its package):\n" + "\n".join(h for hits in found.values() for h in hits)


def test_the_rule_catches_the_spellings_it_is_about() -> None:
    sample = ('T = ("varchar2", "char")\n'
              'def f(t):\n    return t.startswith("tinyint(1)") or t == "datetime" or re.match(r"^number\\(", t)\n'
              'ddl = f"varchar({n})"\n')
    hits = [t for _, t in matched_strings(sample) if SPELLING.search(t)]
    assert hits == ["varchar2", "tinyint(1)", "datetime", r"^number\("] or sorted(hits) == sorted(
        ["varchar2", "tinyint(1)", "datetime", r"^number\("])
