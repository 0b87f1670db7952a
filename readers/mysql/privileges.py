"""The privileges the MySQL/MariaDB reader uses, checked by running what the daemon runs.

Each privilege is proven the way the daemon needs it: the statements the reader issues (probe,
snapshot) are executed and an access-denied answer names the missing privilege; REPLICATION SLAVE
(the binlog dump, which has no harmless statement to try) is read from ``SHOW GRANTS``. What the
daemon runs, and so what a capture user needs:

=============================  =============================================  ===========================
what                           statement                                      privilege
=============================  =============================================  ===========================
read the binlog                COM_BINLOG_DUMP (as a replica)                 REPLICATION SLAVE
primary or replica?            MariaDB ``SHOW SLAVE STATUS``                  SLAVE MONITOR (10.5.9+),
                                                                              REPLICATION SLAVE ADMIN
                                                                              (10.5.2-10.5.8), REPLICATION
                                                                              CLIENT (older)
                               MySQL ``SHOW REPLICA STATUS``                  REPLICATION CLIENT
binlogs still on the server    ``SHOW BINARY LOGS``                           BINLOG MONITOR (MariaDB 10.5.2+),
                                                                              REPLICATION CLIENT (MySQL, older)
a DDL's statement at its       ``SHOW BINARY LOGS``, ``SHOW BINLOG EVENTS``     BINLOG MONITOR (MariaDB 10.5.2+),
position                       (readers/mysql/definitions.py)                 REPLICATION SLAVE (MySQL, older)
snapshot, MySQL                ``@@gtid_executed``, ``SHOW BINARY LOG STATUS``  REPLICATION CLIENT, and
                               around the read, its window's binlog           REPLICATION SLAVE (no RELOAD:
                               (readers/mysql/snapshot_window.py)             no global lock is taken)
snapshot, both                 ``SELECT`` on each captured table              SELECT
=============================  =============================================  ===========================

:func:`missing` returns one :class:`Missing` per privilege not held, each with the GRANT that fixes
it (for the account the server matched, ``CURRENT_USER()``). :func:`denied` turns an access-denied
error the reader meets at run time into :class:`MissingPrivilege`, a Terminal error naming the
privilege and the GRANT.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pymysql

from cdc.errors import CdcError, Terminal

ER_SPECIFIC_ACCESS_DENIED = 1227  # "Access denied; you need (at least one of) the X privilege(s) ..."
ER_TABLEACCESS_DENIED = 1142  # "SELECT command denied to user ... for table ..."
ER_DBACCESS_DENIED = 1044
_NEEDED = re.compile(r"you need \(at least one of\) the (.+?) privilege", re.IGNORECASE)


class MissingPrivilege(CdcError, Terminal):
    """The capture user lacks a privilege the reader uses (fields: host, privilege, grant)."""


@dataclass(frozen=True)
class Missing:
    privilege: str
    why: str
    grant: str

    def __str__(self) -> str:
        return f"privilege {self.privilege} not granted ({self.why}); fix: {self.grant}"

    def problem(self) -> tuple[str, str, str]:
        """(setting, found, fix) as readers/mysql/check.Problem takes them."""
        return f"privilege {self.privilege}", f"not granted (the reader {self.why})", self.grant


def _version(text: str) -> tuple[int, int, int]:
    nums = [int(n) for n in re.findall(r"\d+", text.split("-")[0])[:3]]
    return tuple((nums + [0, 0, 0])[:3])  # type: ignore[return-value]


def replica_status_privilege(mariadb: bool, version: str) -> str:
    """The privilege ``SHOW SLAVE STATUS`` / ``SHOW REPLICA STATUS`` needs on this server."""
    if not mariadb:
        return "REPLICATION CLIENT"
    v = _version(version)
    if v >= (10, 5, 9):
        return "SLAVE MONITOR"
    return "REPLICATION SLAVE ADMIN" if v >= (10, 5, 2) else "REPLICATION CLIENT"


def binlog_list_privilege(mariadb: bool, version: str) -> str:
    """The privilege ``SHOW BINARY LOGS`` needs on this server."""
    return "BINLOG MONITOR" if mariadb and _version(version) >= (10, 5, 2) else "REPLICATION CLIENT"


def binlog_events_privilege(mariadb: bool, version: str) -> str:
    """What ``SHOW BINLOG EVENTS`` needs: MariaDB 10.5.2+ BINLOG MONITOR, MySQL and older MariaDB REPLICATION SLAVE."""
    return "BINLOG MONITOR" if mariadb and _version(version) >= (10, 5, 2) else "REPLICATION SLAVE"


def _account(cur: Any) -> str:
    cur.execute("SELECT CURRENT_USER()")
    user, _, host = str(cur.fetchone()[0]).rpartition("@")
    return f"'{user}'@'{host}'"


def _denied(cur: Any, sql: str) -> bool:
    """Run ``sql``; True when the server refuses it for want of a privilege."""
    try:
        cur.execute(sql)
        cur.fetchall()
        return False
    except pymysql.err.MySQLError as exc:
        code = exc.args[0] if exc.args else None
        if code in (ER_SPECIFIC_ACCESS_DENIED, ER_TABLEACCESS_DENIED, ER_DBACCESS_DENIED):
            return True
        raise


def missing(conn: Any) -> list[Missing]:
    """Privileges the reader uses that the user of ``conn`` lacks (an empty list: it has them all)."""
    out: list[Missing] = []
    with conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        version = str(cur.fetchone()[0])
        mariadb = "mariadb" in version.lower()
        account = _account(cur)

        def need(privilege: str, why: str) -> None:
            if all(m.privilege != privilege for m in out):  # one line per privilege, with its first reason
                out.append(Missing(privilege, why, f"GRANT {privilege} ON *.* TO {account};"))

        cur.execute("SHOW GRANTS")
        grants = [str(r[0]).upper() for r in cur.fetchall()]
        on_all = [g.split(" ON *.* TO")[0] for g in grants if " ON *.* TO" in g]
        if not any("ALL PRIVILEGES" in g or "REPLICATION SLAVE" in g.replace("REPLICATION SLAVE ADMIN", "")
                   for g in on_all):
            need("REPLICATION SLAVE", "reads the binlog as a replica")
        if _denied(cur, "SHOW SLAVE STATUS" if mariadb else "SHOW REPLICA STATUS"):
            need(replica_status_privilege(mariadb, version), "tells a primary from a replica at start and at failover")
        if _denied(cur, "SHOW BINARY LOGS"):
            need(binlog_list_privilege(mariadb, version), "checks that the binlogs still hold the checkpoint")
        if _denied(cur, "SHOW BINLOG EVENTS LIMIT 1"):
            need(binlog_events_privilege(mariadb, version), "reads a DDL's statement at its binlog position")
        if not any(re.search(r"\b(SELECT|ALL PRIVILEGES)\b", g.split(" ON ")[0]) for g in grants):
            need("SELECT", "snapshots read the captured tables")
    return out


def denied(exc: BaseException, address: str, user: str) -> MissingPrivilege | None:
    """An access-denied error met at run time as MissingPrivilege (None: not a privilege error)."""
    code = exc.args[0] if getattr(exc, "args", None) and isinstance(exc.args[0], int) else None
    if code != ER_SPECIFIC_ACCESS_DENIED:
        return None
    text = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
    found = _NEEDED.search(text)
    names = [p.strip() for p in found.group(1).split(",")] if found else []
    privilege = next((p for p in reversed(names) if p.upper() != "SUPER"), names[0] if names else "?")
    return MissingPrivilege(f"{address}: user {user!r} lacks the {privilege} privilege ({text}); "
                            f"fix: GRANT {privilege} ON *.* TO '{user}'@'%'; (the account's host part as created), "
                            "then `cdc check` lists every privilege the daemon uses",
                            privilege=privilege)
