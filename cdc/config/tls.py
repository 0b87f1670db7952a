"""TLS settings for database connections, one model per driver family, defined once.

``MySqlTls`` is the ``tls:`` block of a MySQL/MariaDB source and of a ``kind: mysql``
target; ``OracleTls`` the ``tls:`` block of an Oracle source and a ``kind: oracle``
target. PostgreSQL has no block: libpq's own DSN settings (``sslmode``,
``sslrootcert``, ``sslcert``, ``sslkey``) pass through unchanged to every connection.

Files are checked when the configuration is loaded, so a wrong path is an error
naming the key and the path at start, not a TLS failure at the first reconnect.
"""

from __future__ import annotations

import os
import ssl
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationInfo, field_validator, model_validator


def _existing(path: str | None, what: str) -> str | None:
    if path is not None and not os.path.exists(path):
        raise ValueError(f"{what} {path!r} does not exist")
    return path


class MySqlTls(BaseModel):
    """``tls: {ca, cert, key, verify_identity}`` for every connection to a MySQL/MariaDB server.

    A block (even ``tls: {}``) makes TLS REQUIRED: a server that does not offer it is an
    error, never a silent plaintext fallback. ``ca`` verifies the server's certificate
    chain; ``verify_identity`` (default: true when ``ca`` is set) also checks that the
    certificate names the host connected to. Without ``ca`` the link is encrypted but the
    server is not authenticated. ``cert``/``key`` present a client certificate (accounts
    created ``REQUIRE X509``). Without a block, PyMySQL still negotiates TLS when the
    server offers it (unverified), as the ``mysql`` client's ``--ssl-mode=PREFERRED``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    ca: str | None = Field(default=None, description="PEM file of the CA(s) that signed the server certificate")
    cert: str | None = Field(default=None, description="PEM client certificate (REQUIRE X509 accounts)")
    key: str | None = Field(default=None, description="PEM private key of cert (unencrypted)")
    verify_identity: bool | None = Field(default=None, description="check the host name; default: true with ca")

    @field_validator("ca", "cert", "key")
    @classmethod
    def _file_exists(cls, path: str | None, info: ValidationInfo) -> str | None:
        return _existing(path, f"tls.{info.field_name} file")

    @model_validator(mode="after")
    def _consistent(self) -> MySqlTls:
        if self.key and not self.cert:
            raise ValueError("tls.key is set but tls.cert is not: a client key needs its certificate")
        if self.verify_identity and not self.ca:
            raise ValueError("tls.verify_identity is true but tls.ca is not set: name the CA file that "
                             "signed the server certificate")
        return self

    @property
    def verifies_identity(self) -> bool:
        return self.verify_identity if self.verify_identity is not None else self.ca is not None

    def pymysql_ssl(self) -> dict[str, Any]:
        """PyMySQL's ``ssl=`` dict (also what python-mysql-replication passes through).

        Never empty: PyMySQL treats an empty dict as "no settings" (PREFERRED); ``verify_mode``
        is always present so TLS is required.
        """
        ssl: dict[str, Any] = {"verify_mode": self.ca is not None, "check_hostname": self.verifies_identity}
        for name in ("ca", "cert", "key"):
            if getattr(self, name):
                ssl[name] = getattr(self, name)
        return ssl


class OracleTls(BaseModel):
    """``tls:`` for python-oracledb: the wallet and server-DN settings of ``oracledb.connect``.

    TCPS itself is chosen by the DSN (``tcps://host:2484/service`` or a tnsnames alias whose
    descriptor says ``PROTOCOL=TCPS``); ``config_dir`` is where tnsnames.ora lives.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    config_dir: str | None = Field(default=None, description="directory of tnsnames.ora / sqlnet.ora")
    wallet_location: str | None = Field(default=None, description="directory holding ewallet.pem")
    wallet_password: SecretStr | None = Field(default=None, description="password of an encrypted ewallet.pem")
    ssl_server_dn_match: bool | None = Field(default=None, description="check the server certificate's DN")
    ssl_server_cert_dn: str | None = Field(default=None, description="the DN the server certificate must have")

    @field_validator("config_dir", "wallet_location")
    @classmethod
    def _dir_exists(cls, path: str | None, info: ValidationInfo) -> str | None:
        return _existing(path, f"tls.{info.field_name} directory")

    def connect_kwargs(self) -> dict[str, Any]:
        """The set settings as ``oracledb.connect`` keyword arguments (the password unwrapped)."""
        kw = {k: v for k, v in self.model_dump(exclude_none=True).items() if k != "wallet_password"}
        if self.wallet_password is not None:
            kw["wallet_password"] = self.wallet_password.get_secret_value()
        return kw


def tls_kind(value: Any) -> str:
    """The tag of a ``tls:`` value in a target's union: Oracle's keys are disjoint from MySQL's."""
    if isinstance(value, BaseModel):
        return "oracle" if isinstance(value, OracleTls) else "mysql"
    return "oracle" if isinstance(value, dict) and set(value) & set(OracleTls.model_fields) else "mysql"


def postgres_tls_problem(message: str) -> str | None:
    """The fix for a libpq connection failure about TLS (``message``: its text); None when it is not."""
    if "no encryption" in message:
        return ("the server accepts only TLS connections (hostssl): set sslmode=verify-full&sslrootcert="
                "/path/to/ca.pem in the dsn")
    if "certificate verify failed" in message:
        return "the server certificate failed verification: set the dsn's sslrootcert to the CA that signed it"
    if "does not match host name" in message:
        return ("the server certificate does not name the host in the dsn: connect by a name in its "
                "subjectAltName, or use sslmode=verify-ca")
    return None


_CR_SSL_CONNECTION_ERROR = 2026
_ER_ACCESS_DENIED = 1045


def mysql_tls_problem(exc: BaseException, tls: MySqlTls | None) -> str | None:
    """What a failed PyMySQL connect says about TLS, with the fix; None when it is not about TLS.

    PyMySQL reports a failed handshake as a generic "Can't connect" (2003), which a reader
    would retry forever: callers turn a non-None answer into a Terminal error instead.
    """
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    cause = exc.__cause__ or exc.__context__
    if code == _CR_SSL_CONNECTION_ERROR:
        return ("the server does not offer TLS but this connection has a tls block: enable TLS on the "
                "server (ssl_cert, ssl_key in [mysqld]) or remove the tls block")
    if isinstance(cause, ssl.SSLCertVerificationError):
        if "mismatch" in str(cause.verify_message or ""):
            return (f"the server certificate does not name the host connected to ({cause.verify_message}): "
                    "connect by a name or IP in its subjectAltName, or set tls.verify_identity: false")
        return (f"the server certificate failed verification against tls.ca {tls.ca if tls else None!r} "
                f"({cause.verify_message}): set tls.ca to the CA that signed the server certificate")
    if isinstance(cause, ssl.SSLError):
        return (f"the TLS handshake failed ({cause}): check tls.cert / tls.key (a client certificate the "
                "server's CA signed) and the server's ssl_ca")
    if code == _ER_ACCESS_DENIED and (tls is None or tls.cert is None):
        return ("access denied: a wrong user or password, or an account created REQUIRE SSL / X509 / "
                "SUBJECT / ISSUER: " + ("set tls: {ca: ..., cert: ..., key: ...}" if tls is None
                                        else "set tls.cert and tls.key (a client certificate)"))
    return None
