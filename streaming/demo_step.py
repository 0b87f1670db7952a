"""The apply step of `make demo`: run the apply job into the DuckDB target until idle.

``run_apply_into_duckdb(config_path, until_idle_s)`` runs ``cdc apply`` (a
child process, so the DuckDB file is released when it returns) with only the
``apply:`` items whose target is a DuckDB target, and returns
``{"exit_status", "log", "targets": {name: path}, "tables": {table: (rows, checksum)}}``
where the checksum is an order-independent sum of row hashes computed in DuckDB.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from cdc.config import load_config


def run_apply_into_duckdb(config_path: str | os.PathLike[str], until_idle_s: float = 5.0,
                          timeout_s: float = 600) -> dict[str, Any]:
    config = load_config(config_path)
    duck = {t.name: t.path for t in config.targets if t.kind == "duckdb"}
    raw = yaml.safe_load(Path(config_path).read_text())
    raw["apply"] = [a for a in raw.get("apply", []) if a.get("target") in duck]
    work = Path(tempfile.mkdtemp(prefix="cdc-demo-apply-"))
    cfg = work / "apply.yaml"
    cfg.write_text(yaml.safe_dump(raw))
    log = work / "apply.log"
    with open(log, "wb") as out:
        proc = subprocess.run([sys.executable, "-m", "cdc.cli", "apply", "--config", str(cfg), "--until-idle",
                               str(until_idle_s), "--metrics-port", "0"], stdout=out, stderr=subprocess.STDOUT,
                              timeout=timeout_s)
    return {"exit_status": proc.returncode, "log": str(log), "targets": duck,
            "tables": {name: duckdb_fingerprints(path) for name, path in duck.items()}}


def duckdb_fingerprints(path: str) -> dict[str, tuple[int, int]]:
    import duckdb

    con = duckdb.connect(path, read_only=True)
    try:
        tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables WHERE table_name "
                                            "NOT LIKE 'cdc\\_%' ESCAPE '\\' ORDER BY 1").fetchall()]
        return {t: tuple(con.execute(f'SELECT count(*), coalesce(sum(hash(t)), 0) FROM "{t}" t').fetchone())
                for t in tables}
    finally:
        con.close()
