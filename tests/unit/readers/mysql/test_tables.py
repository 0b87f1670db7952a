"""readers.mysql.tables: the tables a DDL or a statement-format DML names."""

from __future__ import annotations

import pytest

from cdc.stream.events import TableId
from readers.mysql.tables import ddl_table, dml_tables


@pytest.mark.parametrize("query,tables", [
    ("INSERT INTO log VALUES (1)", ["d.log"]),
    ("insert into `db`.`t` (a,b) values (1,2)", ["db.t"]),
    ("INSERT t VALUES (1)", ["d.t"]),
    ("INSERT LOW_PRIORITY IGNORE INTO t SET a=1", ["d.t"]),
    ("INSERT INTO t SELECT * FROM src", ["d.t"]),  # a table only read is not named
    ("REPLACE LOW_PRIORITY INTO t VALUES(1)", ["d.t"]),
    ("UPDATE a, b.c SET a.x=1", ["d.a", "b.c"]),
    ("UPDATE t SET x=1 WHERE id IN (SELECT id FROM s)", ["d.t"]),
    ("DELETE FROM t WHERE id=1", ["d.t"]),
    ("DELETE t1 FROM t1 JOIN db2.t2 ON t1.a=t2.a", ["d.t1", "db2.t2"]),
    ('LOAD DATA INFILE "x" INTO TABLE t', ["d.t"]),
])
def test_statement_dml_names_the_tables_it_writes(query, tables):
    assert dml_tables(query, "d") == [TableId.parse(t) for t in tables]


def test_not_a_dml_and_truncate_as_ddl():
    assert dml_tables("SELECT 1", "d") is None and dml_tables("TRUNCATE t", "d") is None
    assert ddl_table("TRUNCATE TABLE `x`.`y`", "d") == TableId("x", "y")
    assert ddl_table("truncate y", "d") == TableId("d", "y")
