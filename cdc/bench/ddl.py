"""`cdc bench ddl`: the apply's DDL barrier vs the same statement run directly on the target, same run.

The statement is ``ALTER TABLE bench ADD COLUMN tier VARCHAR(10) DEFAULT 'std'`` on a target table of
``--rows`` rows (1,000,000 by default): the most common DDL, whose existing rows must read the source's
default. Per target (PostgreSQL started from cdc.dev.postgres, and DuckDB in a temporary file):

- ``direct_ms``: the statement run on the target and committed (after one warm-up run and a DROP);
- ``barrier_ms``: the apply engine applying the SCHEMA record of that statement (its checks, the DDL,
  the schema memory and the progress row, in one target transaction where the target allows);
- ``rows_with_default``: rows reading 'std' afterwards (must be ``--rows``).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

COLS = [("id", "int", False), ("name", "varchar(20)")]
STATEMENT = "ALTER TABLE bench ADD COLUMN tier varchar(10) DEFAULT 'std'"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows in the target table")
    parser.add_argument("--dsn", default=None, help="a PostgreSQL to use instead of starting one")


def _one(cfg: Any, fill_sql: str, rows: int) -> dict[str, Any]:
    from cdc.config.models import ApplyConfig
    from cdc.schema.table_map import TableMap
    from streaming.apply.engine import ApplyEngine
    from streaming.targets import make_target
    from streaming.testing import StreamBuilder

    t = make_target(cfg).open()
    try:
        t.execute(fill_sql)
        t.commit()
        for sql in (STATEMENT, "ALTER TABLE bench DROP COLUMN tier"):  # warm: the same statement once
            t.execute(sql)
            t.commit()
        t0 = time.perf_counter()
        t.execute(STATEMENT)
        t.commit()
        direct = time.perf_counter() - t0
        t.execute("ALTER TABLE bench DROP COLUMN tier")
        t.commit()
        b = StreamBuilder().schema("shop.bench", COLS, ["id"])
        engine = ApplyEngine("src", t, TableMap.from_config(ApplyConfig(source="src", target=cfg.name))).start()
        engine.apply_records(b.as_records(), 0)
        n = len(b.as_records())
        b.schema("shop.bench", [*COLS, ("tier", "varchar(10)", True, "'std'")], ["id"],
                 ddl="ALTER TABLE bench ADD COLUMN tier VARCHAR(10) DEFAULT 'std'")
        t0 = time.perf_counter()
        engine.apply_records(b.as_records()[n:], 1)
        barrier = time.perf_counter() - t0
        got = t.execute("SELECT count(*) FROM bench WHERE tier = 'std'").fetchone()[0]
    finally:
        t.close()
    return {"direct_ms": round(direct * 1000, 1), "barrier_ms": round(barrier * 1000, 1),
            "rows_with_default": int(got), "rows": rows}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from cdc.config.models import TargetConfig
    from cdc.dev.postgres import Postgres

    n = args.rows
    out: dict[str, Any] = {"statement": STATEMENT}
    pg = None if args.dsn else Postgres().start()
    try:
        dsn = args.dsn or pg.dsn
        out["postgres"] = _one(TargetConfig(name="pg", kind="postgres", dsn=dsn),
                               "DROP TABLE IF EXISTS bench; CREATE TABLE bench (id int PRIMARY KEY, name varchar(20)); "
                               f"INSERT INTO bench SELECT g, 'n' || g FROM generate_series(1, {n}) g", n)
    finally:
        if pg is not None:
            pg.destroy()
    with tempfile.TemporaryDirectory(prefix="cdc-bench-ddl-") as tmp:
        out["duckdb"] = _one(TargetConfig(name="duck", kind="duckdb", path=str(Path(tmp) / "b.duckdb")),
                             "CREATE TABLE bench (id int PRIMARY KEY, name varchar(20)); INSERT INTO bench "
                             f"SELECT g, 'n' || g FROM range(1, {n} + 1) t(g)", n)
    return out
