"""``targets[i]`` of ``kind: duckdb``: a DuckDB database file (or memory)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cdc.config.target_base import TargetConfig


class DuckDbTargetConfig(TargetConfig):
    """A DuckDB target: ``path`` (else ``dsn``; neither: in memory)."""

    kind: Literal["duckdb"] = Field(description="the kind of database or table format written")
    path: str | None = Field(default=None, description="the database file (else dsn; neither: in memory)")
