"""The layout rules of the tree (docs/contributing.md): checked here so they stay true."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
IMPORT = re.compile(r"^\s*(from|import) (readers|streaming)\b", re.M)
TOOLS = ("cdc/dev/", "cdc/bench/")
TARGET_FILES = ("config.py", "target.py")  # streaming/targets/<kind>/: the file set of a target package
# Modules outside the target packages that still name target kinds, each with why (issue #35 moves the
# per-kind type maps into the packages once the column-type work on them has merged).
KIND_SWITCH_EXEMPT = {
    "streaming/targets/typemap.py": "the per-kind type maps, moving into the packages after the type work",
    "streaming/targets/lake_types.py": "Delta's and Iceberg's Arrow types, moving into the packages likewise",
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
        if _in_target_package(rel) and p.name in TARGET_FILES:
            continue  # every target package has the same file set
        names.setdefault(p.stem, []).append(str(rel))
    clashes = {n: ps for n, ps in names.items() if len(ps) > 1}
    assert not clashes, clashes


def test_unit_tests_mirror_the_package_tree():
    for p in (ROOT / "tests" / "unit").rglob("test_*.py"):
        folder = p.parent.relative_to(ROOT / "tests" / "unit")
        assert (ROOT / folder).is_dir(), f"{p.relative_to(ROOT)}: no package folder {folder} to mirror"


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
