"""An embedded PostgreSQL server (the distribution's binaries) for tests and the demo.

PostgreSQL refuses to run as root, so when we are root the cluster is
initialised and run as the ``postgres`` OS user (the directory is chowned to
it). The data directory lives in a fresh directory under /tmp unless
``base_dir`` is given, because pytest's tmp dirs are root-only (0700) and
``postgres`` could not reach into them.

After ``start()``: listens on 127.0.0.1 only (plus a socket in the data
directory), ``fsync=off``; a superuser role ``cdc`` with password ``cdc`` and a
database ``cdc`` exist. ``dsn`` is ``postgresql://cdc:cdc@127.0.0.1:PORT/cdc``.
Authentication is by password over TCP (as a production server's, so a wrong
password fails here too), except for the ``postgres`` superuser our own
bootstrap uses (trust).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from cdc.dev import procs
from cdc.dev.ports import HOST, free_port, wait_until

PASSWORD = "cdc"
HBA = f"""# written by cdc.dev.postgres at every start
local all all trust
host all postgres {HOST}/32 trust
host all all {HOST}/32 scram-sha-256
"""


def _pg_bin(name: str) -> str:
    if os.environ.get("CDC_PG_BIN"):
        return str(Path(os.environ["CDC_PG_BIN"]) / name)
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    if found:
        return found[-1]
    return shutil.which(name) or name


def _traversable(path: Path) -> bool:
    """True when every existing ancestor of ``path`` (and path) lets others search it (o+x)."""
    for p in [path, *path.parents]:
        if p.exists() and not (p.stat().st_mode & 0o001):
            return False
    return True


class PostgresError(RuntimeError):
    """The embedded PostgreSQL failed to initialise or start; the message holds its log tail."""


class Postgres:
    """One postgres process. See the module docstring for what ``start()`` guarantees."""

    host = HOST

    def __init__(self, base_dir: Path | None = None, port: int | None = None, os_user: str | None = None,
                 die_with_parent: bool = True, extra: dict[str, str] | None = None, hba: str = HBA) -> None:
        """``extra``: more ``-c name=value`` server settings (e.g. ``ssl=on``); ``hba``: the pg_hba.conf text."""
        self.os_user = os_user if os_user is not None else ("postgres" if os.geteuid() == 0 else None)
        if base_dir is not None and self.os_user and not _traversable(Path(base_dir).resolve().parent):
            base_dir = None  # e.g. under a 0700 directory: the postgres user could not reach it
        self._dir = Path(base_dir) if base_dir else None  # None: a fresh /tmp dir, made at start()
        self._auto_port = port is None
        self.port = port if port is not None else free_port()
        self.die_with_parent = die_with_parent
        self.extra = dict(extra or {})
        self.hba = hba
        self.proc: subprocess.Popen | None = None

    @property
    def dir(self) -> Path:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="cdc-pg-"))
        return self._dir

    @property
    def datadir(self) -> Path:
        return self.dir / "data"

    @property
    def log_path(self) -> Path:
        return self.dir / "postgres.log"

    @property
    def dsn(self) -> str:
        return f"postgresql://cdc:{PASSWORD}@{self.host}:{self.port}/cdc"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 60) -> "Postgres":
        """initdb (first time), start, wait until it accepts connections, create role and db ``cdc``."""
        if self.running:
            return self
        self.dir.mkdir(parents=True, exist_ok=True)
        self._chown(self.dir)
        if not (self.datadir / "PG_VERSION").exists():
            self._initdb()
        (self.datadir / "pg_hba.conf").write_text(self.hba)  # also for a data directory made by an older version
        for attempt in range(3):
            argv = [_pg_bin("postgres"), "-D", str(self.datadir), "-p", str(self.port), "-c", f"listen_addresses={HOST}",
                    "-c", f"unix_socket_directories={self.datadir}", "-c", "fsync=off",
                    "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "shared_buffers=32MB",
                    "-c", "max_connections=100", "-c", "max_prepared_transactions=20",
                    *(arg for k, v in self.extra.items() for arg in ("-c", f"{k}={v}"))]
            log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
            self.proc = procs.spawn(argv, self.log_path, die_with_parent=self.die_with_parent,
                                    run_as=self.os_user, cwd=self.dir)
            procs.register(self)
            try:
                wait_until(self._probe, timeout, f"PostgreSQL on {self.address}", interval=0.1,
                           alive=self._exit_reason)
                break
            except (RuntimeError, TimeoutError) as exc:
                procs.terminate(self.proc, timeout=10)
                new_log = self._log_since(log_start)
                if self._auto_port and "could not bind" in new_log and attempt < 2:
                    self.port = free_port()
                    continue
                raise PostgresError(f"{exc}\n--- {self.log_path} (tail) ---\n{procs.tail(self.log_path)}") from None
        self._bootstrap()
        return self

    def stop(self, timeout: float = 20) -> None:
        """Fast shutdown (SIGINT), SIGKILL after ``timeout`` seconds. Idempotent."""
        import signal

        procs.terminate(self.proc, timeout=timeout, sig=signal.SIGINT)
        procs.unregister(self)

    def destroy(self) -> None:
        self.stop()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    def connect(self, **kw: Any):
        """A psycopg (3) connection as ``cdc`` to database ``cdc``; autocommit on unless overridden."""
        import psycopg

        kw.setdefault("autocommit", True)
        return psycopg.connect(self.dsn, connect_timeout=5, **kw)

    # ---- internals -------------------------------------------------------------------------

    def _chown(self, path: Path) -> None:
        if self.os_user:
            entry = pwd.getpwnam(self.os_user)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def _initdb(self) -> None:
        log = self.dir / "initdb.log"
        user = pwd.getpwnam(self.os_user) if self.os_user else None
        with open(log, "wb") as out:
            rc = subprocess.run(
                [_pg_bin("initdb"), "-D", str(self.datadir), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                 "--locale=C", "--no-sync"],
                stdout=out, stderr=subprocess.STDOUT, timeout=120, cwd=self.dir,
                user=user.pw_uid if user else None, group=user.pw_gid if user else None,
                extra_groups=[] if user else None,
            ).returncode
        if rc != 0:
            raise PostgresError(f"initdb failed ({rc}) in {self.datadir}:\n{procs.tail(log)}")

    def _probe(self) -> bool:
        import psycopg

        psycopg.connect(host=HOST, port=self.port, user="postgres", dbname="postgres", connect_timeout=2).close()
        return True

    def _bootstrap(self) -> None:
        import psycopg

        with psycopg.connect(host=HOST, port=self.port, user="postgres", dbname="postgres", autocommit=True) as c:
            if not c.execute("SELECT 1 FROM pg_roles WHERE rolname = 'cdc'").fetchone():
                c.execute("CREATE ROLE cdc LOGIN SUPERUSER")
            c.execute(f"ALTER ROLE cdc PASSWORD '{PASSWORD}'")
            if not c.execute("SELECT 1 FROM pg_database WHERE datname = 'cdc'").fetchone():
                c.execute("CREATE DATABASE cdc OWNER cdc")

    def _exit_reason(self) -> str | None:
        return procs.exit_reason(self.proc, "postgres")

    def _log_since(self, offset: int) -> str:
        return procs.read_from(self.log_path, offset)

    def __repr__(self) -> str:
        return f"Postgres({self.address}, {'running' if self.running else 'stopped'})"
