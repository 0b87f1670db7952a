"""``targets[i]`` of ``kind: mysql``: a MySQL/MariaDB database (mysql:// DSN, ``tls:`` block)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from cdc.config.target_base import TLS_DESCRIPTION, TargetConfig, TargetTls


class MySqlTargetConfig(TargetConfig):
    """A MySQL/MariaDB target. It logs in: ``user`` (else the DSN's) and a password from ``password``,
    ``password_file`` or the DSN (cdc.config.credentials), else ``passwordless``."""

    logs_in: ClassVar[bool] = True
    tls_takes: ClassVar[str] = "tls: {ca, cert, key, verify_identity}"

    kind: Literal["mysql"] = Field(description="the kind of database or table format written")
    tls: TargetTls | None = Field(default=None, description=TLS_DESCRIPTION)
