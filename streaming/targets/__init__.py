"""The targets: one package per kind (``streaming/targets/<kind>/``), all shaped like targets.base.Target.

The kinds are the packages found here: a package whose ``__init__`` names its class in ``TARGET``
and its config model in ``CONFIG`` (each ``"module:Name"``) is the target of the kind of its folder's
name; cdc.registry.TARGET_CONFIGS (and so the ``targets:`` union of cdc.config.models) is built from
``config_models()``. A new target is one new package; nothing else lists the kinds. ``open_target(config)`` imports only the module of the kind asked for
(the package ``__init__`` imports no driver).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Any


def _packages(attr: str) -> dict[str, tuple[str, str]]:
    """kind -> (module, name) of what each kind's package names in ``attr``."""
    out: dict[str, tuple[str, str]] = {}
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda i: i.name):
        if info.ispkg:
            spec = getattr(importlib.import_module(f"{__name__}.{info.name}"), attr, None)
            if spec is not None:
                module, _, name = spec.partition(":")
                out[info.name] = (module, name)
    return out


KINDS: dict[str, tuple[str, str]] = _packages("TARGET")  # kind -> (module, class name)


def config_models() -> dict[str, type]:
    """kind -> the pydantic model of its ``targets[i]`` (imports the config modules only: no driver)."""
    return {kind: getattr(importlib.import_module(module), name)
            for kind, (module, name) in _packages("CONFIG").items()}


def type_map_specs() -> dict[str, tuple[str, str]]:
    """kind -> (module, name) of the TypeMap a package names in ``TYPE_MAP`` (streaming.targets.typemap)."""
    return _packages("TYPE_MAP")


def arrow_type_specs() -> dict[str, tuple[str, str]]:
    """kind -> (module, name) of the Arrow type function a lake package names in ``ARROW_TYPE``
    (streaming.targets.lake_types)."""
    return _packages("ARROW_TYPE")


def dialect_spec(attr: str, name: str) -> tuple[str, str] | None:
    """(module, name) of the dialect object a package names in ``attr`` (``SQL_DIALECT``: a
    cdc.schema.sql_dialects.SqlDialect; ``COMPARE_DIALECT``: a cdc.compare.dialects.CompareDialect) for the SQL
    dialect called ``name``: the package of that kind. The dialects the core ships (MySQL, PostgreSQL, DuckDB,
    Oracle: readers and `cdc compare` use them as sources too) are found first; a new target's are found here."""
    return _packages(attr).get(name)


def target_class(kind: str) -> type:
    module, cls = KINDS[kind]
    return getattr(importlib.import_module(module), cls)


def make_target(config: Any):
    """Build (not yet open) the target of ``config`` (a cdc.config.target_base.TargetConfig)."""
    return target_class(config.kind)(config)
