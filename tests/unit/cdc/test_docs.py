"""The documentation site: `mkdocs build --strict` passes (no broken link, anchor or missing page), the
configuration, command-line, metrics and alerts references are what their sources generate, no page names a
`cdc` command or flag, a configuration key or a metric that does not exist, every alert has a runbook, lines
stay readable, the README is a front page."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cdc.dev import alerts_reference, bench_figures, cli_reference, metrics_reference, ops_api_reference
from cdc.dev.config_reference import render

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
GENERATED = {"reference.md", "cli.md", "metrics.md", "alerts.md", "operations-api.md"}  # tables one row a line, however long


def test_site_builds_strict(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "WARNING" not in run.stderr, run.stderr
    assert (tmp_path / "site" / "quickstart" / "index.html").is_file()


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = {str(p.relative_to(DOCS)) for p in [*DOCS.glob("*.md"), *DOCS.glob("internals/*.md")]}
    assert pages == set(re.findall(r"([\w/-]+\.md)", nav)), "a page outside the nav, or a nav entry without page"


def test_configuration_reference_is_generated_and_current():
    committed = (DOCS / "reference.md").read_text()
    assert committed == render(), "docs/reference.md is stale: python -m cdc.dev.config_reference > docs/reference.md"
    assert "| `sources[i].snapshot` |" in committed and "CDC_SOURCES__0__SNAPSHOT" in committed


def test_lines_stay_under_200_characters():
    """Prose and tables are read in an editor and in diffs too; the generated reference's tables are exempt."""
    long = [f"{p.name}:{n}" for p in bench_figures.PAGES if p.name not in GENERATED
            for n, line in enumerate(p.read_text().splitlines(), 1)
            if len(re.sub(r"<!-- /?bench[^>]*-->", "", line)) >= 200]  # as read: the region markers aside
    assert not long, long


def test_readme_is_a_front_page():
    readme = (ROOT / "README.md").read_text().splitlines()
    first_screen = "\n".join(readme[:25])
    assert "make demo" in first_screen and "make test" in first_screen
    assert len(readme) < 300
    for target in re.findall(r"\]\((docs/[^)#]+)", "\n".join(readme)):
        assert (ROOT / target).is_file(), target


def test_quickstart_includes_the_tested_grant():
    """The quickstart shows docs/snippets/mariadb-user.sql, the file tests/integration/test_first_run.py runs."""
    assert '--8<-- "mariadb-user.sql"' in (DOCS / "quickstart.md").read_text()


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def _code(text: str) -> list[str]:
    """Inline code spans and the lines of fenced code blocks: where pages name commands, keys and metrics."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.M | re.S)
    rest = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.M | re.S)
    return [line for b in blocks for line in b.splitlines()] + re.findall(r"`([^`\n]+)`", rest)


def test_generated_references_are_current():
    for page, module in (("cli.md", cli_reference), ("metrics.md", metrics_reference), ("alerts.md", alerts_reference),
                         ("operations-api.md", ops_api_reference)):
        committed = (DOCS / page).read_text()
        assert committed == module.render(), f"docs/{page} is stale: python -m {module.__name__} > docs/{page}"
    cli = (DOCS / "cli.md").read_text()
    assert "## cdc source\n" in cli and "one of: skip" in cli and "## cdc schema" in cli and "`CDC_CONFIG`" in cli


def test_every_alert_has_a_runbook_section():
    headings = set(re.findall(r"^### (\w+)$", (DOCS / "runbooks.md").read_text(), flags=re.M))
    missing = [a.name for a in alerts_reference.alerts() if a.name not in headings]
    assert not missing, f"alerts without a '### <name>' section in docs/runbooks.md: {missing}"


def _command_errors(span: str, parsers: dict[str, argparse.ArgumentParser]) -> list[str]:
    errors = []
    span = span.split(" | ")[0]  # `cdc views check | rebuild [--view V]`: alternatives, each its own flags
    for m in re.finditer(r"(?:^|[\s(\[$])cdc ((?:[\w|-]+ ?)+)?([^;&]*)", span):
        at_start = not span[:m.start()].strip(" $")
        words = (m.group(1) or "").split()
        path: list[str] = []
        for word in words:
            options = word.split("|")
            if word.startswith("-"):
                break
            candidates = [" ".join([*path, o]) for o in options]
            if all(c in parsers for c in candidates):
                path.append(options[0])
                continue
            parser = parsers.get(" ".join(path))
            choices = [a.choices for a in parser._actions if not a.option_strings and a.choices] if parser else []
            if parser is not None and path and choices:  # `cdc schema accept`: a positional of fixed choices
                if not all(o in choices[0] for o in options):
                    errors.append(f"cdc {' '.join([*path, word])}")
                break
            if (not path and at_start and word.islower()) or (path and parser is not None and any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)):
                errors.append(f"cdc {' '.join([*path, word])}")
            break
        if not path:
            continue
        parser = parsers[" ".join(path)]
        rest = " ".join(words[len(path):]) + " " + m.group(2)
        for flag in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", rest):
            if flag not in cli_reference.flags(parser) and flag != "--help":
                errors.append(f"cdc {' '.join(path)} {flag}")
    return errors


def test_pages_name_only_commands_and_flags_that_exist():
    parsers = {path: parser for path, _, parser in cli_reference.commands()}
    bad = [f"{p.name}: {e}" for p in _pages() for span in _code(p.read_text()) for e in _command_errors(span, parsers)]
    assert not bad, bad


def _config_keys() -> tuple[set[str], set[str]]:
    """Every key of the configuration reference (rows and section headings, a list also without ``[i]``),
    and the keys whose value is a free mapping (librdkafka settings, storage options: any sub-key)."""
    text = (DOCS / "reference.md").read_text()
    rows = re.findall(r"^\| `([^`]+)` \| ([^|]*(?:\\\|[^|]*)*) \|", text, flags=re.M)
    keys = {k for k, _ in rows} | set(re.findall(r"^#+ `([^`]+)`", text, flags=re.M))
    free = {k for k, type_ in rows if type_.startswith("dict[")}
    return {k for key in keys for k in (key, re.sub(r"\[i\]$", "", key))}, free


# names pages show on purpose as what is NOT accepted (the error a typo gets)
WRONG_ON_PURPOSE = {"apply[0].max_record_per_batch", "kafka.topics.changes.partitions"}
FILE_SUFFIXES = {"py", "yml", "yaml", "json", "md", "sql", "c", "toml", "txt", "cnf", "ora", "parquet"}


def test_pages_name_only_configuration_keys_that_exist():
    keys, free = _config_keys()
    sections = {k.split(".")[0].split("[")[0] for k in keys if "." in k}
    bad = []
    for p in _pages():
        if p.name == "reference.md":
            continue
        for span in _code(p.read_text()):
            for m in re.finditer(r"(?<![\w./$-])([a-z_]+(?:\[\w*\])?(?:\.[a-z_]+(?:\[\w*\])?)+)(?![\w(/=-]|\.\w)", span):
                name = m.group(1)
                if name.split(".")[0].split("[")[0] not in sections:
                    continue
                norm = re.sub(r"\[\w*\]", "[i]", name)
                if name in WRONG_ON_PURPOSE or name.rsplit(".", 1)[1] in FILE_SUFFIXES:
                    continue
                if norm not in keys and not any(norm.startswith(k + ".") for k in free):
                    bad.append(f"{p.name}: {name}")
    assert not bad, bad


def test_pages_name_only_metrics_that_exist():
    names = metrics_reference.names()
    families = {n.split("_")[1] for n in names}
    bad = [f"{p.name}: {m}" for p in _pages()
           for m in re.findall(r"\b(cdc_[a-z_]*[a-z])(?![_*a-z])", p.read_text())
           if m.count("_") >= 2 and m.split("_")[1] in families and m not in names]
    assert not bad, sorted(set(bad))


# -- one source for every figure: docs/bench/NAME.json, rendered into the pages (cdc/dev/bench_figures.py) --

# a measured figure: throughput, CPU per row/record/transaction, memory
FIGURE = re.compile(r"(?<![\w.,])(?<![<>≤≥] )(?<![<>≤≥]=)(?<![<>≤≥])\d[\d,.]*(?:-\d[\d,.]*)?\s*k?\s*"
                    r"(?:rows/s|records/s|transactions/s|rows per (?:CPU-)?second|µs|us\b|MB\b)")


def _outside_regions(text: str) -> str:
    """What a page says outside its bench regions, fenced blocks (sample output) and inline code."""
    text = bench_figures.REGION.sub("", text)
    text = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]+`", "", text)


def test_every_bench_file_is_one_run_of_a_command():
    for name in bench_figures.names():
        data = bench_figures.load(name)
        assert {"command", "host", "date", "result"} <= set(data), name
        assert data["command"].startswith("cdc bench "), name
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", data["date"]), name
        assert data["result"] is None and "seeded_from" in data or data["result"]["bench"] == data["command"].split()[2]


def test_pages_render_their_figures_from_the_bench_files():
    """A figure edited by hand, or a bench file `make bench` rewrote without `render`, fails here."""
    stale = [p.name for p in bench_figures.PAGES if bench_figures.render(p.read_text()) != p.read_text()]
    assert not stale, f"figures differ from docs/bench/*.json: python -m cdc.dev.bench_figures render ({stale})"
    rendered = {name for p in bench_figures.PAGES for name, _ in bench_figures.regions(p.read_text())}
    assert rendered == set(bench_figures.names()), "a bench file no page shows, or a page naming no file"
    perf = (DOCS / "performance.md").read_text()
    assert all(f"<!-- bench:{n}.command -->" in perf for n in bench_figures.names())


def test_render_fails_closed_on_an_unknown_field():
    with pytest.raises(bench_figures.BenchFigureError, match="no field 'no_such'"):
        bench_figures.render("<!-- bench:apply.no_such --><!-- /bench -->")
    with pytest.raises(bench_figures.BenchFigureError, match="no bench file"):
        bench_figures.render("<!-- bench:no-such.rows --><!-- /bench -->")
    assert bench_figures.render("<!-- bench:apply.rows -->1<!-- /bench -->") != "<!-- bench:apply.rows -->1<!-- /bench -->"


def test_no_figure_without_its_bench_file():
    """A rows/s, us per row, MB or transactions/s figure is rendered from the run that measured it, or absent;
    a bound (`< 300 MB`, `≥ 200,000 rows/s`) is not a measurement."""
    bad = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in bench_figures.PAGES if p.name not in GENERATED
           for m in FIGURE.finditer(_outside_regions(p.read_text()))]
    assert not bad, bad
    loose = [p.name for p in bench_figures.PAGES
             if re.search(r'^```json\n\{\n "bench"', bench_figures.REGION.sub("", p.read_text()), flags=re.M)]
    assert not loose, f"a bench JSON line outside a <!-- bench:NAME --> region: {loose}"


def test_make_bench_records_exactly_the_bench_files():
    """`make bench` runs each file's command and nothing else, and renders the pages after."""
    make = (ROOT / "Makefile").read_text()
    recipe = make[make.index("\nbench:"):].split("\n\n")[0]
    ran = dict(re.findall(r"^\t\$\(BENCH_RECORD\) ([\w-]+) -- \$\(CDC\) (bench .+)$", recipe, flags=re.M))
    files = {n: bench_figures.load(n)["command"] for n in bench_figures.names()}
    assert {n: "cdc " + c for n, c in ran.items()} == files, (ran, files)
    assert recipe.rstrip().endswith("$(PY) -m cdc.dev.bench_figures render")
    other = [line for line in recipe.strip().splitlines()[1:] if "BENCH_RECORD" not in line and "bench_figures render" not in line]
    assert not other, other


# -- user pages for users: testing and internals live under docs/internals/ and contributing.md --

# a test file name, however its path is cut; and the build environment as a place ("where we build")
FOR_CONTRIBUTORS = re.compile(r"pytest|tests/|\btest_\w+\.py\b|\b[\w/]+_native\.c\b|\b[\w/]+\.c`|this machine|this session"
                              r"|where (?:we|this|it) (?:is |was )?(?:built|build)|where this (?:product|project) (?:is|was) built", re.I)


def test_user_pages_carry_no_test_suite_or_internals_text():
    user = [p for p in DOCS.glob("*.md") if p.name != "contributing.md"]  # the README also maps the repo
    bad = sorted({p.name for p in user for line in p.read_text().splitlines() if FOR_CONTRIBUTORS.search(line)})
    assert not bad, f"move testing/internals text to docs/internals/ (testing.md, or a page per topic): {bad}"
