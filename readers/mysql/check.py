"""`cdc check --config FILE [--source NAME]`: refuse sources whose settings make capture unsafe.

Oracle sources get the supplemental-logging check of readers/oracle/check.py.

For every host of every MySQL/MariaDB source it checks: binary log on,
binlog_format=ROW, binlog_row_image=FULL, binlog_row_metadata=FULL, GTIDs
(MySQL gtid_mode=ON + enforce_gtid_consistency=ON; MariaDB: gtid_strict_mode
ON), log_slave_updates on every failover candidate (sources with several
hosts), and the user's privileges (REPLICATION SLAVE, REPLICATION CLIENT /
BINLOG MONITOR, SELECT). Each problem names the host, the setting, what it
is and the statement that fixes it. Exit status 1 when anything is wrong,
2 on a bad config file, 0 when every source is fine.

The reader runs the same check on every host it may stream from: at start on
the host it chose and on every other configured host (:func:`refuse_unsafe_hosts`;
with several hosts each is a failover candidate and needs log_slave_updates; an
unreachable one is checked when it is chosen), and again on the new primary
after each failover (:func:`refuse_unsafe`). It refuses on any problem. The
settings are global ones: a session can still override binlog_format and
binlog_row_image, which the reader catches event by event (PartialRowImage,
StatementFormatDml in readers/mysql/reader.py).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from cdc.errors import CdcError
from cdc.tls import MySqlTls
from readers.mysql.connection import open_connection
from readers.mysql.errors import SettingsRefused


@dataclass(frozen=True)
class Problem:
    host: str
    setting: str
    found: str
    fix: str

    def __str__(self) -> str:
        return f"{self.host}: {self.setting} is {self.found}; fix: {self.fix}"


def _persist(name: str, value: str) -> str:
    return f"SET GLOBAL {name}={value}; and {name}={value} in the server's my.cnf [mysqld]"


def check_host(address: str, user: str, password: str, candidate: bool, timeout_s: float = 5.0,
               tls: MySqlTls | None = None) -> list[Problem]:
    """Problems of one host; ``candidate``: it may become the primary (needs log_slave_updates)."""
    try:
        conn = open_connection(address, user, password, timeout_s, tls=tls)
    except CdcError as exc:
        return [Problem(address, "connection", str(exc), "check host, port, user and password")]
    out: list[Problem] = []
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT VERSION()")
            mariadb = "mariadb" in cur.fetchone()[0].lower()
            cur.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('log_bin', 'binlog_format', "
                        "'binlog_row_image', 'binlog_row_metadata', 'gtid_mode', 'enforce_gtid_consistency', "
                        "'gtid_strict_mode', 'log_slave_updates', 'log_replica_updates')")
            v = {k.lower(): str(val) for k, val in cur.fetchall()}
            cur.execute("SHOW GRANTS")
            grants = " ".join(r[0] for r in cur.fetchall()).upper()
    finally:
        conn.close()

    def need(name: str, want: str, fix: str | None = None) -> None:
        got = v.get(name)
        if (got or "").upper() != want.upper():
            out.append(Problem(address, name, got or "missing (server too old?)", fix or _persist(name, want)))

    need("log_bin", "ON", "start the server with log_bin (log-bin=<basename> in my.cnf); needs a restart")
    need("binlog_format", "ROW")
    need("binlog_row_image", "FULL")
    need("binlog_row_metadata", "FULL")
    if mariadb:
        need("gtid_strict_mode", "ON")
    else:
        need("gtid_mode", "ON", "SET GLOBAL enforce_gtid_consistency=ON; SET GLOBAL gtid_mode=OFF_PERMISSIVE; "
             "SET GLOBAL gtid_mode=ON_PERMISSIVE; SET GLOBAL gtid_mode=ON (one step at a time) and in my.cnf")
        need("enforce_gtid_consistency", "ON")
    if candidate:
        name = "log_slave_updates" if "log_slave_updates" in v else "log_replica_updates"
        need(name, "ON", f"{name}=ON in my.cnf [mysqld] and restart (a failover candidate must log what it "
             "replicates, or the stream loses those transactions after failover)")
    if "ALL PRIVILEGES ON *.*" not in grants:
        wanted = ["REPLICATION SLAVE", "SELECT"]
        wanted.append("BINLOG MONITOR" if mariadb and "BINLOG MONITOR" in grants else "REPLICATION CLIENT")
        for priv in wanted:
            if priv not in grants and not (priv == "REPLICATION CLIENT" and "BINLOG MONITOR" in grants):
                out.append(Problem(address, f"privilege {priv}", "not granted",
                                   f"GRANT {priv} ON *.* TO {user!r}@'%'"))
    return out


def check_source(config, candidates_need_log_slave_updates: bool = True) -> list[Problem]:
    password = config.password.get_secret_value()
    several = len(config.hosts) > 1
    problems: list[Problem] = []
    for host in config.hosts:
        problems += check_host(host, config.user, password, several and candidates_need_log_slave_updates,
                               config.connect_timeout_s, config.tls)
    return problems


def refuse_unsafe(address: str, config, candidate: bool | None = None) -> None:
    """Check of the host the reader streams from (at start, after a failover); raises SettingsRefused
    naming every problem. ``candidate`` (default: the source has several hosts) adds log_slave_updates."""
    several = len(config.hosts) > 1 if candidate is None else candidate
    problems = [p for p in check_host(address, config.user, config.password.get_secret_value(), several,
                                      config.connect_timeout_s, config.tls) if p.setting != "connection"]
    if problems:
        raise SettingsRefused(f"source {config.name}: unsafe settings:\n  " + "\n  ".join(map(str, problems)),
                              source=config.name, host=address, problems=[str(p) for p in problems])


def refuse_unsafe_hosts(config, chosen: str) -> list[str]:
    """At start: :func:`refuse_unsafe` on ``chosen`` and on every other configured host (failover
    candidates). Returns the candidates that could not be reached (checked when they are chosen)."""
    refuse_unsafe(chosen, config)
    password = config.password.get_secret_value()
    problems: list[Problem] = []
    unreachable: list[str] = []
    for host in config.hosts:
        if host == chosen:
            continue
        found = check_host(host, config.user, password, True, config.connect_timeout_s, config.tls)
        unreachable += [host for p in found if p.setting == "connection"]
        problems += [p for p in found if p.setting != "connection"]
    if problems:
        raise SettingsRefused(f"source {config.name}: unsafe settings on failover candidate(s):\n  "
                              + "\n  ".join(map(str, problems)), source=config.name,
                              host=problems[0].host, problems=[str(p) for p in problems])
    return unreachable


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="the service YAML file")
    parser.add_argument("--source", help="check only this source (default: every MySQL and Oracle source)")


def main(args: argparse.Namespace) -> int:
    from cdc.config import load_config

    cfg = load_config(args.config)
    sources = [cfg.source(args.source)] if args.source else [s for s in cfg.sources if s.kind in ("mysql", "oracle")]
    bad = 0
    for src in sources:
        if src.kind == "oracle":  # supplemental logging (readers/oracle/check.py)
            from readers.oracle.check import check_source as oracle_problems
            problems: list = oracle_problems(src)
        elif src.kind != "mysql":
            print(f"source {src.name}: kind {src.kind} has no log settings to check")
            continue
        else:
            problems = check_source(src)
        if problems:
            bad += 1
            print(f"source {src.name}: REFUSED ({len(problems)} problem(s))")
            for p in problems:
                print(f"  {p}")
        else:
            print(f"source {src.name}: ok ({', '.join(getattr(src, 'hosts', None) or [src.dsn])})")
    sys.stdout.flush()
    return 1 if bad else 0
