"""The one MySQL / MariaDB DSN parser: ``mysql://user:password@host:port/db``.

Used wherever a DSN names a MySQL database (compare endpoints, the shadow
source, the MySQL target, maintained views outside the apply job), so every
part has one default: host ``127.0.0.1``, port 3306, user ``root``, no
password, no database. User and password may be percent-encoded
(``p%40ss`` for ``p@ss``); ``mariadb://`` is the same. A DSN that is not a
MySQL URL, or whose port is not a number, is a ConfigError naming where the
DSN came from (the password is masked in the message).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

from cdc.errors import ConfigError
from cdc.tls import MySqlTls

SCHEMES = ("mysql", "mariadb")
DEFAULT_HOST, DEFAULT_PORT, DEFAULT_USER = "127.0.0.1", 3306, "root"


@dataclass(frozen=True)
class MySqlDsn:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    user: str = DEFAULT_USER
    password: str = field(default="", repr=False)
    database: str | None = None

    def connect_args(self, tls: MySqlTls | None = None) -> dict[str, Any]:
        """Keyword arguments for ``pymysql.connect`` (``database`` only when the DSN names one)."""
        return mysql_connect_args(self.host, self.port, self.user, self.password, self.database, tls)


def mysql_connect_args(host: str, port: int, user: str, password: str, database: str | None = None,
                       tls: MySqlTls | None = None) -> dict[str, Any]:
    """The ONE builder of ``pymysql.connect`` keyword arguments, for every connection the product
    opens to a MySQL/MariaDB server (source reader and binlog stream, snapshot, checks, compare,
    MySQL target, views), so TLS reaches them all. ``tls`` None: PyMySQL's default (TLS when
    the server offers it, unverified)."""
    args: dict[str, Any] = {"host": host, "port": port, "user": user, "password": password}
    if database:
        args["database"] = database
    if tls is not None:
        args["ssl"] = tls.pymysql_ssl()
    return args


def is_mysql_dsn(dsn: str | None) -> bool:
    return bool(dsn) and dsn.split("://", 1)[0].lower() in SCHEMES and "://" in dsn


def parse_mysql_dsn(dsn: str | None, where: str = "dsn") -> MySqlDsn:
    """``dsn`` parsed; ``where`` names its origin for errors (e.g. ``targets[2].dsn``, ``--source``)."""
    if not is_mysql_dsn(dsn):
        raise ConfigError(f"{where}: {mask(dsn)!r} is not a MySQL DSN (mysql://user:password@host:port/db)",
                          key=where)
    u = urlparse(dsn)
    try:
        port = u.port or DEFAULT_PORT
    except ValueError:
        raise ConfigError(f"{where}: the port of {mask(dsn)!r} is not a number", key=where) from None
    return MySqlDsn(host=u.hostname or DEFAULT_HOST, port=port, user=unquote(u.username or DEFAULT_USER),
                    password=unquote(u.password or ""), database=unquote(u.path.lstrip("/")) or None)


def mask(dsn: str | None) -> str | None:
    """``dsn`` with its password replaced by ``***`` (for messages and logs)."""
    if not dsn or "://" not in dsn or "@" not in dsn:
        return dsn
    scheme, rest = dsn.split("://", 1)
    creds, at, tail = rest.rpartition("@")
    user, colon, _ = creds.partition(":")
    return f"{scheme}://{user}{':***' if colon else ''}{at}{tail}"
