"""Source kinds: ``kind`` in the config -> the reader class that implements it.

A reader class is constructed as ``cls(config, context)`` with its own
pydantic config model (readers/<kind>/config.py) and a SourceContext, and
implements cdc.contract.Source.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

from cdc.metrics import SourceMetrics

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
    # Set by the daemon only when kafka.dead_letter_topic is configured:
    # dead_letter(error: DecodeError, raw) sends ONE undecodable change there and
    # the reader skips it. None: the reader raises the DecodeError (the source
    # stops at that position). See cdc.publish.publisher.Publisher.dead_letter.
    dead_letter: Callable[[Exception, Any], None] | None = None


def open_source(config: Any, context: SourceContext):
    module, _, cls = READERS[config.kind].partition(":")
    return getattr(importlib.import_module(module), cls)(config, context)
