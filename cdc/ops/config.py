"""The ``api:`` section of the config: the daemon's operations API (cdc/ops/server.py).

Off by default. When on, it listens on ``api.host:api.port`` (loopback by default) and every request
carries ``Authorization: Bearer <token>``; each token is read from a file (never from the config
itself), with a role: ``read`` (GET routes) or ``operator`` (GET and every action). ``api.tls`` serves
HTTPS; with ``api.tls.client_ca_file`` clients may instead present a certificate that CA signed, whose
subject CN ``api.tls.client_roles`` maps to a role. A listener on an address other than loopback without
tokens or client certificates is refused at start.
"""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ApiToken(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="who the token is: recorded as the actor of every action "
                      "taken with it (operations records in the change stream)")
    file: str = Field(min_length=1, description="file holding the bearer token (one line; surrounding "
                      "whitespace ignored; at least 16 characters)")
    role: Literal["read", "operator"] = Field(default="read", description="read: GET routes only; operator: "
                                              "GET routes and every action (pause, resume, restart, skip, resync)")


class ApiTls(BaseModel):
    """``api.tls``: HTTPS, and with ``client_ca_file`` TLS client certificates as the alternative to bearer
    tokens (the certificate's subject CN is the actor, ``client_roles`` its role)."""

    model_config = ConfigDict(extra="forbid")

    cert_file: str = Field(min_length=1, description="the API's server certificate (PEM; its chain after it)")
    key_file: str = Field(min_length=1, description="the server certificate's private key (PEM, unencrypted)")
    client_ca_file: str | None = Field(default=None, description="CA certificate(s) (PEM) that sign client "
                                       "certificates: set, every client must present one it signed (refused in "
                                       "the TLS handshake otherwise), and is who api.tls.client_roles says")
    client_roles: dict[str, Literal["read", "operator"]] = Field(
        default_factory=dict, description="client certificate subject CN -> role (read or operator); the CN is "
        "recorded as the actor; a certificate whose CN is not here gets 403")

    @model_validator(mode="after")
    def _roles_need_ca(self) -> ApiTls:
        if self.client_roles and self.client_ca_file is None:
            raise ValueError("api.tls.client_roles needs api.tls.client_ca_file (the CA that signs the client "
                             "certificates)")
        if self.client_ca_file is not None and not self.client_roles:
            raise ValueError("api.tls.client_ca_file is set but api.tls.client_roles maps no certificate CN to a "
                             "role: every client would get 403")
        return self


class ApiConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=False, description="serve the operations API (/api/v1/..., /status) on "
                          "api.host:api.port")
    host: str = Field(default="127.0.0.1", description="address the operations API listens on; any address "
                      "other than loopback needs api.tokens")
    port: int = Field(default=9110, ge=0, le=65535, description="TCP port of the operations API (0: one the "
                      "system picks)")
    tokens: list[ApiToken] = Field(default_factory=list, description="bearer tokens accepted, each read from "
                                   "a file with its role; none: no authentication (allowed on loopback only)")
    max_body_bytes: int = Field(default=65536, gt=0, description="largest request body accepted (larger: 413)")
    tls: ApiTls | None = Field(default=None, description="serve HTTPS; with client_ca_file, authenticate clients "
                               "by their certificates (CN -> role) instead of or besides bearer tokens")

    @property
    def client_certs(self) -> bool:
        """True when clients authenticate with TLS client certificates."""
        return self.tls is not None and self.tls.client_ca_file is not None

    @model_validator(mode="after")
    def _loopback_or_tokens(self) -> ApiConfig:
        if self.enabled and not self.tokens and not self.client_certs and not is_loopback(self.host):
            raise ValueError(f"api.host {self.host} is not loopback: add api.tokens (bearer tokens read from files) "
                             "or api.tls.client_ca_file with api.tls.client_roles (client certificates), or bind "
                             "api.host to 127.0.0.1")
        return self


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class AlertsConfig(BaseModel):
    """The ``alerts:`` section: a webhook notifier (cdc/ops/alerts.py), off by default."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=False, description="post an alert to the webhook when a source stops or is "
                          "fenced, writes dead letters, or lags over alerts.lag_threshold_s")
    webhook_url: str | None = Field(default=None, description="URL the alerts are POSTed to as Slack-compatible "
                                    "JSON ({\"text\": ...}); a URL that holds a secret (Slack's do) belongs in "
                                    "alerts.webhook_url_file")
    webhook_url_file: str | None = Field(default=None, description="file holding the webhook URL (one line)")
    lag_threshold_s: float = Field(default=300.0, gt=0, description="seconds of cdc_source_lag_seconds over "
                                   "which a source's lag is alerted (once, then once when back under)")
    check_interval_s: float = Field(default=5.0, gt=0, description="seconds between two looks at the sources")
    timeout_s: float = Field(default=5.0, gt=0, le=60, description="seconds one POST may take")
    retries: int = Field(default=3, ge=0, le=10, description="POSTs retried after a failure (backoff 1, 2, 4 "
                         "... s); then the alert is dropped and logged")
    queue_size: int = Field(default=100, gt=0, description="alerts waiting to be sent at most; more are dropped "
                            "and logged (the pipeline never waits for the webhook)")

    @model_validator(mode="after")
    def _one_url(self) -> AlertsConfig:
        if self.enabled and (self.webhook_url is None) == (self.webhook_url_file is None):
            raise ValueError("alerts.enabled needs exactly one of alerts.webhook_url and alerts.webhook_url_file")
        if self.webhook_url is not None and not self.webhook_url.startswith(("http://", "https://")):
            raise ValueError(f"alerts.webhook_url must be an http:// or https:// URL; got {self.webhook_url[:40]!r}")
        return self
