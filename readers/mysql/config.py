"""Configuration of a MySQL/MariaDB source."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from cdc.config.credentials import PasswordLogin
from cdc.config.tls import MySqlTls
from cdc.contract import HeartbeatInterval
from cdc.schema.table_glob import check_pattern
from cdc.transforms.config import OutboxConfig, TransformsConfig, check_computed


class MySqlSourceConfig(PasswordLogin):
    """``kind: mysql``. ``hosts`` lists the primary and its failover candidates; the login's password
    comes from ``password``, ``password_file`` or ``passwordless: true`` (cdc.config.credentials)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_\-]+$", description="the source's name: its stream is the topic "
                      "<topic_prefix>.<name>.changes and apply[].source refers to it (letters, digits, _ and -)")
    kind: Literal["mysql"] = Field(default="mysql", description="mysql: a MySQL or MariaDB binlog reader")
    hosts: list[str] = Field(min_length=1, description="host:port (port 3306 when left out; IPv6 as [addr]:port) of "
                             "the primary and its failover candidates; "
                             "with several, the reader streams from the first writable primary among them")
    user: str = Field(description="login user of the binlog and query connections")
    tables: list[str] = Field(min_length=1, description="db.table patterns (globs, as apply[].tables: cdc/schema/table_glob.py)")
    server_id: int = Field(default=0, ge=0, description="server_id the binlog connection "
                           "registers as replica with, unique among the server's replicas (0: derived from "
                           "the source's name)")
    heartbeat_interval_s: HeartbeatInterval = 1.0
    connect_timeout_s: float = Field(default=5.0, gt=0, description="seconds to open one connection to a host "
                                     "(probing the hosts, binlog stream, snapshot and check queries)")
    reconnect_attempts: int = Field(default=10, ge=0, description="reconnects in a row after a lost connection "
                                    "before the source gives up and stops (0: none)")
    reconnect_backoff_s: float = Field(default=0.5, gt=0, description="seconds before the first reconnect, "
                                       "doubled at each further one up to 5 seconds")
    snapshot: Literal["never", "initial", "when_needed"] = Field(
        default="initial", description="initial: a new stream starts with the tables' rows (op r); an existing "
                                       "stream is never re-read; when_needed: that, and a re-snapshot when the "
                                       "binlog is purged past the checkpoint; never: only changes after the start")
    snapshot_chunk_rows: int = Field(default=5_000, gt=0, description="rows read per query of "
                                     "the initial and incremental snapshots")
    signal_table: str | None = Field(default=None, description="db.table where `cdc snapshot` "
                                        "inserts incremental-snapshot requests and the reader its watermarks "
                                        "(none: no incremental snapshots)")
    tls: MySqlTls | None = Field(default=None, description="TLS for the binlog and every query connection "
                                 "(cdc/config/tls.py); none: TLS only if the server offers it, unverified")
    transforms: TransformsConfig | None = Field(default=None, description="columns left out, masked or "
                                                "encrypted before anything reaches Kafka (docs/transforms.md)")
    outbox: OutboxConfig | None = Field(default=None, description="an outbox table routed to one topic per "
                                        "aggregate type, exactly once (docs/transforms.md)")

    @model_validator(mode="after")
    def _computed_types(self) -> MySqlSourceConfig:
        from readers.mysql.types import logical_type

        check_computed(self.transforms, logical_type)
        return self

    @field_validator("hosts")
    @classmethod
    def _host_port(cls, hosts: list[str]) -> list[str]:
        return [host_port(h) for h in hosts]

    @field_validator("tables")
    @classmethod
    def _db_table(cls, tables: list[str]) -> list[str]:
        return [check_pattern(t) for t in tables]


DEFAULT_PORT = 3306  # MySQL's and MariaDB's


def host_port(address: str) -> str:
    """``address`` as ``host:port``: ``host`` alone gets port 3306; an IPv6 literal is written in brackets
    (``[::1]`` or ``[::1]:3307``). ValueError says the accepted forms."""
    forms = "host, host:port, [IPv6] or [IPv6]:port"
    h = address.strip()
    if h.startswith("["):
        end = h.find("]")
        if end <= 1:
            raise ValueError(f"host {address!r} is not one of {forms}")
        host, rest = h[:end + 1], h[end + 1:]
        port = rest[1:] if rest.startswith(":") else None if not rest else ""
    else:
        if h.count(":") > 1:
            raise ValueError(f"host {address!r}: an IPv6 address is written in brackets, e.g. [{h}] or [{h}]:3306")
        host, sep, port = h.partition(":")
        port = port if sep else None
    if not host or port is not None and not (port.isdigit() and 0 < int(port) < 65536):
        raise ValueError(f"host {address!r} is not one of {forms} (port 1 to 65535)")
    return f"{host}:{port if port is not None else DEFAULT_PORT}"
