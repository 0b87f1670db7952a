"""The one place where the core names the readers and the apply side.

- ``READERS``: source ``kind`` -> the reader class (``cls(config, context)``, cdc.contract.Source);
- ``SOURCE_CONFIGS``: the pydantic config model of each kind (cdc.config.models builds its union from it);
- ``TARGET_CONFIGS``: the config model of each target kind, built from the target packages
  (streaming/targets/<kind>/: a new target kind is a new package there, and no line here);
- ``CHECKS``: what `cdc check` runs for each source kind and for targets;
- ``COMMANDS``: the `cdc` sub-commands and the module that implements each.

Everything else in ``cdc/`` depends on neither ``readers`` nor ``streaming``; only this module and
the tools under cdc/dev and cdc/bench import them (tests/unit/cdc/test_layout.py checks it). A new
source kind is a folder under readers/ plus one line in each table here.
"""

from __future__ import annotations

import importlib
from typing import Any

from readers.mysql.config import MySqlSourceConfig
from readers.oracle.config import OracleSourceConfig
from readers.shadow.config import ShadowSourceConfig
from streaming.targets import config_models

READERS: dict[str, str] = {
    "mysql": "readers.mysql.reader:MySqlSource",
    "oracle": "readers.oracle.reader:OracleSource",
    "shadow": "readers.shadow.reader:ShadowSource",
}

SOURCE_CONFIGS: dict[str, type] = {
    "mysql": MySqlSourceConfig,
    "oracle": OracleSourceConfig,
    "shadow": ShadowSourceConfig,
}

TARGET_CONFIGS: dict[str, type] = config_models()

CHECKS: dict[str, str] = {  # `cdc check` (cdc/checks.py): source kind (or "target") -> checks(config, key)
    "mysql": "readers.mysql.check:checks",
    "oracle": "readers.oracle.check:checks",
    "shadow": "readers.shadow.reader:checks",
    "target": "streaming.apply.target_check:checks",
}

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("cdc.runtime.run_cmd", "run the capture daemon (readers + publisher)"),
    "apply": ("streaming.apply.apply_cmd", "run the Spark apply job into the targets"),
    "schema": ("streaming.apply.schema_cmd", "way back from a DDL the apply stopped at: `cdc schema accept|skip|evolve`"),
    "check": ("cdc.checks", "check sources (settings, table patterns), Kafka (topic settings) and targets (writes)"),
    "gtid": ("readers.mysql.locate", "GTID tools: `cdc gtid locate`"),
    "oracle": ("readers.oracle.tools", "Oracle tools: `cdc oracle parse`"),
    "compare": ("cdc.compare.compare_cmd", "prove a target equals its source (MD5 merge)"),
    "snapshot": ("readers.mysql.snapshot_cmd", "re-snapshot one table while streaming continues"),
    "source": ("readers.mysql.skip_cmd", "a stopped source: `cdc source skip` moves past a refused transaction"),
    "views": ("streaming.views.views_cmd", "maintained views: `cdc views rebuild`"),
    "lake": ("streaming.targets.lake_cmd", "Delta/Iceberg targets: `cdc lake snapshot|compact`"),
    "dev": ("cdc.dev.dev_cmd", "embedded services: `cdc dev up|down|status`"),
    "bench": ("cdc.bench.bench_cmd", "benchmarks: `cdc bench mysql|apply|oracle|compare|views`"),
    "tail": ("cdc.consumer.tail_cmd", "print the change stream of a source (console consumer)"),
    "stream": ("cdc.publish.stream_cmd", "the change stream: `cdc stream reset` starts a source's stream afresh"),
}


def open_source(config: Any, context: Any):
    """The reader of ``config.kind``, constructed (not started)."""
    module, _, cls = READERS[config.kind].partition(":")
    return getattr(importlib.import_module(module), cls)(config, context)


def checker(kind: str):
    """The ``checks(config, key) -> list[cdc.checks.Check]`` function of a source kind or of "target"."""
    module, _, fn = CHECKS[kind].partition(":")
    return getattr(importlib.import_module(module), fn)
