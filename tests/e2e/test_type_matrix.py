"""The type matrix through the whole pipeline (issue #14 "Must show"): MariaDB or MySQL 9.7 -> `cdc run` ->
broker -> ONE `cdc apply` run with four targets (PostgreSQL, MariaDB, DuckDB, Parquet), every value of every
type checked against the source one by one, then `cdc compare` equal (exit 0) on each database target.

Cases: tests/e2e/type_cases.py, taken from python-mysql-replication's
``pymysqlreplication/tests/test_data_type.py`` and Debezium's MySQL connector type tests
(``debezium-connector-mysql/src/test/resources/ddl/regression_test.sql``, ``datatypes_test.sql``):
integers at both limits incl. UNSIGNED and ZEROFILL, DECIMAL(65,30)/(65,0), FLOAT/DOUBLE max and min,
BIT(1/10/64), DATE/DATETIME(0/6)/TIMESTAMP(6) at the ends of their ranges, zero dates, TIME +-838 h and
negative fractions, YEAR 0000..2155, CHAR/VARCHAR/TEXT in utf8mb4 and latin1, BINARY(16) with trailing
zero bytes, BLOB with all 256 byte values, ENUM, SET incl. empty, JSON, GEOMETRY/POINT, NULL in every
column; then an UPDATE of several types and a primary-key change, so the before images are exercised.
What the user saw before: BIT and TIME beyond 24 h refused by PostgreSQL and DuckDB, DECIMAL(65,30)
stopping DuckDB, BIGINT UNSIGNED/BIT(64) >= 2^63 refused by DuckDB, BINARY and YEAR 0000 wrong in
every target, and `cdc compare` crashing or reporting false differences on the same data.

Runs on both flavours (``mysql_source``): on MySQL 9.7 the source is read as the documented capture user, the
MySQL target (on that server) written as a user with the documented target grant, and the table has MySQL's own
columns too (type_cases.MYSQL_COLUMNS: VECTOR, GEOMCOLLECTION, TIMESTAMP literals with an offset, an INVISIBLE
column, JSON documents holding dates, times and binary strings), its JSON a native JSON column (MariaDB's is
LONGTEXT); the update also changes the JSON document, the VECTOR and the invisible column. What MySQL 9.7 showed
here: a text column after a VECTOR streamed as base64 (the charset fields of the TABLE_MAP count the VECTOR), a
date inside a JSON document stopped the stream. `cdc compare` against DuckDB, whose VARCHAR holds the stream's
compact JSON text, must find MySQL's spaced JSON EQUAL.
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from cdc.cli import main as cdc_main
from cdc.stream.events import TableId
from readers.mysql.snapshot import TableReader
from streaming.targets import make_target
from tests.e2e import type_cases
from tests.e2e.apply_pipeline import Pipeline
from tests.e2e.type_check import mismatches, read_target
from tests.integration.mysql_helpers import is_mysql

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]


def _parquet_rows(root) -> dict:
    """The current state of the Parquet changelog: the last upsert or delete per key, in file order."""
    state: dict = {}
    for f in sorted((root / "types").glob("*.parquet")):
        for r in pq.read_table(f).to_pylist():
            op = r.pop("_op")
            r.pop("_batch"), r.pop("_last_sequence")
            if op == "u":
                state[r["id"]] = r
            elif op == "d":
                state.pop(r["id"], None)
    return state


def test_every_type_through_run_apply_into_four_targets_then_compare(
        tmp_path, mysql_source, broker, postgres, topic_prefix, tmp_source_db, spark, capsys):
    db, mysql = tmp_source_db, is_mysql(mysql_source)
    p = Pipeline(tmp_path, mysql_source, broker, postgres, topic_prefix, db,
                 targets=("pg", "my", "duck", "pq")).start()
    try:
        conn = mysql_source.connect()
        try:
            type_cases.load(conn, db, mysql=mysql)
            with conn.cursor() as cur:  # updates (before images of every type) and a key change
                cur.execute(f"UPDATE `{db}`.types SET f = 1.5, tm = '-01:00:00', b64 = b'1', d65 = -1.5, "
                            f"bn = unhex('00'), y = 1999, st = '' WHERE id = 3")
                if mysql:  # MySQL's own columns and its native JSON changed too
                    cur.execute(f"UPDATE `{db}`.types SET j = JSON_SET(j, '$.n', 'x', '$.list', "
                                f"JSON_ARRAY(1, 'a')), vec = STRING_TO_VECTOR('[1,2,3]'), hid = 'seen' WHERE id = 3")
                cur.execute(f"UPDATE `{db}`.types SET id = 6 WHERE id = 2")
                cur.execute(f"DELETE FROM `{db}`.types WHERE id = 5")
                cur.execute(f"INSERT INTO `{db}`.types (id) VALUES (5)")
            conn.commit()
            with conn.cursor() as cur:
                cur.execute("SET SESSION time_zone = '+00:00'")
            reader = TableReader(conn, TableId(db, "types"))
            want = {r["id"]: r for r in reader.chunk(None, 100)}
        finally:
            conn.close()
        assert sorted(want) == [1, 3, 4, 5, 6] and want[3]["tm"] == "-01:00:00"
        if mysql:  # the invisible column is read, the JSON document changed
            assert want[3]["hid"] == "seen" and json.loads(want[3]["j"])["list"] == [1, "a"], want[3]
        sid = p.sentinel()
        p.apply_until(spark, sid)  # one apply run with every target of the config
    finally:
        p.stop()
    schema = reader.schema
    bad = []
    for tcfg in p.config.targets:
        if tcfg.kind == "parquet":
            bad += mismatches(want, _parquet_rows(tmp_path / "parquet"), schema, "parquet", raw=False)
            continue
        target = make_target(tcfg).open()
        try:
            bad += mismatches(want, read_target(target, schema), schema, tcfg.name)
        finally:
            target.close()
    assert not bad, "\n".join(bad)
    for name in ("pg", "my", "duck"):
        code = cdc_main(["compare", "--config", str(p.config_path), "--source", "src", "--target", name,
                         "--tables", f"{db}.types"])
        out = capsys.readouterr().out
        assert code == 0 and "types: EQUAL" in out, f"{name}: exit {code}\n{out}"
