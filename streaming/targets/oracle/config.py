"""``targets[i]`` of ``kind: oracle``: an Oracle database (user/password@host:port/service, wallet ``tls:``)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from cdc.config.target_base import TLS_DESCRIPTION, TargetConfig, TargetTls


class OracleTargetConfig(TargetConfig):
    """An Oracle target. It logs in: ``user`` (else the DSN's) and a password from ``password``,
    ``password_file`` or the DSN (cdc.config.credentials), else ``passwordless``."""

    logs_in: ClassVar[bool] = True
    tls_takes: ClassVar[str] = ("tls: {config_dir, wallet_location, wallet_password, ssl_server_dn_match, "
                                "ssl_server_cert_dn}")

    kind: Literal["oracle"] = Field(description="the kind of database or table format written")
    tls: TargetTls | None = Field(default=None, description=TLS_DESCRIPTION)
