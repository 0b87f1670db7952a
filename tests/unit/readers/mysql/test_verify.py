"""verify.py: the statement's own column definitions, the TABLE_MAP check and the corrected definition."""

from cdc.stream.events import Column, TableId, TableSchema
from readers.mysql.definitions import replaced_columns
from readers.mysql.statement_columns import at_statement, column_definition
from readers.mysql.tables import _tokens
from readers.mysql.verify import (
    Unverified,
    corrected,
    correction_statement,
    differences,
    named_agree,
    restored,
    saved,
)

T = TableId("d", "t")


def _shape(*cols: tuple, key: tuple = ("id",)) -> TableSchema:
    return TableSchema(T, tuple(Column(*c) for c in cols), key)


def _def(text: str):
    got = column_definition(_tokens(text))
    return None if got is None else (got[0].name, got[0].type, got[0].nullable, got[0].default, got[1])


def test_column_definitions_read_from_a_statement():
    assert _def("f INT NOT NULL DEFAULT 7") == ("f", "int", False, "7", None)
    assert _def("`f` VARCHAR(5) DEFAULT 'it''s' AFTER v") == ("f", "varchar(5)", True, "'it''s'", "v")
    assert _def("c DECIMAL(5,2) DEFAULT -1.5 FIRST") == ("c", "decimal(5,2)", True, "-1.5", "FIRST")
    assert _def("c int(11) unsigned DEFAULT NULL COMMENT 'x'") == ("c", "int unsigned", True, None, None)
    assert _def("c bool") == ("c", "tinyint", True, None, None)


def test_what_is_not_a_constant_or_a_known_type_is_not_read():
    assert _def("d DATETIME DEFAULT CURRENT_TIMESTAMP") is None
    assert _def("d INT DEFAULT (1 + 1)") is None
    assert _def("d INT GENERATED ALWAYS AS (v + 1)") is None
    assert _def("d INT CHECK (d > 0)") is None
    assert _def("d frobnicate(3)") is None


def test_the_statement_defines_its_columns_on_a_later_catalog():
    later = _shape(("id", "int", False), ("v", "int"), ("c", "bigint", True, "6"))
    shape, defined, added = at_statement(later, "ALTER TABLE t ADD COLUMN c INT DEFAULT 5", "d", forward=False)
    assert [(c.name, c.type, c.default) for c in shape.columns][-1] == ("c", "int", "5")
    assert defined == ("c",) and added == ("c",)
    gone = _shape(("id", "int", False), ("v", "int"))  # the catalog no longer has f (dropped later)
    shape, _, _ = at_statement(gone, "ALTER TABLE t ADD f INT NOT NULL DEFAULT 7", "d", forward=False)
    assert [c.name for c in shape.columns] == ["id", "v", "f"]


def test_forward_from_the_last_sight_applies_every_clause_or_none():
    base = _shape(("id", "int", False), ("v", "int"), ("w", "int"))
    shape, _, _ = at_statement(base, "ALTER TABLE t DROP COLUMN w, ADD g VARCHAR(3) DEFAULT 'gg' FIRST, "
                                     "RENAME COLUMN v TO v2", "d", forward=True)
    assert [c.name for c in shape.columns] == ["g", "id", "v2"]
    assert at_statement(base, "ALTER TABLE t ADD d DATETIME DEFAULT NOW()", "d", forward=True)[0] is None
    assert at_statement(base, "ALTER TABLE t DROP PRIMARY KEY", "d", forward=True)[0] is None
    assert at_statement(base, "CREATE INDEX i ON t (v)", "d", forward=True)[0] == base


def test_the_check_names_names_order_types_and_key():
    said = _shape(("id", "int", False), ("v", "int"), ("f", "int"))
    assert differences(said, _shape(("id", "int", False), ("v", "int"), ("f", "int", False))) == []
    assert differences(said, _shape(("id", "int", False), ("f", "int"), ("v", "int")))  # order
    assert differences(said, _shape(("id", "int", False), ("v", "int")))  # count
    assert differences(said, _shape(("id", "int", False), ("v", "int"), ("f", "varchar(3)")))  # family
    assert differences(said, _shape(("id", "int", False), ("v", "int"), ("f", "bigint")))  # integer range
    assert differences(said, _shape(("id", "int", False), ("v", "int"), ("f", "int"), key=("v",)))  # key


def test_the_correction_keeps_published_details_only_where_name_and_type_match():
    said = _shape(("id", "int", False), ("v", "int", True, "3"), ("f2", "bigint", True, "9"), ("f", "int", True, "7"))
    u = Unverified(said, "g", "bin.1:100", "ALTER TABLE t ADD COLUMN f INT DEFAULT 7", "ALTER TABLE t CHANGE f f2 "
                   "BIGINT", defined=("f",), added=("f",))
    seen = _shape(("id", "int", False), ("v", "bigint"), ("f", "int"))
    fixed = corrected(u, seen)
    assert [(c.name, c.type, c.default) for c in fixed.columns] == [("id", "int", None), ("v", "bigint", None),
                                                                    ("f", "int", "7")]
    text = correction_statement(said, fixed, "bin.1:200")
    assert text.startswith("/* cdc: d.t as its table map at bin.1:200 shows it */ ALTER TABLE `d`.`t` ")
    assert "DROP COLUMN `f2`" in text and "MODIFY COLUMN `v` bigint" in text and "`f`" not in text
    assert not named_agree(u, _shape(("id", "int", False), ("v", "int"), ("f", "bigint")))
    assert named_agree(u, seen)  # v differs, but the statement names only f


def test_a_new_column_without_a_known_default_cannot_be_corrected():
    said = _shape(("id", "int", False), ("v", "int"))
    u = Unverified(said, "g", "bin.1:100", "ALTER TABLE t ADD d DATETIME DEFAULT NOW()", "ALTER TABLE t DROP d",
                   added=("d",))
    why = corrected(u, _shape(("id", "int", False), ("v", "int"), ("d", "datetime")))
    assert isinstance(why, str) and "column d" in why


def test_a_drop_and_an_add_of_one_name():
    assert replaced_columns("ALTER TABLE t DROP COLUMN f, ADD COLUMN F VARCHAR(5) DEFAULT 'new'", "d") == ["F"]
    assert replaced_columns("ALTER TABLE t DROP COLUMN f, ADD COLUMN g INT", "d") == []
    assert replaced_columns("ALTER TABLE t MODIFY f INT", "d") == []


def test_unverified_definitions_survive_a_restart_unless_a_skip_named_the_table():
    u = Unverified(_shape(("id", "int", False), ("f", "int", True, "7")), "0-1-5", "bin.1:100",
                   "ALTER TABLE t ADD f INT DEFAULT 7", "ALTER TABLE t DROP f", ("f",), ("f",))
    resume = {"gtid_set": "0-1-5", "unverified": saved({T: u})}
    assert restored(resume) == {T: u}
    assert restored({**resume, "skipped": {"gtid": "0-1-6", "tables": ["d.t"]}}) == {}
    assert restored({"gtid_set": "0-1-5"}) == {} and restored(None) == {}


def test_a_swap_applied_forward_renames_at_once():
    before = _shape(("id", "int", False), ("a", "int"), ("b", "varchar(5)"))
    got, _, _ = at_statement(before, "ALTER TABLE t RENAME COLUMN a TO b, RENAME COLUMN b TO a", "d", forward=True)
    assert [(c.name, c.type) for c in got.columns] == [("id", "int"), ("b", "int"), ("a", "varchar(5)")]
