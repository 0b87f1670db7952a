"""``targets[i]`` of ``kind: postgres``: a PostgreSQL database (libpq DSN; TLS in the DSN)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from cdc.config.target_base import TargetConfig


class PostgresTargetConfig(TargetConfig):
    """A PostgreSQL target. It logs in: ``user`` (else the DSN's) and a password from ``password``,
    ``password_file`` or the DSN (cdc.config.credentials), else ``passwordless``."""

    logs_in: ClassVar[bool] = True
    tls_takes: ClassVar[str] = ("no tls block: libpq's settings go in the dsn "
                                "(sslmode=verify-full&sslrootcert=/path/ca.pem)")

    kind: Literal["postgres"] = Field(description="the kind of database or table format written")
    tls: Any = Field(default=None, description="none: libpq's sslmode/sslrootcert/sslcert/sslkey go in the dsn")
