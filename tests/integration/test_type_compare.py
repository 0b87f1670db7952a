"""Every MySQL/MariaDB type family through the target modules into PostgreSQL, MariaDB and DuckDB,
each value checked against the source, then `cdc compare` equal on each (issue #14).

The rows are the type matrix of tests/e2e/type_cases.py (cases from python-mysql-replication's and
Debezium's own type tests; sources named there), read from MariaDB as stream values (the snapshot
path, which tests/integration/test_mysql_values.py holds equal to the binlog path) and written by
the targets exactly as the apply engine writes them (typemap types and converters; for PostgreSQL
also its bulk path: JSON row images COPYed as CSV, 250 rows, fresh and conflicting). Faults this
catches, each of which a user saw before: BIT refused (bytea/blob), TIME beyond 24 h or negative
refused (time), DECIMAL(65,*) stopping DuckDB, BIGINT UNSIGNED and BIT(64) >= 2^63 refused by
DuckDB, and `cdc compare` crashing on GEOMETRY and on DuckDB DOUBLE max, or reporting false
differences for FLOAT 42.42, TINYINT ZEROFILL, DOUBLE max and zero dates.

Runs on both flavours (``mysql_source``): on MySQL 9.7 with its own types too (VECTOR, GEOMCOLLECTION,
TIMESTAMP literals with an offset, an INVISIBLE column, JSON holding dates and times: type_cases.MYSQL_COLUMNS),
the MySQL target on that same server; its JSON column compares EQUAL against DuckDB's VARCHAR holding the stream's
compact text (compared as JSON).
"""

from __future__ import annotations

import pytest

from cdc.compare.endpoints import Endpoint, from_dsn
from cdc.compare.table_diff import TableCompare
from cdc.config.models import TargetConfig
from cdc.stream.events import TableId
from readers.mysql.snapshot import TableReader
from streaming.targets import typemap
from streaming.targets.duckdb.target import DuckDbTarget
from streaming.targets.mysql.target import MySqlTarget
from streaming.targets.postgres.target import PostgresTarget
from tests.e2e import type_cases
from tests.e2e.type_check import mismatches, read_target
from tests.integration.mysql_helpers import is_mysql

pytestmark = [pytest.mark.mysql, pytest.mark.postgres]


def _write(target, schema, rows) -> None:
    target.open()
    target.begin()
    target.create_table("types", schema)
    conv = {c.name: f for c in schema.columns if (f := typemap.converter(c.type, target.dialect)) is not None}
    out = [{k: (conv[k](v) if k in conv and v is not None else v) for k, v in r.items()} for r in rows]
    target.upsert_rows("types", [c.name for c in schema.columns], ["id"], out)
    target.commit()


def _postgres_bulk_json(config, schema, rows, want) -> list[str]:
    """The PostgreSQL bulk path the engine takes for big batches: JSON row images -> DuckDB -> CSV -> COPY,
    fresh keys straight into the table, known keys through the staging table and ON CONFLICT."""
    import numpy as np
    import orjson
    import pyarrow as pa

    target = PostgresTarget(config).open()
    copies = 50  # above BULK_MIN_ROWS: the engine's json_rows path
    images = [dict(r, id=r["id"] + 100 * k) for k in range(copies) for r in rows]
    texts = pa.array([orjson.dumps(i).decode() for i in images], pa.string())
    cols = [c.name for c in schema.columns]
    binary = {c.name for c in schema.columns if typemap.converter(c.type, "postgres") is typemap.b64_bytes}
    try:
        target.begin()
        target.create_table("types_bulk", schema)
        target.upsert_json("types_bulk", cols, ["id"], texts, np.ones(len(images), dtype=bool), binary)
        target.upsert_json("types_bulk", cols, ["id"], texts, np.zeros(len(images), dtype=bool), binary)  # again
        target.commit()
        got = read_target(target, schema, "types_bulk")
    finally:
        target.close()
    out = []
    for k in range(copies):
        part = {i - 100 * k: dict(r, id=i - 100 * k) for i, r in got.items() if i // 100 == k}
        out += mismatches(want, part, schema, f"postgres bulk copy {k}")
    return out


def test_type_matrix_targets_hold_every_value_and_compare_equal(mysql_source, tmp_source_db, postgres, tmp_path):
    db, server = tmp_source_db, mysql_source
    conn = server.connect()
    try:
        type_cases.load(conn, db, mysql=is_mysql(server))
        with conn.cursor() as cur:
            cur.execute("SET SESSION time_zone = '+00:00'")
        reader = TableReader(conn, TableId(db, "types"))
        rows = reader.chunk(None, 100)
    finally:
        conn.close()
    schema = reader.schema
    want = {r["id"]: r for r in rows}
    assert want[1]["b64"] == 2**64 - 1 and want[2]["tm"] == "-838:59:59" and want[4]["dte"] is None
    if is_mysql(server):  # VECTOR: its float32 bytes (base64); TIMESTAMP with an offset: the UTC instant
        assert (want[3]["vec"], want[3]["tso"]) == ("FK4pQgAAgL/NzMw9", "2024-03-01T07:59:59.500000Z"), want[3]
    tag = db[-12:]
    with postgres.connect() as c:
        c.execute(f"CREATE SCHEMA tc_{tag}")
        c.commit()
    server.query(f"CREATE DATABASE tc_{tag}")
    targets = {
        "postgres": (PostgresTarget(TargetConfig(name="pg", kind="postgres", dsn=postgres.dsn, schema=f"tc_{tag}")),
                     Endpoint("pg", "postgres", {"dsn": postgres.dsn}, f"tc_{tag}")),
        "mysql": (MySqlTarget(TargetConfig(name="my", kind="mysql",
                                           dsn=f"mysql://root@{server.host}:{server.port}/tc_{tag}",
                                           passwordless=True)),
                  from_dsn("my", f"mysql://root@{server.host}:{server.port}/tc_{tag}")),
        "duckdb": (DuckDbTarget(TargetConfig(name="duck", kind="duckdb", path=str(tmp_path / "t.duckdb"))),
                   from_dsn("duck", str(tmp_path / "t.duckdb"))),
    }
    src_ep = from_dsn("src", f"mysql://root@{server.host}:{server.port}/{db}")
    bad, reports = [], {}
    try:
        for name, (target, ep) in targets.items():
            _write(target, schema, rows)
            bad += mismatches(want, read_target(target, schema), schema, name)
            target.close()
            for buckets in (True, False):
                report = TableCompare(src_ep, f"{db}.types", ep, f"{ep.default_schema}.types",
                                      use_buckets=buckets).run()
                reports[(name, buckets)] = report
        bad += _postgres_bulk_json(targets["postgres"][0].config, schema, rows, want)
    finally:
        server.query(f"DROP DATABASE IF EXISTS tc_{tag}")
        with postgres.connect() as c:
            c.execute(f"DROP SCHEMA IF EXISTS tc_{tag} CASCADE")
            c.commit()
    assert not bad, "\n".join(bad)
    for (name, buckets), report in reports.items():
        assert report.equal and report.same == len(rows), f"{name} buckets={buckets}:\n{report.render()}"
    if is_mysql(server):  # MySQL's JSON (spaced) against DuckDB's VARCHAR holding the stream's compact text
        assert any(w.lower().startswith("column j: source json vs target varchar") and "compared as JSON" in w
                   for w in reports[("duckdb", False)].warnings), reports[("duckdb", False)].render()
