"""The targets: one package per kind (``streaming/targets/<kind>/``), all shaped like targets.base.Target.

The kinds are the packages found here: a package whose ``__init__`` names its class in ``TARGET``
(``"module:Class"``) is the target of the kind of its folder's name. A new target is one new package;
nothing else lists the kinds. ``open_target(config)`` imports only the module of the kind asked for
(the package ``__init__`` imports no driver).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from cdc.config.models import TargetConfig


def _kinds() -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda i: i.name):
        if info.ispkg:
            spec = getattr(importlib.import_module(f"{__name__}.{info.name}"), "TARGET", None)
            if spec is not None:
                module, _, cls = spec.partition(":")
                out[info.name] = (module, cls)
    return out


KINDS: dict[str, tuple[str, str]] = _kinds()  # kind -> (module, class name)


def target_class(kind: str) -> type:
    module, cls = KINDS[kind]
    return getattr(importlib.import_module(module), cls)


def make_target(config: TargetConfig):
    """Build (not yet open) the target of ``config``."""
    return target_class(config.kind)(config)
