"""A DDL's definition the reader could not rebuild at its position is checked by the table's next TABLE_MAP
(readers/mysql/verify.py), on MariaDB and MySQL 9.7: reader -> publisher -> broker -> apply engine -> DuckDB.

The reader is behind every statement (they all run before it reads the binlog), so at each DDL the catalog
already shows the later ones. After each scenario the target equals the source twice: before the last
statement (the consistent point in the middle, where a wrong definition would show) and at the end.
"""

from __future__ import annotations

import time

import pytest

from cdc.config.models import ApplyConfig, KafkaConfig, TargetConfig
from cdc.metrics import SourceMetrics
from cdc.publish.publisher import Publisher
from cdc.schema.evolution import SchemaChangeConfig
from cdc.schema.table_map import TableMap
from cdc.stream.events import Commit, Heartbeat, Idle, SchemaChange
from readers.mysql.position import GtidSet
from readers.mysql.verify import UnverifiableDefinition
from streaming.apply.engine import ApplyEngine
from streaming.errors import UnsupportedDdl
from streaming.stream.records import END, SCHEMA, StreamRecord
from streaming.targets import make_target
from tests.integration.mysql_helpers import source_for
from tests.integration.stream_check import stream_records

pytestmark = [pytest.mark.mysql, pytest.mark.kafka]

ADD_THEN_DROP = [  # (1) the catalog has no f when the reader reaches the ADD
    "ALTER TABLE {t} ADD COLUMN f INT NOT NULL DEFAULT 7",
    "INSERT INTO {t} (id, v, f) VALUES (10, 10, 70)",
    "UPDATE {t} SET f = 8 WHERE id = 2",
    "ALTER TABLE {t} DROP COLUMN f",
]
ADD_THEN_MODIFY = [  # (2) the catalog shows c as BIGINT with another default when the reader reaches the ADD
    "ALTER TABLE {t} ADD COLUMN c INT DEFAULT 5",
    "INSERT INTO {t} (id, v, c) VALUES (11, 11, 55)",
    "ALTER TABLE {t} MODIFY COLUMN c BIGINT DEFAULT 6",
]
DROP_ADD_ONE_STATEMENT = [  # (4) a new column under an old name: the old values are not kept
    "ALTER TABLE {t} DROP COLUMN flag, ADD COLUMN flag VARCHAR(5) NOT NULL DEFAULT 'new'",
    "INSERT INTO {t} (id, v) VALUES (12, 12)",
    "UPDATE {t} SET v = 0 WHERE id = 1",
]


def _rows(db, table: str) -> list[dict]:
    conn = db.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {table} ORDER BY id")
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]
    finally:
        conn.close()


def _target_rows(target, table: str = "t") -> list[dict]:
    cur = target.execute(f"SELECT * FROM {target.qualified(table)} ORDER BY id")
    names = [d[0] for d in cur.description]
    out = [dict(zip(names, r)) for r in cur.fetchall()]
    target.commit()
    return out


def _read_to_now(events, src, pub, db) -> None:
    """Publish the reader's events until it has read everything ``db`` has logged (bounded)."""
    end, deadline = GtidSet.parse(db.gtid_binlog_pos()), time.monotonic() + 60
    for ev in events:
        if type(ev) is not Idle:
            pub.publish(ev)
        if isinstance(ev, Heartbeat) and src.state.issuperset(end):
            return
        assert time.monotonic() < deadline, "the reader did not reach the end of the binlog in 60 s"


def _publisher(broker, prefix: str) -> Publisher:
    pub = Publisher("src", "mysql", KafkaConfig(bootstrap_servers=broker.bootstrap, topic_prefix=prefix),
                    SourceMetrics("src"))
    assert pub.recover() is None
    return pub


def _publish(src, db, broker, prefix: str) -> list[StreamRecord]:
    pub = _publisher(broker, prefix)
    try:
        _read_to_now(src.events(), src, pub, db)
        pub.flush(timeout_s=60)
    finally:
        src.close()
        pub.close()
    return stream_records(broker.bootstrap, pub.topic)


def _run(mysql_source, db, broker, prefix, statements: list[str], final: str = "t",
         keep_up: bool = False) -> tuple[list[StreamRecord], list[dict], int]:
    """Table ``t`` with rows, then ``statements`` ({t}, {u}: the table before and after them), read by a reader
    that is behind all of them, or (``keep_up``) that reads each before the next runs. Returns the stream, the
    source's rows before the last statement and the index in the stream where the source was there."""
    q, t, u = mysql_source.query, f"`{db}`.t", f"`{db}`.{final}"
    src = source_for(mysql_source, [f"{db}.*"], snapshot="never", heartbeat_interval_s=0.2)
    src.start(None)  # before the table exists: its CREATE and its rows are read like the rest
    pub = _publisher(broker, prefix)
    events = src.events()
    try:
        q(f"CREATE TABLE {t} (id INT PRIMARY KEY, v INT, flag VARCHAR(5) NOT NULL DEFAULT 'old')")
        q(f"INSERT INTO {t} (id, v, flag) VALUES " + ", ".join(f"({i}, {i}, 'x')" for i in range(1, 6)))
        for s in statements[:-1]:
            if keep_up:
                _read_to_now(events, src, pub, mysql_source)
            q(s.format(t=t, u=u))
        middle, at = _rows(mysql_source, u), GtidSet.parse(mysql_source.gtid_binlog_pos())
        if keep_up:
            _read_to_now(events, src, pub, mysql_source)
        q(statements[-1].format(t=t, u=u))
        _read_to_now(events, src, pub, mysql_source)
        pub.flush(timeout_s=60)
    finally:
        src.close()
        pub.close()
    records = stream_records(broker.bootstrap, pub.topic)
    return records, middle, _checkpoint(records, at)


def _engine(target, behavior: str = "evolve") -> ApplyEngine:
    cfg = ApplyConfig(source="src", target="t", schema_changes=SchemaChangeConfig(behavior=behavior))
    engine = ApplyEngine("src", target, TableMap.from_config(cfg))
    engine.catalog.policy = cfg.schema_changes  # as the job sets it, before start()
    return engine.start()


def _behind(mysql_source, db, broker, prefix, tmp_path, statements: list[str], final: str = "t",
            keep_up: bool = False) -> tuple[list, object]:
    """:func:`_run`, the stream applied to DuckDB up to the last statement's SCHEMA record (the target then
    equals the source before that statement) and to the end (equal to the source). Returns the SCHEMA records
    of the table and the open target."""
    records, middle, cut = _run(mysql_source, db, broker, prefix, statements, final, keep_up)
    schemas = [r for r in records if r.kind == SCHEMA and r.tbl in (f"{db}.t", f"{db}.{final}")]
    target = make_target(TargetConfig(name="t", kind="duckdb", path=str(tmp_path / "t.duckdb"))).open()
    engine = _engine(target)
    engine.apply_records(records[:cut], 0)
    assert _target_rows(target, final) == middle, [r.meta_dict().get("ddl") for r in schemas]
    engine.apply_records(records[cut:], 1)
    assert _target_rows(target, final) == _rows(mysql_source, f"`{db}`.{final}")
    return [r.meta_dict() for r in schemas], target


def _checkpoint(records: list[StreamRecord], at: GtidSet) -> int:
    """The index after the first END or SCHEMA record whose resume state holds ``at``: the stream up to it is
    the source at ``at``."""
    for i, r in enumerate(records):
        if r.kind in (END, SCHEMA):
            resume = r.meta_dict().get("resume") or {}
            if resume.get("gtid_set") is not None and GtidSet.parse(resume["gtid_set"]).issuperset(at):
                return i + 1
    raise AssertionError(f"no checkpoint at {at}")


def test_add_then_drop_of_a_column_with_the_reader_behind(mysql_source, tmp_source_db, broker, topic_prefix,
                                                          tmp_path):
    schemas, target = _behind(mysql_source, tmp_source_db, broker, topic_prefix, tmp_path, ADD_THEN_DROP)
    target.close()
    added = next(s for s in schemas if "ADD COLUMN f" in (s["ddl"] or ""))
    f = [c for c in added["schema"]["columns"] if c["name"] == "f"]
    assert f and f[0]["default"] == "7" and f[0]["nullable"] is False  # read from the statement, not the catalog


def test_add_then_modify_to_another_type_with_the_reader_behind(mysql_source, tmp_source_db, broker, topic_prefix,
                                                                tmp_path):
    schemas, target = _behind(mysql_source, tmp_source_db, broker, topic_prefix, tmp_path, ADD_THEN_MODIFY)
    target.close()
    added = next(s for s in schemas if "ADD COLUMN c" in (s["ddl"] or ""))
    c = next(c for c in added["schema"]["columns"] if c["name"] == "c")
    assert (c["type"], c.get("default")) == ("int", "5")  # not the later BIGINT DEFAULT 6


def test_drop_and_add_of_one_name_in_one_statement(mysql_source, tmp_source_db, broker, topic_prefix, tmp_path):
    schemas, target = _behind(mysql_source, tmp_source_db, broker, topic_prefix, tmp_path, DROP_ADD_ONE_STATEMENT)
    try:
        assert {r["flag"] for r in _target_rows(target)} == {"new"}  # not the old 'x'
    finally:
        target.close()
    ddl = [s["ddl"] for s in schemas if s["ddl"] and "DROP" in s["ddl"]]
    assert len(ddl) == 2 and ddl[0].startswith("/* cdc: the DROP part"), ddl


def test_a_table_dropped_later_is_read_from_the_statement(mysql_source, tmp_source_db, broker, topic_prefix,
                                                          tmp_path):
    """(3) ALTER, rows, DROP TABLE: the catalog has no table at the ALTER; the reader's last sight of it plus
    the statement is the definition, and the rows between confirm it."""
    statements = ["ALTER TABLE {t} ADD COLUMN g VARCHAR(3) DEFAULT 'gg'",
                  "INSERT INTO {t} (id, v, g) VALUES (13, 13, 'h')",
                  "DROP TABLE {t}"]
    q, t = mysql_source.query, f"`{tmp_source_db}`.t"
    src = source_for(mysql_source, [f"{tmp_source_db}.t"], snapshot="never", heartbeat_interval_s=0.2)
    src.start(None)
    q(f"CREATE TABLE {t} (id INT PRIMARY KEY, v INT)")
    q(f"INSERT INTO {t} VALUES (1, 1), (2, 2)")
    for s in statements[:-1]:
        q(s.format(t=t))
    middle, at = _rows(mysql_source, t), GtidSet.parse(mysql_source.gtid_binlog_pos())
    q(statements[-1].format(t=t))
    records = _publish(src, mysql_source, broker, topic_prefix)
    drop = _checkpoint(records, at)
    target = make_target(TargetConfig(name="t", kind="duckdb", path=str(tmp_path / "t.duckdb"))).open()
    try:
        engine = ApplyEngine("src", target, TableMap.from_config(ApplyConfig(source="src", target="t"))).start()
        engine.apply_records(records[:drop], 0)
        assert _target_rows(target) == middle
    finally:
        target.close()


def test_a_table_map_that_contradicts_the_definition_is_published_first_or_stops(mysql_source, tmp_source_db):
    """A definition the statement cannot tell (an expression default) and rows that show another one: the
    corrected definition cannot be built (the new column's default is in no table map), so the source stops
    naming table, GTID, position, what differed and the way back; also when the reader restarted between the
    DDL and the rows (the check is in the resume state)."""
    q, t = mysql_source.query, f"`{tmp_source_db}`.t"
    src = source_for(mysql_source, [f"{tmp_source_db}.t"], snapshot="never", heartbeat_interval_s=0.2)
    src.start(None)
    q(f"CREATE TABLE {t} (id INT PRIMARY KEY, v INT)")
    q(f"INSERT INTO {t} VALUES (1, 1)")
    q(f"ALTER TABLE {t} ADD COLUMN d DATETIME DEFAULT CURRENT_TIMESTAMP")
    q(f"INSERT INTO {t} (id, v) VALUES (2, 2)")
    q(f"ALTER TABLE {t} DROP COLUMN d")
    end = GtidSet.parse(mysql_source.gtid_binlog_pos())
    resume = None
    try:  # the first reader stops right after the ADD's SCHEMA record
        for ev in src.events():
            if isinstance(ev, SchemaChange) and ev.ddl and "ADD COLUMN d" in ev.ddl:
                resume = ev.resume
                break
    finally:
        src.close()
    assert resume and f"{tmp_source_db}.t" in resume["unverified"]
    src = source_for(mysql_source, [f"{tmp_source_db}.t"], snapshot="never", heartbeat_interval_s=0.2)
    src.start(resume)
    with pytest.raises(UnverifiableDefinition) as err:
        try:
            for ev in src.events():
                if isinstance(ev, Heartbeat) and src.state.issuperset(end):
                    break
                assert not (isinstance(ev, SchemaChange) and ev.ddl and "DROP COLUMN d" in ev.ddl)
        finally:
            src.close()
    msg = str(err.value)
    assert f"{tmp_source_db}.t" in msg and "cdc source skip" in msg and "where the table map has" in msg, msg
    assert err.value.fields["gtid"] and err.value.fields["position"]


ALTER_AND_RENAME = [  # one ALTER that adds a column and renames the table, its column changed later
    "ALTER TABLE {t} ADD COLUMN c INT DEFAULT 4, RENAME TO {u}",
    "INSERT INTO {u} (id, v, c) VALUES (16, 16, 44)",
    "ALTER TABLE {u} MODIFY COLUMN c BIGINT DEFAULT 9",
]


def test_an_alter_that_renames_the_table_with_the_reader_behind(mysql_source, tmp_source_db, broker, topic_prefix,
                                                                tmp_path):
    schemas, target = _behind(mysql_source, tmp_source_db, broker, topic_prefix, tmp_path, ALTER_AND_RENAME, "u")
    target.close()
    renamed = next(s for s in schemas if "RENAME TO" in (s["ddl"] or ""))
    c = next(c for c in renamed["tables"][0]["schema"]["columns"] if c["name"] == "c")
    assert (c["type"], c.get("default")) == ("int", "4")


CORRECTED = [  # the statement's column definition is not one the reader reads (CHECK): its rows correct it
    "ALTER TABLE {t} MODIFY COLUMN v BIGINT CHECK (v > -1000)",
    "INSERT INTO {t} (id, v) VALUES (15, 15)",
    "ALTER TABLE {t} MODIFY COLUMN v INT",
]


def test_a_definition_the_rows_contradict_is_corrected_before_them(mysql_source, tmp_source_db, broker, topic_prefix,
                                                                    tmp_path):
    schemas, target = _behind(mysql_source, tmp_source_db, broker, topic_prefix, tmp_path, CORRECTED)
    target.close()
    fixed = [s for s in schemas if (s["ddl"] or "").startswith("/* cdc: ")]
    assert len(fixed) == 1 and "MODIFY COLUMN `v` bigint" in fixed[0]["ddl"], [s["ddl"] for s in schemas]
    assert fixed[0]["resume"] is not None  # outside any transaction: a checkpoint


def test_a_correction_due_inside_a_transaction_stops_the_source(mysql_source, tmp_source_db):
    q, db = mysql_source.query, tmp_source_db
    src = source_for(mysql_source, [f"{db}.t", f"{db}.u"], snapshot="never", heartbeat_interval_s=0.2)
    src.start(None)
    q(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v INT)")
    q(f"CREATE TABLE `{db}`.u (id INT PRIMARY KEY)")
    q(f"INSERT INTO `{db}`.t VALUES (1, 1)")
    q(CORRECTED[0].format(t=f"`{db}`.t"))
    conn = mysql_source.connect()
    try:
        with conn.cursor() as cur:  # one transaction: u first, then t
            cur.execute("BEGIN")
            cur.execute(f"INSERT INTO `{db}`.u VALUES (1)")
            cur.execute(f"INSERT INTO `{db}`.t VALUES (2, 2)")
            cur.execute("COMMIT")
    finally:
        conn.close()
    q(CORRECTED[2].format(t=f"`{db}`.t"))
    end = GtidSet.parse(mysql_source.gtid_binlog_pos())
    with pytest.raises(UnverifiableDefinition) as err:
        try:
            for ev in src.events():
                if isinstance(ev, Heartbeat) and src.state.issuperset(end):
                    break
        finally:
            src.close()
    assert "wrote rows of another table first" in str(err.value) and "cdc source skip" in str(err.value)


SWAPS = {  # one statement renames columns into each other's names (its clauses name the columns as they were;
    # the servers refuse a temporary name inside one statement: Unknown column 'tmp')
    "swap": ["ALTER TABLE {t} RENAME COLUMN v TO flag, RENAME COLUMN flag TO v",
             "INSERT INTO {t} (id, v, flag) VALUES (20, 'y', 20)",
             "UPDATE {t} SET flag = flag + 100 WHERE id = 1",
             "ALTER TABLE {t} CHANGE COLUMN v flag VARCHAR(5) NOT NULL DEFAULT 'old', CHANGE COLUMN flag v INT"],
    "rotation": ["ALTER TABLE {t} ADD COLUMN w INT DEFAULT 3, ADD COLUMN id2 INT DEFAULT 9",
                 "ALTER TABLE {t} RENAME COLUMN v TO w, RENAME COLUMN w TO id2, RENAME COLUMN id2 TO v",
                 "UPDATE {t} SET w = w + 100 WHERE id = 1"],
    "drop-rename": ["ALTER TABLE {t} DROP COLUMN flag, RENAME COLUMN v TO flag",  # flag is v's now
                    "INSERT INTO {t} (id, flag) VALUES (20, 20)",
                    "UPDATE {t} SET flag = flag + 100 WHERE id = 1"],
}


@pytest.mark.parametrize(("swap", "keep_up"), [("swap", False), ("swap", True), ("rotation", False),
                                               ("drop-rename", False)],
                         ids=["swap-behind", "swap-keeping-up", "rotation-behind", "drop-rename-behind"])
def test_a_rename_swap_in_one_statement_moves_the_values(mysql_source, tmp_source_db, broker, topic_prefix,
                                                         tmp_path, swap, keep_up):
    """Behind, the reader undoes the later swap (back, by CHANGE) at the first one; the apply moves the values."""
    statements = SWAPS[swap]
    schemas, target = _behind(mysql_source, tmp_source_db, broker, topic_prefix, tmp_path, statements,
                              keep_up=keep_up)
    target.close()
    assert not any((s["ddl"] or "").startswith("/* cdc: ") for s in schemas), [s["ddl"] for s in schemas]


def test_lenient_stops_at_a_drop_and_add_of_one_name_and_evolve_replaces_it(mysql_source, tmp_source_db, broker,
                                                                            topic_prefix, tmp_path):
    """The lenient behaviour keeps a dropped column's values; a new column of that name holds others (its
    default in every row): the apply stops naming the way back, and `cdc schema evolve` replaces the column
    (the same with the DROP and the ADD in two statements: tests/unit/streaming/apply/test_schema_evolution.py)."""
    db = tmp_source_db
    records, _, _ = _run(mysql_source, db, broker, topic_prefix, DROP_ADD_ONE_STATEMENT)
    target = make_target(TargetConfig(name="t", kind="duckdb", path=str(tmp_path / "t.duckdb"))).open()
    try:
        with pytest.raises(UnsupportedDdl) as err:
            _engine(target, "lenient").apply_records(records, 0)
        msg = str(err.value)
        assert "lenient" in msg and "cdc schema evolve" in msg and f"{db}.t" in msg, msg
        assert {r["flag"] for r in _target_rows(target)} <= {"x", None}  # applied up to the stop, nothing after
        target.save_schema_decision("src", err.value.fields["sequence"], f"{db}.t", "evolve")
        _engine(target, "lenient").apply_records(records, 1)
        assert _target_rows(target) == _rows(mysql_source, f"`{db}`.t")
    finally:
        target.close()


def test_unverified_definitions_leave_the_resume_state(mysql_source, tmp_source_db):
    """A definition the reader could not vouch for stays in the resume state until the table's rows check it;
    a later DDL of the table (rebuilt at its position) or its DROP supersedes it: tables never written again
    do not stay in every END record."""
    q, db = mysql_source.query, tmp_source_db
    src = source_for(mysql_source, [f"{db}.*"], snapshot="never", heartbeat_interval_s=0.2)
    src.start(None)
    for name in ("t", "w"):
        q(f"CREATE TABLE `{db}`.{name} (id INT PRIMARY KEY, v INT)")
    q(f"CREATE TABLE `{db}`.u (id INT PRIMARY KEY)")
    q(f"INSERT INTO `{db}`.w VALUES (1, 1)")  # the reader's last sight of w: its table map
    q(f"ALTER TABLE `{db}`.t ADD COLUMN c INT DEFAULT 5")  # unverified: the next statement changes c
    q(f"ALTER TABLE `{db}`.t MODIFY COLUMN c BIGINT DEFAULT 6")
    q(f"ALTER TABLE `{db}`.w ADD COLUMN c INT DEFAULT 5")  # unverified: the table is dropped later
    q(f"INSERT INTO `{db}`.u VALUES (1)")
    q(f"DROP TABLE `{db}`.w")
    q(f"INSERT INTO `{db}`.u VALUES (2)")
    end, deadline = GtidSet.parse(mysql_source.gtid_binlog_pos()), time.monotonic() + 60
    states: list[tuple[str, set[str]]] = []
    try:
        for ev in src.events():
            if isinstance(ev, (SchemaChange, Commit)) and ev.resume is not None:
                states.append((getattr(ev, "ddl", None) or "COMMIT", set(ev.resume.get("unverified") or ())))
            if isinstance(ev, Heartbeat) and src.state.issuperset(end):
                break
            assert time.monotonic() < deadline
    finally:
        src.close()
    added = [s for ddl, s in states if "ADD COLUMN c" in ddl]
    assert f"{db}.t" in added[0] and f"{db}.w" in added[1], states  # the check was due
    assert states[-1] == ("COMMIT", set()) and states[-3] == ("COMMIT", {f"{db}.w"}), states  # t left at its MODIFY
