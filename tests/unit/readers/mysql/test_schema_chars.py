"""Character lengths from the TABLE_MAP: the library's charset names are not the collation's."""

from types import SimpleNamespace

from pymysqlreplication.constants import FIELD_TYPE as T

from readers.mysql.schema import type_text


def col(max_length, charset, collation, type_=T.VARCHAR):
    return SimpleNamespace(type=type_, max_length=max_length, character_set_name=charset,
                           collation_name=collation, unsigned=False)


def test_utf8mb4_varchar_keeps_its_declared_length():
    # what python-mysql-replication reports for VARCHAR(10) in utf8mb4_general_ci on MariaDB 10.11
    assert type_text(col(40, "utf8", "utf8mb4_general_ci")) == "varchar(10)"


def test_latin1_and_utf8mb3_lengths():
    assert type_text(col(10, "cp1252", "latin1_swedish_ci")) == "varchar(10)"
    assert type_text(col(30, "utf8", "utf8mb3_general_ci")) == "varchar(10)"
    assert type_text(col(20, "utf8", "utf8mb4_general_ci", T.STRING)) == "char(5)"
