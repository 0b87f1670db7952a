"""An embedded MariaDB server for tests and the demo, configured as a CDC source.

``MariaDB(base_dir, server_id)`` initialises a data directory under
``base_dir/<name>`` with the distribution's ``mariadb-install-db`` and runs
``/usr/sbin/mariadbd`` on a free 127.0.0.1 port with what a binlog reader
needs: ROW format, FULL row image, FULL row metadata, GTIDs in strict mode,
``log_slave_updates``. Durability is traded for speed (no fsync per commit).

After ``start()`` the server has a user ``cdc``/``cdc`` with all privileges
(replication included) and an empty database ``test``. That bootstrap runs
with ``sql_log_bin=0`` so a fresh server's binlog is empty and any two fresh
servers can become primary and replica without GTID conflicts.

Every started server is stopped at interpreter exit, and killed by the kernel
if the Python process dies (see ``cdc.dev.procs``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pymysql

from cdc.dev import procs
from cdc.dev.ports import HOST, free_port, wait_until

MARIADBD = os.environ.get("CDC_MARIADBD", "/usr/sbin/mariadbd")
INSTALL_DB = shutil.which("mariadb-install-db") or "/usr/bin/mariadb-install-db"
CDC_USER, CDC_PASSWORD = "cdc", "cdc"

_BIND_FAILED = ("Address already in use", "Can't start server: Bind on TCP/IP port")


class MariaDBError(RuntimeError):
    """The embedded server failed to start, stop or replicate; the message holds its log tail."""


_template_lock = threading.Lock()
_template: Path | None = None


def _template_datadir(settings: dict[str, Any]) -> Path:
    """A freshly installed, never started data directory, made once per process and copied per server.

    Only the InnoDB file-size settings matter to the files install-db writes, and
    they are the same for every server we start (``extra`` may not change them).
    """
    global _template
    with _template_lock:
        if _template is not None and (_template / "mysql").is_dir():
            return _template
        root = Path(tempfile.mkdtemp(prefix="cdc-mariadb-template-"))
        atexit.register(shutil.rmtree, root, True)
        datadir = root / "data"
        cnf = root / "my.cnf"
        keep = ("innodb_log_file_size", "innodb_buffer_pool_size", "character-set-server", "collation-server")
        # its own tmpdir: two processes bootstrapping at once must not share temporary table files in /tmp
        cnf.write_text("[mysqld]\n" + f"datadir = {datadir}\nuser = root\nlog-error = {root / 'error.log'}\n"
                       + f"tmpdir = {root}\n"
                       + "".join(f"{k} = {settings[k]}\n" for k in keep if k in settings))
        log = root / "install.log"
        with open(log, "wb") as out:
            rc = subprocess.run(
                [INSTALL_DB, f"--defaults-file={cnf}", "--user=root",
                 "--auth-root-authentication-method=normal", "--skip-test-db"],
                stdout=out, stderr=subprocess.STDOUT, timeout=120,
            ).returncode
        if rc != 0:
            raise MariaDBError(f"mariadb-install-db failed ({rc}) in {datadir}:\n{procs.tail(log)}\n"
                               f"{procs.tail(root / 'error.log')}")
        _template = datadir
        return datadir


class MariaDB:
    """One mariadbd process. See the module docstring for what ``start()`` guarantees."""

    host = HOST
    # the server's replication vocabulary (cdc/dev/mysql.py holds MySQL's)
    error: type[RuntimeError] = MariaDBError
    gtid_wait_sql = "SELECT MASTER_GTID_WAIT(%s, 0.5)"
    replica_status_sql = "SHOW SLAVE STATUS"
    promote_sql = ("STOP SLAVE", "RESET SLAVE ALL")
    io_running, sql_running, applied_field = "Slave_IO_Running", "Slave_SQL_Running", "Gtid_Slave_Pos"

    def __init__(
        self,
        base_dir: Path,
        server_id: int,
        name: str = "primary",
        port: int | None = None,
        extra: dict[str, Any] | None = None,
        gtid_domain_id: int = 0,
        die_with_parent: bool = True,
    ) -> None:
        self.name = name
        self.server_id = server_id
        self.gtid_domain_id = gtid_domain_id
        self.dir = Path(base_dir) / name
        self.datadir = self.dir / "data"
        self.cnf = self.dir / "my.cnf"
        self.error_log = self.dir / "error.log"
        self.socket = self._socket_path()
        self._auto_port = port is None
        self.port = port if port is not None else free_port()
        self.extra = dict(extra or {})
        self.die_with_parent = die_with_parent
        self.proc: subprocess.Popen | None = None

    # ---- lifecycle -------------------------------------------------------------------------

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 60) -> "MariaDB":
        """Start (initialising the data directory the first time) and wait until it serves.

        Raises MariaDBError with the tail of the error log when the server exits
        or does not accept connections within ``timeout`` seconds. When the port
        was chosen by us and the bind fails (another process took it), retries
        on a fresh port.
        """
        if self.running:
            return self
        self.dir.mkdir(parents=True, exist_ok=True)
        for attempt in range(3):
            self._write_cnf()
            if not (self.datadir / "mysql").is_dir():
                self._install_db()
            log_start = self.error_log.stat().st_size if self.error_log.exists() else 0
            self.proc = procs.spawn(self._command(), self.dir / "stdout.log", die_with_parent=self.die_with_parent)
            procs.register(self)
            try:
                wait_until(self._probe_socket, timeout, f"{type(self).__name__} {self.name} on {self.address}",
                           interval=0.1, alive=self._exit_reason)
                break
            except (RuntimeError, TimeoutError) as exc:
                procs.terminate(self.proc, timeout=10)
                new_log = self._log_since(log_start)
                if self._auto_port and any(m in new_log for m in _BIND_FAILED) and attempt < 2:
                    self.port = free_port()
                    continue
                raise MariaDBError(f"{exc}\n--- {self.error_log} (tail) ---\n{procs.tail(self.error_log)}") from None
        self._bootstrap()
        return self

    def stop(self, timeout: float = 30) -> None:
        """Clean shutdown (SIGTERM), SIGKILL after ``timeout`` seconds. Idempotent."""
        procs.terminate(self.proc, timeout=timeout)
        procs.unregister(self)

    def kill(self) -> None:
        """SIGKILL: a crash. ``start()`` afterwards runs InnoDB crash recovery."""
        procs.terminate(self.proc, timeout=10, sig=signal.SIGKILL)
        procs.unregister(self)

    def restart(self, timeout: float = 60) -> "MariaDB":
        self.stop()
        return self.start(timeout=timeout)

    def destroy(self) -> None:
        """Stop and delete the data directory."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    # ---- SQL -------------------------------------------------------------------------------

    def connect(self, db: str | None = None, **kw: Any) -> pymysql.connections.Connection:
        """A root connection over TCP with autocommit on (override with ``autocommit=False``)."""
        kw.setdefault("autocommit", True)
        kw.setdefault("connect_timeout", 5)
        kw.setdefault("user", "root")
        kw.setdefault("password", "")
        return pymysql.connect(host=self.host, port=self.port, database=db, **kw)

    def query(self, sql: str, args: Any = None) -> list[tuple]:
        """Run one statement on a short-lived root connection; return all rows."""
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(sql, args)
                return list(cur.fetchall())
        finally:
            conn.close()

    def gtid_binlog_pos(self) -> str:
        return self.query("SELECT @@GLOBAL.gtid_binlog_pos")[0][0]

    def gtid_current_pos(self) -> str:
        return self.query("SELECT @@GLOBAL.gtid_current_pos")[0][0]

    # ---- replication -----------------------------------------------------------------------

    def make_replica_of(self, primary: "MariaDB", from_now: bool = False, timeout: float = 30) -> None:
        """Replicate from ``primary`` using GTIDs (MASTER_USE_GTID=slave_pos) and wait until running.

        The replica starts from its own ``gtid_current_pos`` (empty for a fresh
        server: it then copies the primary's whole binlog history; for a former
        primary: it continues where it stopped). ``from_now=True`` starts at the
        primary's current ``gtid_binlog_pos`` instead, skipping its history.
        The replica is set ``read_only=1`` (root and cdc may still write).
        """
        start_pos = primary.gtid_binlog_pos() if from_now else self.gtid_current_pos()
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute("STOP SLAVE")
                cur.execute("RESET SLAVE ALL")
                cur.execute("SET GLOBAL gtid_slave_pos = %s", (start_pos,))
                cur.execute(
                    "CHANGE MASTER TO MASTER_HOST=%s, MASTER_PORT=%s, MASTER_USER=%s, MASTER_PASSWORD=%s, "
                    "MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1",
                    (primary.host, primary.port, CDC_USER, CDC_PASSWORD),
                )
                cur.execute("SET GLOBAL read_only = 1")
                cur.execute("START SLAVE")
        finally:
            conn.close()
        wait_until(lambda: self._slave_running(), timeout, f"replication {primary.name} -> {self.name}",
                   interval=0.1)

    def wait_caught_up(self, primary: "MariaDB", timeout: float = 30) -> None:
        """Block until this replica has applied everything in ``primary``'s binlog right now."""
        target = primary.gtid_binlog_pos()
        deadline = time.monotonic() + timeout
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                while True:
                    cur.execute(self.gtid_wait_sql, (target,))
                    if cur.fetchone()[0] == 0:
                        return
                    status = self.slave_status()
                    err = status.get("Last_SQL_Error") or status.get("Last_IO_Error")
                    if err and status.get(self.sql_running) != "Yes":
                        raise self.error(f"replica {self.name} stopped: {err}")
                    if time.monotonic() > deadline:
                        raise self.error(f"replica {self.name} not caught up with {target} after {timeout}s "
                                         f"(at {status.get(self.applied_field)})")
        finally:
            conn.close()

    def promote(self) -> None:
        """Turn this replica into a primary: ``promote_sql`` (STOP SLAVE; RESET SLAVE ALL), read_only=0."""
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                for statement in self.promote_sql:
                    cur.execute(statement)
                cur.execute("SET GLOBAL read_only = 0")
        finally:
            conn.close()

    def slave_status(self) -> dict[str, Any]:
        conn = self.connect(cursorclass=pymysql.cursors.DictCursor)
        try:
            with conn.cursor() as cur:
                cur.execute(self.replica_status_sql)
                return cur.fetchone() or {}
        finally:
            conn.close()

    # ---- internals -------------------------------------------------------------------------

    def _slave_running(self) -> bool:
        s = self.slave_status()
        if s.get(self.io_running) == "Yes" and s.get(self.sql_running) == "Yes":
            return True
        if s.get("Last_IO_Error") or s.get("Last_SQL_Error"):
            raise self.error(f"replica {self.name}: {s.get('Last_IO_Error') or s.get('Last_SQL_Error')}")
        return False

    def _socket_path(self) -> Path:
        path = self.dir / "mysqld.sock"
        if len(str(path)) < 100:  # AF_UNIX paths are limited to 108 bytes
            return path
        import tempfile

        return Path(tempfile.mkdtemp(prefix="cdc-my-")) / "mysqld.sock"

    def _settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {
            "user": "root",
            "datadir": self.datadir,
            "socket": self.socket,
            "pid-file": self.dir / "mariadbd.pid",
            "log-error": self.error_log,
            "tmpdir": self.dir,
            "port": self.port,
            "bind-address": HOST,
            "skip-networking": 0,
            "skip-name-resolve": 1,
            "server_id": self.server_id,
            "gtid_domain_id": self.gtid_domain_id,
            "log_bin": self.dir / "binlog" / "mariadb-bin",
            "relay_log": self.dir / "binlog" / "relay-bin",
            "binlog_format": "ROW",
            "binlog_row_image": "FULL",
            "binlog_row_metadata": "FULL",
            "log_slave_updates": "ON",
            "gtid_strict_mode": "ON",
            "innodb_buffer_pool_size": "32M",
            "innodb_log_file_size": "16M",
            "innodb_flush_log_at_trx_commit": 2,
            "innodb_use_native_aio": 0,  # several servers per machine exhaust the kernel's aio slots
            "sync_binlog": 0,
            "performance_schema": "OFF",
            "max_connections": 200,
            "character-set-server": "utf8mb4",
            "collation-server": "utf8mb4_general_ci",
        }
        settings.update(self.extra)
        return settings

    def _write_cnf(self) -> None:
        (self.dir / "binlog").mkdir(parents=True, exist_ok=True)
        lines = ["[mysqld]"] + [f"{k} = {v}" for k, v in self._settings().items() if v is not None]
        self.cnf.write_text("\n".join(lines) + "\n")

    def _command(self) -> list[str]:
        return [MARIADBD, f"--defaults-file={self.cnf}"]

    def _install_db(self) -> None:
        """Copy a data directory made once per process by mariadb-install-db (2-3 s saved per server)."""
        shutil.copytree(_template_datadir(self._settings()), self.datadir, symlinks=True)

    def _probe_socket(self) -> bool:
        conn = pymysql.connect(unix_socket=str(self.socket), user="root", password="", connect_timeout=2)
        conn.close()
        return True

    def _exit_reason(self) -> str | None:
        return procs.exit_reason(self.proc, "mariadbd")

    def _log_since(self, offset: int) -> str:
        return procs.read_from(self.error_log, offset)

    def _bootstrap(self) -> None:
        """Users and the ``test`` database, outside the binlog (see module docstring). Idempotent."""
        conn = pymysql.connect(unix_socket=str(self.socket), user="root", password="", autocommit=True)
        try:
            with conn.cursor() as cur:
                cur.execute("SET SESSION sql_log_bin = 0")
                for user, host, password in (("root", HOST, ""), (CDC_USER, "%", CDC_PASSWORD),
                                             (CDC_USER, "localhost", CDC_PASSWORD)):
                    cur.execute(f"CREATE USER IF NOT EXISTS '{user}'@'{host}' IDENTIFIED BY '{password}'")
                    cur.execute(f"GRANT ALL PRIVILEGES ON *.* TO '{user}'@'{host}' WITH GRANT OPTION")
                    cur.execute(f"GRANT REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR ON *.* "
                                f"TO '{user}'@'{host}'")
                cur.execute("CREATE DATABASE IF NOT EXISTS test")
        finally:
            conn.close()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"MariaDB({self.name!r}, server_id={self.server_id}, {self.address}, {state})"
