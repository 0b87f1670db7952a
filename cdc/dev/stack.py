"""The embedded development stack: MariaDB primary + replica, broker, PostgreSQL, in one state dir.

``DevStack(state_dir).start()`` starts all four (fresh data each time), then
writes ``state.json`` (pids, ports, dirs: what `cdc dev status|down` read) and
a ready-to-use ``cdc.yaml`` (validated with cdc.config.models before it is written).
``stop()`` stops them in reverse order. ``detach()`` hands the processes over
to the state file: they keep running after this Python process exits.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

import yaml

from cdc.dev import procs
from cdc.dev.broker import Broker
from cdc.dev.mariadb import MariaDB
from cdc.dev.ports import free_port
from cdc.dev.postgres import Postgres

STATE_FILE = "state.json"
CONFIG_FILE = "cdc.yaml"
SERVICES = ("mariadb", "broker", "postgres")  # what `cdc dev up --only` may name


class DevStack:
    """The services of `cdc dev up` and `make demo`, rooted at ``state_dir`` (default ``.cdc-dev``).

    ``only`` names a subset of SERVICES to start (`cdc dev up --only broker`); the others are None and
    no cdc.yaml is written (it needs a source, the broker and the targets)."""

    def __init__(self, state_dir: Path = Path(".cdc-dev"), source_db: str = "demo", detached: bool = False,
                 with_replica: bool = True, only: Collection[str] | None = None) -> None:
        unknown = sorted(set(only or ()) - set(SERVICES))
        if unknown:
            raise ValueError(f"unknown dev service {', '.join(unknown)}: choose among {', '.join(SERVICES)}")
        want = set(only or SERVICES)
        self.full = want == set(SERVICES)
        self.dir = Path(state_dir).resolve()
        self.source_db = source_db
        keep = not detached
        self.primary = (MariaDB(self.dir / "mariadb", server_id=1, name="primary", die_with_parent=keep)
                        if "mariadb" in want else None)
        self.replica = (MariaDB(self.dir / "mariadb", server_id=2, name="replica", die_with_parent=keep)
                        if with_replica and "mariadb" in want else None)
        self.broker = Broker(log_dir=self.dir / "broker", die_with_parent=keep) if "broker" in want else None
        self.postgres = Postgres(self.dir / "postgres", die_with_parent=keep) if "postgres" in want else None
        self.metrics_port = free_port()
        self.apply_metrics_port = free_port()  # not metrics_port + 1: another process may hold that one

    @property
    def services(self) -> dict[str, Any]:
        s = {"mariadb-primary": self.primary, "mariadb-replica": self.replica, "broker": self.broker,
             "postgres": self.postgres}
        return {name: svc for name, svc in s.items() if svc is not None}

    def start(self, log=print) -> "DevStack":
        """Start everything from empty data directories; on failure stop what started and re-raise."""
        for sub, svc in (("mariadb", self.primary), ("broker", self.broker), ("postgres", self.postgres)):
            if svc is not None:
                shutil.rmtree(self.dir / sub, ignore_errors=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            t0 = time.monotonic()
            if self.primary is not None:
                self.primary.start()
                log(f"  MariaDB primary   {self.primary.address}  (server_id 1, user cdc/cdc)")
            if self.replica is not None:
                self.replica.start()
                self.replica.make_replica_of(self.primary)
                log(f"  MariaDB replica   {self.replica.address}  (server_id 2, GTID replica of the primary)")
            if self.broker is not None:
                self.broker.start()
                log(f"  broker (tansu)    {self.broker.bootstrap}  (memory storage)")
            if self.postgres is not None:
                self.postgres.start()
                log(f"  PostgreSQL        {self.postgres.dsn}")
            log(f"  started in {time.monotonic() - t0:.1f}s")
        except BaseException:
            self.stop()
            raise
        self.write_state()
        if self.full:
            self.write_config()
        return self

    def stop(self) -> None:
        for svc in reversed(list(self.services.values())):
            svc.stop()
        if self.postgres is not None and not str(self.postgres.dir).startswith(str(self.dir)):
            self.postgres.destroy()  # it fell back to a /tmp dir (state dir not reachable by postgres)

    def detach(self) -> None:
        """Leave the servers running after we exit (`cdc dev up --detach`)."""
        for svc in self.services.values():
            procs.unregister(svc)

    # ---- files -----------------------------------------------------------------------------

    def write_state(self) -> Path:
        state = {"pid": os.getpid(), "started": time.time(), "services": {}}
        for name, svc in self.services.items():
            state["services"][name] = {
                "pid": svc.proc.pid if svc.proc else None,
                "address": getattr(svc, "bootstrap", None) or svc.address,
                "argv0": procs.server_argv(svc.proc)[0] if svc.proc else None,
                "stop_signal": "SIGINT" if isinstance(svc, (Postgres, Broker)) else "SIGTERM",
            }
        if self.postgres is not None:
            state["services"]["postgres"]["dsn"] = self.postgres.dsn
            state["services"]["postgres"]["dir"] = str(self.postgres.dir)
        path = self.dir / STATE_FILE
        path.write_text(json.dumps(state, indent=2) + "\n")
        return path

    def config(self, topic_prefix: str = "cdc", source: str = "demo") -> dict[str, Any]:
        """The cdc.yaml content for this stack: one MySQL source, DuckDB + PostgreSQL targets."""
        hosts = [self.primary.address] + ([self.replica.address] if self.replica is not None else [])
        return {
            "sources": [{"name": source, "kind": "mysql", "hosts": hosts, "user": "cdc", "password": "cdc",
                         "tables": [f"{self.source_db}.*"], "server_id": 4242}],
            "kafka": {"bootstrap_servers": self.broker.bootstrap, "topic_prefix": topic_prefix},
            "targets": [
                {"name": "duckdb", "kind": "duckdb", "path": str(self.dir / "target.duckdb")},
                {"name": "postgres", "kind": "postgres", "dsn": self.postgres.dsn},
            ],
            "apply": [{"source": source, "target": "duckdb", "checkpoint_dir": str(self.dir / "spark-checkpoint")}],
            "metrics": {"host": "127.0.0.1", "port": self.metrics_port, "apply_port": self.apply_metrics_port},
            "spill_dir": str(self.dir / "spill"),
        }

    def write_config(self, **kw: Any) -> Path:
        from cdc.config.loader import parse_config

        raw = self.config(**kw)
        path = self.dir / CONFIG_FILE
        parse_config(raw, str(path))  # fail here, not in the daemon, if the config contract moved
        path.write_text("# written by `cdc dev up`: the embedded services of this machine\n"
                        + yaml.safe_dump(raw, sort_keys=False))
        return path


def read_state(state_dir: Path) -> dict[str, Any] | None:
    path = Path(state_dir) / STATE_FILE
    if not path.exists():
        return None
    return json.loads(path.read_text())


def pid_alive(pid: int | None, argv0: str | None = None) -> bool:
    """True when ``pid`` runs and (if given) its executable is ``argv0``: a recycled pid is not ours."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    if argv0:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        except OSError:
            return False
        return os.path.basename(cmd) == os.path.basename(argv0)
    return True
