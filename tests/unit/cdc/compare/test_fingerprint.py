"""The canonical row text: injective (NULL vs '', trailing spaces, shifted separators) and SQL per dialect."""

from __future__ import annotations

import hashlib

import duckdb
import pytest

from cdc.compare.fingerprint import ColumnInfo, md5_sql, python_row_text
from cdc.compare.shapes import classify

COLS = [ColumnInfo("id", "int", "int", nullable=False), ColumnInfo("a", "varchar", "string"),
        ColumnInfo("b", "varchar", "string")]


def text(*values):
    return python_row_text(list(values), COLS)


def test_null_empty_and_trailing_spaces_are_distinct():
    assert len({text("1", None, "x"), text("1", "", "x"), text("1", "x", None), text("1", "x", ""),
                text("1", "x ", ""), text("1", "x", " ")}) == 6


def test_separator_inside_values_cannot_forge_another_row():
    assert text("1", "a|b", "c") != text("1", "a", "b|c")
    assert text("1", "a,1", "c") != text("1", "a", ",1c")


@pytest.mark.parametrize("type_text,dialect,family,scale", [
    ("int(11)", "mysql", "int", None), ("bigint(20) unsigned", "mysql", "int", None),
    ("tinyint(1)", "mysql", "int", None), ("boolean", "postgres", "bool", None),
    ("decimal(10,2)", "mysql", "decimal", 2), ("numeric", "postgres", "decimal", None),
    ("timestamp", "mysql", "timestamptz", 0), ("timestamp without time zone", "postgres", "datetime", 0),
    ("timestamp with time zone", "postgres", "timestamptz", 0), ("datetime(6)", "mysql", "datetime", 6),
    ("varbinary(10)", "mysql", "binary", None), ("character varying", "postgres", "string", None),
    ("double precision", "postgres", "float", 15), ("interval", "postgres", "time", 0),
    ("real", "postgres", "float", 6), ("float", "mysql", "float", 6), ("bit(64)", "mysql", "int", None),
    ("year", "mysql", "int", None), ("point", "mysql", "binary", None), ("geometry", "mysql", "binary", None),
])
def test_classify(type_text, dialect, family, scale):
    assert classify(type_text, None, dialect) == (family, scale)


def test_duckdb_sql_matches_the_python_definition():
    con = duckdb.connect()
    con.execute("CREATE TABLE t (id INTEGER, a VARCHAR, b VARCHAR)")
    rows = [(1, None, "x"), (1, "", "x"), (2, "a|b", "c"), (3, "é ", None)]
    con.executemany("INSERT INTO t VALUES (?,?,?)", rows)
    got = [r[0] for r in con.execute(f"SELECT {md5_sql('duckdb', COLS)} FROM t ORDER BY rowid").fetchall()]
    want = [hashlib.md5(text(str(i), a, b).encode()).hexdigest() for i, a, b in rows]
    assert got == want


def test_duckdb_bucket_digest_is_md5_of_row_texts_in_key_order():
    from cdc.compare.fingerprint import bucket_digest_sql, row_text_sql

    con = duckdb.connect()
    con.execute("CREATE TABLE t (id INTEGER, a VARCHAR, b VARCHAR)")
    rows = [(2, "x", None), (1, None, "y\nz"), (3, "", "")]
    con.executemany("INSERT INTO t VALUES (?,?,?)", rows)
    got = con.execute(f"SELECT {bucket_digest_sql('duckdb', row_text_sql('duckdb', COLS), 'id')} FROM t").fetchone()[0]
    want = "\n".join(text(str(i), a, b) for i, a, b in sorted(rows))
    assert got == hashlib.md5(want.encode()).hexdigest()


def test_bucket_text_counts_string_lengths_in_utf8_bytes():
    from cdc.compare.fingerprint import bucket_digest_sql, row_text_sql

    con = duckdb.connect()
    con.execute("CREATE TABLE t (id INTEGER, a VARCHAR, b VARCHAR)")
    rows = [(1, "é日", "x"), (2, None, ""), (3, "a|b", "ü ")]
    con.executemany("INSERT INTO t VALUES (?,?,?)", rows)
    sql = bucket_digest_sql("duckdb", row_text_sql("duckdb", COLS, lengths="bytes"), "id")
    got = con.execute(f"SELECT {sql} FROM t").fetchone()[0]
    want = "\n".join(python_row_text([str(i), a, b], COLS, lengths="bytes") for i, a, b in rows)
    assert want.startswith("0,5,0,1|1|")  # 'é日' is 2 characters, 5 bytes
    assert got == hashlib.md5(want.encode()).hexdigest()


def test_float_rendering_is_canonical_at_the_ends_of_the_range():
    """Issue #14: DuckDB crashed on DOUBLE max (a DECIMAL(38,6) cast), FLOAT 42.42 differed by database."""
    from cdc.compare.dialects import compare_dialect

    _render = lambda d, col, trim: compare_dialect(d).render(col, trim)

    con = duckdb.connect()
    con.execute("CREATE TABLE t (i INTEGER, f REAL, d DOUBLE)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", [
        (1, 42.42, 1.7976931348623157e308), (2, 3.4028234e38, 2.2250738585072014e-308), (3, -1.5, 5e-324),
        (4, 0.0, -0.0), (5, float("nan"), float("inf")), (6, 0.0009765625, float("-inf")), (7, None, 42.42)])
    f = ColumnInfo("f", "float", "float", 6)
    d = ColumnInfo("d", "double", "float", 15)
    d6 = ColumnInfo("d", "double", "float", 6)  # a FLOAT on the other side: 6 digits on both
    got = con.execute(f"SELECT {_render('duckdb', f, False)}, {_render('duckdb', d, False)}, "
                      f"{_render('duckdb', d6, False)} FROM t ORDER BY i").fetchall()
    assert got == [
        ("424200e1", "179769313486232e308", "179769e308"),
        ("340282e38", "222507385850720e-308", "222507e-308"),
        ("-150000e0", "494065645841247e-324", "494066e-324"),
        ("0", "0", "0"),
        ("nan", "inf", "inf"),
        ("976563e-4", "-inf", "-inf"),  # an exact tie (976562.5) rounds away from zero on every database
        (None, "424200000000000e1", "424200e1"),
    ]
