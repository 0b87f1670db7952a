"""Configuration of a shadow-table source (expanded by the shadow reader)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ShadowSourceConfig(BaseModel):
    """``kind: shadow``: periodic MD5 merge of tables against a shadow copy."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_\-]+$")
    kind: Literal["shadow"] = "shadow"
    dsn: str
    tables: list[str] = Field(min_length=1)
    interval_s: float = Field(default=10.0, gt=0)
