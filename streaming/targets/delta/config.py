"""``targets[i]`` of ``kind: delta``: Delta Lake tables under a directory or object-store URI."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator

from cdc.config.target_base import TargetConfig, store_secrets


class DeltaTargetConfig(TargetConfig):
    """A Delta Lake target. Secrets among ``storage_options`` (a name matching
    cdc.config.credentials.STORE_SECRET) are SecretStr, ``<name>_file`` reads one from a file; unwrapped
    only where handed to deltalake."""

    kind: Literal["delta"] = Field(description="the kind of database or table format written")
    path: str | None = Field(default=None, description="the root directory or object-store URI of the tables "
                             "(required)")
    storage_options: dict[str, str | SecretStr] = Field(default_factory=dict,
                                                        description="object-store settings "
                                                        "(AWS_REGION, AWS_ACCESS_KEY_ID, ...) passed to deltalake")

    @field_validator("storage_options", mode="before")
    @classmethod
    def _store_secrets(cls, raw: Any, info: ValidationInfo) -> Any:
        return store_secrets(raw, info)
