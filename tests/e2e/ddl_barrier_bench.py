"""ADD COLUMN ... DEFAULT 'std' on a 1M-row target table: the apply's DDL barrier vs the statement run directly
(docs/schema-evolution.md). Not a test: ``PYTHONPATH=. python tests/e2e/ddl_barrier_bench.py /tmp/b.duckdb``
(starts its own PostgreSQL; the DuckDB file must not exist)."""
import sys
import time

from cdc.config import ApplyConfig, TargetConfig
from cdc.dev.postgres import Postgres
from cdc.table_map import TableMap
from streaming.apply.engine import ApplyEngine
from streaming.targets import make_target
from streaming.testing import StreamBuilder

N = 1_000_000
COLS = [("id", "int", False), ("name", "varchar(20)")]


def run(cfg, fill):
    t = make_target(cfg).open()
    fill(t)
    t.commit()
    t.execute("ALTER TABLE bench ADD COLUMN tier varchar(10) DEFAULT 'std'")  # warm: the same statement once
    t.commit()
    t.execute("ALTER TABLE bench DROP COLUMN tier")
    t.commit()
    t0 = time.perf_counter()
    t.execute("ALTER TABLE bench ADD COLUMN tier varchar(10) DEFAULT 'std'")
    t.commit()
    direct = time.perf_counter() - t0
    t.execute("ALTER TABLE bench DROP COLUMN tier")
    t.commit()
    b = StreamBuilder().schema("shop.bench", COLS, ["id"])
    e = ApplyEngine("src", t, TableMap.from_config(ApplyConfig(source="src", target=cfg.name))).start()
    e.apply_records(b.as_records(), 0)
    n = len(b.as_records())
    b.schema("shop.bench", COLS + [("tier", "varchar(10)", True, "'std'")], ["id"],
             ddl="ALTER TABLE bench ADD COLUMN tier VARCHAR(10) DEFAULT 'std'")
    t0 = time.perf_counter()
    e.apply_records(b.as_records()[n:], 1)
    barrier = time.perf_counter() - t0
    got = t.execute("SELECT count(*) FROM bench WHERE tier = 'std'").fetchone()[0]
    t.close()
    print(f"{cfg.kind}: {N:,} rows, ADD COLUMN DEFAULT: direct {direct * 1000:.1f} ms, "
          f"apply barrier {barrier * 1000:.1f} ms (rows holding 'std': {got:,})")


pg = Postgres()
pg.start()
try:
    run(TargetConfig(name="pg", kind="postgres", dsn=pg.dsn),
        lambda t: t.execute(f"CREATE TABLE bench (id int PRIMARY KEY, name varchar(20)); INSERT INTO bench "
                            f"SELECT g, 'n' || g FROM generate_series(1, {N}) g"))
finally:
    pg.destroy()
run(TargetConfig(name="duck", kind="duckdb", path=sys.argv[1]),
    lambda t: t.execute(f"CREATE TABLE bench (id int PRIMARY KEY, name varchar(20)); INSERT INTO bench "
                        f"SELECT g, 'n' || g FROM range(1, {N} + 1) t(g)"))
