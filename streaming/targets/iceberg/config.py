"""``targets[i]`` of ``kind: iceberg``: Apache Iceberg tables in a SQL catalog."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from cdc.config.credentials import SecretDsn
from cdc.config.target_base import TargetConfig, catalog_uri_file, store_secrets


class IcebergTargetConfig(TargetConfig):
    """An Iceberg target. Secrets among the ``catalog`` settings (a name matching
    cdc.config.credentials.STORE_SECRET) are SecretStr, ``<name>_file`` reads one from a file; the
    catalog_uri's password is masked wherever the URI is shown (SecretDsn). Unwrapped only where handed
    to pyiceberg."""

    kind: Literal["iceberg"] = Field(description="the kind of database or table format written")
    catalog_uri: SecretDsn | None = Field(default=None, description="SQL catalog URI (sqlite:///..., "
                                          "postgresql://...; its password: better catalog_uri_file)")
    warehouse: str | None = Field(default=None, description="the location (path or object-store URI) where "
                                  "table files are written")
    namespace: str = Field(default="cdc", description="the catalog namespace of the tables (created when missing)")
    catalog: dict[str, Any] = Field(default_factory=dict, description="other pyiceberg catalog settings")

    @model_validator(mode="before")
    @classmethod
    def _catalog_uri_file(cls, data: Any) -> Any:
        return catalog_uri_file(data)

    @field_validator("catalog", mode="before")
    @classmethod
    def _store_secrets(cls, raw: Any, info: ValidationInfo) -> Any:
        return store_secrets(raw, info)
