"""COLUMN_DEFAULT of information_schema as cdc.stream.events.Column.default: MariaDB spells SQL already, MySQL gives
bare values and marks expressions in EXTRA."""

from __future__ import annotations

import pytest

from readers.mysql.schema import default_text


@pytest.mark.parametrize(("default", "extra", "generated", "ctype", "mariadb", "want"), [
    ("'std'", "", None, "varchar(10)", True, "'std'"),
    ("NULL", "", None, "varchar(10)", True, None),
    (None, "", None, "int", True, None),
    ("0", "", None, "int", True, "0"),
    ("current_timestamp()", "on update current_timestamp()", None, "timestamp", True, "current_timestamp()"),
    ("uuid()", "", None, "varchar(36)", True, "uuid()"),
    (None, "VIRTUAL GENERATED", "`a` + 1", "int", True, "(`a` + 1)"),
    (None, "PERSISTENT GENERATED", "`a` * 2", "int", True, "(`a` * 2)"),
    ("std", "", None, "varchar(10)", False, "'std'"),
    ("it's", "", None, "varchar(10)", False, "'it''s'"),
    ("5", "", None, "int", False, "5"),
    ("CURRENT_TIMESTAMP", "DEFAULT_GENERATED", None, "datetime", False, "current_timestamp"),
    ("(uuid())", "DEFAULT_GENERATED", None, "varchar(36)", False, "(uuid())"),
    (None, "STORED GENERATED", "(`a` + 1)", "int", False, "((`a` + 1))"),
])
def test_default_text(default, extra, generated, ctype, mariadb, want):
    assert default_text(default, extra, generated, ctype, mariadb) == want
