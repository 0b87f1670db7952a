"""Every kind of DDL from the Oracle source through the whole pipeline: LogMiner simulator -> `cdc run` ->
broker -> Spark apply -> PostgreSQL, with writes before and after each DDL and a daemon restart between a DDL
and the rows after it.

No Oracle server runs here: the source is the LogMiner simulator's ``evolve`` workload
(readers/oracle/sim/evolve.py): CREATE TABLE, RENAME TABLE, DROP TABLE, ADD COLUMN with a default, DROP
COLUMN, RENAME COLUMN, DATE -> TIMESTAMP(6), NULL -> NOT NULL -> NULL, a default change, the primary key
dropped and added on other columns, CREATE INDEX and TRUNCATE on APP.E (and APP.E2/E3), while every other
transaction writes APP.T0/T1 and APP.E. The first daemon sees the standby's redo only up to the RENAME COLUMN
(``head_limit``); the second resumes after it with all the redo there and the dictionary at its final shape,
so it must read every later row with the definition in force at the row's SCN (dictionary AS OF SCN), not
today's. `cdc compare` cannot read the simulator, so the target is checked row for row against the
simulator's model of the source (what `cdc compare` would compare it with).
"""

from __future__ import annotations

import time
from decimal import Decimal

import orjson
import pytest
import yaml

from cdc.config import load_config
from cdc.envelope import changes_topic
from cdc.publish.recovery import make_consumer, read_range, watermarks
from readers.oracle.convert import iso_temporal
from readers.oracle.sim import evolve, simulator
from streaming.apply import job
from tests.e2e.apply_pipeline import norm
from tests.fixtures.ops import DaemonProcess

pytestmark = [pytest.mark.slow, pytest.mark.oracle, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

N = 4  # a DDL every 4 transactions
OPTS = f"seed=11,transactions={N * len(evolve.PLAN) + 8},lanes=1,tables=2,rollback_rate=0,evolve={N}"
RESTART_AFTER = 5  # the RENAME COLUMN: the first daemon stops after it, before the rows that follow it


def _stream(bootstrap: str, topic: str) -> list[dict]:
    consumer = make_consumer(bootstrap)
    try:
        low, high = watermarks(consumer, topic)
        return [orjson.loads(m.value()) for m in read_range(consumer, topic, low, high, reported_high=high)]
    finally:
        consumer.close()


def _want() -> dict[str, dict[str, dict]]:
    """Each table's rows (by ID) as the source holds them at the end, values as the stream carries them."""
    tables: dict[str, dict[str, dict]] = {}
    for _, _, changes in simulator.instance(OPTS).model.committed():
        for op, _s, table, before, after in changes:
            name = "E3" if table in ("E2", "E3") else table  # one table, renamed
            rows = tables.setdefault(name, {})
            if op == "t":
                rows.clear()
                continue
            row = after or before
            if op == "d":
                rows.pop(row["ID"], None)
            else:
                rows[row["ID"]] = {c: iso_temporal(v) if isinstance(v, str) and v.startswith("TO_") else v
                                   for c, v in after.items()}
    return tables


def _canon(v):
    v = norm(v)
    if isinstance(v, (int, float, Decimal)):
        return str(v)
    return v


def _target(postgres, schema: str, table: str, cols: list[str]) -> dict[str, dict]:
    name = _table_name(postgres, schema, table)
    with postgres.connect() as c:
        rows = c.execute(f'SELECT {", ".join(chr(34) + x + chr(34) for x in cols)} FROM {schema}."{name}"').fetchall()
    return {_canon(r[0]): dict(zip(cols, map(_canon, r))) for r in rows}


def _table_name(postgres, schema: str, table: str) -> str | None:
    with postgres.connect() as c:
        got = c.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s AND "
                        "lower(table_name) = lower(%s)", (schema, table)).fetchall()
    return got[0][0] if got else None


def test_every_oracle_ddl_kind_reaches_postgresql_across_a_restart(tmp_path, broker, postgres, topic_prefix, spark):
    sim = simulator.instance(OPTS)
    limit = sim.evolve_ddl_scn(RESTART_AFTER) + 1
    schema = "o" + topic_prefix.replace(".", "_").replace("-", "_")[-20:].lower()
    with postgres.connect() as c:
        c.execute(f"CREATE SCHEMA {schema}")
        c.commit()
    source = {"name": "ora", "kind": "oracle", "dsn": f"simulator:{OPTS},head_limit={limit}", "tables": ["APP.*"],
              "dictionary": "redo_log", "dictionary_path": str(tmp_path), "heartbeat_interval_s": 0.3,
              "poll_interval_s": 0.05, "snapshot": "never"}
    broker.create_topic(changes_topic(topic_prefix, "ora"))
    daemon = DaemonProcess(tmp_path, source="ora", mariadb_hosts=[], tables=[], bootstrap=broker.bootstrap,
                           topic_prefix=topic_prefix, extra={
                               "sources": [source],
                               "targets": [{"name": "pg", "kind": "postgres", "dsn": postgres.dsn, "schema": schema}],
                               "apply": [{"source": "ora", "target": "pg", "checkpoint_dir": str(tmp_path / "ck"),
                                          "trigger_interval_s": 0.2}]})
    topic = changes_topic(topic_prefix, "ora")
    daemon.start()
    try:  # the first daemon: the standby has the redo up to the RENAME COLUMN
        deadline = time.monotonic() + 90
        while not any("rename column" in (r.get("ddl") or "") for r in _stream(broker.bootstrap, topic)):
            assert time.monotonic() < deadline, daemon.log_tail()
            time.sleep(0.5)
    finally:
        daemon.stop()
    cfg = yaml.safe_load(daemon.config_path.read_text())
    cfg["sources"][0]["dsn"] = f"simulator:{OPTS}"  # all the redo now, the dictionary at its final shape
    daemon.config_path.write_text(yaml.safe_dump(cfg))
    config = load_config(daemon.config_path)
    want = _want()
    final_e = [c.name for c in evolve.STATES[-1]["E"][0]]
    daemon.start()
    try:
        job.run(config, spark=spark, until_idle_s=6)
        deadline = time.monotonic() + 180
        while True:
            records = _stream(broker.bootstrap, topic)
            if any("truncate table" in (r.get("ddl") or "") or r.get("op") == "t" for r in records) and \
                    _table_name(postgres, schema, "E") is not None and \
                    len(_target(postgres, schema, "E", final_e)) == len(want["E"]):
                break
            assert time.monotonic() < deadline, daemon.log_tail()
            job.run(config, spark=spark, until_idle_s=4)
    finally:
        daemon.stop()
    # every kind reached the stream: one SCHEMA record per DDL (TRUNCATE: an op "t" record), none twice
    ddls = [r["ddl"] for r in records if r.get("ddl")]
    for kind, _t, sql, _ in evolve.PLAN:
        if kind != "truncate":
            assert sum(d.rstrip(";") == sql for d in ddls) == 1, (kind, ddls)
    # the target follows: E's final shape and rows, T0/T1, E3 kept after its DROP (apply[].drop_table: keep)
    assert _table_name(postgres, schema, "E2") is None
    got_e = _target(postgres, schema, "E", final_e)
    assert got_e == {k: {c: v[c] for c in final_e} for k, v in want["E"].items()}
    with postgres.connect() as c:
        cols = [r[0] for r in c.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = %s "
                                        "AND table_name = %s ORDER BY ordinal_position", (schema, _table_name(postgres, schema, "E"))).fetchall()]
    assert [x.upper() for x in cols] == final_e  # NOTE dropped, NAME renamed, TIER added
    for table in ("T0", "T1", "E3"):
        columns = list(next(iter(want[table].values())))
        assert _target(postgres, schema, table, columns) == want[table], table
