"""DDL under sources[].transforms on a real MariaDB and MySQL 9.7 (``mysql_source``), through the reader:

- a DDL on an excluded column leaves the shaped schema as it was: the changes of its SCHEMA record the apply
  follows (cdc.schema.evolution.statement_changes) are none, and the masked column stays marked; a DDL on a
  kept column is the control (its change is found);
- a column the source drops while a rule names it stops the source with an error naming table, column and
  the way back, before the reader's state takes the DDL's GTID; with the rule changed, the source restarted
  from the last checkpoint goes on from that DDL, exactly once."""

from __future__ import annotations

import pytest

from cdc.schema.evolution import statement_changes
from cdc.stream.events import Change, Commit, SchemaChange
from cdc.transforms.errors import TransformError
from readers.mysql.position import GtidSet
from tests.integration.mysql_helpers import collect, source_for, transactions

pytestmark = pytest.mark.mysql


def _rules(db: str, tmp_path, exclude: list[str]) -> dict:
    (tmp_path / "hash.key").write_bytes(b"a-ddl-test-hash-key-of-32-bytes!")
    return {"hash_key_file": str(tmp_path / "hash.key"),
            "tables": [{"match": f"{db}.t", "exclude": exclude, "columns": {"email": {"mask": "hash"}}}]}


def test_ddl_on_an_excluded_column_changes_nothing_shaped(mysql_source, tmp_source_db, tmp_path):
    db, q = tmp_source_db, mysql_source.query
    q(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, email VARCHAR(80), notes TEXT, v INT)")
    src = source_for(mysql_source, [f"{db}.t"], snapshot="never",
                     transforms=_rules(db, tmp_path, ["notes"]))
    src.start(None)
    q(f"INSERT INTO `{db}`.t VALUES (1, 'CLEAR-MAIL-1', 'CLEAR-NOTE-1', 1)")
    q(f"ALTER TABLE `{db}`.t MODIFY notes MEDIUMTEXT NOT NULL")
    q(f"INSERT INTO `{db}`.t VALUES (2, 'CLEAR-MAIL-2', 'CLEAR-NOTE-2', 2)")
    q(f"ALTER TABLE `{db}`.t MODIFY v BIGINT")  # the control: a kept column
    q(f"INSERT INTO `{db}`.t VALUES (3, 'CLEAR-MAIL-3', 'CLEAR-NOTE-3', 3)")
    end = GtidSet.parse(mysql_source.gtid_binlog_pos())
    try:
        events = collect(src, lambda evs: src.state.issuperset(end), timeout=30)
    finally:
        src.close()
    first = next(ev for ev in events if isinstance(ev, Change)).schema
    assert [c.name for c in first.columns] == ["id", "email", "v"]
    ddl = [ev for ev in events if isinstance(ev, SchemaChange) and ev.ddl]
    assert [("notes" in ev.ddl, "v BIGINT" in ev.ddl) for ev in ddl] == [(True, False), (False, True)]
    on_excluded, on_kept = ddl
    # what the apply follows (cdc.schema.evolution.statement_changes: the changes the statement names; the
    # reader may read a definition that already holds the later DDL): nothing
    assert statement_changes(first, on_excluded.schema, on_excluded.ddl) == ([], first)
    assert [c.name for c in on_excluded.schema.columns] == ["id", "email", "v"]
    assert {c.name: c.masked for c in on_excluded.schema.columns} == {"id": None, "email": "hash", "v": None}
    assert on_excluded.schema.to_json()["columns"][1]["masked"] == "hash"
    assert [(c.kind, c.column) for c in statement_changes(first, on_kept.schema, on_kept.ddl)[0]] == [("type", "v")]
    rows = [ch for _, chs in transactions(events) for ch in chs]
    assert [r.after["id"] for r in rows] == [1, 2, 3]
    assert all("notes" not in r.after and r.after["email"].isalnum() and len(r.after["email"]) == 64 for r in rows)


def test_a_dropped_column_a_rule_names_stops_with_the_way_back(mysql_source, tmp_source_db, tmp_path):
    db, q = tmp_source_db, mysql_source.query
    q(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, email VARCHAR(80), notes TEXT, v INT)")
    src = source_for(mysql_source, [f"{db}.t"], snapshot="never", transforms=_rules(db, tmp_path, ["notes"]))
    src.start(None)
    q(f"INSERT INTO `{db}`.t VALUES (1, 'CLEAR-MAIL-1', 'CLEAR-NOTE-1', 1)")
    before_drop = GtidSet.parse(mysql_source.gtid_binlog_pos())
    q(f"ALTER TABLE `{db}`.t DROP COLUMN notes")
    q(f"INSERT INTO `{db}`.t VALUES (2, 'CLEAR-MAIL-2', 2)")
    end = GtidSet.parse(mysql_source.gtid_binlog_pos())
    seen: list = []
    with pytest.raises(TransformError) as stop:
        for ev in src.events():
            seen.append(ev)
            assert len(seen) < 10_000
    src.close()
    msg = str(stop.value)
    assert f"{db}.t" in msg and "column notes" in msg and "Way back" in msg, msg
    commits = [ev for ev in seen if isinstance(ev, Commit)]
    assert commits and not any(isinstance(ev, SchemaChange) for ev in seen)
    resume = commits[-1].resume
    assert GtidSet.parse(resume["gtid_set"]).issuperset(before_drop)
    assert not GtidSet.parse(resume["gtid_set"]).issuperset(end)  # the DDL was not passed

    # the way back: the rule no longer names the dropped column; the source resumes at the DDL
    src = source_for(mysql_source, [f"{db}.t"], snapshot="never", transforms=_rules(db, tmp_path, []))
    src.start(resume)
    try:
        events = collect(src, lambda evs: src.state.issuperset(end), timeout=30)
    finally:
        src.close()
    (ddl,) = [ev for ev in events if isinstance(ev, SchemaChange) and ev.ddl]
    assert "DROP COLUMN notes" in ddl.ddl and [c.name for c in ddl.schema.columns] == ["id", "email", "v"]
    rows = [ch.after for _, chs in transactions(events) for ch in chs]
    assert [r["id"] for r in rows] == [2] and len(rows[0]["email"]) == 64
