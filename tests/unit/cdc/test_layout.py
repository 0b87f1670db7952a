"""The layout rules of the tree (docs/contributing.md): checked here so they stay true."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
IMPORT = re.compile(r"^\s*(from|import) (readers|streaming)\b", re.M)
TOOLS = ("cdc/dev/", "cdc/bench/")


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
        names.setdefault(p.stem, []).append(str(rel))
    clashes = {n: ps for n, ps in names.items() if len(ps) > 1}
    assert not clashes, clashes


def test_unit_tests_mirror_the_package_tree():
    for p in (ROOT / "tests" / "unit").rglob("test_*.py"):
        folder = p.parent.relative_to(ROOT / "tests" / "unit")
        assert (ROOT / folder).is_dir(), f"{p.relative_to(ROOT)}: no package folder {folder} to mirror"
