"""An Oracle ``ALTER TABLE ... ADD (c ... DEFAULT 'x')`` on a table with rows (LogMiner simulator, option
``add_column_at``) -> publisher -> broker -> apply engine -> DuckDB: the reader fills Column.default from
ALL_TAB_COLUMNS.DATA_DEFAULT, so the apply backfills the existing target rows with the default instead of
stopping (or leaving NULL)."""

from __future__ import annotations

import pytest

from cdc.config.models import ApplyConfig, TargetConfig
from cdc.metrics import SourceMetrics
from cdc.schema.table_map import TableMap
from readers.oracle.sim import simulator
from readers.oracle.sim.demo import make_source, pump
from readers.oracle.sim.workload import ADDED_COLUMN, table_name
from streaming.apply.engine import ApplyEngine
from streaming.stream.records import SCHEMA
from streaming.targets import make_target
from tests.integration.stream_check import oracle_publisher, stream_records

pytestmark = [pytest.mark.oracle, pytest.mark.kafka]

# lanes=1: transactions commit in order, so the ALTER (the last transaction) follows every row of its table;
# head_step: the dictionary (ALL_TAB_COLUMNS) is the database's current one, and the reader first reads the
# table's definition long before the head reaches the ALTER
DDL_TX = 11
OPTS = f"seed=5,transactions={DDL_TX + 1},lanes=1,tables=2,head_step=3,rollback_rate=0,add_column_at={DDL_TX}"


def test_oracle_add_column_with_a_constant_default_backfills_existing_rows(broker, topic_prefix, tmp_path):
    pub = oracle_publisher(broker, topic_prefix)
    assert pub.recover() is None
    stats = pump(make_source("ora", OPTS, str(tmp_path), SourceMetrics("ora")), pub)
    pub.close()
    assert stats["transactions"] > 0
    records = stream_records(broker.bootstrap, pub.topic)
    altered = table_name(DDL_TX % 2)
    schemas = [r.meta_dict() for r in records if r.kind == SCHEMA and r.tbl == f"APP.{altered}"]
    first, last = schemas[0], schemas[-1]
    assert [c["name"] for c in first["schema"]["columns"]][-1] == "NOTE"  # read before the ALTER: no TIER
    assert "add (\"TIER\"" in last["ddl"]
    tier = last["schema"]["columns"][-1]
    assert tier["name"] == "TIER" and tier["default"] == ADDED_COLUMN[3].strip()

    target = make_target(TargetConfig(name="t", kind="duckdb", path=str(tmp_path / "t.duckdb"))).open()
    try:
        engine = ApplyEngine("ora", target, TableMap.from_config(ApplyConfig(source="ora", target="t"))).start()
        engine.apply_records(records, 0)
        rows = target.execute(f"SELECT ID, TIER FROM {target.qualified(altered)} ORDER BY ID").fetchall()
        target.commit()
    finally:
        target.close()
    want = set()
    for _, _, changes in simulator.instance(OPTS).model.committed():
        for op, _s, table, before, after in changes:
            if table == altered:
                want.discard(int((before or after)["ID"]))
                if op != "d":
                    want.add(int(after["ID"]))
    assert want and sorted(int(r[0]) for r in rows) == sorted(want)
    assert {r[1] for r in rows} == {"std"}  # every existing row holds the default, none NULL
