"""An embedded Oracle MySQL 9.7 server for tests, configured as a CDC source.

The binaries are Debian sid's ``mysql-server-core`` unpacked with the libraries they link
by ``deploy/install-mysql97.sh`` (``make setup``) into ``CDC_MYSQL97_ROOT`` (default
``~/.cache/cdc-mysql97``); ``mysqld`` runs through that tree's own dynamic loader, because
it needs a newer libc than the host has. Nothing on the host is changed.

``MySQL(base_dir, server_id)`` initialises a data directory (``--initialize-insecure``: root
without password) and serves on a free 127.0.0.1 port with what a binlog reader needs: GTIDs
(``gtid_mode=ON``, ``enforce_gtid_consistency=ON``), ROW format, FULL row image, FULL row
metadata, ``log_replica_updates``. Durability is traded for speed. The interface is the one of
``cdc.dev.mariadb.MariaDB`` (``start``/``stop``/``kill``/``connect``/``query``,
``make_replica_of``/``wait_caught_up``/``promote``); ``gtid_binlog_pos()`` is
``@@GLOBAL.gtid_executed`` here.

After ``start()`` the server has a user ``cdc``/``cdc`` (``caching_sha2_password``) with all
privileges and a database ``test``, made with ``sql_log_bin=0`` so a fresh server's
``gtid_executed`` is empty and any two fresh servers can become primary and replica.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pymysql

from cdc.dev import procs
from cdc.dev.mariadb import CDC_PASSWORD, CDC_USER, MariaDB, MariaDBError
from cdc.dev.ports import HOST, wait_until

ROOT_ENV = "CDC_MYSQL97_ROOT"


class MySQLError(MariaDBError):
    """The embedded MySQL failed to start, stop or replicate; the message holds its log tail."""


def install_root() -> Path:
    """The unpacked MySQL 9.7 tree; raises MySQLError saying how to make it when it is missing."""
    root = Path(os.environ.get(ROOT_ENV) or Path.home() / ".cache" / "cdc-mysql97")
    if not (root / ".installed").is_file() or not (root / "usr/sbin/mysqld").is_file():
        raise MySQLError(f"no MySQL 9.7 under {root} (set by {ROOT_ENV} or the default ~/.cache/cdc-mysql97): "
                         "run `make setup` (or `bash deploy/install-mysql97.sh`) to download it")
    return root


def _runner(root: Path) -> list[str]:
    """The loader and library path that run the tree's binaries with the tree's own libc."""
    lib = f"{root}/usr/lib/x86_64-linux-gnu:{root}/lib/x86_64-linux-gnu"
    return [f"{root}/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "--library-path", lib]


_template_lock = threading.Lock()
_templates: dict[Path, Path] = {}


class MySQL(MariaDB):
    """One mysqld 9.7 process. See the module docstring for what ``start()`` guarantees."""

    error = MySQLError
    gtid_wait_sql = "SELECT WAIT_FOR_EXECUTED_GTID_SET(%s, 0.5)"
    replica_status_sql = "SHOW REPLICA STATUS"
    promote_sql = ("STOP REPLICA", "RESET REPLICA ALL")
    io_running, sql_running, applied_field = "Replica_IO_Running", "Replica_SQL_Running", "Executed_Gtid_Set"

    def __init__(self, base_dir: Path, server_id: int, name: str = "primary", port: int | None = None,
                 extra: dict[str, Any] | None = None, die_with_parent: bool = True) -> None:
        super().__init__(base_dir, server_id, name=name, port=port, extra=extra, die_with_parent=die_with_parent)
        self.root = install_root()
        self.secure_files = self.dir / "files"

    # ---- MariaDB hooks ---------------------------------------------------------------------

    def _command(self) -> list[str]:
        return [*_runner(self.root), f"{self.root}/usr/sbin/mysqld", f"--defaults-file={self.cnf}"]

    def _settings(self) -> dict[str, Any]:
        self.secure_files.mkdir(parents=True, exist_ok=True)
        settings: dict[str, Any] = {
            "user": "root",
            "basedir": self.root / "usr",
            "lc-messages-dir": self.root / "usr/share/mysql",
            "plugin-dir": self.root / "usr/lib/mysql/plugin",
            "datadir": self.datadir,
            "socket": self.socket,
            "mysqlx": "OFF",
            "pid-file": self.dir / "mysqld.pid",
            "log-error": self.error_log,
            "tmpdir": self.dir,
            "secure-file-priv": self.secure_files,
            "port": self.port,
            "bind-address": HOST,
            "skip-name-resolve": "ON",
            "server_id": self.server_id,
            "log_bin": self.dir / "binlog" / "mysql-bin",
            "relay_log": self.dir / "binlog" / "relay-bin",
            "gtid_mode": "ON",
            "enforce_gtid_consistency": "ON",
            "binlog_format": "ROW",
            "binlog_row_image": "FULL",
            "binlog_row_metadata": "FULL",
            "log_replica_updates": "ON",
            "innodb_buffer_pool_size": "32M",
            "innodb_redo_log_capacity": "16M",
            "innodb_flush_log_at_trx_commit": 2,
            "innodb_use_native_aio": 0,  # several servers per machine exhaust the kernel's aio slots
            "innodb_doublewrite": "OFF",
            "sync_binlog": 0,
            "performance_schema": "OFF",
            "max_connections": 200,
        }
        settings.update(self.extra)
        return settings

    def _install_db(self) -> None:
        """Copy a data directory made once per process by ``mysqld --initialize-insecure`` (~5 s each)."""
        shutil.copytree(self._template(), self.datadir, symlinks=True)
        (self.datadir / "auto.cnf").unlink(missing_ok=True)  # each server makes its own server_uuid

    def _template(self) -> Path:
        with _template_lock:
            if self.root in _templates and (_templates[self.root] / "mysql").is_dir():
                return _templates[self.root]
            import atexit
            import tempfile

            tmp = Path(tempfile.mkdtemp(prefix="cdc-mysql-template-"))
            atexit.register(shutil.rmtree, tmp, True)
            datadir, log = tmp / "data", tmp / "initialize.log"
            cmd = [*_runner(self.root), f"{self.root}/usr/sbin/mysqld", "--no-defaults", "--user=root",
                   f"--basedir={self.root / 'usr'}", f"--lc-messages-dir={self.root / 'usr/share/mysql'}",
                   f"--datadir={datadir}", "--initialize-insecure", "--innodb_redo_log_capacity=16M",
                   f"--log-error={log}"]
            rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, timeout=180).returncode
            if rc != 0 or not (datadir / "mysql").is_dir():
                raise MySQLError(f"mysqld --initialize-insecure failed ({rc}) in {datadir}:\n{procs.tail(log)}")
            _templates[self.root] = datadir
            return datadir

    def _exit_reason(self) -> str | None:
        return procs.exit_reason(self.proc, "mysqld")

    def _bootstrap(self) -> None:
        """Users and the ``test`` database, outside the binlog (see module docstring). Idempotent."""
        conn = pymysql.connect(unix_socket=str(self.socket), user="root", password="", autocommit=True)
        try:
            with conn.cursor() as cur:
                cur.execute("SET SESSION sql_log_bin = 0")
                cur.execute(f"CREATE USER IF NOT EXISTS 'root'@'{HOST}'")
                cur.execute(f"GRANT ALL PRIVILEGES ON *.* TO 'root'@'{HOST}' WITH GRANT OPTION")
                for host in ("%", "localhost"):
                    cur.execute(f"CREATE USER IF NOT EXISTS '{CDC_USER}'@'{host}' IDENTIFIED WITH "
                                f"caching_sha2_password BY '{CDC_PASSWORD}'")
                    cur.execute(f"GRANT ALL PRIVILEGES ON *.* TO '{CDC_USER}'@'{host}' WITH GRANT OPTION")
                cur.execute("CREATE DATABASE IF NOT EXISTS test")
        finally:
            conn.close()

    # ---- GTIDs and replication -------------------------------------------------------------

    def gtid_binlog_pos(self) -> str:
        return self.query("SELECT @@GLOBAL.gtid_executed")[0][0].replace("\n", "")

    gtid_current_pos = gtid_binlog_pos

    def make_replica_of(self, primary: "MariaDB", from_now: bool = False, timeout: float = 30) -> None:
        """Replicate from ``primary`` with ``SOURCE_AUTO_POSITION=1`` and wait until running.

        ``from_now=True`` first marks the primary's current ``gtid_executed`` as applied here
        (only on a replica that has applied nothing yet), skipping its history. The replica is
        set ``read_only=1``. The cdc user replicates (caching_sha2_password over the server's
        automatic TLS).
        """
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute("STOP REPLICA")
                cur.execute("RESET REPLICA ALL")
                if from_now:
                    cur.execute("RESET BINARY LOGS AND GTIDS")
                    cur.execute("SET GLOBAL gtid_purged = %s", (primary.gtid_binlog_pos(),))
                cur.execute(
                    "CHANGE REPLICATION SOURCE TO SOURCE_HOST=%s, SOURCE_PORT=%s, SOURCE_USER=%s, "
                    "SOURCE_PASSWORD=%s, SOURCE_AUTO_POSITION=1, SOURCE_SSL=1, SOURCE_CONNECT_RETRY=1, "
                    "GET_SOURCE_PUBLIC_KEY=1",
                    (primary.host, primary.port, CDC_USER, CDC_PASSWORD),
                )
                cur.execute("SET GLOBAL read_only = 1")
                cur.execute("START REPLICA")
        finally:
            conn.close()
        wait_until(self._slave_running, timeout, f"replication {primary.name} -> {self.name}", interval=0.1)

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"MySQL({self.name!r}, server_id={self.server_id}, {self.address}, {state})"
