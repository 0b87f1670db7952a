"""DSNs: the one MySQL / MariaDB DSN parser, and the one place that finds a password in a DSN.

``mysql://user:password@host:port/db`` is parsed by ``parse_mysql_dsn``.

Used wherever a DSN names a MySQL database (compare endpoints, the shadow
source, the MySQL target, maintained views outside the apply job), so every
part has one default: host ``127.0.0.1``, port 3306, user ``root``, no
password, no database. User and password may be percent-encoded
(``p%40ss`` for ``p@ss``); ``mariadb://`` is the same. A DSN that is not a
MySQL URL, or whose port is not a number, is a ConfigError naming where the
DSN came from (the password is masked in the message).

A password written into a DSN is found in the three forms our targets
accept: a URL (``scheme://user:password@host/...`` or ``?password=``, percent-encoded),
libpq keywords (``host=h password='p w'``) and Oracle's
``user/password@address``. ``split_password`` takes it out (the config
keeps it as a SecretStr, the DSN without it); ``mask`` shows a DSN with
``***`` in its place, for messages and logs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

from cdc.config.tls import MySqlTls
from cdc.errors import ConfigError

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


def database_kind(dsn: str) -> str | None:
    """``mysql``, ``postgres`` (a URL or libpq ``host=...`` keywords), ``duckdb`` (``duckdb://``, a
    ``.duckdb``/``.db`` path, ``:memory:``), or None when the DSN does not say."""
    if is_mysql_dsn(dsn):
        return "mysql"
    if dsn.startswith(("postgresql://", "postgres://")) or "host=" in dsn:
        return "postgres"
    if dsn.startswith("duckdb://") or dsn.endswith((".duckdb", ".db")) or dsn == ":memory:":
        return "duckdb"
    return None


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


_URL_PASSWORD = re.compile(r"^(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:@/?#]*):(?P<pw>[^@/?#]*)@")
_QUERY_PASSWORD = re.compile(r"(?P<head>[?&]password=)(?P<pw>[^&#]*)")
_KEYWORD_PASSWORD = re.compile(r"(?P<head>(?:^|\s)password\s*=\s*)(?P<pw>'(?:[^'\\]|\\.)*'|[^\s']\S*)")
_ORACLE_PASSWORD = re.compile(r"^(?P<head>[^/@\s=:]+)/(?P<pw>[^@\s]*)@")


def _password_match(dsn: str) -> re.Match[str] | None:
    if "://" in dsn:
        return _URL_PASSWORD.search(dsn) or _QUERY_PASSWORD.search(dsn)
    return (_KEYWORD_PASSWORD if "=" in dsn else _ORACLE_PASSWORD).search(dsn)


def split_password(dsn: str) -> tuple[str, str | None]:
    """``(dsn without its password, the password)``; ``(dsn, None)`` when it holds none.

    The URL form keeps ``user@``, the keyword form loses the ``password=`` item, Oracle's
    ``user/password@address`` becomes ``user@address``. The password comes back decoded
    (percent-encoding, libpq quoting), as the driver would have read it.
    """
    m = _password_match(dsn)
    if m is None:
        return dsn, None
    pw = m["pw"]
    if m.re is _KEYWORD_PASSWORD:
        if pw.startswith("'"):
            pw = re.sub(r"\\(.)", r"\1", pw[1:-1])
        return (dsn[:m.start()] + dsn[m.end():]).strip(), pw
    if m.re is _QUERY_PASSWORD:
        rest = dsn[m.end():]
        head = dsn[:m.start()] + (m["head"][0] if rest.startswith("&") else "")
        return head + rest[1:] if rest.startswith("&") else head + rest, unquote(pw)
    if m.re is _URL_PASSWORD:
        pw = unquote(pw)
    return m["head"] + dsn[m.end() - 1:], pw


def mask(dsn: str | None) -> str | None:
    """``dsn`` with its password replaced by ``***`` (for messages and logs)."""
    m = _password_match(dsn) if dsn else None
    if m is None:
        return dsn
    return dsn[:m.start("pw")] + "***" + dsn[m.end("pw"):]
