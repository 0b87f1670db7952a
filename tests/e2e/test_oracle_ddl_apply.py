"""Every kind of DDL from the Oracle source through the whole pipeline: LogMiner simulator -> `cdc run` ->
broker -> Spark apply -> PostgreSQL, with writes before and after each DDL and daemon restarts between a DDL
and the rows after it.

No Oracle server runs here: the source is the LogMiner simulator's ``evolve`` workload
(readers/oracle/sim/evolve.py), captured with the patterns ``APP.E*`` and ``APP.T*``: CREATE TABLE, ALTER
TABLE ... RENAME TO within the patterns, RENAME into them (a table created outside them, renamed in empty;
``apply[].rename_in: create``), RENAME out of them, RENAME within them, DROP TABLE, ADD COLUMN with a default,
DROP COLUMN, RENAME COLUMN, DATE -> TIMESTAMP(3) -> TIMESTAMP(6), VARCHAR2(20) -> VARCHAR2(40), NUMBER(8,2) ->
NUMBER(12,2), VARCHAR2(40) -> VARCHAR2(12) (every value fits), NULL -> NOT NULL -> NULL, a default change, the
primary key dropped and added on other columns, CREATE INDEX and TRUNCATE, then VARCHAR2(12) -> VARCHAR2(10),
while every other transaction writes APP.T0/T1, APP.E and the small tables that exist.

Three daemons, one apply: the first sees the standby's redo only up to the RENAME COLUMN (``head_limit``); the
second resumes after it with the redo up to the last DDL and the dictionary at its final shape, so it must read
every later row with the definition in force at the row's SCN (dictionary AS OF SCN), not today's. Then a
value longer than 10 characters is written into the target's APP.E (a target that diverged: Oracle itself
only narrows a column whose values fit), and the third daemon, with all the redo, brings the last narrowing:
the apply stops naming table, column, key, value and sequence; with the target's value put back, the apply
follows it. `cdc compare` cannot read the simulator, so the target is checked row for row against the
simulator's model of the source (what `cdc compare` would compare it with).
"""

from __future__ import annotations

import time
from decimal import Decimal

import orjson
import pytest
import yaml

from cdc.config.loader import load_config
from cdc.publish.recovery import make_consumer, read_range, watermarks
from cdc.stream.envelope import changes_topic
from readers.oracle.convert import iso_temporal
from readers.oracle.sim import evolve, simulator
from streaming.apply import job
from streaming.errors import UnsupportedDdl
from tests.e2e.apply_pipeline import norm
from tests.fixtures.ops import DaemonProcess

pytestmark = [pytest.mark.slow, pytest.mark.oracle, pytest.mark.kafka, pytest.mark.spark, pytest.mark.postgres]

N = 4  # a DDL every 4 transactions
OPTS = f"seed=11,transactions={N * len(evolve.PLAN) + 8},lanes=1,tables=2,rollback_rate=0,evolve={N}"
STEP = {kind: k for k, (kind, *_) in enumerate(evolve.PLAN)}
RESTART_AFTER = STEP["rename column"]  # the first daemon stops after it, before the rows that follow it
LAST = len(evolve.PLAN) - 1  # the narrowing a diverged target value does not fit
# the target table of each source table's rows: a renamed table's rows are in the target under its last name
# the patterns take (E2 -> E3, renamed out to X3: E3 kept; E4 -> E5, dropped: E5 kept)
TARGET_OF = {"E2": "E3", "E3": "E3", "E4": "E5", "E5": "E5", "E": "E", "T0": "T0", "T1": "T1"}


def _stream(bootstrap: str, topic: str) -> list[dict]:
    consumer = make_consumer(bootstrap)
    try:
        low, high = watermarks(consumer, topic)
        return [orjson.loads(m.value()) for m in read_range(consumer, topic, low, high, reported_high=high)]
    finally:
        consumer.close()


def _want(below: int | None = None) -> dict[str, dict[str, dict]]:
    """Each target table's rows (by ID) as the source's writes leave them (those committed below SCN ``below``),
    values as the stream carries them."""
    tables: dict[str, dict[str, dict]] = {}
    for scn, _, changes in simulator.instance(OPTS).model.committed():
        if below is not None and scn >= below:
            break
        for op, _s, table, before, after in changes:
            if table not in TARGET_OF:
                continue  # X3: out of the patterns
            rows = tables.setdefault(TARGET_OF[table], {})
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


def _target(postgres, schema: str, table: str, cols: list[str]) -> dict[str, dict] | None:
    name = _table_name(postgres, schema, table)
    if name is None:
        return None
    with postgres.connect() as c:
        rows = c.execute(f'SELECT {", ".join(chr(34) + x + chr(34) for x in cols)} FROM {schema}."{name}"').fetchall()
    return {_canon(r[0]): dict(zip(cols, map(_canon, r))) for r in rows}


def _table_name(postgres, schema: str, table: str) -> str | None:
    with postgres.connect() as c:
        got = c.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s AND "
                        "lower(table_name) = lower(%s)", (schema, table)).fetchall()
    return got[0][0] if got else None


def _columns(postgres, schema: str, table: str) -> dict[str, tuple]:
    """The target table's columns: name -> (type, length, precision, scale, fraction digits)."""
    with postgres.connect() as c:
        rows = c.execute("SELECT column_name, data_type, character_maximum_length, numeric_precision, "
                         "numeric_scale, datetime_precision FROM information_schema.columns WHERE table_schema = %s "
                         "AND table_name = %s ORDER BY ordinal_position",
                         (schema, _table_name(postgres, schema, table))).fetchall()
    return {r[0].upper(): tuple(r[1:]) for r in rows}


def _matches(postgres, schema: str, want: dict[str, dict[str, dict]], e_cols: list[str]) -> bool:
    for table, rows in want.items():
        cols = e_cols if table == "E" else list(next(iter(rows.values()))) if rows else ["ID"]
        if _target(postgres, schema, table, cols) != {k: {c: v[c] for c in cols} for k, v in rows.items()}:
            return False
    return True


def _apply_until(config, spark, daemon, done, seconds: float) -> None:
    job.run(config, spark=spark, until_idle_s=6)
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, daemon.log_tail()
        job.run(config, spark=spark, until_idle_s=4)


def _set_dsn(daemon, dsn: str):
    cfg = yaml.safe_load(daemon.config_path.read_text())
    cfg["sources"][0]["dsn"] = dsn
    daemon.config_path.write_text(yaml.safe_dump(cfg))
    return load_config(daemon.config_path)


def test_every_oracle_ddl_kind_reaches_postgresql_across_restarts(tmp_path, broker, postgres, topic_prefix, spark):
    sim = simulator.instance(OPTS)
    limit = sim.evolve_ddl_scn(RESTART_AFTER) + 1
    last_ddl = sim.evolve_ddl_scn(LAST)
    schema = "o" + topic_prefix.replace(".", "_").replace("-", "_")[-20:].lower()
    with postgres.connect() as c:
        c.execute(f"CREATE SCHEMA {schema}")
        c.commit()
    source = {"name": "ora", "kind": "oracle", "dsn": f"simulator:{OPTS},head_limit={limit}",
              "tables": evolve.CAPTURED, "dictionary": "redo_log", "dictionary_path": str(tmp_path),
              "heartbeat_interval_s": 0.3, "poll_interval_s": 0.05, "snapshot": "never"}
    broker.create_topic(changes_topic(topic_prefix, "ora"))
    daemon = DaemonProcess(tmp_path, source="ora", mariadb_hosts=[], tables=[], bootstrap=broker.bootstrap,
                           topic_prefix=topic_prefix, extra={
                               "sources": [source],
                               "targets": [{"name": "pg", "kind": "postgres", "dsn": postgres.dsn, "schema": schema}],
                               "apply": [{"source": "ora", "target": "pg", "checkpoint_dir": str(tmp_path / "ck"),
                                          "trigger_interval_s": 0.2, "rename_in": "create"}]})
    topic = changes_topic(topic_prefix, "ora")
    daemon.start()
    try:  # the first daemon: the standby has the redo up to the RENAME COLUMN
        deadline = time.monotonic() + 90
        while not any("rename column" in (r.get("ddl") or "") for r in _stream(broker.bootstrap, topic)):
            assert time.monotonic() < deadline, daemon.log_tail()
            time.sleep(0.5)
    finally:
        daemon.stop()
    # the second daemon: the redo up to the last DDL, the dictionary at its final shape
    config = _set_dsn(daemon, f"simulator:{OPTS},head_limit={last_ddl - 1}")
    before_last = _want(last_ddl)
    e_cols = [c.name for c in evolve.STATES[-1]["E"][0]]
    daemon.start()
    try:
        _apply_until(config, spark, daemon, lambda: _matches(postgres, schema, before_last, e_cols), 180)
    finally:
        daemon.stop()
    records = _stream(broker.bootstrap, topic)
    # every DDL on a captured table reached the stream: one SCHEMA record each (TRUNCATE: an op "t" record)
    ddls = [r["ddl"].rstrip(";") for r in records if r.get("ddl")]
    for kind, _t, sql, _ in evolve.PLAN[:LAST]:
        if kind != "truncate":
            assert ddls.count(sql) == (0 if kind == "create table outside the patterns" else 1), (kind, ddls)
    assert any(r.get("op") == "t" for r in records)
    # the tables: renamed within (E2 -> E3), out (E3 -> X3: E3 kept, apply[].drop_table: keep), in (S4 -> E4,
    # created empty), within (E4 -> E5), dropped (E5 kept)
    for gone in ("E2", "E4", "X3", "S4"):
        assert _table_name(postgres, schema, gone) is None, gone
    for table in ("E3", "E5"):
        assert before_last[table], table  # rows were written while the table was captured
    # E's shape: NOTE dropped, NAME renamed, TIER added; each length change followed by the column's type
    cols = _columns(postgres, schema, "E")
    assert list(cols) == e_cols
    assert cols["TITLE"][:2] == ("character varying", 12)  # VARCHAR2(20) -> (40) -> (12)
    assert cols["QTY"][0] == "numeric" and cols["QTY"][2:4] == (12, 2)  # NUMBER(8,2) -> NUMBER(12,2)
    assert cols["BORN"][0] == "timestamp without time zone" and cols["BORN"][4] == 6  # DATE -> TIMESTAMP(3) -> (6)
    # the narrowing a target value does not fit: a value written into the target (a diverged target)
    key, row = max(before_last["E"].items(), key=lambda kv: int(kv[0]))
    name = _table_name(postgres, schema, "E")
    with postgres.connect() as c:
        c.execute(f'UPDATE {schema}."{name}" SET "TITLE" = %s WHERE "ID" = %s', ("eleven char", int(key)))
        c.commit()
    config = _set_dsn(daemon, f"simulator:{OPTS}")
    want = _want()
    daemon.start()
    try:
        deadline = time.monotonic() + 90
        while not any(evolve.PLAN[LAST][2] == (r.get("ddl") or "").rstrip(";") for r in _stream(broker.bootstrap, topic)):
            assert time.monotonic() < deadline, daemon.log_tail()
            time.sleep(0.5)
        with pytest.raises(UnsupportedDdl) as info:
            job.run(config, spark=spark, until_idle_s=6)
        err, text = info.value, str(info.value)
        assert err.table == "APP.E" and err.column == "TITLE" and err.value == "eleven char", text
        assert err.key is not None and _canon(err.key["ID"]) == key and repr(err.key) in text, text
        assert f"at sequence {err.sequence}" in text and "varchar2(12) -> varchar2(10)" in text, text
        assert "cdc schema skip" in text, text  # the way back
        assert _columns(postgres, schema, "E")["TITLE"][:2] == ("character varying", 12)  # left as it was
        with postgres.connect() as c:  # the target's value put back: the apply follows the narrowing
            c.execute(f'UPDATE {schema}."{name}" SET "TITLE" = %s WHERE "ID" = %s', (row["TITLE"], int(key)))
            c.commit()
        _apply_until(config, spark, daemon, lambda: _matches(postgres, schema, want, e_cols), 120)
    finally:
        daemon.stop()
    assert _columns(postgres, schema, "E")["TITLE"][:2] == ("character varying", 10)
    assert want["E"] != before_last["E"]  # rows after the last DDL were applied too
