"""The layout rules of the tree (docs/contributing.md): checked here so they stay true."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
IMPORT = re.compile(r"^\s*(from|import) (readers|streaming)\b", re.M)
TOOLS = ("cdc/dev/", "cdc/bench/")
TARGET_FILES = ("config.py", "target.py")  # streaming/targets/<kind>/: the file set of a target package
OPTIONAL_TARGET_FILES = ("typemap.py",)  # a target package's type map, where it has one (Parquet has none)
# Modules outside the target packages that still name target kinds, each with why.
KIND_SWITCH_EXEMPT = {
    "cdc/compare/fingerprint.py": "the compare dialects name the databases of both ends, sources included",
}


def test_the_core_imports_readers_and_streaming_only_in_the_registry_and_tools():
    # The same rule as: grep -rlE "^\s*(from|import) (readers|streaming)\b" cdc
    offenders = sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / "cdc").rglob("*.py") if IMPORT.search(p.read_text())
    )
    allowed = [p for p in offenders if p == "cdc/registry.py" or p.startswith(TOOLS)]
    assert offenders == allowed, f"core modules importing readers/streaming: {sorted(set(offenders) - set(allowed))}"
    assert "cdc/registry.py" in offenders


def test_every_reader_folder_has_the_same_file_set():
    folders = [d for d in (ROOT / "readers").iterdir() if d.is_dir() and (d / "__init__.py").exists()]
    assert {d.name for d in folders} >= {"mysql", "oracle", "shadow"}
    for d in folders:
        missing = [f for f in ("config.py", "position.py", "errors.py", "reader.py") if not (d / f).exists()]
        assert not missing, f"readers/{d.name} lacks {missing}"


def test_no_two_product_modules_share_a_name_for_different_things():
    names: dict[str, list[str]] = {}
    for p in list((ROOT / "cdc").rglob("*.py")) + list((ROOT / "streaming").rglob("*.py")):
        rel = p.relative_to(ROOT)
        if p.name == "__init__.py" or str(rel).startswith(TOOLS) or p.name in ("errors.py", "config.py"):
            continue  # errors/config: one per package by design (STYLE.md)
        if _in_target_package(rel) and p.name in TARGET_FILES + OPTIONAL_TARGET_FILES:
            continue  # every target package has the same file set
        names.setdefault(p.stem, []).append(str(rel))
    clashes = {n: ps for n, ps in names.items() if len(ps) > 1}
    assert not clashes, clashes


def test_unit_tests_mirror_the_package_tree():
    for p in (ROOT / "tests" / "unit").rglob("test_*.py"):
        folder = p.parent.relative_to(ROOT / "tests" / "unit")
        assert (ROOT / folder).is_dir(), f"{p.relative_to(ROOT)}: no package folder {folder} to mirror"


# ---- import graph: cycles, readers <-> streaming, product -> tools (issue #35 part 4) ---------------------------

PRODUCT = ("cdc", "readers", "streaming")
TOOL_MODULES = ("cdc.dev", "cdc.bench", "readers.oracle.sim")
# the registry-hooked entry points from the product to a tool: cdc.registry STAND_INS names the simulator by
# string (imported only for a `dsn: simulator` source); COMMANDS names the dev and bench command modules
HOOKED = {"cdc.registry": {"readers.oracle.sim.simulator", "cdc.dev.dev_cmd", "cdc.bench.bench_cmd"}}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PRODUCT:
        for p in (ROOT / pkg).rglob("*.py"):
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _imports(tree: ast.AST, modules: dict[str, Path], module_level: bool) -> set[str]:
    """The product modules ``tree`` imports (``from a.b import c`` of a module c: a.b.c), every import
    statement (in functions too, and under ``if TYPE_CHECKING``) unless ``module_level``."""
    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    nodes = list(ast.iter_child_nodes(tree)) if module_level else list(ast.walk(tree))
    if module_level:  # also inside module-level if/try blocks (not functions or classes)
        i = 0
        while i < len(nodes):
            if isinstance(nodes[i], (ast.If, ast.Try)):
                nodes += [n for n in ast.iter_child_nodes(nodes[i]) if isinstance(n, ast.stmt)]
                nodes += [n for h in getattr(nodes[i], "handlers", []) for n in h.body]
            i += 1
    out: set[str] = set()
    for n in nodes:
        if isinstance(n, ast.Import):
            out |= {m for a in n.names if (m := owner(a.name))}
        elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
            for a in n.names:
                sub = f"{n.module}.{a.name}"
                out |= {m for m in ((sub if sub in modules else None) or owner(n.module),) if m}
    return out


def _graph(module_level: bool) -> dict[str, set[str]]:
    modules = _modules()
    return {m: _imports(ast.parse(p.read_text()), modules, module_level) - {m} for m, p in modules.items()}


def _string_refs(path: Path) -> set[str]:
    """Dotted module names written as string constants ("pkg.mod" or "pkg.mod:attr"): the registry's tables."""
    tree = ast.parse(path.read_text())
    return {n.value.partition(":")[0] for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and n.value.partition(":")[0].startswith(tuple(f"{p}." for p in PRODUCT))}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_among_product_modules():
    # module-level imports: a cycle there breaks at import time depending on which module comes first
    assert _cycles(_graph(module_level=True)) == []
    # every import, in functions and under TYPE_CHECKING too: a deferred import hides a circle, it does not untie it
    assert _cycles(_graph(module_level=False)) == []


def test_readers_and_streaming_never_import_each_other():
    graph = _graph(module_level=False)
    offenders = sorted(f"{m} -> {d}" for m, deps in graph.items() for d in deps
                       if {m.split(".")[0], d.split(".")[0]} == {"readers", "streaming"})
    assert offenders == []


def _is_tool(module: str) -> bool:
    return any(module == t or module.startswith(f"{t}.") for t in TOOL_MODULES)


def test_product_code_never_imports_the_tools():
    graph = _graph(module_level=False)
    offenders = sorted(f"{m} -> {d}" for m, deps in graph.items() if not _is_tool(m) for d in deps if _is_tool(d))
    assert offenders == []
    for m, p in _modules().items():  # names by string (importlib): only the registry's hooked entry points
        if not _is_tool(m):
            named = {r for r in _string_refs(p) if _is_tool(r)}
            assert named <= HOOKED.get(m, set()), f"{m} names tools {sorted(named - HOOKED.get(m, set()))}"
    assert _string_refs(ROOT / "cdc" / "registry.py") >= HOOKED["cdc.registry"]


def _in_target_package(rel: Path) -> bool:
    return rel.parts[:2] == ("streaming", "targets") and len(rel.parts) > 3


def _target_kinds() -> list[str]:
    from streaming.targets import KINDS

    return sorted(KINDS)


def test_every_target_package_has_the_same_file_set_and_registers_itself():
    from streaming.targets import KINDS, config_models

    folders = sorted(d.name for d in (ROOT / "streaming" / "targets").iterdir() if (d / "__init__.py").exists())
    assert folders == sorted(KINDS) == sorted(config_models()), "a target package without TARGET and CONFIG"
    for kind in folders:
        missing = [f for f in TARGET_FILES if not (ROOT / "streaming" / "targets" / kind / f).exists()]
        assert not missing, f"streaming/targets/{kind} lacks {missing}"


def _kind_switches(tree: ast.AST, kinds: set[str]) -> list[tuple[int, list[str]]]:
    """Where a module's code tells target kinds apart by name: a comparison with a kind string, a dict keyed
    by one, a ``Literal`` of them, a ``.get("kind")``."""

    def strs(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [v for e in node.elts for v in strs(e)]
        return []

    out = []
    for n in ast.walk(tree):
        named: list[str] = []
        if isinstance(n, ast.Compare):
            named = [v for c in [n.left, *n.comparators] for v in strs(c)]
        elif isinstance(n, ast.Dict):
            named = [v for k in n.keys if k is not None for v in strs(k)]
        elif isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == "Literal":
            named = strs(n.slice)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get" and n.args:
            named = strs(n.args[0])
        if set(named) & kinds:
            out.append((n.lineno, sorted(set(named) & kinds)))
    return out


def test_a_new_target_is_one_package_no_other_product_module_switches_on_a_target_kind():
    # The kinds only targets have (mysql and oracle are source kinds too, named by their readers): outside
    # streaming/targets/<kind>/, the registry, the config models and loader, the engine, the views and the
    # other core modules build what they need from the packages (streaming.targets.KINDS, config_models(),
    # the declared capabilities) instead of naming a kind. The old layout failed this in
    # streaming/targets/__init__.py (KINDS) and cdc/config/models.py (the kind Literal, needs_login, TLS table).
    from cdc.registry import SOURCE_CONFIGS

    kinds = set(_target_kinds()) - set(SOURCE_CONFIGS)
    assert {"postgres", "duckdb", "parquet", "delta", "iceberg"} <= kinds
    found = {}
    for top in ("cdc", "streaming"):
        for p in (ROOT / top).rglob("*.py"):
            rel = p.relative_to(ROOT)
            if _in_target_package(rel) or str(rel).startswith(TOOLS) or str(rel) in KIND_SWITCH_EXEMPT:
                continue
            hits = _kind_switches(ast.parse(p.read_text()), kinds)
            if hits:
                found[str(rel)] = hits
    assert not found, f"modules that switch on a target kind (move it into streaming/targets/<kind>/): {found}"
    assert all((ROOT / f).exists() for f in KIND_SWITCH_EXEMPT), "an exemption for a module that is gone"


def test_the_kind_switch_rule_sees_a_switch():
    kinds = {"postgres", "duckdb"}
    tree = ast.parse('if cfg.kind in ("postgres", "mysql"):\n    pass\nX = {"duckdb": 1}\n'
                     'K = Literal["duckdb"]\nd.get("postgres")\nname = "postgres"\n')
    assert [line for line, _ in _kind_switches(tree, kinds)] == [1, 3, 4, 5]


def test_a_new_target_package_brings_its_own_sql_and_compare_dialects(monkeypatch):
    # A target whose database the core has no dialect for declares them in its package (SQL_DIALECT,
    # COMPARE_DIALECT): sql_dialect() and compare_dialect() find them, so nothing outside the package lists it.
    from streaming import targets
    from cdc.compare.dialects import compare_dialect
    from cdc.compare.dialects.postgres_compare import PostgresCompare
    from cdc.errors import ConfigError
    from cdc.schema.sql_dialects import sql_dialect

    own = dataclasses.replace(sql_dialect("postgres"), name="newdb")
    specs = {"SQL_DIALECT": {"newdb": ("tests.unit.cdc.test_layout", "_NEWDB_SQL")},
             "COMPARE_DIALECT": {"newdb": ("tests.unit.cdc.test_layout", "_NEWDB_COMPARE")}}
    monkeypatch.setattr(targets, "_packages", lambda attr: specs.get(attr, {}))
    monkeypatch.setitem(globals(), "_NEWDB_SQL", own)
    monkeypatch.setitem(globals(), "_NEWDB_COMPARE", PostgresCompare(own))
    assert sql_dialect("newdb") is own
    assert compare_dialect("newdb").name == "newdb"
    assert sql_dialect("postgres").name == "postgres"  # the core's own come first
    with pytest.raises(ConfigError, match="no SQL dialect 'nodb'"):
        sql_dialect("nodb")
