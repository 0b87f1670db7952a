"""A table's definition AT a DDL's position, for the SchemaChange of that DDL (#36 §4).

The catalog (information_schema) shows a table as it is NOW. A reader behind the server (after downtime, on a busy
host) reaches a DDL after later statements changed the table again: the catalog then shows the later definition,
or none (the table was renamed or dropped since). So at a DDL at binlog position P the reader lists the DDL
statements logged after P (``SHOW BINLOG EVENTS``, from P to the end of the binlogs, cached between DDLs) and:

- follows each table it needs forward through those statements (RENAME TABLE moves it to its new name);
- when none of them changes the table's shape, the catalog's definition (under its final name) is the one at P;
- otherwise it takes the catalog's definition and UNDOES the later statements, newest first: an ``ADD COLUMN c``
  is undone by removing c, ``RENAME COLUMN a TO b`` by naming b a again, a RENAME TABLE by the old name, index and
  table-option clauses change no column. ``DROP COLUMN d`` is a drop and ``ADD COLUMN d`` a new column, so a DROP
  and an ADD of one name, or a rename cycle through a temporary name, come out as what they were;
- a later statement that cannot be undone (DROP/MODIFY/CHANGE COLUMN, a key change, a statement this parser does
  not read, a DROP TABLE) leaves the definition unknown, unless the DDL at P is an ALTER TABLE and that later
  clause names none of the columns P's statement names (the apply takes only the changes the statement names:
  cdc.schema.evolution.statement_changes). For Unknown the caller (the reader) says None where the apply keeps
  the shape it knows (a rename of a captured table, a CREATE whose shape the table's first rows bring), and
  otherwise builds the definition from the statement and checks it against the table's next TABLE_MAP
  (readers/mysql/verify.py).

The catalog is read after the list is made and the list is read again after it: a DDL logged in between makes the
reader start over (bounded), so the list always covers every statement the catalog's definition reflects.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from cdc.stream.events import TableId, TableSchema
from readers.mysql.tables import _Cursor, _name, _tokens, ddl_table, ddl_tables

Later = tuple[str, int, str, str]  # (binlog file, position, default database, statement) of a DDL after P
_SKIP = frozenset({"BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "XA", "INSERT", "UPDATE", "DELETE", "REPLACE",
                   "LOAD", "SET", "GRANT", "REVOKE", "FLUSH"})
_INDEXES = frozenset({"INDEX", "KEY", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CONSTRAINT", "CHECK",
                      "PARTITION", "PERIOD", "SYSTEM", "VECTOR"})
_OPTIONS = frozenset({"ENGINE", "COMMENT", "AUTO_INCREMENT", "ROW_FORMAT", "KEY_BLOCK_SIZE", "FORCE", "ALGORITHM",
                      "LOCK", "STATS_PERSISTENT", "STATS_AUTO_RECALC", "STATS_SAMPLE_PAGES", "PACK_KEYS",
                      "CHECKSUM", "DELAY_KEY_WRITE", "MIN_ROWS", "MAX_ROWS", "AVG_ROW_LENGTH", "ENABLE", "DISABLE",
                      "PAGE_CHECKSUM", "TRANSACTIONAL", "ENCRYPTED", "ENCRYPTION_KEY_ID", "PAGE_COMPRESSED",
                      "PAGE_COMPRESSION_LEVEL", "NOWAIT", "WAIT", "INSERT_METHOD", "ANALYZE", "OPTIMIZE",
                      "REBUILD", "REORGANIZE", "COALESCE", "DISCARD", "IMPORT", "TRUNCATE", "EXCHANGE", "REMOVE",
                      "REPAIR", "CHECK"})


@dataclass(frozen=True, slots=True)
class Clause:
    """One clause of an ALTER TABLE, as far as columns go: ``kind`` add | drop | rename | change | modify | key |
    none (index, table option); ``columns``: the column names it touches ((old, new) for rename and
    change)."""

    kind: str
    columns: tuple[str, ...] = ()


def alter_clauses(query: str, default_db: str) -> list[Clause] | None:
    """The column clauses of a DDL that keeps its table's name (ALTER TABLE, CREATE/DROP INDEX, TRUNCATE ...); None
    for a statement or clause this parser does not read (never guessed)."""
    toks = _tokens(query)
    if not toks:
        return None
    verb = toks[0].upper()
    if verb in ("CREATE", "DROP") and any(t.upper() in ("INDEX", "KEY") for t in toks[1:4]):
        return [Clause("none")]
    if verb in ("TRUNCATE", "OPTIMIZE", "REPAIR", "ANALYZE", "CHECK"):
        return [Clause("none")]
    parts = clause_tokens(query, default_db)
    if parts is None:
        return None
    out = []
    for part in parts:
        clause = _clause(part)
        if clause is None:
            return None
        out.append(clause)
    return out


def clause_tokens(query: str, default_db: str) -> list[list[str]] | None:
    """The tokens of each clause of an ALTER TABLE (split at the commas outside parentheses), None for another
    statement."""
    toks = _tokens(query)
    if not toks or toks[0].upper() != "ALTER":
        return None
    cur = _Cursor(toks, default_db)
    cur.i = 1
    while cur.word("ONLINE", "OFFLINE", "IGNORE"):
        pass
    if not cur.word("TABLE"):
        return None
    cur.words("IF", "EXISTS")
    if cur.table() is None:
        return None
    out, depth, part = [], 0, []
    for tok in toks[cur.i:] + [","]:
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        if tok == "," and depth == 0:
            if part:
                out.append(part)
            part = []
        else:
            part.append(tok)
    return out


def replaced_columns(query: str, default_db: str) -> list[str]:
    """The columns one ALTER drops and adds again under the same name (``DROP COLUMN f, ADD COLUMN f ...``): a
    new column, whose values are not the old one's (names as the ADD spells them)."""
    clauses = alter_clauses(query, default_db) or []
    dropped = {c.columns[0].lower() for c in clauses if c.kind == "drop"}
    return [c.columns[0] for c in clauses if c.kind == "add" and c.columns[0].lower() in dropped]


def _clause(toks: list[str]) -> Clause | None:
    def up(i: int) -> str:
        return toks[i].upper() if i < len(toks) and not toks[i].startswith("`") else ""

    def col(i: int) -> str | None:
        return _name(toks[i]) if i < len(toks) else None

    head = up(0)
    if head in ("ADD", "DROP"):
        i = 1
        if up(i) == "PRIMARY" or (up(i) == "CONSTRAINT" and "PRIMARY" in (up(2), up(3))):
            return Clause("key")
        if up(i) in _INDEXES:
            return Clause("none")
        if up(i) == "COLUMN":
            i += 1
        if up(i) == "IF":
            i += 3 if up(i + 1) == "NOT" else 2
        if i < len(toks) and toks[i] == "(":
            return None  # ADD COLUMN (a ..., b ...): not read
        name = col(i)
        if name is None:
            return None
        if head == "ADD" and any(up(k) == "PRIMARY" for k in range(i + 1, len(toks))):
            return Clause("key")  # ADD COLUMN id INT PRIMARY KEY
        return Clause(head.lower(), (name,))
    if head == "RENAME":
        if up(1) in ("INDEX", "KEY"):
            return Clause("none")
        if up(1) == "COLUMN" and up(3) == "TO" and col(2) and col(4):
            return Clause("rename", (col(2), col(4)))
        if up(1) in ("TO", "AS") or (len(toks) <= 3 and up(1) != "COLUMN"):
            return Clause("none")  # the table's own new name: a RENAME TABLE step of its own
        return None
    if head == "CHANGE":
        i = 2 if up(1) == "COLUMN" else 1
        if up(i) == "IF":
            i += 2
        old, new = col(i), col(i + 1)
        return Clause("change", (old, new)) if old and new else None
    if head in ("MODIFY", "ALTER"):
        if head == "ALTER" and up(1) == "INDEX":
            return Clause("none")
        i = 2 if up(1) == "COLUMN" else 1
        if up(i) == "IF":
            i += 2
        name = col(i)
        return Clause("modify", (name,)) if name else None
    if head in _OPTIONS or head in ("DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "ORDER") and "CONVERT" not in toks:
        return Clause("none")
    return None


def later_ddls(conn: Any, file: str, pos: int) -> tuple[list[Later], tuple[str, int]]:
    """Every Query event after ``file:pos`` up to the end of the binlogs that may be DDL (BEGIN, COMMIT and DML
    left out), as (file, position, default database, statement); and where the list ends (file, end position of
    its last event), where the next look continues."""
    import pymysql

    with conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        files = [r[0] if not isinstance(r, dict) else r["Log_name"] for r in cur.fetchall()]
    out: list[Later] = []
    end = (file, pos)
    for f in (f for f in files if f >= file):
        with conn.cursor(pymysql.cursors.SSCursor) as cur:  # streamed: a long binlog is not held in memory
            if f == file:
                cur.execute("SHOW BINLOG EVENTS IN %s FROM %s", (f, pos))
            else:
                cur.execute("SHOW BINLOG EVENTS IN %s", (f,))
            for _, at, kind, _, stop, info in cur:
                end = (f, int(stop))
                if kind != "Query" or not info:
                    continue
                db, stmt = "", str(info)
                if stmt.startswith("use `"):
                    cut = stmt.find("`; ", 5)
                    if cut > 0:
                        db, stmt = stmt[5:cut].replace("``", "`"), stmt[cut + 3:]
                word = stmt.lstrip().split(None, 1)[0].upper() if stmt.strip() else ""
                if word not in _SKIP:
                    out.append((f, int(at), db, stmt))
    return out, end


class Lookahead:
    """The DDL statements after the reader's position, kept between DDLs so a reader far behind reads each part
    of the binlog once (one per reader; reset when its stream reopens)."""

    def __init__(self) -> None:
        self._later: list[Later] = []
        self._start: tuple[str, int] | None = None
        self._scanned: tuple[str, int] | None = None

    def after(self, conn: Any, file: str, pos: int) -> list[Later]:
        """The statements logged after ``file:pos`` (the end of the DDL at the position), up to now."""
        here = (file, pos)
        if self._start is None or self._scanned is None or not self._start <= here <= self._scanned:
            self._later, self._start, start = [], here, here
        else:
            self._later = [e for e in self._later if (e[0], e[1]) >= here]
            start = self._scanned
        more, self._scanned = later_ddls(conn, *start)
        self._later += more
        return list(self._later)

    def reset(self) -> None:
        self._later, self._start, self._scanned = [], None, None


@dataclass(frozen=True, slots=True)
class Unknown:
    """The definition cannot be known at the position: ``blocker`` is the later statement in the way."""

    blocker: str


def definition_at(table: TableId, later: list[Later], read_catalog: Callable[[TableId], TableSchema | None],
                  named_columns: set[str] | None) -> TableSchema | Unknown:
    """``table``'s definition after the DDL at the position ``later`` starts after (see the module docstring).

    ``named_columns``: the lower-case columns the DDL at the position names when it is an ALTER of ``table`` (a
    later clause naming none of them may stay applied), None for any other DDL (every later change is undone)."""
    name, chain = table, []
    for _, _, db, stmt in later:
        parsed = ddl_tables(stmt, db)
        if parsed is None:
            if ddl_table(stmt, db) == name:
                return Unknown(stmt)
            continue
        if parsed.kind == "rename":
            if name not in parsed.tables:
                continue
            if stmt.lstrip()[:5].upper() == "ALTER":  # ALTER TABLE t ..., RENAME TO u: its clauses, then the rename
                clauses = alter_clauses(stmt, db)
                if clauses is None:
                    return Unknown(stmt)
                chain.append(("alter", stmt, clauses, name))
            for old, new in parsed.renames:
                if old == name:
                    chain.append(("rename", stmt, old, new))
                    name = new
        elif parsed.kind == "drop":
            if name in parsed.tables:
                return Unknown(stmt)
        elif parsed.kind == "create":
            if parsed.tables[0] == name and not parsed.if_not_exists:
                return Unknown(stmt)
        elif parsed.tables and parsed.tables[0] == name:
            clauses = alter_clauses(stmt, db)
            if clauses is None:
                return Unknown(stmt)
            chain.append(("alter", stmt, clauses, name))
    shape = read_catalog(name)
    if shape is None:
        return Unknown(f"(no table {name} in the catalog)")
    for step in reversed(chain):
        if step[0] == "rename":
            shape = TableSchema(step[2], shape.columns, shape.primary_key)
            continue
        swapped = _unrename(shape, step[2])
        if swapped is not None:
            shape = swapped
            continue
        for clause in reversed(step[2]):
            undone = _undo(shape, clause, named_columns)
            if undone is None:
                return Unknown(step[1])
            shape = undone
    return shape


def _unrename(shape: TableSchema, clauses: list[Clause]) -> TableSchema | None:
    """A statement whose column clauses are renames only, undone at once (its clauses name the columns as they
    were before it, so ``RENAME COLUMN a TO b, RENAME COLUMN b TO a`` is a swap); None for any other statement."""
    renames = [c.columns for c in clauses if c.kind == "rename"]
    if not renames or any(c.kind not in ("rename", "none") for c in clauses):
        return None
    back = {new.lower(): old for old, new in renames}
    names = [c.name.lower() for c in shape.columns]
    if len(back) != len(renames) or not set(back) <= set(names):
        return None
    cols = tuple(replace(c, name=back.get(c.name.lower(), c.name)) for c in shape.columns)
    if len({c.name.lower() for c in cols}) != len(cols):
        return None
    pk = tuple(back.get(k.lower(), k) for k in shape.primary_key)
    return TableSchema(shape.table, cols, pk)


def _undo(shape: TableSchema, clause: Clause, named: set[str] | None) -> TableSchema | None:
    cols = list(shape.columns)
    at = {c.name.lower(): i for i, c in enumerate(cols)}
    touched = [n.lower() for n in clause.columns]
    if clause.kind == "none":
        return shape
    if clause.kind == "add" and touched[0] in at:
        del cols[at[touched[0]]]
        gone = shape.columns[at[touched[0]]].name
        return TableSchema(shape.table, tuple(cols), tuple(k for k in shape.primary_key if k != gone))
    if clause.kind == "rename" and touched[1] in at and touched[0] not in at:
        i = at[touched[1]]
        c, old = cols[i], clause.columns[0]
        cols[i] = replace(c, name=old)
        return TableSchema(shape.table, tuple(cols), tuple(old if k == c.name else k for k in shape.primary_key))
    if named is not None and clause.kind in ("drop", "change", "modify", "add", "rename") \
            and not set(touched) & named:
        return shape  # a change of other columns: the apply takes only what the statement at the position names
    return None


def named_columns(query: str, default_db: str) -> set[str] | None:
    """The lower-case columns an ALTER names (its clauses'), None when it is not one this parser reads."""
    clauses = alter_clauses(query, default_db)
    if clauses is None:
        return None
    return {c.lower() for clause in clauses for c in clause.columns}
