"""SQL_REDO parser on real LogMiner shapes (Debezium LogMinerDmlParserTest, DBZ-3078/3235/3258/3305/3367/3413)."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readers.oracle import parser
from readers.oracle.errors import DictionaryMismatch, RedoParseError
from readers.oracle.parser import parse_redo, scan_redo
from readers.oracle.sim.workload import sql_delete, sql_insert, sql_update
from readers.oracle.tools import parse_lines

DATE = "TO_DATE('2020-02-01 00:00:00', 'YYYY-MM-DD HH24:MI:SS')"


def test_insert_with_functions_and_unsupported_type():
    sql = ('insert into "DEBEZIUM"."TEST"("ID","NAME","TS","UT","DATE","UT2","C1","C2") values '
           f"('1','Acme',TO_TIMESTAMP('2020-02-01 00:00:00.'),Unsupported Type,{DATE},Unsupported Type,NULL,NULL);")
    assert parse_redo(sql) == ("c", "DEBEZIUM", "TEST", None, {
        "ID": "1", "NAME": "Acme", "TS": "TO_TIMESTAMP('2020-02-01 00:00:00.')", "UT": None, "DATE": DATE,
        "UT2": None, "C1": None, "C2": None})


def test_update_with_is_null_and_rowid():
    sql = ('update "DEBEZIUM"."TEST" set "NAME" = \'Bob\', "C1" = NULL where "ID" = \'1\' and "NAME" = \'Acme\' '
           f'and "DATE" = {DATE} and "IS" IS NULL and ROWID = \'AAAR3sAAEAAAACXAAA\';')
    op, schema, table, before, after = parse_redo(sql)
    assert (op, schema, table) == ("u", "DEBEZIUM", "TEST")
    assert before == {"ID": "1", "NAME": "Acme", "DATE": DATE, "IS": None}
    assert after == {"ID": "1", "NAME": "Bob", "DATE": DATE, "IS": None, "C1": None}


def test_update_and_delete_without_where():
    assert parse_redo('update "DEBEZIUM"."TEST" set "COL1" = \'1\', "COL2" = NULL, "COL3" = \'Hello\';') == \
        ("u", "DEBEZIUM", "TEST", None, {"COL1": "1", "COL2": None, "COL3": "Hello"})
    assert parse_redo('update "TICKETUSER"."CRS_ORDER" set "AMOUNT_PAID" = \'0\', "TM_UPDATE" = '
                      "TO_DATE('2021-03-17 10:18:55', 'YYYY-MM-DD HH24:MI:SS');")[4]["TM_UPDATE"] == \
        "TO_DATE('2021-03-17 10:18:55', 'YYYY-MM-DD HH24:MI:SS')"
    assert parse_redo('delete from "DEBEZIUM"."TEST";') == ("d", "DEBEZIUM", "TEST", {}, None)


def test_unistr_decoded_and_concatenation():
    sql = ('insert into "DEBEZIUM"."TEST" ("C1","C2") values (UNISTR(\'\\963F\\72F8\\5C0F(\\60CA\\559C\\FF09\'),'
           "'abc' || UNISTR('\\00E9\\D83D\\DE00'));")
    assert parse_redo(sql)[4] == {"C1": "阿狸小(惊喜）", "C2": "abcé😀"}


def test_doubled_quotes_and_quoted_identifiers():
    assert parse_redo('insert into "DEBEZIUM"."TEST"("COL1","CO""L2") values (\'Bob\'\'s dog\',\'0\');')[4] == \
        {"COL1": "Bob's dog", 'CO"L2': "0"}
    sql = 'delete from "DEBEZIUM"."TEST" where "COL1" = \'Bob\'\'s dog\' and "COL2" = \'1\';'
    assert parse_redo(sql)[3] == {"COL1": "Bob's dog", "COL2": "1"}


def test_hextoraw_lobs_intervals_timestamp_tz_kept_whole():
    tz = "TO_TIMESTAMP_TZ('2020-02-01 00:00:00.000000 +02:00')"
    sql = ('insert into "S"."T"("A","B","C","D","E","F") values (HEXTORAW(\'3330\'),EMPTY_CLOB(),EMPTY_BLOB(),'
           f"TO_YMINTERVAL('+01-02'),INTERVAL '2 10:30:00' DAY(2) TO SECOND(6),{tz});")
    assert parse_redo(sql)[4] == {"A": "HEXTORAW('3330')", "B": "EMPTY_CLOB()", "C": "EMPTY_BLOB()",
                                  "D": "TO_YMINTERVAL('+01-02')", "E": "INTERVAL '2 10:30:00' DAY(2) TO SECOND(6)",
                                  "F": tz}


def test_table_alias_and_bare_numbers():
    sql = 'update "S"."T" a set a."A" = \'x\', a."N" = 1.5E+10 where a."ID" = -3 and a."B" IS NULL;'
    assert parse_redo(sql) == ("u", "S", "T", {"ID": "-3", "B": None}, {"ID": "-3", "B": None, "A": "x", "N": "1.5E+10"})


def test_unknown_object_is_a_dictionary_mismatch():
    with pytest.raises(DictionaryMismatch, match="OBJ# 74858"):
        parse_redo('insert into "UNKNOWN"."OBJ# 74858"("COL 1") values (1)')


@pytest.mark.parametrize("sql", ["garbage", 'insert into "S"."T"("A") values (\'x\'',
                                 'insert into "S"."T"("A","B") values (\'x\');',
                                 'update "S"."T" set "A" = \'1\' where "B" LIKE \'x\';',
                                 'delete from "S"."T" where "A" = \'1\' trailing'])
def test_bad_statements_raise_with_text(sql):
    with pytest.raises(RedoParseError) as err:
        parse_redo(sql)
    assert err.value.text == sql[:500]


def test_parse_tool_never_stops_on_a_bad_line():
    out = io.StringIO()
    rc = parse_lines(['insert into "S"."T"("A") values (\'1\');\n', "nonsense\n",
                      'delete from "S"."T" where "A" = \'1\';\n'], out)
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert rc == 1 and len(lines) == 3
    assert lines[0] == {"op": "c", "schema": "S", "table": "T", "before": None, "after": {"A": "1"}}
    assert lines[1]["line"] == 2 and "error" in lines[1] and lines[1]["statement"] == "nonsense"
    assert lines[2]["op"] == "d"


texts = st.one_of(st.none(), st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                                     max_size=30))


@settings(max_examples=100, deadline=None)
@given(row=st.dictionaries(st.from_regex(r"[A-Z][A-Z0-9_ #\"]{0,8}", fullmatch=True).filter(lambda c: c != "CREATED"), texts, min_size=1, max_size=6))
def test_round_trip_generated_statements(row):
    """Statements written the way LogMiner writes them parse back to the values put in."""
    q = {c.replace('"', '""'): v for c, v in row.items()}
    ins = sql_insert(1, q)
    assert parse_redo(ins)[4] == row
    cols = list(row)
    before = dict(row)
    upd = sql_update(1, {cols[0].replace('"', '""'): "new"}, q, "AAAR3sAAEAAAACXAAA")
    assert parse_redo(upd)[3] == before and parse_redo(upd)[4] == {**before, cols[0]: "new"}
    assert parse_redo(sql_delete(1, q, "AAAR3sAAEAAAACXAAA"))[3] == before


tricky = st.lists(st.sampled_from(["x", " and ", '"', "'", ", ", ' and "B" = ', "ROWID = '", "NULL", " IS NULL",
                                   " || ", "(", ")", "é", ","]), max_size=8).map("".join)


@settings(max_examples=300, deadline=None)
@given(a=st.one_of(st.none(), tricky), b=st.one_of(st.none(), tricky), c=tricky)
def test_fast_paths_agree_with_the_scanner_on_tricky_literals(a, b, c):
    """Literals holding the separators the fast paths split on still parse to what was written."""
    before = {"A": a, "B": b, "C": "1"}
    sql = sql_update(2, {"C": c, "A": b}, before, "AAAR3sAAEAAAACXAAA")
    assert parse_redo(sql) == ("u", "APP", "T2", before, {"A": b, "B": b, "C": c})
    assert parse_redo(sql_delete(2, before, "AAAR3sAAEAAAACXAAA"))[3] == before
    assert parse_redo(sql_insert(2, before))[4] == before


# (value as LogMiner writes it, True if the fast path takes it; the scanner takes the others)
plain_values = st.one_of(st.just("NULL"),
                         st.text(max_size=12).map(lambda t: "'" + t.replace("'", "''") + "'"),
                         st.sampled_from([DATE, "HEXTORAW('0a1B')", "EMPTY_CLOB()", "TO_DATE('it''s', 'x')",
                                          "TO_TIMESTAMP('2020-01-01 00:00:00.')"])).map(lambda v: (v, True))
other_values = st.sampled_from(["UNISTR('\\00E9')", "'a' || 'b'", "1.5E+10", "-3", "Unsupported Type",
                                "INTERVAL '1-2' YEAR(2) TO MONTH", "NULLIF('a', 'b')"]).map(lambda v: (v, False))
names = st.from_regex(r'[A-Z][A-Z0-9_ #"]{0,6}', fullmatch=True).map(lambda c: c.replace('"', '""'))


def _statements(cols: list[str], vals: list[str]) -> list[str]:
    where = " and ".join(f'"{c}" IS NULL' if v == "NULL" else f'"{c}" = {v}' for c, v in zip(cols, vals))
    sets = ", ".join(f'"{c}" = {v}' for c, v in zip(cols, vals))
    names = ",".join(f'"{c}"' for c in cols)
    return [f'insert into "S"."T"({names}) values ({",".join(vals)});',
            f"update \"S\".\"T\" set {sets} where {where} and ROWID = 'AAAR3sAAEAAAACXAAA';",
            f'update "S"."T" set {sets} where {where};', f'delete from "S"."T" where {where};']


@settings(max_examples=300, deadline=None)
@given(cols=st.lists(names, min_size=1, max_size=5, unique=True),
       vals=st.lists(st.one_of(plain_values, other_values), min_size=5, max_size=5))
def test_fast_path_equals_the_scanner(cols, vals):
    """The regex fast path gives what the scanner gives, and takes every plain statement."""
    vals = vals[:len(cols)]
    plain = all(ok for _, ok in vals) and not any('""' in c for c in cols)
    for sql in _statements(cols, [v for v, _ in vals]):
        assert parse_redo(sql) == scan_redo(sql)
        fast = {"i": parser._fast_insert, "u": parser._fast_update, "d": parser._fast_delete}[sql[0]]
        if plain:
            assert fast(sql) is not None, sql


@settings(max_examples=500, deadline=None)
@given(data=st.data(), vals=st.lists(plain_values.map(lambda v: v[0]), min_size=3, max_size=3))
def test_fast_path_never_accepts_what_the_scanner_rejects(data, vals):
    """A damaged statement (a character dropped, doubled or changed) parses the same both ways, or fails
    both ways with the scanner's error."""
    sql = data.draw(st.sampled_from(_statements(["A", "B", "C"], vals)))
    i = data.draw(st.integers(0, len(sql) - 1))
    edit = data.draw(st.sampled_from(["drop", "double", "'", '"', ",", " ", ")", "(", ";"]))
    bad = sql[:i] + ("" if edit == "drop" else sql[i] if edit == "double" else edit) + sql[i + 1:]
    try:
        want = scan_redo(bad)
    except (RedoParseError, DictionaryMismatch) as exc:
        with pytest.raises(type(exc)) as got:
            parse_redo(bad)
        assert str(got.value) == str(exc)
    else:
        assert parse_redo(bad) == want
