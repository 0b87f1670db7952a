"""definitions.definition_at: the definition at a DDL's position from the catalog's and the later statements."""

from cdc.stream.events import Column, TableId, TableSchema
from readers.mysql.definitions import Unknown, alter_clauses, definition_at

T = TableId("d", "t")


def _shape(table: TableId, *names: str) -> TableSchema:
    return TableSchema(table, tuple(Column(n, "int", True, None) for n in names), ("id",))


def test_a_rename_swap_is_undone_to_the_names_at_the_position():
    later = [("f", 10, "d", "ALTER TABLE t RENAME COLUMN b TO a"), ("f", 20, "d", "ALTER TABLE t RENAME COLUMN tmp TO b")]
    got = definition_at(T, later, lambda t: _shape(T, "id", "b", "a"), {"a", "tmp"})
    assert [c.name for c in got.columns] == ["id", "tmp", "b"]


def test_a_later_swap_in_one_statement_is_undone_at_once():
    later = [("f", 10, "d", "ALTER TABLE t RENAME COLUMN a TO b, RENAME COLUMN b TO a")]
    now = TableSchema(T, (Column("id", "int", False), Column("b", "int"), Column("a", "varchar(5)")), ("id",))
    got = definition_at(T, later, lambda t: now, None)
    assert [(c.name, c.type) for c in got.columns] == [("id", "int"), ("a", "int"), ("b", "varchar(5)")]


def test_drop_then_add_of_one_name_is_a_drop_at_the_position():
    later = [("f", 10, "d", "ALTER TABLE t ADD COLUMN flag VARCHAR(5) DEFAULT 'new'")]
    got = definition_at(T, later, lambda t: _shape(T, "id", "v", "flag"), {"flag"})
    assert [c.name for c in got.columns] == ["id", "v"]


def test_a_shadow_followed_through_its_rename_and_its_alter_undone():
    later = [("f", 10, "d", "ALTER TABLE _t_new ADD COLUMN extra INT"),
             ("f", 20, "d", "RENAME TABLE t TO _t_old, _t_new TO t"), ("f", 30, "d", "DROP TABLE _t_old")]
    got = definition_at(TableId("d", "_t_new"), later, lambda t: _shape(T, "id", "v", "extra") if t == T else None,
                        None)
    assert got.table == TableId("d", "_t_new") and [c.name for c in got.columns] == ["id", "v"]
    assert definition_at(T, later, lambda t: None, None) == Unknown("DROP TABLE _t_old")  # renamed, then dropped


def test_a_later_change_that_cannot_be_undone_is_unknown_unless_it_names_other_columns():
    later = [("f", 10, "d", "ALTER TABLE t DROP COLUMN c")]
    assert isinstance(definition_at(T, later, lambda t: _shape(T, "id", "v"), {"c"}), Unknown)
    assert isinstance(definition_at(T, later, lambda t: _shape(T, "id", "v"), None), Unknown)
    assert definition_at(T, later, lambda t: _shape(T, "id", "v"), {"v"}) == _shape(T, "id", "v")


def test_unread_clauses_are_none():
    assert alter_clauses("ALTER TABLE t ADD COLUMN (a INT, b INT)", "d") is None
    assert alter_clauses("ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4", "d") is None
    assert [c.kind for c in alter_clauses("ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (b)", "d")] == ["key", "key"]
