"""What every target's config shares (``targets[i]``): the login, the name and kind, the timeouts."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SecretStr,
    Tag,
    ValidationInfo,
    model_validator,
)

from cdc.config.credentials import (
    STORE_FILE_SETTINGS,
    PasswordLogin,
    SecretDsn,
    file_secret,
    is_store_secret,
    resolve_secrets,
)
from cdc.config.tls import MySqlTls, OracleTls, tls_kind


class TargetTimeouts(BaseModel):
    """Every wait on a database target is bounded (``targets[].timeouts``; 0 turns one bound off).

    PostgreSQL gets them as libpq connect options (connect_timeout, keepalives, tcp_user_timeout) and
    session settings (statement_timeout, lock_timeout, idle_in_transaction_session_timeout); MySQL/MariaDB
    as PyMySQL connect/read/write timeouts and session variables; Oracle as the connect timeout, TCP
    keepalive and the per-call timeout. ``reply_s`` is the client's own bound on one call: a call that hears
    nothing from the server for that long (a dead network path, a hung proxy: the kernel's keepalives do not
    see those) ends the connection, and the batch is retried."""

    model_config = ConfigDict(extra="forbid")

    connect_s: float = Field(default=10.0, gt=0, description="seconds to open a connection, login "
                                                        "included")
    statement_s: float = Field(default=300.0, ge=0, description="seconds after which the server "
                                                         "cancels one statement (0: no bound)")
    lock_s: float = Field(default=0.0, ge=0, description="seconds after which the server gives "
                                                         "up a lock wait (0: statement_s bounds it)")
    idle_in_transaction_s: float = Field(default=120.0, ge=0, description="seconds after which the server ends "
                                         "a session idle inside a transaction (a driver that died mid-batch; "
                                         "0: no bound)")
    keepalive_idle_s: int = Field(default=30, gt=0, description="TCP keepalive: seconds a connection "
                                 "is idle before the first probe")
    keepalive_interval_s: int = Field(default=10, gt=0, description="TCP keepalive: seconds between "
                                     "probes")
    keepalive_count: int = Field(default=3, gt=0, description="TCP keepalive: unanswered probes "
                                "after which the connection counts as dead")
    reply_s: float | None = Field(default=None, ge=0, description="seconds the client waits for the "
                                  "server's reply to one call, then ends the connection and the batch is "
                                  "retried (none: statement_s + 30; 0: no bound)")

    @property
    def reply_bound_s(self) -> float | None:
        """The client-side bound on one call, None when off."""
        if self.reply_s is not None:
            return self.reply_s or None
        return self.statement_s + 30.0 if self.statement_s else None



class TargetConfig(PasswordLogin):
    """One target. Each kind's model (``streaming/targets/<kind>/config.py``, registered in
    cdc.registry.TARGET_CONFIGS) adds its own keys to these; ``targets:`` is the union of them, told
    apart by ``kind``. ``TargetConfig(kind=..., ...)`` builds the model of that kind."""

    model_config = ConfigDict(extra="forbid")
    dsn_field = "dsn"
    logs_in: ClassVar[bool] = False  # a database login (user, password): postgres, mysql, oracle
    tls_takes: ClassVar[str] = "no tls block"  # what a wrong ``tls:`` block is told

    name: str = Field(description="the target's name, which apply[].target refers to")
    kind: str = Field(description="the kind of database or table format written")
    dsn: str | None = Field(default=None, description="database targets: where to connect (postgresql://, "
                            "mysql://, oracle host:port/service; duckdb and parquet: a file or directory path)")
    user: str | None = Field(default=None, description="login user (default: the DSN's)")
    schema_: str | None = Field(default=None, alias="schema", description="database schema the tables are "
                                "written to (none: the connection's default)")
    dead_letter_table: str | None = Field(default=None, description="table (created when missing) receiving "
                                          "records the apply cannot write, with the error (none: such a record "
                                          "stops the apply)")
    timeouts: TargetTimeouts = Field(default_factory=TargetTimeouts, description="bounds on every wait on a "
                                     "database target")

    def __new__(cls, *args: Any, **data: Any) -> TargetConfig:  # noqa: PYI034 - it returns a subclass
        """``TargetConfig(kind=k, ...)``: the model of kind ``k`` (a ValueError naming the kinds when
        ``k`` is none of them)."""
        model = cls
        if cls is TargetConfig:
            from cdc.registry import TARGET_CONFIGS

            if data.get("kind") not in TARGET_CONFIGS:
                raise ValueError(f"targets: kind {data.get('kind')!r} is none of {sorted(TARGET_CONFIGS)}")
            model = TARGET_CONFIGS[data["kind"]]
        return super().__new__(model)

    def needs_login(self) -> bool:
        return self.logs_in

    def login_kwargs(self) -> dict[str, Any]:
        """``user`` (when set) and the unwrapped password, as driver keywords, for connect() only."""
        return {**({"user": self.user} if self.user else {}), **super().login_kwargs()}

    @model_validator(mode="after")
    def _tls_fits_kind(self) -> TargetConfig:
        tls = getattr(self, "tls", None)
        if tls is not None and tls_kind(tls) != self.kind:
            raise ValueError(f"tls: a {self.kind} target takes {self.tls_takes}")
        return self


TargetTls = Annotated[Annotated[MySqlTls, Tag("mysql")] | Annotated[OracleTls, Tag("oracle")], Discriminator(tls_kind)]
TLS_DESCRIPTION = ("mysql: {ca, cert, key, verify_identity}; oracle: wallet settings (cdc/config/tls.py); "
                   "postgres: libpq's sslmode/sslrootcert/sslcert/sslkey in the dsn instead")


def store_secrets(raw: Any, info: ValidationInfo) -> Any:
    """A lake target's object-store or catalog settings: secret settings become SecretStr, ``<secret>_file``
    is read (cdc.config.credentials.resolve_secrets); deltalake's ``storage_options`` take text only."""
    if not isinstance(raw, dict):
        return raw  # pydantic reports a mapping is expected
    out = resolve_secrets(raw, info.field_name, is_store_secret, STORE_FILE_SETTINGS)
    if info.field_name == "storage_options":  # deltalake takes text only
        for name, value in out.items():
            if not isinstance(value, (str, SecretStr)):  # the value is not shown: it may be a secret, mis-parsed
                raise ValueError(f"storage_options.{name}: an object-store setting is text (got "  # noqa: TRY004
                                 f"{type(value).__name__}); quote it")
    return out


def catalog_uri_file(data: Any) -> Any:
    """``catalog_uri_file``: the whole catalog URI (with its password) read from a file."""
    if isinstance(data, dict) and "catalog_uri_file" in data:
        data = dict(data)
        path = data.pop("catalog_uri_file")
        if data.get("catalog_uri") is not None:
            raise ValueError("give catalog_uri or catalog_uri_file, not both")
        if path is not None:
            data["catalog_uri"] = SecretDsn(file_secret(str(path), "catalog_uri_file").get_secret_value())
    return data
