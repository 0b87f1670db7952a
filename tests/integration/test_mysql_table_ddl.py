"""Table-level DDL as the MySQL/MariaDB reader reports it, on a real MariaDB and MySQL 9.7 (``mysql_source``): every table a DDL touches is
named, a table renamed into the patterns is noticed, the online schema change cut-over is one ``replace``,
and the rows of a ``CREATE TABLE ... SELECT`` are captured (readers/mysql/tables.py: table_actions)."""

from __future__ import annotations

import pytest

from cdc.stream.events import SchemaChange
from readers.mysql.position import GtidSet
from tests.integration.mysql_helpers import collect, is_mysql, source_for, transactions

pytestmark = pytest.mark.mysql


def test_the_reader_names_what_each_table_ddl_did(mysql_source, tmp_source_db):
    db, q = tmp_source_db, mysql_source.query
    q(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v INT)")
    src = source_for(mysql_source, [f"{db}.t", f"{db}.n*"], snapshot="never")
    src.start(None)
    statements = [
        f"CREATE TABLE `{db}`.n1 (id INT PRIMARY KEY)",
        f"CREATE TABLE `{db}`.other LIKE `{db}`.t",  # not captured
        f"CREATE TABLE `{db}`._t_gho LIKE `{db}`.t",
        f"ALTER TABLE `{db}`._t_gho ADD COLUMN c VARCHAR(5) DEFAULT 'x'",
        f"INSERT INTO `{db}`._t_gho (id, v) SELECT id, v FROM `{db}`.t",
        f"RENAME TABLE `{db}`.t TO `{db}`._t_del, `{db}`._t_gho TO `{db}`.t",
        f"RENAME TABLE `{db}`.n1 TO `{db}`.n2",
        f"ALTER TABLE `{db}`.n2 RENAME TO `{db}`.gone",
        f"RENAME TABLE `{db}`.other TO `{db}`.n3",
        f"DROP TABLE `{db}`.n3, `{db}`.gone",
        f"CREATE TABLE `{db}`.n4 (id INT PRIMARY KEY) SELECT id FROM `{db}`.t",
        # exists: MariaDB does not log it; MySQL does, and the action says if_not_exists (the apply keeps the table)
        f"CREATE TABLE IF NOT EXISTS `{db}`.n4 (id INT PRIMARY KEY)",
    ]
    q(f"INSERT INTO `{db}`.t VALUES (1, 1), (2, 2)")
    for s in statements:
        q(s)
    end = GtidSet.parse(mysql_source.gtid_binlog_pos())
    try:
        events = collect(src, lambda evs: src.state.issuperset(end), timeout=30)
    finally:
        src.close()
    ddl = [(ev.table.table if ev.table else None, [(a["op"], a["table"].split(".")[1], a.get("from"))
                                                  for a in ev.tables or []])
           for ev in events if isinstance(ev, SchemaChange) and ev.ddl]
    assert ddl == [
        ("n1", [("create", "n1", None)]),
        ("t", [("replace", "t", f"{db}._t_gho")]),
        ("n2", [("rename", "n2", f"{db}.n1")]),
        ("n2", [("rename_out", "n2", None)]),
        ("n3", [("rename_in", "n3", f"{db}.other")]),
        ("n3", [("drop", "n3", None)]),
        ("n4", [("create", "n4", None)]),
    ] + ([("n4", [("create", "n4", None)])] if is_mysql(mysql_source) else []), ddl
    if is_mysql(mysql_source):
        last = [ev for ev in events if isinstance(ev, SchemaChange) and ev.ddl][-1]
        assert last.tables[0].get("if_not_exists") is True and "IF NOT EXISTS" in last.ddl
    replace = next(ev for ev in events if isinstance(ev, SchemaChange) and ev.tables and ev.tables[0]["op"] == "replace")
    assert [c["name"] for c in replace.tables[0]["schema"]["columns"]] == ["id", "v", "c"]
    rows = [(ch.table.table, ch.op, ch.after["id"]) for _, chs in transactions(events) for ch in chs]
    assert rows == [("t", "c", 1), ("t", "c", 2), ("n4", "c", 1), ("n4", "c", 2)], rows


def test_record_keys_follow_a_primary_key_change(mysql_source, tmp_source_db):
    """Each row carries the key of the table map it was written with: the change stream's and the Debezium
    per-table topics' keys follow ADD / DROP PRIMARY KEY from the first row after the DDL."""
    from types import SimpleNamespace

    from cdc.debezium.record import DebeziumRecords, TxContext
    from cdc.stream.events import Change

    db, q = tmp_source_db, mysql_source.query
    q(f"CREATE TABLE `{db}`.k (a INT NOT NULL, b INT NOT NULL, v INT)")
    src = source_for(mysql_source, [f"{db}.k"], snapshot="never")
    src.start(None)
    q(f"INSERT INTO `{db}`.k VALUES (1, 1, 1)")
    q(f"ALTER TABLE `{db}`.k ADD PRIMARY KEY (a, b)")
    q(f"INSERT INTO `{db}`.k VALUES (1, 2, 2)")
    q(f"ALTER TABLE `{db}`.k DROP PRIMARY KEY, ADD PRIMARY KEY (b)")
    q(f"UPDATE `{db}`.k SET b = 3 WHERE b = 2")
    q(f"ALTER TABLE `{db}`.k DROP PRIMARY KEY")
    q(f"INSERT INTO `{db}`.k VALUES (1, 1, 1)")
    end = GtidSet.parse(mysql_source.gtid_binlog_pos())
    try:
        events = collect(src, lambda evs: src.state.issuperset(end), timeout=30)
    finally:
        src.close()
    changes = [ev for ev in events if isinstance(ev, Change)]
    assert [ch.schema.primary_key for ch in changes] == [(), ("a", "b"), ("b",), ()]
    builder = DebeziumRecords("src", "mysql", "cdc", SimpleNamespace(temporal="iso", decimal="string"))
    keys = [[r.key for r in builder.records(ch, TxContext("t", 1, 1, 1, 1, 1))] for ch in changes]
    # keyless: no key (as Debezium); (a, b); an update moving key b 2 -> 3 is delete + tombstone + create
    assert keys == [[None], [{"a": 1, "b": 2}], [{"b": 2}, {"b": 2}, {"b": 3}], [None]]
