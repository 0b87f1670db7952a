"""The configuration reference (docs/reference.md, cdc/dev/config_reference.py) documents every key: each field
of every config model the generator walks has a description, and the page's prose stays under 200 characters a
line (its table rows are one line each, however long)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from cdc.config.models import Config
from cdc.dev.config_reference import _models, sections

ROOT = Path(__file__).resolve().parents[3]


def _reachable(model: type[BaseModel], seen: set[type[BaseModel]]) -> None:
    """Every model a field annotation of ``model`` holds, however deep (the config's own walk, independent of
    which of them the page shows as a section)."""
    if model in seen:
        return
    seen.add(model)
    for field in model.model_fields.values():
        for sub in _models(field.annotation):
            _reachable(sub, seen)


def test_every_config_field_has_a_description():
    walked = {s.model for s in sections()}
    reachable: set[type[BaseModel]] = set()
    _reachable(Config, reachable)
    assert reachable <= walked, f"models the page has no section for: {sorted(m.__name__ for m in reachable - walked)}"
    missing = sorted({f"{s.prefix}{field.alias or name} ({s.model.__module__}.{s.model.__name__}.{name})"
                      for s in sections() for name, field in s.fields.items()
                      if not (field.description or "").strip()})
    assert not missing, "config fields without description= (docs/reference.md's meaning column):\n  " + \
        "\n  ".join(missing)


def test_sections_walk_every_source_kind_and_nested_model():
    titles = [s.title for s in sections()]
    for expected in ("Source `kind: mysql`", "Source `kind: oracle`", "Source `kind: shadow`", "Target `kind: postgres`",
                     "Target `kind: iceberg`",
                     "`targets[i].timeouts`", "`kafka.debezium`", "`apply[i].schema_changes`",
                     "`apply[i].tables[i]`", "`apply[i].views[i]`", "`logging`"):
        assert expected in titles, (expected, titles)


def test_reference_prose_lines_stay_under_200_characters():
    text = (ROOT / "docs" / "reference.md").read_text()
    long = [n for n, line in enumerate(text.splitlines(), 1) if len(line) >= 200 and not line.startswith("|")]
    assert not long, f"docs/reference.md lines {long}: wrap them in cdc/dev/config_reference.py"
