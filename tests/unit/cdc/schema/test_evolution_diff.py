"""What a DDL changed (cdc.schema.evolution) and the column DDL each SQL dialect writes for it."""

from __future__ import annotations

import pytest

from cdc.schema.evolution import SchemaChangeConfig, default_value, diff, rename_cycle, renames_in, type_change
from cdc.schema.sql_dialects import DUCKDB, MYSQL, ORACLE, POSTGRES
from cdc.stream.events import Column, TableId, TableSchema


def _t(*cols: Column, pk: tuple[str, ...] = ("id",)) -> TableSchema:
    return TableSchema(TableId("shop", "t"), (Column("id", "int", False), *cols), pk)


def _kinds(changes) -> list[tuple]:
    return [(c.kind, c.column, c.old, c.new, c.how) for c in changes]


def test_add_drop_and_position():
    old = _t(Column("a", "int"), Column("b", "int"))
    new = _t(Column("x", "varchar(5)", True, "'q'"), Column("a", "int"))
    ch = diff(old, new, "ALTER TABLE t DROP b, ADD x VARCHAR(5) DEFAULT 'q' AFTER id")
    assert _kinds(ch) == [("drop", "b", None, None, None), ("add", "x", None, "varchar(5)", None)]
    assert ch[1].after == "id"
    assert diff(old, old, "CREATE INDEX i ON t (a)") == []  # no shape change


@pytest.mark.parametrize("ddl", ["ALTER TABLE t RENAME COLUMN a TO z", "alter table t change `a` `z` int",
                                 "ALTER TABLE t CHANGE COLUMN a z INT NOT NULL"])
def test_a_rename_is_a_rename_only_when_the_statement_says_so(ddl):
    old, new = _t(Column("a", "int")), _t(Column("z", "int"))
    assert _kinds(diff(old, new, ddl))[0] == ("rename", "z", "a", None, None)
    # the same shapes without a rename in the statement: a drop and an add (the data of a is gone)
    assert [c.kind for c in diff(old, new, "ALTER TABLE t DROP a, ADD z INT")] == ["drop", "add"]


def test_change_renames_and_retypes_at_once():
    old, new = _t(Column("a", "int")), _t(Column("z", "bigint", False))
    ch = diff(old, new, "ALTER TABLE t CHANGE a z BIGINT NOT NULL")
    assert _kinds(ch) == [("rename", "z", "a", None, None), ("type", "z", "int", "bigint", "widen"),
                          ("null", "z", True, False, None)]


def test_one_statements_renames_are_simultaneous_a_swap_is_two_renames():
    old = _t(Column("a", "int"), Column("b", "varchar(5)"))
    new = _t(Column("b", "int"), Column("a", "varchar(5)"))  # a column keeps its place under the new name
    ch = diff(old, new, "ALTER TABLE t RENAME COLUMN a TO b, RENAME COLUMN b TO a")
    assert _kinds(ch) == [("rename", "b", "a", None, None), ("rename", "a", "b", None, None)]
    assert rename_cycle(ch) == ch  # the apply moves them through temporary names
    # without the statement's renames the same shapes are two type changes (the values stay by name)
    assert [c.kind for c in diff(old, new, "ALTER TABLE t MODIFY a VARCHAR(5), MODIFY b INT")] == ["type", "type"]
    plain = diff(_t(Column("a", "int")), _t(Column("z", "int")), "ALTER TABLE t RENAME COLUMN a TO z")
    assert rename_cycle(plain) == []


def test_renames_in_ignores_literals_and_same_names():
    assert renames_in("ALTER TABLE t MODIFY c INT COMMENT 'RENAME COLUMN x TO y'") == {}
    assert renames_in("ALTER TABLE t CHANGE c c BIGINT") == {}
    assert renames_in('ALTER TABLE "T" RENAME COLUMN "Old" TO "New"') == {"old": "New"}


@pytest.mark.parametrize(("old", "new", "how"), [
    ("tinyint", "smallint", "widen"), ("int", "bigint", "widen"), ("int unsigned", "bigint", "widen"),
    ("int unsigned", "int", "narrow"), ("bigint", "int", "narrow"), ("int", "decimal(12,0)", "widen"),
    ("decimal(12,2)", "decimal(14,2)", "widen"), ("decimal(12,2)", "decimal(12,4)", "narrow"),
    ("decimal(12,2)", "decimal(14,4)", "widen"), ("varchar(10)", "varchar(20)", "widen"),
    ("varchar(20)", "varchar(10)", "narrow"), ("varchar(20)", "text", "widen"), ("text", "mediumtext", "widen"),
    ("mediumtext", "text", "narrow"), ("varbinary(4)", "varbinary(8)", "widen"), ("blob", "varbinary(10)", "narrow"),
    ("float", "double", "widen"), ("double", "float", "change"), ("date", "datetime", "widen"),
    ("datetime", "datetime(6)", "widen"), ("datetime(6)", "datetime", "change"), ("varchar(5)", "int", "change"),
    ("enum('a','b')", "enum('a','b','c')", "widen"), ("enum('a','b')", "enum('b','a')", "change"),
    ("varchar(10) character set utf8mb4", "varchar(10)", "same"),
])
def test_type_change(old, new, how):
    assert type_change(old, new).how == how


@pytest.mark.parametrize(("old", "new", "how", "check"), [
    ("varchar2", "varchar2(40)", "narrow", ("chars", 40)), ("varchar2(40)", "varchar2", "widen", None),
    ("nvarchar2", "nvarchar2(10)", "narrow", ("chars", 10)), ("raw", "raw(16)", "narrow", ("bytes", 16)),
    ("number", "number(12,2)", "narrow", ("digits", 10, 2)), ("number(12,2)", "number", "widen", None),
    ("number", "number", "same", None),
])
def test_an_oracle_type_without_its_size_holds_any_size(old, new, how, check):
    """An older Oracle reader published no sizes: the target holds such a column unbounded (text, numeric)."""
    assert type_change(old, new) == type(type_change(old, new))(how, check)


def test_narrowing_says_what_the_values_must_fit():
    assert type_change("bigint", "smallint").check == ("range", -32768, 32767)
    assert type_change("decimal(12,2)", "decimal(6,1)").check == ("digits", 5, 1)
    assert type_change("varchar(20)", "varchar(10)").check == ("chars", 10)


@pytest.mark.parametrize(("col", "expect"), [
    (Column("c", "varchar(10)", True, "'std'"), ("const", "std")),
    (Column("c", "varchar(10)", True, "'it''s'"), ("const", "it's")),
    (Column("c", "int", False, "5"), ("const", "5")),
    (Column("c", "decimal(5,2)", True, "'1.50'"), ("const", "1.50")),
    (Column("c", "int", False), ("const", "0")),  # NOT NULL, no default: MariaDB's implicit 0
    (Column("c", "varchar(3)", False), ("const", "")),
    (Column("c", "int", True), ("none", None)),
    (Column("c", "int", True, "NULL"), ("none", None)),
    (Column("c", "bit(1)", True, "b'1'"), ("const", "1")),
    (Column("c", "datetime", True, "'2020-01-02 03:04:05'"), ("const", "2020-01-02 03:04:05")),
    (Column("c", "varchar(36)", True, "uuid()"), ("expr", "uuid()")),
    (Column("c", "datetime", True, "current_timestamp()"), ("expr", "current_timestamp()")),
    (Column("c", "timestamp", True, "'2020-01-02 03:04:05'"), ("expr", "'2020-01-02 03:04:05'")),
    (Column("c", "int", True, "(a + 1)"), ("expr", "(a + 1)")),
])
def test_default_value(col, expect):
    assert default_value(col) == expect


def test_behaviour_per_table():
    cfg = SchemaChangeConfig(behavior="exception", tables={"shop.audit_*": "ignore", "shop.t": "lenient"})
    assert cfg.for_table("shop.audit_1") == "ignore" and cfg.for_table("shop.t") == "lenient"
    assert cfg.for_table("shop.other") == "exception"
    assert SchemaChangeConfig().for_table("x.y") == "evolve"


def test_column_ddl_per_dialect():
    assert POSTGRES.add_column('"t"', "c", "varchar(10)", POSTGRES.literal("std", "varchar(10)"), True, "id") == [
        "ALTER TABLE \"t\" ADD COLUMN \"c\" varchar(10) DEFAULT 'std' NOT NULL"]
    assert MYSQL.add_column("`t`", "c", "int", MYSQL.literal("5", "int"), False, None) == [
        "ALTER TABLE `t` ADD COLUMN `c` int DEFAULT 5 FIRST"]
    assert MYSQL.add_column("`t`", "c", "int", None, False, "b") == ["ALTER TABLE `t` ADD COLUMN `c` int AFTER `b`"]
    assert DUCKDB.add_column("t", "c", "integer", "0", True) == [
        'ALTER TABLE t ADD COLUMN "c" integer DEFAULT 0', 'ALTER TABLE t ALTER COLUMN "c" SET NOT NULL']
    assert ORACLE.add_column("t", "c", "date", ORACLE.literal("2020-01-01", "date"), True) == [
        "ALTER TABLE t ADD (\"c\" date DEFAULT DATE '2020-01-01' NOT NULL)"]
    assert POSTGRES.alter_column("t", "c", "bigint", False, None, {"type"}) == [
        'ALTER TABLE t ALTER COLUMN "c" TYPE bigint USING "c"::bigint']
    assert DUCKDB.alter_column("t", "c", "bigint", False, None, {"type"}) == ['ALTER TABLE t ALTER COLUMN "c" TYPE bigint']
    # MySQL's MODIFY restates the whole column: its nullability and default survive a type change
    assert MYSQL.alter_column("t", "c", "bigint", True, "7", {"type"}) == [
        "ALTER TABLE t MODIFY COLUMN `c` bigint DEFAULT 7 NOT NULL"]
    assert MYSQL.alter_column("t", "c", "bigint", True, None, {"default"}) == ["ALTER TABLE t ALTER COLUMN `c` DROP DEFAULT"]
    assert ORACLE.alter_column("t", "c", "number(19)", True, None, {"type", "null"}) == [
        'ALTER TABLE t MODIFY ("c" number(19) NOT NULL)']
    for d in (POSTGRES, MYSQL, DUCKDB, ORACLE):
        assert d.rename_column("t", "a", "b") == [f"ALTER TABLE t RENAME COLUMN {d.quote('a')} TO {d.quote('b')}"]
        assert d.drop_column("t", "a") == [f"ALTER TABLE t DROP COLUMN {d.quote('a')}"]
    assert MYSQL.literal("a\\b'c", "varchar(9)") == "'a\\\\b''c'"  # backslashes escape in MySQL strings
    assert POSTGRES.literal("a\\b'c", "varchar(9)") == "'a\\b''c'"


def test_a_shape_read_after_later_statements_counts_only_what_the_statement_names():
    """A lagging reader reads the catalog after ADD tier AND a later RENAME name TO label: the ADD's record
    must not turn into 'drop name, add label' (the data of name would be lost)."""
    from cdc.schema.evolution import statement_changes

    old = _t(Column("name", "varchar(5)"))
    late = _t(Column("label", "varchar(5)"), Column("tier", "varchar(3)", True, "'std'"))
    changes, shape = statement_changes(old, late, "ALTER TABLE t ADD COLUMN tier VARCHAR(3) DEFAULT 'std'")
    assert _kinds(changes) == [("add", "tier", None, "varchar(3)", None)]
    assert [c.name for c in shape.columns] == ["id", "name", "tier"]
    changes, shape = statement_changes(shape, late, "ALTER TABLE t RENAME COLUMN name TO label")
    assert _kinds(changes) == [("rename", "label", "name", None, None)] and shape == late


def test_a_rename_into_a_name_the_statement_drops_drops_it_first():
    old = _t(Column("a", "int"), Column("b", "int"))
    new = _t(Column("b", "int"))
    ch = diff(old, new, "ALTER TABLE t DROP COLUMN b, RENAME COLUMN a TO b")
    assert _kinds(ch) == [("drop", "b", None, None, None), ("rename", "b", "a", None, None)]
    assert _kinds(diff(old, new, "ALTER TABLE t DROP PRIMARY KEY, DROP COLUMN a")) == [("drop", "a", None, None, None)]
