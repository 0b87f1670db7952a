"""Connections to one MySQL/MariaDB host and what we ask it about itself.

``open_connection`` makes a plain PyMySQL connection with the configured
timeouts and turns connection failures into classified errors: a wrong
password is Terminal (AuthenticationFailed), an unreachable host is
Transient (SourceUnavailable); a ``caching_sha2_password`` account on a server
that offers neither TLS nor its RSA public key is Terminal too, named as such
(the server answers it with the same "Access denied" as a wrong password).
``probe`` reads the facts failover needs
(flavour, read_only, replica or not, GTID state, oldest GTID state still in
the binlogs) in one short session.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pymysql

from cdc.config.dsn import mysql_connect_args
from cdc.config.tls import MySqlTls, mysql_tls_problem
from readers.mysql.errors import AuthenticationFailed, ConnectionLost, SourceUnavailable, TlsFailed
from readers.mysql.position import GtidSet
from readers.mysql.privileges import denied
from readers.mysql.shared_tls import SharedTlsConnection

ER_ACCESS_DENIED = 1045
ER_DBACCESS_DENIED = 1044
CLIENT_ERRORS_LOST = {2003, 2006, 2013, 2055}


def split_host(address: str) -> tuple[str, int]:
    """``host:port`` (as the source config normalises it) as (host, port); ``[::1]:3306`` gives ``::1``."""
    host, _, port = address.rpartition(":")
    return host.removeprefix("[").removesuffix("]"), int(port)


def connection_settings(address: str, user: str, password: str, timeout_s: float,
                        read_timeout_s: float | None = None, tls: MySqlTls | None = None) -> dict[str, Any]:
    """PyMySQL keyword arguments for one host: the binlog stream's and every query connection's."""
    host, port = split_host(address)
    settings = {**mysql_connect_args(host, port, user, password, tls=tls), "connect_timeout": max(1, round(timeout_s))}
    if read_timeout_s is not None:
        settings["read_timeout"] = max(1, round(read_timeout_s))
    return settings


SHA2_PLUGINS = ("caching_sha2_password", "sha256_password")


class _Attempt(SharedTlsConnection):
    """A connection that, when the server refuses the login, notes on the error what the exchange had: TLS
    or not, the authentication plugin, and whether the server sent its RSA public key (``classify``)."""

    def connect(self, sock: Any = None) -> None:
        try:
            super().connect(sock)
        except pymysql.err.OperationalError as exc:
            exc.auth_exchange = (bool(self._secure), self._auth_plugin_name, bool(self.server_public_key))
            raise


def _no_secure_password_path(exc: BaseException) -> bool:
    """The login failed on a plain connection with a SHA-256 plugin, and the server never sent the RSA
    public key PyMySQL asks for: it has none, so it cannot receive any password (right or wrong)."""
    exchange = getattr(exc, "auth_exchange", None)
    return exchange is not None and not exchange[0] and exchange[1] in SHA2_PLUGINS and not exchange[2]


def classify(exc: BaseException, address: str, user: str, tls: MySqlTls | None = None) -> Exception:
    """Map a PyMySQL error to ours (the caller raises it ``from exc``)."""
    code = exc.args[0] if getattr(exc, "args", None) and isinstance(exc.args[0], int) else None
    tls_problem = mysql_tls_problem(exc, tls)
    if (missing := denied(exc, address, user)) is not None:
        return missing
    if code == ER_ACCESS_DENIED and _no_secure_password_path(exc):
        plugin = exc.auth_exchange[1]  # type: ignore[attr-defined]
        return AuthenticationFailed(
            f"{address} rejected user {user!r}: {exc.args[1]}: its {plugin} password can travel only inside TLS or "
            f"RSA-encrypted with the server's public key, and {address} offers neither (no TLS, no RSA key pair); "
            "fix: enable TLS on the server (ssl_cert and ssl_key in [mysqld], tls_version not empty; the source "
            "then connects over TLS, verified with a `tls` block), or give the server an RSA key pair for "
            f"{plugin} ({plugin}_auto_generate_rsa_keys=ON, or {plugin}_private_key_path and "
            f"{plugin}_public_key_path naming a key pair) and restart it", host=address, user=user)
    if code in (ER_ACCESS_DENIED, ER_DBACCESS_DENIED):
        hint = f" ({tls_problem})" if tls_problem else ""
        return AuthenticationFailed(f"{address} rejected user {user!r}: {exc.args[1]}{hint}; fix: check the source's "
                                    "`user` and its password (`password`, `password_file` or the environment)",
                                    host=address, user=user)
    if tls_problem:
        return TlsFailed(f"TLS to {address} failed: {tls_problem}", host=address)
    if code in CLIENT_ERRORS_LOST or isinstance(exc, (OSError, pymysql.err.InterfaceError)):
        return ConnectionLost(f"cannot reach {address}: {exc}", host=address)
    return SourceUnavailable(f"{address}: {exc}", host=address)


def open_connection(address: str, user: str, password: str, timeout_s: float = 5.0,
                    db: str | None = None, tls: MySqlTls | None = None, **kw: Any) -> pymysql.connections.Connection:
    try:
        return _Attempt(**connection_settings(address, user, password, timeout_s, timeout_s * 6, tls),
                        database=db, autocommit=True, **kw)
    except (pymysql.err.MySQLError, OSError) as exc:
        raise classify(exc, address, user, tls) from exc


def server_version(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a ``SELECT VERSION()`` text: ``8.4.2``, ``8.0.36-28`` (Percona),
    ``10.11.6-MariaDB-log``, ``5.5.5-10.6.16-MariaDB`` (MariaDB's old replication prefix)."""
    text = version.split("5.5.5-", 1)[1] if version.startswith("5.5.5-") else version
    parts = re.match(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", text)
    return tuple(int(x or 0) for x in parts.groups()) if parts else (0, 0, 0)  # type: ignore[return-value]


def binlog_status_statement(version: str) -> str:
    """The statement that reports the current binlog file and position: MySQL 8.2+ has ``SHOW BINARY LOG
    STATUS`` (and 8.4 removed ``SHOW MASTER STATUS``); MariaDB and older MySQL answer ``SHOW MASTER
    STATUS``."""
    if "mariadb" not in version.lower() and server_version(version) >= (8, 2, 0):
        return "SHOW BINARY LOG STATUS"
    return "SHOW MASTER STATUS"


def binlog_status(cur: Any) -> tuple[str, int] | None:
    """(file, position) the server is writing now, None with the binary log off."""
    cur.execute("SELECT VERSION()")
    cur.execute(binlog_status_statement(str(cur.fetchone()[0])))
    row = cur.fetchone()
    return (str(row[0]), int(row[1])) if row else None


@dataclass(frozen=True)
class HostInfo:
    """What one host said about itself when probed."""

    address: str
    flavor: str  # "mariadb" | "mysql"
    version: str
    server_id: int
    read_only: bool
    is_replica: bool
    gtid_state: GtidSet  # every transaction in its binlog history (gtid_binlog_pos / gtid_executed)
    oldest: GtidSet  # MariaDB: state at the start of the oldest binlog; MySQL: gtid_purged
    oldest_file: str = ""  # the oldest binlog file the host still has (named when our checkpoint is older)

    @property
    def writable_primary(self) -> bool:
        return not self.read_only and not self.is_replica


def _scalar(cur: Any, sql: str, args: Any = None) -> Any:
    cur.execute(sql, args)
    row = cur.fetchone()
    return None if row is None else row[0]


def _replicating(cur: Any) -> bool:
    """A replica is a host whose replication threads run or try to (a stopped one may be promoted)."""
    row = cur.fetchone()
    if row is None:
        return False
    status = dict(zip((d[0] for d in cur.description), row))
    io = status.get("Slave_IO_Running", status.get("Replica_IO_Running"))
    sql = status.get("Slave_SQL_Running", status.get("Replica_SQL_Running"))
    return io in ("Yes", "Connecting") or sql == "Yes"


def probe(address: str, user: str, password: str, timeout_s: float = 5.0,
          tls: MySqlTls | None = None) -> HostInfo:
    """Ask one host for its role and GTID state. Raises classified errors."""
    conn = open_connection(address, user, password, timeout_s, tls=tls)
    try:
        with conn.cursor() as cur:
            version = str(_scalar(cur, "SELECT VERSION()"))
            flavor = "mariadb" if "mariadb" in version.lower() else "mysql"
            server_id = int(_scalar(cur, "SELECT @@server_id"))
            read_only = bool(int(_scalar(cur, "SELECT @@read_only")))
            cur.execute("SHOW SLAVE STATUS" if flavor == "mariadb" else "SHOW REPLICA STATUS")
            is_replica = _replicating(cur)
            cur.execute("SHOW BINARY LOGS")
            logs = cur.fetchall()
            oldest_file = str(logs[0][0]) if logs else ""
            if flavor == "mariadb":
                state = GtidSet.parse(_scalar(cur, "SELECT @@gtid_binlog_pos") or "")
                oldest = GtidSet.parse(_scalar(cur, "SELECT BINLOG_GTID_POS(%s, 4)", (oldest_file,)) or "") \
                    if logs else state
            else:
                state = GtidSet.parse(_scalar(cur, "SELECT @@GLOBAL.gtid_executed") or "")
                oldest = GtidSet.parse(_scalar(cur, "SELECT @@GLOBAL.gtid_purged") or "")
    except pymysql.err.MySQLError as exc:
        raise classify(exc, address, user, tls) from exc
    finally:
        conn.close()
    return HostInfo(address, flavor, version, server_id, read_only, is_replica, state, oldest, oldest_file)


def open_primary(src: Any) -> Any:
    """A connection to the first writable host of MySQL/MariaDB source config ``src`` (the commands that write
    to the source: `cdc snapshot`, `cdc source skip --resync`); ConfigError when none is."""
    from cdc.errors import ConfigError

    last: Exception | None = None
    for host in src.hosts:
        try:
            conn = open_connection(host, src.user, src.password.get_secret_value(), src.connect_timeout_s,
                                   tls=src.tls)
        except Exception as exc:  # noqa: BLE001 - try the next host; the last error is reported
            last = exc
            continue
        with conn.cursor() as cur:
            cur.execute("SELECT @@GLOBAL.read_only")
            if not int(cur.fetchone()[0]):
                return conn
        conn.close()
    raise ConfigError(f"source {src.name}: no writable host among {src.hosts} ({last})", key="hosts")
