"""Configuration of an Oracle LogMiner source (expanded by the Oracle reader)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class OracleSourceConfig(BaseModel):
    """``kind: oracle``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_\-]+$")
    kind: Literal["oracle"] = "oracle"
    dsn: str = Field(description="mining instance, e.g. host:1521/MINER, or 'simulator' for the built-in LogMiner simulator")
    standby_dsn: str | None = None
    user: str = ""
    password: SecretStr = SecretStr("")
    tables: list[str] = Field(min_length=1)
