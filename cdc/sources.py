"""Source kinds: ``kind`` in the config -> the reader class that implements it.

A reader class is constructed as ``cls(config, context)`` with its own
pydantic config model (readers/<kind>/config.py) and a SourceContext, and
implements cdc.source.Source.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from cdc.runtime.metrics import SourceMetrics

READERS: dict[str, str] = {
    "mysql": "readers.mysql.reader:MySqlSource",
    "oracle": "readers.oracle.reader:OracleSource",
    "shadow": "readers.shadow.reader:ShadowSource",
}


@dataclass
class SourceContext:
    metrics: SourceMetrics
    spill_dir: str = "/tmp/cdc-spill"
    max_buffer_bytes: int = 64 * 1024 * 1024
    extra: dict[str, Any] = field(default_factory=dict)


def open_source(config: Any, context: SourceContext):
    module, _, cls = READERS[config.kind].partition(":")
    return getattr(importlib.import_module(module), cls)(config, context)
