"""readers/oracle/columnar/redo_json.py: the native ``build`` is held to ``reference`` (the row path's bytes).

The contract: for every statement ``build`` answers None (the row path decides) or EXACTLY
``reference(sql, spec)``: the same op and the same bytes; where ``reference`` raises (RedoParseError,
DictionaryMismatch, a temporal value that does not convert, a value orjson refuses) ``build`` answers
None, never raises, never crashes. Without the compiled module every answer is None and most tests here
hold trivially; they become strict as soon as ``redo_json.NATIVE`` is True, and
``test_a_compiled_module_loads`` fails when a ``_redo_native*.so`` was built but does not import.

Statements are generated as LogMiner writes them (readers/oracle/parser.py's docstring, the simulator's
readers/oracle/sim/workload.py) and with hostile variations: names and values holding the clause
separators, quotes, backslashes, control characters, non-ASCII; every value form the parser knows;
aliases, ROWID in the middle of a WHERE, parentheses, missing clauses, truncations, garbage.
"""

from __future__ import annotations

import importlib
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from readers.oracle.columnar import redo_json
from readers.oracle.sim.workload import (
    TYPE_COLUMNS,
    TYPE_ROWS,
    TYPE_UPDATE,
    TYPES_TABLE,
    Model,
    Workload,
    base_row,
    row_id,
    sql_delete,
    sql_insert,
    sql_update,
    stream_row,
    table_name,
)

SETTINGS = settings(deadline=None, suppress_health_check=list(HealthCheck), print_blob=True)
SIM_SPECS = [(("CREATED",), ("ID",)), (("CREATED",), None), (("CREATED",), ("ID", "NAME")),
             (("CREATED",), ("NAME", "ID", "NOTE")), (("C_DATE", "CREATED", "C_TS6"), ("ID", "MISSING"))]


# ---- the check every test makes --------------------------------------------------------------------------

def _reference(sql: str, spec: Any) -> tuple[Any, BaseException | None]:
    try:
        return redo_json.reference(sql, spec), None
    except Exception as exc:  # noqa: BLE001 - whatever the row path raises, build must not answer
        return None, exc


def check(sqls: list[str], spec_of_row: list[int], specs: list[Any]) -> list[Any]:
    """build() once over the batch; every answer that is not None must be reference()'s, byte for byte."""
    got = redo_json.build(sqls, spec_of_row, specs)
    assert isinstance(got, list), f"build returned {type(got).__name__}, not a list"
    assert len(got) == len(sqls), f"build returned {len(got)} answers for {len(sqls)} statements"
    for sql, i, answer in zip(sqls, spec_of_row, got):
        if answer is None:
            continue
        want, exc = _reference(sql, specs[i])
        assert exc is None, (f"build answered {answer!r} where the row path raises {exc!r}\n"
                             f"  sql  = {sql!r}\n  spec = {specs[i]!r}")
        assert type(answer) is tuple and len(answer) == 4, f"build answered {answer!r} (not a 4-tuple) for {sql!r}"
        assert [type(x) for x in answer] == [str, bytes, bytes, bytes], f"types {answer!r} for {sql!r}"
        assert answer == want, (f"build != reference\n  sql  = {sql!r}\n  spec = {specs[i]!r}\n"
                                f"  got  = {answer!r}\n  want = {want!r}")
    return got


def check_one(sql: str, spec: Any) -> Any:
    return check([sql], [0], [spec])[0]


def taken(sql: str, spec: Any) -> None:
    """A shape the fast path must take (once the module is compiled): not None, and reference()'s bytes."""
    answer = check_one(sql, spec)
    if redo_json.NATIVE:
        assert answer is not None, f"build left a common shape to the row path\n  sql  = {sql!r}\n  spec = {spec!r}"


# ---- the compiled module -----------------------------------------------------------------------------------

def test_a_compiled_module_loads() -> None:
    """Without a C compiler the row path is legitimate; a built module that does not import is not."""
    here = Path(redo_json.__file__).parent
    built = sorted({p for suffix in (".so", ".pyd", *EXTENSION_SUFFIXES) for p in here.glob(f"_redo_native*{suffix}")})
    if not built or redo_json.NATIVE:
        return
    try:
        importlib.import_module("readers.oracle.columnar._redo_native")
        why = "it imports now, but did not when redo_json was imported"
    except Exception as exc:  # noqa: BLE001
        why = repr(exc)
    pytest.fail(f"{[p.name for p in built]} built next to redo_json.py but redo_json.NATIVE is False: {why}")


def test_native_module_has_build() -> None:
    if redo_json.NATIVE:
        assert callable(redo_json._redo_native.build)


# ---- generated statements ---------------------------------------------------------------------------------

PLAIN_NAMES = ["A", "B", "C", "ID", "NAME", "AMOUNT", "CREATED", "NOTE", "C_DATE", "X9", "COL_1"]
NAME_PIECES = ["A", "B", "Z", " ", ",", ", ", "1", "é", "你", "😀", "\\", '"', '""', "'", "''", ") values (",
               '","', " set ", " where ", " and ", " IS NULL", " = ", "ROWID", "\n", "\x00", "\x1f", "\x7f",
               "\u2028", "OBJ# 1", "."]
TEXT_PIECES = ["a", "Z", "0", "42", " ", "'", "''", "'''", "\\", "\\\\", '"', '""', "\x00", "\x01", "\x08",
               "\x0c", "\x1f", "\x7f", "\n", "\r\n", "\t", "é", "你好", "😀", "\u2028", "\u2029", "\ufeff",
               "\U0010ffff", "\x80", "\xff", ", ", ",", "', '", "','", " and ", "' and ", "', ", ") values (",
               "'); ", " set ", " where ", "ROWID = '", " and ROWID = '", "NULL", " IS NULL", " = ", " || ",
               "'||'", "(", ")", "TO_DATE('", "');", ";", "\\4F60", "\"A\" = '", "Unsupported Type"]

def _often(common: st.SearchStrategy, rare: st.SearchStrategy, one_in: int) -> st.SearchStrategy:
    """``common``, or ``rare`` about once in ``one_in`` draws."""
    return st.integers(1, one_in).flatmap(lambda k: rare if k == 1 else common)


names = _often(st.sampled_from(PLAIN_NAMES),
               st.one_of(st.lists(st.sampled_from(NAME_PIECES), min_size=1, max_size=4).map("".join),
                         st.text(min_size=1, max_size=4), st.just(""), st.just("ROWID")), 3)
texts = _often(st.text(st.characters(codec="ascii"), max_size=8),
               st.lists(st.one_of(st.sampled_from(TEXT_PIECES), st.text(max_size=3)), max_size=6).map("".join), 2)


def qname(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _date_digits(draw: Any) -> str:
    if draw(st.booleans()):
        return "2024-02-29 13:14:15"
    y, mo, d, h, mi, s = (draw(st.integers(0, 9999)), draw(st.integers(0, 99)), draw(st.integers(0, 99)),
                          draw(st.integers(0, 99)), draw(st.integers(0, 99)), draw(st.integers(0, 99)))
    return f"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}"  # any digits: the text is not validated


@st.composite
def exact_dates(draw: Any) -> str:
    """The DATE form the native pass converts: TO_DATE('YYYY-MM-DD HH24:MI:SS', 'YYYY-MM-DD HH24:MI:SS')."""
    return f"TO_DATE('{_date_digits(draw)}', 'YYYY-MM-DD HH24:MI:SS')"


@st.composite
def temporal_forms(draw: Any) -> str:
    """Near misses of the exact DATE form and the other DATE / TIMESTAMP encodings."""
    digits = _date_digits(draw)
    frac = draw(st.text(alphabet="0123456789", max_size=10))
    zone = draw(st.sampled_from(["-06:00", "+14:00", "+5:30", "-00:00", "UTC", "Europe/Paris", "Mars/Olympus"]))
    return draw(st.sampled_from([
        f"TO_DATE('{digits}','YYYY-MM-DD HH24:MI:SS')",
        f"TO_DATE('{digits}', 'DD-MON-RR')",
        f"TO_DATE('{digits}', 'YYYY-MM-DD HH24:MI:SS' )",
        f"TO_DATE( '{digits}', 'YYYY-MM-DD HH24:MI:SS')",
        f"TO_DATE('{digits}', 'YYYY-MM-DD HH24:MI:SS', 'NLS_CALENDAR=GREGORIAN')",
        f"to_date('{digits}', 'YYYY-MM-DD HH24:MI:SS')",
        f"TO_DATE('{digits[:-1]}', 'YYYY-MM-DD HH24:MI:SS')",
        f"TO_DATE('{digits}0', 'YYYY-MM-DD HH24:MI:SS')",
        f"TO_DATE('{digits.replace(' ', 'T')}', 'YYYY-MM-DD HH24:MI:SS')",
        f"TO_DATE('{digits}.{frac}', 'YYYY-MM-DD HH24:MI:SS')",
        f"TO_DATE('{digits}', 'YYYY-MM-DD HH24:MI:SS') || ''",
        f"TO_TIMESTAMP('{digits}.{frac}')",
        f"TO_TIMESTAMP('{digits}')",
        f"TO_TIMESTAMP_TZ('{digits}.{frac} {zone}')",
        "TO_DATE('٢٠٢٤-٠٢-٢٩ ١٣:١٤:١٥', 'YYYY-MM-DD HH24:MI:SS')",  # Python's \d: any decimal digit
        "TO_DATE('２０２４-02-29 13:14:15', 'YYYY-MM-DD HH24:MI:SS')",
        "TO_DATE('-4712-01-01 00:00:00', 'SYYYY-MM-DD HH24:MI:SS')",
        lit(digits), lit(f"{digits}.{frac}"), lit(f"TO_DATE('{digits}', 'YYYY-MM-DD HH24:MI:SS')"),
    ]))


OTHER_FORMS = [
    "TO_TIMESTAMP('2024-02-29 13:14:15.123')", "TO_TIMESTAMP_TZ('2024-02-29 23:14:15.123456 -06:00')",
    "HEXTORAW('0AFF')", "HEXTORAW('')", "EMPTY_CLOB()", "EMPTY_BLOB()", "TO_YMINTERVAL('+01-02')",
    "TO_DSINTERVAL('+01 02:03:04.000000')", "TO_DATE('it''s', 'YYYY')", "HEXTORAW('a'', ''b')",
    "F('a)b')", "F('(')", "F('''')", "F(1, 2)", "F('a', 1)", "F()", "A$B('x')", "A#1('x')", "_F('x')",
    "1F('x')", "-F('x')", "f('a')", "F ('x')", "F('x') ", "F(G('x'))", "F(('x'))", "F('x'", "F(')", "F('x'))",
    "TO_DATE('2024-02-29 13:14:15', 'YYYY-MM-DD HH24:MI:SS') || 'x'", "F('a') || F('b')",
    "UNISTR('\\4F60')", "UNISTR('\\4F60\\597D')", "UNISTR('\\00e9t\\00e9 \\d83d\\de00')", "UNISTR('a\\\\b')",
    "UNISTR('\\d800')", "UNISTR('\\zz')", "UNISTR('it''s')", "UNISTR ('x')", "unistr('x')",
    "'a' || 'b'", "'a' || UNISTR('\\4F60') || 'c'", "'x' || TO_CHAR(1)", "'' || ''", "'a'||'b'",
    "5", "-1.5", "1.5E+10", "+3", ".5", "0", "Unsupported Type", "Unsupported", "NULLX", "NULL ", "null",
    "INTERVAL '1' DAY", "INTERVAL '1-2' YEAR TO MONTH", "INTERVAL '+01 02:03:04.5' DAY(2) TO SECOND(6)",
    "'", "'a", "TO_DATE(", "X()", "''''", "'a''", "'a' ", " 'a'", "N'a'", "q'[a]'",
]

values = st.integers(0, 19).flatmap(lambda k: (
    texts.map(lit) if k < 11 else st.just("NULL") if k < 14 else st.just("''") if k == 14
    else exact_dates() if k == 15 else temporal_forms() if k == 16
    else st.lists(texts.map(lit), min_size=2, max_size=3).map(" || ".join) if k == 17
    else st.sampled_from(OTHER_FORMS)))


@st.composite
def columns(draw: Any, min_size: int = 1) -> list[tuple[str, str, bool]]:
    """(name, value as SQL text, whether it is a DATE column) per column: dates are mostly the exact form."""
    out = []
    for _ in range(draw(st.integers(min_size, 6))):
        name = draw(names)
        kind = draw(st.integers(0, 9))
        if kind < 2:
            out.append((name, draw(_often(exact_dates(), st.sampled_from(["NULL", "NULL"]), 5)), True))
        elif kind == 2:
            out.append((name, draw(temporal_forms()), True))
        else:
            out.append((name, draw(values), False))
    return out


def _table(draw: Any) -> str:
    return draw(_often(
        st.one_of(st.just('"APP"."T0"'), st.just('"S"."T"'), st.tuples(names, names).map(
            lambda n: f"{qname(n[0])}.{qname(n[1])}")),
        st.sampled_from(['"UNKNOWN"."T"', '"S"."OBJ# 1"', '"UNKNOWN"."OBJ# 123"', '"UNKNOWN"."OBJ# "', "APP.T0",
                         '"APP". "T0"', '"APP"', '"A"."B"."C"']), 30))


def _kw(draw: Any, word: str) -> str:
    return draw(_often(st.just(word), st.sampled_from([word.upper(), word.title(), word.replace(" ", "  ")]), 40))


@st.composite
def inserts(draw: Any) -> tuple[str, list[tuple[str, str, bool]]]:
    cols = draw(columns())
    if draw(st.integers(0, 5)) == 0:
        cols.append((cols[0][0], draw(values), False))  # a repeated column: first position, last value
    vals = [v for _, v, _ in cols]
    if draw(st.integers(0, 29)) == 0:  # fewer or more values than columns
        vals = vals[:-1] if draw(st.booleans()) else [*vals, "'extra'"]
    sep = draw(_often(st.sampled_from([",", ", "]), st.sampled_from([" ,", ",  ", ", ,"]), 30))
    colsep = draw(_often(st.just(","), st.sampled_from([", ", " ,"]), 20))
    space = draw(_often(st.just(""), st.sampled_from([" ", "  "]), 20))
    sql = (f"{_kw(draw, 'insert into')} {_table(draw)}{space}({colsep.join(qname(c) for c, _, _ in cols)}) "
           f"{_kw(draw, 'values')} ({sep.join(vals)})")
    return sql, cols


def _where(draw: Any, alias: str) -> tuple[str, list[tuple[str, str, bool]]]:
    cols = draw(columns())
    items = []
    for c, v, _ in cols:
        if v == "NULL" and draw(st.integers(0, 7)):
            items.append(f"{alias}{qname(c)} IS NULL")
        else:
            items.append(f"{alias}{qname(c)} = {v}")
    rowid = "ROWID = " + draw(_often(st.just("'AAAS00AAEAA000000001'"), st.sampled_from(
        ["'AAAx'", "''", "'a and b'", "' and ROWID = '", "'x'';'", "NULL", "'a' || 'b'"]), 4))
    where = draw(st.integers(0, 29))
    if where < 24:
        items.append(rowid)
    elif where == 24:
        items.insert(draw(st.integers(0, len(items))), rowid)
    elif where == 25:
        items = [f"({x})" for x in items]
    elif where == 26:
        items.append(rowid.replace(" = ", "="))
    joiner = _often(st.just(" and "), st.sampled_from([" AND ", " and  ", "  and "]), 40)
    text = items[0] + "".join(draw(joiner) + x for x in items[1:])
    if draw(st.integers(0, 29)) == 0:
        text = f"({text})"
    return text, cols


@st.composite
def updates(draw: Any) -> tuple[str, list[tuple[str, str, bool]]]:
    alias = draw(_often(st.just(""), st.sampled_from([" a", " t1", " A"]), 12))
    prefix = f"{alias.strip()}." if alias else ""
    where, cols = _where(draw, prefix)
    # SET: columns of the WHERE (changed values, the same kind) or new ones (appended after the WHERE's)
    sets = draw(st.lists(st.one_of(st.sampled_from(cols), columns(min_size=1).map(lambda c: c[0])),
                         min_size=1, max_size=4))
    sets = [(c, draw(exact_dates()) if d and draw(st.integers(0, 3)) else draw(values), d) for c, _, d in sets]
    setsep = draw(_often(st.just(", "), st.sampled_from([",", " , "]), 20))
    set_text = setsep.join(f"{prefix}{qname(c)} = {v}" for c, v, _ in sets)
    sql = f"{_kw(draw, 'update')} {_table(draw)}{alias} {_kw(draw, 'set')} {set_text}"
    if draw(st.integers(0, 19)):
        sql += f" {_kw(draw, 'where')} {where}"
    return sql, cols + sets


@st.composite
def deletes(draw: Any) -> tuple[str, list[tuple[str, str, bool]]]:
    alias = draw(_often(st.just(""), st.sampled_from([" a", " t1"]), 12))
    where, cols = _where(draw, f"{alias.strip()}." if alias else "")
    sql = f"{_kw(draw, 'delete from')} {_table(draw)}{alias}"
    if draw(st.integers(0, 19)):
        sql += f" {_kw(draw, 'where')} {where}"
    return sql, cols


@st.composite
def statements(draw: Any) -> tuple[str, list[tuple[str, str, bool]]]:
    sql, cols = draw(st.one_of(inserts(), updates(), deletes()))
    sql += draw(_often(st.sampled_from([";", ""]), st.sampled_from([" ;", "; ", ";;", ";\n", "  ", "\n", " "]), 10))
    return sql, cols


@st.composite
def specs_for(draw: Any, cols: list[tuple[str, str, bool]]) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    """temporal: mostly the DATE columns (sometimes one left out, sometimes a text column or an absent name
    in); pk: None, one column, several, some absent from the row."""
    dates = [c for c, _, d in cols if d]
    temporal = [c for c in dates if draw(st.integers(0, 5))]
    if draw(st.integers(0, 5)) == 0:
        temporal.append(draw(st.one_of(st.sampled_from([c for c, _, _ in cols]), names)))
    pool = _often(st.sampled_from([c for c, _, _ in cols]), names, 5)
    pk = draw(st.one_of(st.none(), st.lists(pool, min_size=1, max_size=1), st.lists(pool, min_size=2, max_size=4)))
    return tuple(draw(st.permutations(temporal))), None if pk is None else tuple(pk)


@st.composite
def hostile(draw: Any) -> tuple[str, Any]:
    """A statement (sometimes mangled: truncated, spliced, cut, garbage) and a spec over its columns."""
    sql, cols = draw(statements())
    mangle = draw(st.integers(0, 39)) - 20  # (not the bounds: Hypothesis favours them)
    if mangle == 0:
        sql = sql[:draw(st.integers(0, len(sql)))]
    elif mangle == 1:
        at = draw(st.integers(0, len(sql)))
        sql = sql[:at] + draw(st.one_of(st.sampled_from(TEXT_PIECES), st.text(max_size=3))) + sql[at:]
    elif mangle == 2:
        at = draw(st.integers(0, len(sql)))
        sql = sql[:at] + sql[at + draw(st.integers(1, 4)):]
    elif mangle == 3:
        sql = draw(st.one_of(st.text(max_size=40), st.sampled_from(["", ";", "insert ", "update ", "delete ",
                                                                     "insert into ", "delete from ", "update  "])))
    return sql, draw(specs_for(cols))


@settings(SETTINGS, max_examples=450)
@given(case=hostile())
@example(case=('insert into "S"."T"("A","B") values (\'1\',NULL);', (("A",), ("A",))))
@example(case=('update "S"."T" set "A" = \'2\', "B" = NULL where "A" = \'1\' and "B" IS NULL and ROWID = \'AAAx\';',
               ((), ("A",))))
@example(case=('update "S"."T" a set a."A" = \'2\' where a."A" = \'1\';', ((), None)))
@example(case=('delete from "S"."T" where "A" = \'1\' and ROWID = \'AAAx\' and "B" IS NULL;', ((), None)))
@example(case=('delete from "UNKNOWN"."OBJ# 123" where "A" = \'1\';', ((), None)))
@example(case=('insert into "S"."T"("A","A") values (\'1\',\'2\');', ((), ("A",))))
@example(case=('insert into "S"."T"("D") values (TO_DATE(\'2024-02-29 13:14:15\', \'YYYY-MM-DD HH24:MI:SS\'));',
               (("D",), None)))
@example(case=('insert into "S"."T"("D") values (TO_DATE(\'2024-02-29 13:14:15\', \'DD-MON-RR\'));', (("D",), None)))
@example(case=('insert into "S"."T"("D") values (\'2024-02-29 13:14:15\');', (("D",), None)))
def test_build_is_the_reference_or_none(case: tuple[str, Any]) -> None:
    sql, spec = case
    check_one(sql, spec)


@st.composite
def logminer_rows(draw: Any) -> tuple[str, Any, bool]:
    """A statement exactly as LogMiner writes it (hostile names and values, no structural hostility), its
    spec (temporal: the DATE columns) and whether the native pass must take it: no doubled quote in a name,
    every value a literal, NULL or the exact DATE form (a temporal column's: NULL or the DATE form)."""
    must = True

    def value(date: bool) -> str:
        nonlocal must
        k = draw(st.integers(0, 19))
        if k < 3:
            return "NULL"
        if date:
            return draw(exact_dates())
        if k == 19:
            must = False
            return draw(st.sampled_from(OTHER_FORMS))
        return lit(draw(texts))

    cols = []
    for _ in range(draw(st.integers(1, 6))):
        name = draw(names)
        must = must and '"' not in name and name != ""
        date = draw(st.integers(0, 3)) == 0
        cols.append((name, value(date), date))
    temporal = tuple(dict.fromkeys(c for c, _, d in cols if d))  # (a name both DATE and not: every value a DATE)
    temporal_cols = set(temporal)
    cols = [(c, value(True) if c in temporal_cols and not d else v, d or c in temporal_cols) for c, v, d in cols]
    op = draw(st.sampled_from("cud"))
    table = _table(draw) if draw(st.integers(0, 9)) == 0 else '"APP"."T0"'
    must = must and table == '"APP"."T0"'
    if op == "c":
        sep = draw(st.sampled_from([",", ", "]))
        sql = (f"insert into {table}({','.join(qname(c) for c, _, _ in cols)}) "
               f"values ({sep.join(v for _, v, _ in cols)})")
    else:
        where = " and ".join(f"{qname(c)} IS NULL" if v == "NULL" else f"{qname(c)} = {v}" for c, v, _ in cols)
        if draw(st.integers(0, 3)):
            where += f" and ROWID = {lit(draw(st.sampled_from(['AAAS00AAEAA000000001', 'AAAx', ''])))}"
        if op == "d":
            sql = f"delete from {table} where {where}"
        else:
            sets = draw(st.lists(st.sampled_from(cols), min_size=1, max_size=3))
            new = draw(st.lists(st.tuples(names, st.booleans()), max_size=2))  # SET columns not in the WHERE
            for name, date in new:
                must = must and '"' not in name and name != ""
                known = [c for c in cols + sets if c[0] == name]
                date = known[0][2] if known else date or name in temporal_cols
                sets.append((name, "", date))
                if date and name not in temporal_cols:
                    temporal, temporal_cols = (*temporal, name), temporal_cols | {name}
            set_text = ", ".join(f"{qname(c)} = {value(d)}" for c, _, d in sets)
            sql = f"update {table} set {set_text} where {where}"
    sql += draw(st.sampled_from([";", ";", ""]))
    names_in = [c for c, _, _ in cols]
    pool = _often(st.sampled_from(names_in), names, 6)
    pk = draw(st.one_of(st.none(), st.lists(pool, min_size=1, max_size=1), st.lists(pool, min_size=2, max_size=4)))
    # refused by design: a repeated key column, an INSERT column name holding '") values (' (see EDGES)
    must = must and (pk is None or len(set(pk)) == len(pk)) and not (
        op == "c" and '") values (' in ",".join(qname(c) for c, _, _ in cols))
    return sql, (tuple(draw(st.permutations(temporal))), None if pk is None else tuple(pk)), must


@settings(SETTINGS, max_examples=400)
@given(case=logminer_rows())
def test_logminer_shapes_are_taken(case: tuple[str, Any, bool]) -> None:
    """LogMiner's own shapes with hostile names and values: the reference's bytes, and taken by the
    native pass where its shapes cover them (literals, NULL, the DATE form, names without doubled quotes)."""
    sql, spec, must = case
    if must:
        taken(sql, spec)
    else:
        check_one(sql, spec)


@settings(SETTINGS, max_examples=60)
@given(case=statements(), data=st.data())
def test_every_truncation(case: tuple[str, list[str]], data: Any) -> None:
    """Every prefix of a statement (one batch): reference's bytes or None; the whole one too."""
    sql, cols = case
    spec = data.draw(specs_for(cols))
    prefixes = [sql[:k] for k in range(len(sql) + 1)] + [sql + " ", sql + "\n"]
    check(prefixes, [0] * len(prefixes), [spec])


D = "TO_DATE('2024-02-29 13:14:15', 'YYYY-MM-DD HH24:MI:SS')"
EDGES = [
    # found against the first _redo_native.so (0b4d005): a repeated pk name ({c: v for c in pk} keeps one)
    ("insert into \"S\".\"T\"(\"A\") values ('1');", ((), ("A", "A"))),
    ("delete from \"S\".\"T\" where \"A\" = '1' and \"B\" IS NULL;", ((), ("B", "A", "B"))),
    # found against the first _redo_native.so (0b4d005): a column name holding '") values (' (parser.py's fast path
    # cuts the column list at its first '") values (': the row path errs or reads other columns)
    ("insert into \"S\".\"T\"(\") values (\",\"A\") values ('1','2');", ((), None)),
    ("insert into \"S\".\"T\"(\"A\",\") values (B\") values ('1',NULL);", ((), None)),
    # temporal: a repeated DATE column (the last value counts), a text value in a DATE column, a DATE pk
    (f"insert into \"S\".\"T\"(\"D\",\"D\") values ('x',{D});", (("D",), ("D",))),
    (f"insert into \"S\".\"T\"(\"D\",\"D\") values ({D},'x');", (("D",), ("D",))),
    (f"update \"S\".\"T\" set \"D\" = {D} where \"D\" = 'x';", (("D",), None)),
    (f"update \"S\".\"T\" set \"D\" = 'x' where \"D\" = {D};", (("D",), None)),
    (f"update \"S\".\"T\" set \"D\" = NULL where \"D\" = {D} and ROWID = 'AAAx';", (("D",), ("D",))),
    (f"delete from \"S\".\"T\" where \"D\" = {D} || 'x';", (("D",), None)),
    (f"delete from \"S\".\"T\" where \"D\" = {D} || 'x';", ((), None)),
    (f"insert into \"S\".\"T\"(\"D\") values ({D.replace('2024', '٢٠٢٤')});", (("D",), None)),
    (f"insert into \"S\".\"T\"(\"D\") values ({D.replace('2024', '٢٠٢٤')});", ((), None)),
    # ROWID: quoted (a column), in the middle, twice, a literal that looks like the trailing term
    ("delete from \"S\".\"T\" where \"ROWID\" = '1' and ROWID = 'AAAx';", ((), None)),
    ("delete from \"S\".\"T\" where ROWID = 'AAAx' and \"A\" = '1';", ((), None)),
    ("delete from \"S\".\"T\" where \"A\" = '1' and ROWID = 'AAAx' and ROWID = 'AAAy';", ((), None)),
    ("delete from \"S\".\"T\" where \"A\" = 'x'' and ROWID = ''y';", ((), None)),
    ("delete from \"S\".\"T\" where \"A\" = 'x'' and ROWID = ''';", ((), None)),
    ("delete from \"S\".\"T\" where \"A\" = 'x' and ROWID = 'y'' and \"B\" = ''z';", ((), None)),
    # function forms: verbatim (quotes respected), or the row path
    ("insert into \"S\".\"T\"(\"A\",\"B\") values (F('a)b'),F('''', ')'));", ((), None)),
    ("insert into \"S\".\"T\"(\"A\") values (F('a') || 'b');", ((), None)),
    ("insert into \"S\".\"T\"(\"A\") values (UNISTR('\\4F60'));", ((), None)),
    ("insert into \"S\".\"T\"(\"A\") values (NULLX);", ((), None)),
    ("insert into \"S\".\"T\"(\"A\") values (Unsupported Type);", ((), None)),
    # no WHERE, empty images
    ("update \"S\".\"T\" set \"A\" = '1';", ((), None)),
    ("delete from \"S\".\"T\";", ((), None)),
    ("delete from \"S\".\"T\" where ROWID = 'AAAx';", ((), ("A",))),
]


@pytest.mark.parametrize(("sql", "spec"), EDGES)
def test_edge_cases(sql: str, spec: Any) -> None:
    check_one(sql, spec)
    check_one(sql.rstrip(";"), spec)


# ---- the simulator's shapes: the fast path must take them ---------------------------------------------------

sim_texts = st.lists(st.one_of(st.sampled_from(["'", "''", "\\", '"', "\x00", "\x01", "\x1f", "\x7f", "\n",
                                                "\r", "\t", "é", "你好", "😀", "\u2028", "O'Brien", "x''y",
                                                ", ", "', '", " and ", ") values (", " set ", "ROWID = '"]),
                               st.text(max_size=4)), max_size=6).map("".join)


@st.composite
def sim_rows(draw: Any) -> dict[str, str | None]:
    row = base_row(draw(st.integers(0, 10**6)))
    for c in ("ID", "NAME", "AMOUNT", "NOTE"):
        row[c] = draw(st.one_of(st.just(row[c]), st.none(), sim_texts))
    return row  # (CREATED stays a TO_DATE: sql_insert writes it as it is, so None would read "None")


def _sim_spec(draw: Any) -> Any:
    return draw(st.sampled_from(SIM_SPECS))


@settings(SETTINGS, max_examples=150)
@given(row=sim_rows(), changes=st.dictionaries(st.sampled_from(["AMOUNT", "NAME", "NOTE", "ID"]),
                                               st.one_of(st.none(), sim_texts), min_size=1, max_size=3),
       table=st.integers(0, 20), data=st.data())
def test_simulator_shapes_are_taken(row: dict, changes: dict, table: int, data: Any) -> None:
    spec = _sim_spec(data.draw)
    rid = row_id(table, 7)
    ins, upd, dele = sql_insert(table, row), sql_update(table, changes, row, rid), sql_delete(table, row, rid)
    # the statements are what the simulator's model says they are (so the test holds shapes, not typos)
    model = stream_row(row)
    assert redo_json.reference(ins, spec)[3] == orjson.dumps(model)
    assert redo_json.reference(upd, spec)[2:] == (orjson.dumps(model), orjson.dumps({**model, **changes}))
    assert redo_json.reference(dele, spec)[2:] == (orjson.dumps(model), b"null")
    for sql in (ins, upd, dele):
        taken(sql, spec)
    for sql in (upd, dele):  # without the ROWID (not the simulator's): the contract only
        check_one(sql.rsplit(" and ROWID = ", 1)[0] + ";", spec)


def test_simulator_workload_rows_are_taken() -> None:
    """Every DML row of a simulated workload on the T tables (CSF pieces joined), one batch per spec."""
    model = Model(Workload.parse("seed=7,transactions=120,lanes=3,rows_max=8,csf_rate=0.1,rollback_rate=0.2,"
                                 "partial_rollback_rate=0.3,tables=4"))
    sqls, piece = [], ""
    for t in range(model.w.transactions):
        for op, _table, _rid, _rb, csf, sql, _xid in model.txn(t).records:
            if op in (1, 2, 3):
                piece += sql
                if not csf:
                    sqls.append(piece)
                    piece = ""
    big = Model(Workload.parse("big_txn_rows=20,transactions=1"))
    tx = big.txn(0)
    sqls += [big.big_record(tx, i)[5] for i in range(1, 21)]
    assert len(sqls) > 300
    for spec in SIM_SPECS:
        got = check(sqls, [0] * len(sqls), [spec])
        if redo_json.NATIVE:
            missed = [s for s, g in zip(sqls, got) if g is None]
            assert not missed, f"{len(missed)} simulator rows left to the row path, e.g. {missed[0]!r}"


def test_simulator_types_rows() -> None:
    """APP.TYPES (every Oracle type): reference's bytes or None; the TO_DATE-only rows must be taken."""
    spec_all = (tuple(c for c in TYPE_COLUMNS if c.startswith("C_") and c not in ("C_NUM", "C_BDBL", "C_RAW",
                                                                                   "C_VC", "C_NCHAR")), ("ID",))
    name = f'"APP"."{table_name(TYPES_TABLE)}"'
    sqls = []
    for lits in TYPE_ROWS:
        cols = ",".join(f'"{c}"' for c in TYPE_COLUMNS)
        vals = ",".join(lits.get(c, "NULL") for c in TYPE_COLUMNS)
        sqls.append(f"insert into {name}({cols}) values ({vals});")
    sets = ", ".join(f'"{c}" = {v}' for c, v in TYPE_UPDATE.items())
    first = TYPE_ROWS[0]
    where = " and ".join(f'"{c}" = {first[c]}' if c in first else f'"{c}" IS NULL' for c in TYPE_COLUMNS)
    sqls.append(f"update {name} set {sets} where {where} and ROWID = 'AAAS99AAEAA000000001';")
    check(sqls, [0] * len(sqls), [spec_all])
    check(sqls, [0] * len(sqls), [((), None)])
    date_only = f"insert into {name}(\"ID\",\"C_DATE\",\"C_VC\") values ('1',{first['C_DATE']},'it''s');"
    taken(date_only, (("C_DATE",), ("ID",)))


@pytest.mark.parametrize("sql", [
    ('insert into "APP"."T0"("ID","NAME","AMOUNT","CREATED","NOTE") values (\'1\',\'O\'\'Brien\',\'5\','
     'TO_DATE(\'2024-02-29 13:14:15\', \'YYYY-MM-DD HH24:MI:SS\'),NULL);'),
    'insert into "APP"."T0"("ID","NAME") values (\'1\',\'\');',
    'insert into "APP"."T0"("ID","NAME") values (\'1\',\'\'\'\');',
    'insert into "APP"."T0"("ID","NAME") values (\'1\',\'a\\\\b\\n"c"\');',
    'insert into "APP"."T0"("ID","NAME") values (\'1\',\'\x00\x01\x1f\x7f\n\r\t\');',
    'insert into "APP"."T0"("ID","NAME") values (\'1\',\'é 你好 😀 \u2028 \u2029\');',
    'insert into "APP"."T0"("ID","NAME") values (\'1\',\'a\'\', \'\'b\');',
    ('update "APP"."T0" set "AMOUNT" = \'7\', "NAME" = \'upd 1.2\' where "ID" = \'1\' and "NAME" = \'x\'\'y 1\' and '
     '"AMOUNT" = \'1\' and "CREATED" = TO_DATE(\'2024-02-02 01:01:00\', \'YYYY-MM-DD HH24:MI:SS\') and "NOTE" IS NULL '
     'and ROWID = \'AAAS00AAEAA000000001\';'),
    'update "APP"."T0" set "NOTE" = \'n\' where "ID" = \'1\' and ROWID = \'AAAS00AAEAA000000001\';',  # NOTE appended
    'update "APP"."T0" set "NAME" = NULL where "ID" = \'1\' and "NAME" = \'a\' and ROWID = \'AAAx\';',
    'delete from "APP"."T0" where "ID" = \'1\' and "NAME" = \'it\'\'s\' and "NOTE" IS NULL and ROWID = \'AAAx\';',
    ('delete from "APP"."T0" where "ID" = \'1\' and "CREATED" = TO_DATE(\'9999-12-31 23:59:59\', '
     '\'YYYY-MM-DD HH24:MI:SS\') and ROWID = \'AAAx\';'),
])
@pytest.mark.parametrize("spec", SIM_SPECS)
def test_common_shapes_are_taken(sql: str, spec: Any) -> None:
    taken(sql, spec)


def test_long_values_are_taken() -> None:
    """A CSF-joined statement: values longer than any internal buffer's first guess."""
    note = ("long note 'q' \\ é😀 \x01 " * 3000)
    row = {**base_row(4), "NOTE": note}
    for sql in (sql_insert(1, row), sql_update(1, {"NOTE": note * 2}, row, row_id(1, 4)),
                sql_delete(1, row, row_id(1, 4))):
        taken(sql, SIM_SPECS[0])


# ---- batches and arguments -----------------------------------------------------------------------------------

@settings(SETTINGS, max_examples=40)
@given(cases=st.lists(hostile(), max_size=40), common=st.lists(sim_rows(), max_size=10), data=st.data())
def test_a_batch_equals_one_by_one(cases: list, common: list, data: Any) -> None:
    specs = [spec for _, spec in cases] + list(SIM_SPECS)
    sqls = [sql for sql, _ in cases] + [sql_insert(1, r) for r in common]
    idx = list(range(len(cases))) + [data.draw(st.integers(len(cases), len(specs) - 1)) for _ in common]
    order = data.draw(st.permutations(range(len(sqls))))
    sqls, idx = [sqls[k] for k in order], [idx[k] for k in order]
    batch = check(sqls, idx, specs)
    alone = [redo_json.build([s], [0], [specs[i]])[0] for s, i in zip(sqls, idx)]
    assert batch == alone
    assert redo_json.build(tuple(sqls), tuple(idx), tuple(specs)) == batch  # any Sequence


def test_empty_batch() -> None:
    assert redo_json.build([], [], []) == []
    assert redo_json.build([], [], list(SIM_SPECS)) == []


GOOD = 'insert into "S"."T"("A") values (\'1\');'


@pytest.mark.parametrize(("sqls", "idx", "specs"), [
    ([GOOD], [1], [((), None)]),                       # spec index out of range
    ([GOOD], [10**30], [((), None)]),                  # not even a C long
    ([GOOD, GOOD], [0], [((), None)]),                 # fewer spec indices than statements
    ([GOOD], [0, 0], [((), None)]),                    # more
    ([GOOD, 5], [0, 0], [((), None)]),                 # a non-str statement
    ([GOOD, b"insert"], [0, 0], [((), None)]),
    ([GOOD, None], [0, 0], [((), None)]),
    ([GOOD], ["0"], [((), None)]),                     # a non-int spec index
    ([GOOD], [0.0], [((), None)]),
    ([GOOD], [0], [None]),                             # a spec that is not (temporal, pk)
    ([GOOD], [0], [((),)]),
    ([GOOD], [0], [((), None, None)]),
    ([GOOD], [0], [((1,), None)]),                     # names that are not str
    ([GOOD], [0], [((), (1,))]),
    ([GOOD], [0], [((), (None,))]),
    ([GOOD], [0], []),
    (None, [0], [((), None)]),
    ([GOOD], None, [((), None)]),
    ([GOOD], [0], None),
    (GOOD, [0] * len(GOOD), [((), None)]),             # a str is a sequence of 1-char statements: rejected or not,
])                                                     # never a crash (checked below)
def test_bad_arguments_raise(sqls: Any, idx: Any, specs: Any) -> None:
    """Out-of-range indices, non-str statements, malformed specs: an exception, never a crash; a spec that
    Python can still read as (temporal, pk) may instead give the contract's answer (None or reference's)."""
    if not redo_json.NATIVE:
        return  # the pure-Python fallback only counts statements
    try:
        got = redo_json.build(sqls, idx, specs)
    except (TypeError, IndexError, ValueError, OverflowError):
        return
    assert isinstance(got, list) and len(got) == len(sqls), got
    for sql, i, answer in zip(sqls, idx, got):
        if answer is None:
            continue
        assert isinstance(sql, str), f"build answered {answer!r} for the non-str statement {sql!r}"
        spec = specs[i]
        want, exc = _reference(sql, spec)
        assert exc is None and answer == want, (
            f"build({sqls!r}, {idx!r}, {specs!r}) answered {answer!r}, the reference {want!r} / {exc!r}")


@pytest.mark.parametrize("spec", [("A", None), ((), "A"), ((), "AB"), ((), ()), (["A"], ["A"]), ((), ["A", "B"]),
                                  (("A", "A"), ("A", "A")), (frozenset(), None)])
def test_odd_but_readable_specs(spec: Any) -> None:
    """Specs Python still reads as (temporal, pk) (a str is a sequence of names, lists, an empty pk):
    an exception (TypeError / ValueError), or the contract's answer, never a crash."""
    sqls = [GOOD, 'insert into "S"."T"("A","B") values (\'1\',\'2\');', 'delete from "S"."T" where "A" = \'1\';']
    try:
        got = redo_json.build(sqls, [0, 0, 0], [spec])
    except (TypeError, ValueError):
        assert redo_json.NATIVE
        return
    check(sqls, [0, 0, 0], [spec])
    assert len(got) == 3


def test_negative_spec_index() -> None:
    """-1 may raise or mean the last spec (Python's indexing), never anything else."""
    if not redo_json.NATIVE:
        return
    specs = [((), ("A",)), ((), None)]
    try:
        got = redo_json.build([GOOD], [-1], specs)
    except (IndexError, ValueError, TypeError):
        return
    assert got[0] is None or got[0] == redo_json.reference(GOOD, specs[-1])


def test_no_reference_leaks() -> None:
    """The arguments' reference counts are unchanged after many calls (no leaked or stolen reference)."""
    sql = 'update "S"."T" set "A" = \'2\' where "A" = \'1\' and ROWID = \'AAAx\';'[:-1] + ";"  # not interned
    specs = [(("B",), ("A",)), ((), None)]
    sqls, idx = [sql, sql + "x"], [0, 1]
    redo_json.build(sqls, idx, specs)
    before = [sys.getrefcount(x) for x in (sql, specs[0], specs[0][0], specs[0][1], specs[1], sqls, idx, specs)]
    for _ in range(200):
        out = redo_json.build(sqls, idx, specs)
    del out
    after = [sys.getrefcount(x) for x in (sql, specs[0], specs[0][0], specs[0][1], specs[1], sqls, idx, specs)]
    assert after == before


def test_results_are_fresh_objects() -> None:
    if not redo_json.NATIVE:
        return
    sql = 'insert into "S"."T"("A") values (\'1\');'
    a = redo_json.build([sql, sql], [0, 0], [((), None)])
    assert a[0] == a[1] == redo_json.reference(sql, ((), None))
    assert sys.getrefcount(a[0][1]) < 100  # not a shared cached object that callers could corrupt


# ---- JSON escaping ----------------------------------------------------------------------------------------------

def _ins(name: str, value: str, spec: Any = ((), None)) -> tuple[str, Any]:
    return f'insert into "S"."T"("ID",{qname(name)}) values (\'1\',{lit(value)});', spec


ASCII = [chr(c) for c in range(0x80)]
WIDE = ["\x80", "\x9f", "\xa0", "\xff", "\u0100", "\u07ff", "\u0800", "\u2028", "\u2029", "\ufeff", "\uffff",
        "\U00010000", "\U0001f600", "\U0010ffff"]


@pytest.mark.parametrize("spec", [((), None), ((), ("ID",)), ((), ("ID", "V"))])
def test_every_ascii_code_point_in_a_value(spec: Any) -> None:
    sqls, want = [], []
    for c in ASCII + WIDE:
        for v in (c, f"a{c}b", c * 3, f"{c}'{c}"):
            sql, _ = _ins("V", v)
            sqls.append(sql)
            want.append(orjson.dumps({"ID": "1", "V": v}))
            sqls.append(f'update "S"."T" set "V" = {lit(v)} where "ID" = \'1\' and "V" = {lit(v + c)} and '
                        f"ROWID = 'AAAx';")
            want.append(orjson.dumps({"ID": "1", "V": v}))
    for sql, w in zip(sqls, want):  # the reference is orjson's own escaping (so is the native's target)
        assert redo_json.reference(sql, spec)[3] == w
    got = check(sqls, [0] * len(sqls), [spec])
    if redo_json.NATIVE:
        missed = [s for s, g in zip(sqls, got) if g is None]
        assert not missed, f"{len(missed)} plain literals left to the row path, e.g. {missed[0]!r}"


@pytest.mark.parametrize("spec", [((), None), ((), ("ID",)), (("D",), ("ID", "D"))])
def test_every_ascii_code_point_in_a_column_name(spec: Any) -> None:
    sqls = []
    for c in ASCII + WIDE:
        for name in (c, f"A{c}B", f"{c}{c}"):
            sqls.append(_ins(name, "v")[0])
            sqls.append(f'update "S"."T" set {qname(name)} = \'2\' where "ID" = \'1\' and {qname(name)} = \'1\' and '
                        f"ROWID = 'AAAx';")
            sqls.append(f'delete from "S"."T" where {qname(name)} IS NULL and "ID" = \'1\';')
    check(sqls, [0] * len(sqls), [spec])
    check(sqls, [0] * len(sqls), [((f"A{chr(1)}B", '"', "\\", "D"), (f"A{chr(1)}B", "\\"))])


SURROGATE_CASES = [
    _ins("V", "a\ud800b")[0], _ins("V", "\udfff")[0], _ins("V\udc00", "v")[0],
    'insert into "S"."T\ud800"("A") values (\'1\');',  # only in the table name: not in the JSON
    'delete from "S"."T" where "A" = \'1\' and ROWID = \'\ud800\';',  # only in the ROWID: not in the JSON
    'update "S"."T" set "A" = \'\ud83d\' where "A" = \'\ude00\';',
    'insert into "S"."T"("A") values (\'\ud83d\ude00\');',  # a valid pair: an emoji in UTF-16 clothing
    'insert into "S"."T"("A") values (\'\ud800', '\ud800',
]


@pytest.mark.parametrize("sql", SURROGATE_CASES)
@pytest.mark.parametrize("spec", [((), None), ((), ("A",)), (("A",), ("A",))])
def test_lone_surrogates(sql: str, spec: Any) -> None:
    """A str Python holds but UTF-8 cannot: None, or an error only where the row path errs too."""
    want, exc = _reference(sql, spec)
    try:
        got = redo_json.build([sql, GOOD], [0, 0], [spec])
    except Exception as err:  # noqa: BLE001
        assert exc is not None, f"build raised {err!r} where the row path answers {want!r}: {sql!r}"
        assert isinstance(err, (TypeError, ValueError)), f"build raised {err!r} (row path: {exc!r}) for {sql!r}"
        return
    assert got[0] is None or (exc is None and got[0] == want), f"{got[0]!r} vs {want!r} / {exc!r} for {sql!r}"
    assert got[1] is None or got[1] == redo_json.reference(GOOD, spec)


# ---- sources: the Change's source fields, when the caller passes the rows' positions -----------------------------

I64 = st.integers(-(2**63), 2**63 - 1)
rs_ids = st.one_of(st.none(), st.just(" 0x0000a1.00000012.0010 "), texts,
                   st.sampled_from(["\ud800", "a\udfffb"]))  # lone surrogates: not UTF-8 (the row path's error)


@st.composite
def batches_with_sources(draw: Any) -> tuple[list[str], list[int], list[Any], tuple[list, ...]]:
    rows = draw(st.lists(st.one_of(logminer_rows(), logminer_rows(), hostile().map(lambda c: (*c, False))),
                         min_size=1, max_size=12))
    n = len(rows)
    xids = [orjson.dumps(x) for x in draw(st.lists(st.one_of(st.just("0a.1f.0000022b"), texts), min_size=n, max_size=n))]
    sources = (draw(st.lists(I64, min_size=n, max_size=n)), draw(st.lists(I64, min_size=n, max_size=n)), xids,
               draw(st.lists(rs_ids, min_size=n, max_size=n)),
               draw(st.lists(st.one_of(st.none(), I64), min_size=n, max_size=n)))
    return [r[0] for r in rows], list(range(n)), [r[1] for r in rows], sources


def _source(sources: tuple[list, ...], i: int) -> tuple[bytes | None, BaseException | None]:
    scn, commit, xid, rs, ssn = (col[i] for col in sources)
    try:
        return redo_json.reference_source(scn, commit, orjson.loads(xid), rs, ssn), None
    except Exception as exc:  # noqa: BLE001
        return None, exc


@settings(SETTINGS, max_examples=80)
@given(batch=batches_with_sources())
def test_sources_are_the_reference_source(batch: Any) -> None:
    """With ``sources`` every answer is ``reference(..) + (reference_source(..),)`` or None; a row taken without
    sources is taken with them unless its RS_ID is not UTF-8 (a lone surrogate: None, the row path errs)."""
    sqls, idx, specs, sources = batch
    plain = check(sqls, idx, specs)
    got = redo_json.build(sqls, idx, specs, sources)
    assert isinstance(got, list) and len(got) == len(sqls)
    for i, (sql, answer) in enumerate(zip(sqls, got)):
        want_source, exc = _source(sources, i)
        if answer is None:
            assert plain[i] is None or exc is not None, (
                f"taken without sources, not with them (source {want_source!r}): {sql!r}")
            continue
        assert type(answer) is tuple and len(answer) == 5, f"{answer!r} for {sql!r}"
        assert answer[:4] == plain[i], f"with sources {answer[:4]!r}, without {plain[i]!r}: {sql!r}"
        assert exc is None, f"build answered {answer!r} where reference_source raises {exc!r}"
        assert type(answer[4]) is bytes and answer[4] == want_source, (
            f"source {answer[4]!r} != {want_source!r} for {[col[i] for col in sources]!r}")


def test_sources_of_the_simulator_rows() -> None:
    sqls = [sql_insert(0, base_row(1)), sql_update(0, {"NAME": "x"}, base_row(1), "AAAx"),
            sql_delete(0, base_row(1), "AAAx")]
    sources = ([10, 11, 2**63 - 1], [12, 12, 0], [orjson.dumps("0a.1f.0000022b")] * 3,
               [" 0x0000a1.00000012.0010 ", None, "é\x01\""], [0, None, 7])
    got = redo_json.build(sqls, [0, 0, 0], [SIM_SPECS[0]], sources)
    for i, (sql, answer) in enumerate(zip(sqls, got)):
        want = (*redo_json.reference(sql, SIM_SPECS[0]), _source(sources, i)[0])
        assert answer is None and not redo_json.NATIVE or answer == want, (answer, want)
    assert redo_json.build([], [], [SIM_SPECS[0]], ([], [], [], [], [])) == []


GOOD_SOURCES = ([1], [2], [b'"x"'], [None], [3])


@pytest.mark.parametrize("sources", [
    [[1], [2], [b'"x"'], [None], [3]],                  # not a tuple
    ([1], [2], [b'"x"'], [None]),                       # four columns
    ([1], [2], [b'"x"'], [None], [3], [4]),             # six
    ([1, 2], [2], [b'"x"'], [None], [3]),               # a column longer than sqls
    ([], [], [], [], []),                               # shorter
    ([1], [2], ['"x"'], [None], [3]),                   # a txId as str, not its JSON bytes
    ([1.0], [2], [b'"x"'], [None], [3]),                # an SCN that is not an int
    (["1"], [2], [b'"x"'], [None], [3]),
    ([1], [None], [b'"x"'], [None], [3.5]),
    ([2**64], [2], [b'"x"'], [None], [3]),              # beyond 64 bits
    ([1], [2], [b'"x"'], [5], [3]),                     # an RS_ID that is not a str
    ([1], [2], [b'"x"'], [b"rs"], [3]),
    (5, [2], [b'"x"'], [None], [3]),                    # a column that is not a sequence
    "abcde",
])
def test_bad_sources_raise(sources: Any) -> None:
    """Malformed sources: TypeError / ValueError / OverflowError, or the contract's answer; never a crash."""
    if not redo_json.NATIVE:
        return
    try:
        got = redo_json.build([GOOD], [0], [((), None)], sources)
    except (TypeError, ValueError, OverflowError, IndexError):
        return
    assert isinstance(got, list) and len(got) == 1
    if got[0] is not None:
        scn, commit, xid, rs, ssn = (col[0] for col in sources)
        assert got[0] == (*redo_json.reference(GOOD, ((), None)),
                          redo_json.reference_source(scn, commit, orjson.loads(xid), rs, ssn))


def test_sources_keep_reference_counts() -> None:
    sql = 'insert into "S"."T"("A") values (\'1\');'[:-1] + ";"
    specs = [((), None)]
    xid, rs = orjson.dumps("0a.1f.0000022b"), " 0x0000a1.00000012.0010 "[:-1] + " "
    sources = ([12345678901], [12345678902], [xid], [rs], [77777777777])
    objs = (sql, xid, rs, sources, *sources, specs)
    redo_json.build([sql], [0], specs, sources)
    before = [sys.getrefcount(x) for x in objs]
    for _ in range(200):
        out = redo_json.build([sql], [0], specs, sources)
    del out
    assert [sys.getrefcount(x) for x in objs] == before


# ---- memory safety: argument objects the C side must not outlive or trust ---------------------------------------

def _run(code: str) -> str:
    """``code`` in a fresh interpreter (a crash there is a failed test here, not a dead test run)."""
    import subprocess
    import textwrap

    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, check=False,
                          cwd=Path(redo_json.__file__).parents[3])
    assert proc.returncode == 0, f"exit status {proc.returncode} (-11: SIGSEGV)\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_spec_names_from_temporary_objects() -> None:
    """temporal / pk given as a str, a generator or a map (Python reads each as a sequence of names): their
    str objects live only as long as the C side's copy of the sequence. The answer must be an error or the
    contract's, never names read from freed memory."""
    out = _run('''
        from readers.oracle.columnar import redo_json as R
        cases = [
            ('insert into "S"."T"("你","好") values (\\'1\\',\\'2\\');', lambda: ((), "你好"), ((), ("你", "好"))),
            ('insert into "S"."T"("你","好") values (\\'1\\',\\'2\\');', lambda: ((), "好"), ((), ("好",))),
            ('insert into "S"."T"("IDENTIFIER_1","B") values (\\'1\\',\\'2\\');',
             lambda: ((), map("".join, [["IDENTIFIER", "_1"], ["B"]])), ((), ("IDENTIFIER_1", "B"))),
            ('insert into "S"."T"("DATE_COLUMN_1") values (TO_DATE(\\'2024-02-29 13:14:15\\', \\'YYYY-MM-DD HH24:MI:SS\\'));',
             lambda: ((f"DATE_COLUMN_{i}" for i in (1,)), None), (("DATE_COLUMN_1",), None)),
        ]
        bad = []
        for sql, spec, same in cases:
            want = R.reference(sql, same)
            for _ in range(30):
                try:
                    got = R.build([sql] * 40, [0] * 40, [spec()])
                except (TypeError, ValueError):
                    continue
                bad += [(sql, g, want) for g in got if g is not None and g != want]
        print(len(bad), bad[:1])
    ''')
    assert out.startswith("0 "), out


def test_arguments_changed_while_read() -> None:
    """An iterable among the arguments runs Python code while build reads them (here: it empties the
    statement / spec lists): an exception or an answer, never a read past the end of a list."""
    _run('''
        from readers.oracle.columnar import redo_json as R
        GOOD = 'insert into "S"."T"("A") values (\\'1\\');'

        class Emptying:
            def __init__(self, *victims, names=("A",)):
                self.victims, self.names = victims, names
            def __iter__(self):
                for v in self.victims:
                    v.clear()
                return iter(self.names)

        def attempt(make):
            sqls, idx, specs = [GOOD] * 500, [0] * 500, [((), None), ((), None)]
            args = make(sqls, idx, specs)
            try:
                R.build(*args)
            except Exception:
                pass

        attempt(lambda s, i, p: (s, i, [((), None), (Emptying(s), None)]))
        attempt(lambda s, i, p: (s, i, [((), None), ((), Emptying(s))]))
        attempt(lambda s, i, p: (s, i, p.__setitem__(0, (Emptying(p), None)) or p))  # the specs themselves
        attempt(lambda s, i, p: (s, i, p.__setitem__(0, (Emptying(i), None)) or p))  # the spec indices
        attempt(lambda s, i, p: (s, i, p.__setitem__(1, ((), Emptying(i, s, p))) or p))
        attempt(lambda s, i, p: (s, i, p, (Emptying(s, names=[1] * 500), [1] * 500, [b'"x"'] * 500, [None] * 500,
                                           [None] * 500)))
        attempt(lambda s, i, p: (s, i, p, ([1] * 500, [1] * 500, [b'"x"'] * 500, [None] * 500,
                                           Emptying(s, names=[None] * 500))))
        print("ok")
    ''')
