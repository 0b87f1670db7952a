"""Target modules, one per database kind, all shaped like targets.base.Target.

``open_target(config)`` imports only the module of the kind asked for.
"""

from __future__ import annotations

import importlib

from cdc.config.models import TargetConfig

KINDS = {
    "postgres": ("streaming.targets.postgres", "PostgresTarget"),
    "mysql": ("streaming.targets.mysql", "MySqlTarget"),
    "duckdb": ("streaming.targets.duckdb", "DuckDbTarget"),
    "oracle": ("streaming.targets.oracle", "OracleTarget"),
    "parquet": ("streaming.targets.parquet", "ParquetTarget"),
    "delta": ("streaming.targets.delta", "DeltaTarget"),
    "iceberg": ("streaming.targets.iceberg", "IcebergTarget"),
}


def target_class(kind: str) -> type:
    module, cls = KINDS[kind]
    return getattr(importlib.import_module(module), cls)


def make_target(config: TargetConfig):
    """Build (not yet open) the target of ``config``."""
    return target_class(config.kind)(config)
