"""The documentation site: `mkdocs build --strict` passes (no broken link, anchor or missing page), the
configuration reference is what the config models generate, lines stay readable, the README is a front page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from cdc.dev.config_reference import render

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"


def test_site_builds_strict(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "WARNING" not in run.stderr, run.stderr
    assert (tmp_path / "site" / "quickstart" / "index.html").is_file()


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = {p.name for p in DOCS.glob("*.md")}
    assert pages == set(re.findall(r"([\w-]+\.md)", nav)), "a page outside the nav, or a nav entry without page"


def test_configuration_reference_is_generated_and_current():
    committed = (DOCS / "reference.md").read_text()
    assert committed == render(), "docs/reference.md is stale: python -m cdc.dev.config_reference > docs/reference.md"
    assert "| `sources[i].snapshot` |" in committed and "CDC_SOURCES__0__SNAPSHOT" in committed


def test_lines_stay_under_200_characters():
    """Prose and tables are read in an editor and in diffs too; the generated reference's tables are exempt."""
    long = [f"{p.name}:{n}" for p in [ROOT / "README.md", *DOCS.glob("*.md")] if p.name != "reference.md"
            for n, line in enumerate(p.read_text().splitlines(), 1) if len(line) >= 200]
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
