"""Source settings that make capture unsafe: refused by the reader at start, reported by `cdc check`.

:func:`checks` is this kind's part of `cdc check` (cdc/checks.py): the settings below on every
host, and that each ``tables`` pattern matches at least one table. On every host it checks: binary
log on, binlog_format=ROW, binlog_row_image=FULL, binlog_row_metadata=FULL, GTIDs
(MySQL gtid_mode=ON + enforce_gtid_consistency=ON; MariaDB: gtid_strict_mode
ON), log_slave_updates on every failover candidate (sources with several
hosts), MySQL binlog_row_value_options without PARTIAL_JSON (the reader does
not decode PARTIAL_UPDATE_ROWS_EVENT), MySQL 8.0.30+
show_gipk_in_create_table_and_information_schema=ON (so generated invisible
primary keys are visible to the snapshot), and the user's privileges
(REPLICATION SLAVE, REPLICATION CLIENT / BINLOG MONITOR, SELECT). Each problem
names the host, the setting, what it is and the statement that fixes it.
Compressed binlogs (MariaDB log_bin_compress, MySQL
binlog_transaction_compression) are decoded: `cdc check` reports them as ok
lines saying so. :func:`evaluate` is the rule on what a host reported, apart
from reading it, so MySQL 8.x answers can be checked without a MySQL server.

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

from dataclasses import dataclass

from cdc.checks import Check, pattern_checks
from cdc.config.tls import MySqlTls
from cdc.errors import CdcError
from readers.mysql.connection import open_connection
from readers.mysql.errors import SettingsRefused
from readers.mysql.privileges import missing


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


_VARIABLES = ("log_bin", "binlog_format", "binlog_row_image", "binlog_row_metadata", "gtid_mode",
              "enforce_gtid_consistency", "gtid_strict_mode", "log_slave_updates", "log_replica_updates",
              "log_bin_compress", "binlog_transaction_compression", "binlog_row_value_options",
              "show_gipk_in_create_table_and_information_schema")


@dataclass(frozen=True)
class HostSettings:
    """What one host reports about itself: ``variables`` (lowercase name -> text), ``grants`` (SHOW GRANTS
    joined, uppercase)."""

    version: str
    variables: dict[str, str]
    grants: str

    @property
    def mariadb(self) -> bool:
        return "mariadb" in self.version.lower()


def read_settings(conn) -> HostSettings:
    with conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        version = str(cur.fetchone()[0])
        names = ", ".join(f"'{n}'" for n in _VARIABLES)
        cur.execute(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names})")
        variables = {k.lower(): str(val) for k, val in cur.fetchall()}
        cur.execute("SHOW GRANTS")
        grants = " ".join(r[0] for r in cur.fetchall()).upper()
    return HostSettings(version, variables, grants)


def evaluate(settings: HostSettings, address: str, user: str, candidate: bool) -> tuple[list[Problem], list[str]]:
    """The problems of one host's settings (each refused at start) and the notes on settings the reader
    follows as they are (compressed binlogs: decoded)."""
    v, mariadb = settings.variables, settings.mariadb
    out: list[Problem] = []
    notes: list[str] = []

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
    if "PARTIAL_JSON" in v.get("binlog_row_value_options", "").upper():
        out.append(Problem(address, "binlog_row_value_options", v["binlog_row_value_options"],
                           "SET GLOBAL binlog_row_value_options=''; and binlog_row_value_options='' in my.cnf "
                           "[mysqld] (JSON updates are then logged as whole values; the reader does not decode "
                           "PARTIAL_UPDATE_ROWS_EVENT, which carries only the changed JSON paths)"))
    if v.get("show_gipk_in_create_table_and_information_schema", "ON").upper() == "OFF":
        out.append(Problem(address, "show_gipk_in_create_table_and_information_schema", "OFF",
                           _persist("show_gipk_in_create_table_and_information_schema", "ON")
                           + " (tables with a generated invisible primary key my_row_id must show it in "
                           "information_schema: the snapshot and the schema lookups read their columns there, "
                           "while the binlog rows carry my_row_id)"))
    if v.get("log_bin_compress", "OFF").upper() == "ON":
        notes.append("log_bin_compress=ON: compressed row and query events are decoded (zlib), nothing to change")
    if v.get("binlog_transaction_compression", "OFF").upper() == "ON":
        notes.append("binlog_transaction_compression=ON: TRANSACTION_PAYLOAD events are decoded (zstd), "
                     "nothing to change")
    return out, notes


def inspect_host(address: str, user: str, password: str, candidate: bool, timeout_s: float = 5.0,
                 tls: MySqlTls | None = None) -> tuple[list[Problem], list[str]]:
    """:func:`evaluate` of one host; a host that cannot be reached is one ``connection`` problem."""
    try:
        conn = open_connection(address, user, password, timeout_s, tls=tls)
    except CdcError as exc:
        return [Problem(address, "connection", str(exc), "check host, port, user and password")], []
    try:
        settings = read_settings(conn)
    finally:
        conn.close()
    problems, notes = evaluate(settings, address, user, candidate)
    # every statement the daemon runs, run as the configured user (readers/mysql/privileges.py)
    conn = open_connection(address, user, password, timeout_s, tls=tls)
    try:
        problems += [Problem(address, *m.problem()) for m in missing(conn)]
    finally:
        conn.close()
    return problems, notes


def check_host(address: str, user: str, password: str, candidate: bool, timeout_s: float = 5.0,
               tls: MySqlTls | None = None) -> list[Problem]:
    """Problems of one host; ``candidate``: it may become the primary (needs log_slave_updates)."""
    return inspect_host(address, user, password, candidate, timeout_s, tls)[0]


def checks(config, key: str) -> list[Check]:
    """`cdc check` (cdc/checks.py) of one source: the settings of every host, then each ``tables`` pattern
    against the tables of the first host that answers (``key``: where the source is in the config file)."""
    name, password = f"source {config.name}", config.password.get_secret_value()
    several = len(config.hosts) > 1
    out: list[Check] = []
    tables: list[str] | None = None
    for host in config.hosts:
        problems, notes = inspect_host(host, config.user, password, several, config.connect_timeout_s, config.tls)
        out += [Check(f"{name}: host {host}", False, p.found if p.setting == "connection" else f"{p.setting} is {p.found}",
                      p.fix) for p in problems]
        if not problems:
            out.append(Check(f"{name}: host {host}", True, "log settings and privileges"))
        out += [Check(f"{name}: host {host}", True, note) for note in notes]
        if tables is None and not any(p.setting == "connection" for p in problems):
            tables = [f"{db}.{t}" for db, t in _base_tables(host, config)]
            out += pattern_checks(name, config.tables, tables, host, f"{key}.tables")
    if tables is None:
        out.append(Check(f"{name}: tables", False, "not checked: no host answered", "see the connection failures"))
    return out


def _base_tables(host: str, config) -> list[tuple[str, str]]:
    conn = open_connection(host, config.user, config.password.get_secret_value(), config.connect_timeout_s,
                           tls=config.tls)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
                        "AND table_schema NOT IN ('mysql', 'sys', 'performance_schema', 'information_schema')")
            return list(cur.fetchall())
    finally:
        conn.close()


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
