"""The simulator's ``evolve`` workload: every kind of DDL on captured tables, with writes before and after each.

With ``evolve=N`` (and ``lanes=1``: a DDL waits for the transactions on its table, so they do not overlap it),
transaction ``k * N + N - 1`` is the DDL of step ``k`` of :data:`PLAN` and every other committed transaction
also writes APP.E: it inserts a row with its own number as ID, updates the row the transaction before
inserted, and every third one deletes the row before that; it inserts a row into each small table that
exists (E2, E3, X3, E4, E5; not S4, which stays empty until it is renamed to E4). Each row is written in the
shape its table has at that point; the dictionary (ALL_TAB_COLUMNS, ALL_CONS_COLUMNS) is
answered as it was at any SCN (``AS OF SCN``) or at the head.

SQL_REDO names columns and tables as of the row's SCN (the names a LogMiner dictionary that followed the DDL
gives them); the flat-file dictionary knows a renamed table (:data:`OBJECTS`) as one object, under any name.
Column types are as declared (``VARCHAR2(20)``, ``NUMBER(8,2)``): the simulator's ALL_TAB_COLUMNS gives their
DATA_LENGTH, CHAR_LENGTH, DATA_PRECISION and DATA_SCALE (simulator.catalog_row). The renames go into, out of and
within the tables patterns :data:`CAPTURED`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

E, E2, E3, E_INDEX, X3, S4, E4, E5 = 90, 91, 92, 93, 94, 95, 96, 97  # table numbers (workload.table_name)
NAMES = {E: "E", E2: "E2", E3: "E3", E_INDEX: "E_QTY", X3: "X3", S4: "S4", E4: "E4", E5: "E5"}
# the tables that are one object under several names (renamed): its rows keep the first name's row ids
OBJECTS = (("E2", "E3", "X3"), ("S4", "E4", "E5"))
CAPTURED = ["APP.E*", "APP.T*"]  # the tables patterns the evolve plan's renames are in, out of and into
SCHEMA = "APP"


@dataclass(frozen=True)
class Col:
    name: str
    type: str  # as declared (VARCHAR2(20), NUMBER(8,2)): ALL_TAB_COLUMNS from simulator.catalog_row
    nullable: bool
    default: str | None  # DATA_DEFAULT as Oracle keeps it (the clause's text)
    role: str  # which logical value of a row it holds


State = dict[str, tuple[tuple[Col, ...], tuple[str, ...]]]  # table name -> (columns, primary key)

E0: State = {"E": ((Col("ID", "NUMBER", False, None, "id"), Col("NAME", "VARCHAR2(20)", True, None, "name"),
                    Col("QTY", "NUMBER(8,2)", True, None, "qty"), Col("NOTE", "VARCHAR2(40)", True, None, "note"),
                    Col("BORN", "DATE", True, None, "born")), ("ID",))}
_SMALL = (Col("ID", "NUMBER", False, None, "id"), Col("V", "VARCHAR2(20)", True, None, "v")), ("ID",)


def _rename(old: str, new: str):
    return lambda s: {(new if k == old else k): v for k, v in s.items()}


def _alter(state: State, fn, pk=None) -> State:
    cols, key = state["E"]
    out = dict(state)
    out["E"] = (tuple(c2 for c in cols if (c2 := fn(c)) is not None), key if pk is None else pk)
    return out


def _col(column: str, **kw):
    return lambda c: replace(c, **kw) if c.name == column else c


def _add_tier(state: State) -> State:
    cols, key = state["E"]
    return {**state, "E": (cols + (Col("TIER", "VARCHAR2(10)", True, "'std' ", "tier"),), key)}


def _pk(state: State, key: tuple[str, ...]) -> State:  # ADD PRIMARY KEY makes its columns NOT NULL
    return _alter(state, lambda c: replace(c, nullable=False) if c.name in key else c, key)


_E = f'"{SCHEMA}"."E"'
# (kind, table number of the DDL row, SQL_REDO, the dictionary after it); the tables patterns: CAPTURED
PLAN: list[tuple[str, int, str, object]] = [
    ("create table", E2, f'create table "{SCHEMA}"."E2" ("ID" number primary key, "V" varchar2(20))',
     lambda s: {**s, "E2": _SMALL}),
    ("rename table (ALTER TABLE ... RENAME TO)", E2, f'alter table "{SCHEMA}"."E2" rename to "E3"', _rename("E2", "E3")),
    ("create table outside the patterns", S4, f'create table "{SCHEMA}"."S4" ("ID" number primary key, "V" varchar2(20))',
     lambda s: {**s, "S4": _SMALL}),
    ("rename table into the patterns (RENAME)", S4, 'rename "S4" to "E4"', _rename("S4", "E4")),
    ("rename table out of the patterns (RENAME)", E3, 'rename "E3" to "X3"', _rename("E3", "X3")),
    ("rename table (RENAME)", E4, 'rename "E4" to "E5"', _rename("E4", "E5")),
    ("drop table", E5, f'drop table "{SCHEMA}"."E5" purge', lambda s: {k: v for k, v in s.items() if k != "E5"}),
    ("add column with a default", E, f"alter table {_E} add (\"TIER\" varchar2(10) default 'std')", _add_tier),
    ("drop column", E, f'alter table {_E} drop column "NOTE"', lambda s: _alter(s, lambda c: None if c.name == "NOTE" else c)),
    ("rename column", E, f'alter table {_E} rename column "NAME" to "TITLE"',
     lambda s: _alter(s, _col("NAME", name="TITLE"))),
    ("widen a type (DATE to TIMESTAMP)", E, f'alter table {_E} modify ("BORN" timestamp(3))',
     lambda s: _alter(s, _col("BORN", type="TIMESTAMP(3)"))),
    ("widen TIMESTAMP(3) to TIMESTAMP(6)", E, f'alter table {_E} modify ("BORN" timestamp(6))',
     lambda s: _alter(s, _col("BORN", type="TIMESTAMP(6)"))),
    ("widen VARCHAR2(20) to VARCHAR2(40)", E, f'alter table {_E} modify ("TITLE" varchar2(40))',
     lambda s: _alter(s, _col("TITLE", type="VARCHAR2(40)"))),
    ("widen NUMBER(8,2) to NUMBER(12,2)", E, f'alter table {_E} modify ("QTY" number(12,2))',
     lambda s: _alter(s, _col("QTY", type="NUMBER(12,2)"))),
    ("narrow VARCHAR2(40) to VARCHAR2(12), every value fits", E, f'alter table {_E} modify ("TITLE" varchar2(12))',
     lambda s: _alter(s, _col("TITLE", type="VARCHAR2(12)"))),
    ("NULL to NOT NULL", E, f'alter table {_E} modify ("QTY" not null)', lambda s: _alter(s, _col("QTY", nullable=False))),
    ("NOT NULL to NULL", E, f'alter table {_E} modify ("QTY" null)', lambda s: _alter(s, _col("QTY", nullable=True))),
    ("change a default", E, f"alter table {_E} modify (\"TIER\" default 'gold')",
     lambda s: _alter(s, _col("TIER", default="'gold' "))),
    ("drop the primary key", E, f"alter table {_E} drop primary key", lambda s: _alter(s, lambda c: c, ())),
    ("add a primary key", E, f'alter table {_E} add constraint "E_PK" primary key ("ID", "QTY")',
     lambda s: _pk(s, ("ID", "QTY"))),
    ("create index", E_INDEX, f'create index "{SCHEMA}"."E_QTY" on {_E} ("QTY")', lambda s: s),
    ("truncate", E, f"truncate table {_E}", lambda s: s),
    # last: Oracle only narrows a column whose values fit; a target holding one that does not (written there by
    # someone else) stops the apply here (tests/e2e/test_oracle_ddl_apply.py)
    ("narrow VARCHAR2(12) to VARCHAR2(10)", E, f'alter table {_E} modify ("TITLE" varchar2(10))',
     lambda s: _alter(s, _col("TITLE", type="VARCHAR2(10)"))),
]
ADD_STEP = next(k for k, step in enumerate(PLAN) if step[0] == "add column with a default")
TRUNCATE_STEP = next(k for k, step in enumerate(PLAN) if step[0] == "truncate")


def states() -> list[State]:
    """The dictionary before step 0, after step 0, ... after the last step."""
    out = [E0]
    for *_, fn in PLAN:
        out.append(fn(out[-1]))  # type: ignore[operator]
    return out


STATES = states()


def ddl_step(t: int, n: int) -> int | None:
    """The PLAN step transaction ``t`` runs, None for a transaction of writes."""
    k, r = divmod(t, n)
    return k if r == n - 1 and k < len(PLAN) else None


def steps_before(t: int, n: int) -> int:
    """How many DDL steps committed before transaction ``t``."""
    return min((t + 1) // n, len(PLAN))


def _prev(t: int, n: int) -> int | None:
    """The last transaction of writes before ``t`` (None: none)."""
    p = t - 1
    while p >= 0 and ddl_step(p, n) is not None:
        p -= 1
    return p if p >= 0 else None


def _truncated_through(t: int, n: int) -> int:
    """Rows with an ID at or below this were removed by the TRUNCATE before ``t`` (-1: none)."""
    tt = TRUNCATE_STEP * n + n - 1
    return tt if t > tt else -1


def _values(r: int, n: int, updated: bool) -> dict[str, str]:
    """Row ``r``'s logical values, by role, as SQL_REDO literals without the column's type decoration."""
    born = f"2024-{r % 12 + 1:02d}-{r % 28 + 1:02d} {r % 24:02d}:{r % 60:02d}:00"
    tier = f"t{r % 3}" if steps_before(r, n) > ADD_STEP else "std"  # rows before ADD COLUMN hold its default
    return {"id": str(r), "name": f"e{r}" + (" upd" if updated else ""), "qty": str(r % 50 + (2 if updated else 1)),
            "note": f"note {r}", "born": born, "tier": tier, "v": f"v{r}"}


def _redo(col: Col, v: str) -> str:
    if col.type == "DATE":
        return f"TO_DATE('{v}', 'YYYY-MM-DD HH24:MI:SS')"
    if col.type.startswith("TIMESTAMP"):  # as many fraction digits as the type keeps
        digits = int(col.type[len("TIMESTAMP("):-1]) if col.type.startswith("TIMESTAMP(") else 6
        return f"TO_TIMESTAMP('{v}.{'0' * digits}')"
    return "'" + v.replace("'", "''") + "'"


def _image(cols: tuple[Col, ...], vals: dict[str, str]) -> dict[str, str]:
    """The row as the parser decodes its SQL_REDO (quoted literals unquoted, dates as their TO_DATE text)."""
    return {c.name: (_redo(c, vals[c.role]) if c.type == "DATE" or c.type.startswith("TIMESTAMP") else vals[c.role])
            for c in cols}


def _rid(table: int, ident: int) -> str:
    return f"AAAS{table:02d}AAE{ident:09X}"


def _where(cols: tuple[Col, ...], vals: dict[str, str], rid: str) -> str:
    return " and ".join(f'"{c.name}" = {_redo(c, vals[c.role])}' for c in cols) + f" and ROWID = '{rid}'"


def writes(t: int, n: int) -> list[tuple[int, int, str, str, tuple]]:
    """Transaction ``t``'s rows on the evolving tables: (op code, table number, ROW_ID, SQL_REDO, expected)."""
    st = STATES[steps_before(t, n)]
    cols, _ = st["E"]
    name = f'"{SCHEMA}"."E"'
    out = []
    vals = _values(t, n, False)
    insert = (f"insert into {name}({','.join(chr(34) + c.name + chr(34) for c in cols)}) values "
              f"({','.join(_redo(c, vals[c.role]) for c in cols)});")
    out.append((1, E, _rid(E, t), insert, ("c", E, None, _image(cols, vals))))
    floor = _truncated_through(t, n)
    p = _prev(t, n)
    if p is not None and p > floor:
        old, new = _values(p, n, False), _values(p, n, True)
        sets = ", ".join(f'"{c.name}" = {_redo(c, new[c.role])}' for c in cols if c.role in ("name", "qty"))
        out.append((3, E, _rid(E, p), f"update {name} set {sets} where {_where(cols, old, _rid(E, p))};",
                    ("u", E, _image(cols, old), _image(cols, new))))
        pp = _prev(p, n)
        if t % 3 == 0 and pp is not None and pp > floor:
            gone = _values(pp, n, True)
            out.append((2, E, _rid(E, pp), f"delete from {name} where {_where(cols, gone, _rid(E, pp))};",
                        ("d", E, _image(cols, gone), None)))
    for other, (ocols, _) in st.items():  # the small tables, while they exist (S4 stays empty until renamed in)
        if other in ("E", "S4"):
            continue
        num = next(n for n, name in NAMES.items() if name == other)
        first = next(n for n, name in NAMES.items() if name == next(o for o in OBJECTS if other in o)[0])
        insert = f'insert into "{SCHEMA}"."{other}"("ID","V") values (\'{t}\',\'v{t}\');'
        out.append((1, num, _rid(first, t), insert, ("c", num, None, _image(ocols, vals))))
    return out


def tables_at(step: int) -> State:
    return STATES[step]


DDL_TRACKING = "<ddl tracking>"  # in a mining dictionary's tables: LogMiner follows the DDL it mines (DDL_DICT_TRACKING)


def known(name: str, dictionary_tables: set[str] | frozenset[str]) -> bool:
    """Whether a mining dictionary with these tables knows the object named ``name``: one that follows the DDL
    it mines knows every evolving table; a flat file knows a renamed table (OBJECTS) under any of its names."""
    if DDL_TRACKING in dictionary_tables and name.split(".", 1)[-1] in NAMES.values():
        return True
    for names in OBJECTS:
        if name.split(".", 1)[-1] in names and name.split(".", 1)[0] == SCHEMA:
            return any(f"{SCHEMA}.{n}" in dictionary_tables for n in names)
    return name in dictionary_tables
