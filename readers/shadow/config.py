"""Configuration of a shadow-table source (expanded by the shadow reader)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from cdc.config.credentials import PasswordLogin
from cdc.config.dsn import database_kind
from cdc.config.tls import MySqlTls
from cdc.contract import HeartbeatInterval


class ShadowSourceConfig(PasswordLogin):
    """``kind: shadow``: periodic MD5 merge of tables against a shadow copy.

    ``dsn`` names the database (mysql://, postgresql://, duckdb:///path; see
    cdc.compare.endpoints); the password of a database login: ``password``, ``password_file``, the
    DSN's own or ``passwordless: true`` (cdc.config.credentials). The shadow copy (key, MD5, last row image) and
    the undo/redo journal live in ``shadow_schema`` of the same database.
    """

    model_config = ConfigDict(extra="forbid")
    dsn_field = "dsn"

    name: str = Field(pattern=r"^[A-Za-z0-9_\-]+$", description="the source's name: its stream is the topic "
                      "<topic_prefix>.<name>.changes and apply[].source refers to it (letters, digits, _ and -)")
    kind: Literal["shadow"] = Field(default="shadow", description="shadow: periodic MD5 comparison of the tables "
                                    "against a shadow copy, for databases without a usable log")
    dsn: str = Field(description="the database: mysql://, postgresql:// or duckdb:///path")
    tables: list[str] = Field(min_length=1, description="tables to capture: names or glob patterns "
                              "(cdc/schema/table_glob.py); each must have a primary key")
    interval_s: float = Field(default=10.0, gt=0, description="seconds between two merges")
    shadow_schema: str = Field(default="cdc_shadow", pattern=r"^[A-Za-z0-9_]+$", description="schema of the same "
                               "database holding the shadow copy and the undo/redo journal")
    heartbeat_interval_s: HeartbeatInterval = 1.0
    chunk_rows: int = Field(default=10_000, gt=0, description="rows per server-side "
                            "cursor fetch while comparing a table with its shadow copy")
    journal_cycles: int = Field(default=100, ge=1, description="merge cycles kept in "
                                "the undo/redo journal; a stream further behind cannot be reconciled")
    tls: MySqlTls | None = Field(default=None, description="mysql:// DSNs: TLS as a MySQL source's (cdc/config/tls.py); "
                                 "postgresql:// DSNs carry libpq's sslmode etc. themselves")

    def needs_login(self) -> bool:
        return database_kind(self.dsn) != "duckdb"
