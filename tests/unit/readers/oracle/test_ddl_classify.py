"""readers/oracle/ddl.py: which tables an Oracle DDL statement concerns, and the apply's table actions."""

from __future__ import annotations

from cdc.stream.events import Column, TableId, TableSchema
from readers.oracle.ddl import classify, table_actions

APP_E2, APP_E3 = TableId("APP", "E2"), TableId("APP", "E3")


def test_statement_kinds_and_names():
    assert classify('create table "APP"."E2" ("ID" number primary key)', "APP", "E2").kind == "create"
    assert classify("CREATE GLOBAL TEMPORARY TABLE app.tmp (x number)", "APP", "TMP").table == TableId("APP", "TMP")
    assert classify('drop table "APP"."E3" purge', "APP", "E3") == classify('DROP TABLE "APP"."E3"', "APP", "E3")
    r = classify('alter table "APP"."E2" rename to "E3";', "APP", "E2")
    assert (r.kind, r.old, r.table) == ("rename", APP_E2, APP_E3)
    r = classify("rename e2 to e3", "APP", "E2")  # unquoted: upper case; the new name keeps the owner
    assert (r.kind, r.old, r.table) == ("rename", APP_E2, APP_E3)
    r = classify('create index "APP"."E_QTY" on "APP"."E" ("QTY")', "APP", "E_QTY")  # LogMiner names the index
    assert (r.kind, r.table) == ("index", TableId("APP", "E"))
    assert classify('drop index "APP"."E_QTY"', "APP", "E_QTY").table is None
    assert classify('alter table "APP"."E" rename column "A" to "B"', "APP", "E").kind == "alter"
    assert classify('truncate table "APP"."E"', "APP", "E").kind == "truncate"
    assert classify("comment on table app.e is 'x'", "APP", "E").table == TableId("APP", "E")


def test_table_actions_across_the_patterns():
    schema = TableSchema(APP_E3, (Column("ID", "number", False),), ("ID",))
    read = lambda t: schema if t == APP_E3 else None
    rename = classify('alter table "APP"."E2" rename to "E3"', "APP", "E2")
    assert table_actions(rename, lambda t: True, read) == [
        {"op": "rename", "table": "APP.E3", "from": "APP.E2", "schema": schema.to_json()}]
    assert table_actions(rename, lambda t: t == APP_E2, read) == [{"op": "rename_out", "table": "APP.E2",
                                                                  "to": "APP.E3"}]
    assert table_actions(rename, lambda t: t == APP_E3, read)[0]["op"] == "rename_in"
    assert table_actions(classify('drop table "APP"."E3"', "APP", "E3"), lambda t: True, read) == [
        {"op": "drop", "table": "APP.E3"}]
    assert table_actions(classify('alter table "APP"."E" add ("X" number)', "APP", "E"), lambda t: True, read) is None
