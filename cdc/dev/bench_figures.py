"""TOOL: one source for every benchmark figure: ``docs/bench/<name>.json``, rendered into the pages.

Each file holds one run of one documented ``cdc bench ...`` command::

    {"command": "cdc bench mysql --rows 1000000 --native-only", "host": "...", "date": "2026-11-28",
     "result": {...the JSON line the command printed...}}

``make bench`` writes them: ``python -m cdc.dev.bench_figures record NAME -- CMD...`` runs the command
(progress passes through on stderr), takes the JSON line it printed on stdout and writes the file with the
host's description and today's date; it fails, writing nothing, when the command fails or prints no JSON
object. ``python -m cdc.dev.bench_figures render`` then rewrites every marked region of the pages::

    <!-- bench:mysql-big.pipeline_rows_per_s -->357,400<!-- /bench -->
    <!-- bench:mysql-big.result.ratio:.1f -->8.1<!-- /bench -->
    <!-- bench:mysql-big.command -->`cdc bench mysql --rows 1000000 --native-only`<!-- /bench -->
    <!-- bench:mysql-big -->
    ...the JSON line, one key a line, in a json code block...
    <!-- /bench -->

A path is looked up in the file's ``result`` first, then in the file itself (``command``, ``host``, ``date``
and any other top-level key); ``:spec`` is a Python format spec (default: integers with thousands
separators, other values as they are). tests/unit/cdc/test_docs.py fails when a page's region differs from
what its file renders, and when a page gives a throughput, CPU-per-row or memory figure outside a region.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCH_DIR = ROOT / "docs" / "bench"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs").glob("*/*.md"))]

# `<!-- bench:NAME[.PATH][:SPEC] -->RENDERED<!-- /bench -->`, on one line or around a block
REGION = re.compile(r"<!-- bench:(?P<name>[\w-]+)(?P<path>(?:\.[\w]+)*)(?::(?P<spec>[^ ]+))? -->"
                    r"(?P<body>.*?)<!-- /bench -->", re.S)


class BenchFigureError(ValueError):
    """A region names a bench file or field that does not exist, or a bench run gave no JSON line."""


def load(name: str) -> dict[str, Any]:
    path = BENCH_DIR / f"{name}.json"
    if not path.is_file():
        raise BenchFigureError(f"no bench file {path.relative_to(ROOT)} (known: {', '.join(names())}); "
                               f"`make bench` writes it")
    return json.loads(path.read_text())


def names() -> list[str]:
    return sorted(p.stem for p in BENCH_DIR.glob("*.json"))


def lookup(name: str, path: str) -> Any:
    data = load(name)
    keys = [k for k in path.split(".") if k]
    for root in ((data.get("result") or {}), data):
        value: Any = root
        for key in keys:
            if not isinstance(value, dict) or key not in value:
                break
            value = value[key]
        else:
            return value
    raise BenchFigureError(f"docs/bench/{name}.json has no field {path.lstrip('.')!r} (neither in its result "
                           f"nor at its top level)")


def fmt(value: Any, spec: str | None) -> str:
    if spec:
        return format(value, spec)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _render_region(m: re.Match[str]) -> str:
    name, path, spec, body = m.group("name"), m.group("path"), m.group("spec"), m.group("body")
    head = m.group(0)[: m.start("body") - m.start()]
    if not path:  # the whole JSON line, one key a line
        data = load(name)
        text = json.dumps(data["result"], indent=1, ensure_ascii=False)
        return f"{head}\n\n```json\n{text}\n```\n\n<!-- /bench -->"  # blank lines: the fence is its own block
    if path == ".command":
        return f"{head}`{load(name)['command']}`<!-- /bench -->"
    return f"{head}{fmt(lookup(name, path), spec)}<!-- /bench -->"


def render(text: str) -> str:
    """The page with every bench region rendered from its file."""
    return REGION.sub(_render_region, text)


def regions(text: str) -> list[tuple[str, str]]:
    return [(m.group("name"), m.group("path").lstrip(".")) for m in REGION.finditer(text)]


def host() -> str:
    """This host, for the record: cores, memory, operating system, Python."""
    mem = ""
    try:
        kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
        mem = f" / {round(kb / 1024 / 1024)} GiB"
    except (OSError, AttributeError):
        pass
    osname = platform.system()
    try:
        osname = re.search(r'^PRETTY_NAME="?([^"\n]*)', Path("/etc/os-release").read_text(), re.M).group(1)
    except (OSError, AttributeError):
        pass
    return (f"{os.cpu_count()}-core{mem} {osname}, Python {platform.python_version()} ({sys.executable}); "
            f"load at the end of the run in the result's load_avg_1m where the bench reports it")


def record(name: str, argv: list[str]) -> Path:
    """Run one bench command and keep its JSON line in docs/bench/NAME.json."""
    if not argv:
        raise BenchFigureError(f"record {name}: no command given (record NAME -- cdc bench ...)")
    run = subprocess.run(argv, stdout=subprocess.PIPE, text=True, check=False)
    if run.returncode != 0:
        raise BenchFigureError(f"record {name}: `{' '.join(argv)}` exited {run.returncode}; nothing written")
    lines = [line for line in run.stdout.splitlines() if line.strip()]
    try:
        result = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError) as exc:
        raise BenchFigureError(f"record {name}: `{' '.join(argv)}` printed no JSON line on stdout ({exc}); "
                               f"nothing written") from exc
    if not isinstance(result, dict) or "bench" not in result:
        raise BenchFigureError(f"record {name}: the last stdout line is not a bench result object")
    command = " ".join(["cdc", *argv[argv.index("bench"):]]) if "bench" in argv else " ".join(argv)
    out = {"command": command, "host": host(), "date": datetime.date.today().isoformat(), "result": result}
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    path = BENCH_DIR / f"{name}.json"
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    return path


def render_pages() -> list[Path]:
    changed = []
    for page in PAGES:
        text = page.read_text()
        new = render(text)
        if new != text:
            page.write_text(new)
            changed.append(page)
    return changed


def main(argv: list[str]) -> int:
    usage = "usage: python -m cdc.dev.bench_figures record NAME -- CMD... | render"
    try:
        if argv[:1] == ["record"] and len(argv) >= 3:
            rest = argv[2:]
            print(record(argv[1], rest[1:] if rest[0] == "--" else rest).relative_to(ROOT), file=sys.stderr)
            return 0
        if argv == ["render"]:
            for page in render_pages():
                print(f"rendered {page.relative_to(ROOT)}", file=sys.stderr)
            return 0
    except BenchFigureError as exc:
        print(f"bench_figures: {exc}", file=sys.stderr)
        return 2
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
