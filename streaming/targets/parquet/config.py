"""``targets[i]`` of ``kind: parquet``: a directory of Parquet changelog files."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cdc.config.target_base import TargetConfig


class ParquetTargetConfig(TargetConfig):
    """A Parquet changelog target: ``path`` (else ``dsn``), the directory."""

    kind: Literal["parquet"] = Field(description="the kind of database or table format written")
    path: str | None = Field(default=None, description="the directory (else dsn)")
