"""Which tables a source captures (``tables: [db.table, db.order_*]``, cdc.schema.table_glob), which table a DDL names and which
tables a statement-format DML names."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cdc.schema import table_glob
from cdc.stream.events import TableId, TableSchema

_IDENT = r"(?:`((?:[^`]|``)+)`|([A-Za-z0-9_$]+))"
_QUALIFIED = rf"{_IDENT}(?:\s*\.\s*{_IDENT})?"
_DDL = re.compile(
    r"^\s*(?:/\*.*?\*/\s*)*(?:CREATE|ALTER|DROP|TRUNCATE|RENAME|OPTIMIZE|REPAIR)\s+"
    r"(?:(?:OR\s+REPLACE|ONLINE|OFFLINE|IGNORE|TEMPORARY)\s+)*(?:TABLE\s+)?(?:IF\s+(?:NOT\s+)?EXISTS\s+)?"
    + _QUALIFIED,
    re.IGNORECASE | re.DOTALL,
)
DML_WORDS = frozenset({"INSERT", "UPDATE", "DELETE", "REPLACE", "LOAD"})
# a table named after INTO / UPDATE / FROM / JOIN, or after a comma in a multi-table UPDATE / DELETE list
_DML_TABLE = re.compile(rf"(?:\bINSERT|\bREPLACE|\bINTO|\bUPDATE|\bFROM|\bJOIN|,)\s+(?:(?:LOW_PRIORITY|IGNORE|"
                        rf"QUICK|DELAYED|HIGH_PRIORITY|TABLE|INTO)\s+)*{_QUALIFIED}", re.IGNORECASE)
# where the written tables' part of a statement ends (UPDATE ... SET, DELETE ... WHERE, INSERT ... VALUES)
_DML_END = re.compile(r"\b(?:SET|WHERE|ORDER|LIMIT|VALUES?|SELECT|PARTITION)\b|\(", re.IGNORECASE)
_NON_TABLE = re.compile(r"^\s*(?:CREATE|ALTER|DROP)\s+(?:DATABASE|SCHEMA|USER|VIEW|PROCEDURE|FUNCTION|TRIGGER|EVENT"
                        r"|SEQUENCE|ROLE|SERVER|DEFINER|ALGORITHM)\b", re.IGNORECASE)


class TableFilter:
    """Matches ``db.table`` against the configured patterns (cdc.schema.table_glob: the apply side's rule)."""

    def __init__(self, patterns: list[str]) -> None:
        self.patterns = list(patterns)
        self._seen: dict[TableId, bool] = {}  # rows events name few tables: match each once

    def matches(self, table: TableId) -> bool:
        hit = self._seen.get(table)
        if hit is None:
            hit = self._seen[table] = table_glob.matches(f"{table.db}.{table.table}", self.patterns)
        return hit

    def matches_db(self, db: str) -> bool:
        return table_glob.db_matches(db, self.patterns)



def ddl_table(query: str, default_db: str) -> TableId | None:
    """The table a DDL statement names (first one), None when it names no table."""
    if _NON_TABLE.match(query):
        return None
    m = _DDL.match(query)
    if not m:
        return None
    first = (m.group(1) or "").replace("``", "`") or m.group(2)
    second = (m.group(3) or "").replace("``", "`") or m.group(4)
    if second:
        return TableId(first, second)
    if upper_keyword(first):
        return None
    return TableId(default_db, first) if default_db else None


def upper_keyword(word: str) -> bool:
    return word.upper() in {"INDEX", "UNIQUE", "FULLTEXT", "SPATIAL", "DATABASE", "SCHEMA", "VIEW"}


def dml_tables(query: str, default_db: str) -> list[TableId] | None:
    """The tables a statement-format DML (INSERT, UPDATE, DELETE, REPLACE, LOAD DATA) writes; None when
    the statement is not one of those. The reader refuses such a statement on a captured table
    (binlog_format=STATEMENT or MIXED would otherwise lose its rows silently). Only the statement's
    head counts (up to SET / WHERE / VALUES / SELECT / a parenthesis), so a table it merely reads in
    a subquery or ``INSERT ... SELECT`` is not named; a joined table in a multi-table UPDATE/DELETE is."""
    word = query.lstrip().split(None, 1)[0].upper() if query.strip() else ""
    if word not in DML_WORDS:
        return None
    start = query.upper().find(" INTO ") if word == "LOAD" else 0
    head = query[max(start, 0):]
    end = _DML_END.search(head, 1 + len(word) if start <= 0 else 6)
    head = head[:end.start()] if end else head
    out = []
    for m in _DML_TABLE.finditer(head):
        first = (m.group(1) or "").replace("``", "`") or m.group(2)
        second = (m.group(3) or "").replace("``", "`") or m.group(4)
        if second:
            out.append(TableId(first, second))
        elif default_db:
            out.append(TableId(default_db, first))
    return out


# ---- every table a DDL names (table-level DDL: CREATE, DROP, RENAME; streaming/apply/table_ddl.py) ----------
_TOKEN = re.compile(r"\s+|/\*.*?\*/|--[^\n]*|#[^\n]*|`(?:[^`]|``)*`|'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\""
                    r"|[A-Za-z0-9_$]+|.", re.DOTALL)
# how the online schema change tools name the shadow table of ``t`` (its copy, renamed over ``t`` at the cut-over):
# gh-ost ``_t_gho``, pt-online-schema-change ``_t_new``
SHADOW_NAMES = ("_{}_gho", "_{}_new")


@dataclass(frozen=True, slots=True)
class DdlTables:
    """What a DDL statement does to tables, by name.

    ``kind``: create (``like``: the table it copies the shape of; ``select``: CREATE ... SELECT, whose rows
    follow in the binlog), drop, rename (``renames``: the (old, new) pairs in statement order, applied one
    after the other), alter (ALTER TABLE without RENAME, CREATE/DROP INDEX, TRUNCATE, OPTIMIZE ...: one table
    keeps its name). ``tables``: every table named, in statement order."""

    kind: str
    tables: tuple[TableId, ...]
    renames: tuple[tuple[TableId, TableId], ...] = ()
    like: TableId | None = None
    select: bool = False
    if_not_exists: bool = False  # CREATE TABLE IF NOT EXISTS: MySQL logs it even when the table existed


def _tokens(query: str) -> list[str]:
    """Words, quoted identifiers and punctuation of ``query``; whitespace and comments dropped (a
    ``/*!`` versioned comment is kept: it holds statement text)."""
    out = []
    for m in _TOKEN.finditer(query):
        tok = m.group(0)
        if tok.isspace() or tok.startswith(("--", "#")) or (tok.startswith("/*") and not tok.startswith("/*!")):
            continue
        out.append(tok)
    return out


def _name(tok: str) -> str | None:
    """The identifier a token spells, None for punctuation and string literals."""
    if tok.startswith("`"):
        return tok[1:-1].replace("``", "`")
    if re.fullmatch(r"[A-Za-z0-9_$]+", tok):
        return tok
    return None


class _Cursor:
    def __init__(self, toks: list[str], default_db: str) -> None:
        self.toks, self.i, self.db = toks, 0, default_db

    def peek(self, k: int = 0) -> str:
        return self.toks[self.i + k] if self.i + k < len(self.toks) else ""

    def word(self, *words: str) -> bool:
        """Consume the next token when it is one of ``words`` (case-insensitive, unquoted)."""
        if self.peek().upper() in words and not self.peek().startswith("`"):
            self.i += 1
            return True
        return False

    def words(self, *seq: str) -> bool:
        """Consume the keyword sequence ``seq`` when it is next."""
        if all(self.peek(k).upper() == w and not self.peek(k).startswith("`") for k, w in enumerate(seq)):
            self.i += len(seq)
            return True
        return False

    def table(self) -> TableId | None:
        first = _name(self.peek())
        if first is None:
            return None
        self.i += 1
        if self.peek() == "." and _name(self.peek(1)) is not None:
            second = _name(self.peek(1))
            self.i += 2
            return TableId(first, second)
        return TableId(self.db, first) if self.db else None


def ddl_tables(query: str, default_db: str) -> DdlTables | None:
    """Every table a DDL statement names and what it does to them; None for a statement that names no table
    (CREATE DATABASE, a view, a routine ...) or one this parser does not know (the caller falls back to
    ``ddl_table``). Unqualified names take ``default_db`` (the statement's default database)."""
    if _NON_TABLE.match(query):
        return None
    cur = _Cursor(_tokens(query), default_db)
    verb = cur.peek().upper()
    cur.i += 1
    if verb == "RENAME":
        if not cur.word("TABLE", "TABLES"):
            return None
        cur.words("IF", "EXISTS")
        pairs = []
        while True:
            old = cur.table()
            if cur.word("WAIT"):
                cur.i += 1
            cur.word("NOWAIT")
            if old is None or not cur.word("TO"):
                return None
            new = cur.table()
            if new is None:
                return None
            pairs.append((old, new))
            if cur.peek() != ",":
                break
            cur.i += 1
        return DdlTables("rename", tuple(t for p in pairs for t in p), tuple(pairs))
    if verb == "DROP":
        if cur.word("TEMPORARY"):
            return None  # a session's temporary table: never captured, whatever its name
        if cur.word("INDEX"):
            return _index_table(cur)
        if not cur.word("TABLE", "TABLES"):
            return None
        cur.words("IF", "EXISTS")
        named = []
        while (t := cur.table()) is not None:
            named.append(t)
            if cur.peek() != ",":
                break
            cur.i += 1
        return DdlTables("drop", tuple(named)) if named else None
    if verb == "CREATE":
        cur.words("OR", "REPLACE")
        if cur.word("TEMPORARY"):
            return None
        cur.word("UNIQUE", "FULLTEXT", "SPATIAL")
        cur.word("ONLINE", "OFFLINE")
        if cur.word("INDEX", "KEY"):
            return _index_table(cur)
        if not cur.word("TABLE"):
            return None
        quiet = cur.words("IF", "NOT", "EXISTS")
        table = cur.table()
        if table is None:
            return None
        paren = cur.peek() == "("
        if paren:
            cur.i += 1
        if cur.word("LIKE"):
            like = cur.table()
            return DdlTables("create", (table,) + ((like,) if like else ()), like=like, if_not_exists=quiet)
        select = _top_level_select(cur.toks[cur.i - (1 if paren else 0):])
        return DdlTables("create", (table,), select=select, if_not_exists=quiet)
    if verb == "ALTER":
        while cur.word("ONLINE", "OFFLINE", "IGNORE"):
            pass
        if not cur.word("TABLE"):
            return None
        cur.words("IF", "EXISTS")
        table = cur.table()
        if table is None:
            return None
        new = _alter_rename(cur)
        if new is not None:
            return DdlTables("rename", (table, new), ((table, new),))
        return DdlTables("alter", (table,))
    if verb in ("TRUNCATE", "OPTIMIZE", "REPAIR", "ANALYZE", "CHECK"):
        cur.word("TABLE", "NO_WRITE_TO_BINLOG", "LOCAL")
        table = cur.table()
        return DdlTables("alter", (table,)) if table is not None else None
    return None


def _index_table(cur: _Cursor) -> DdlTables | None:
    """The table of ``CREATE ... INDEX i ON t`` / ``DROP INDEX i ON t`` (after the INDEX keyword)."""
    cur.words("IF", "NOT", "EXISTS") or cur.words("IF", "EXISTS")
    while cur.peek() and not cur.word("ON"):
        cur.i += 1
    table = cur.table()
    return DdlTables("alter", (table,)) if table is not None else None


def _top_level_select(toks: list[str]) -> bool:
    """Whether a CREATE TABLE's rest holds a SELECT outside the column list's parentheses."""
    depth = 0
    for tok in toks:
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        elif depth == 0 and tok.upper() in ("SELECT", "WITH", "VALUES", "TABLE") and not tok.startswith("`"):
            return True
    return False


def _alter_rename(cur: _Cursor) -> TableId | None:
    """The new name of an ``ALTER TABLE t ..., RENAME [TO|AS] new`` (a top-level RENAME that is not RENAME
    COLUMN / INDEX / KEY), else None."""
    depth = 0
    while cur.peek():
        tok = cur.peek()
        cur.i += 1
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        elif depth == 0 and tok.upper() == "RENAME" and cur.peek().upper() not in ("COLUMN", "INDEX", "KEY"):
            cur.word("TO", "AS")
            return cur.table()
    return None


def is_shadow(shadow: TableId, table: TableId) -> bool:
    """Whether ``shadow`` is an online schema change tool's copy of ``table`` (SHADOW_NAMES, same database)."""
    return shadow.db == table.db and any(shadow.table == f.format(table.table) for f in SHADOW_NAMES)


def ddl_subject(query: str, default_db: str, table_filter: TableFilter) -> tuple[TableId | None, bool]:
    """(the table a SchemaChange of this DDL names, whether the DDL concerns a captured table).

    The table is the first captured name the statement leaves in place (a RENAME's new name, a CREATE's
    table), else the first captured name it mentions; a DDL naming no table concerns the captured databases
    (``matches_db``). So ``RENAME TABLE _t_gho TO t`` concerns a captured ``t`` though it names ``_t_gho``
    first, and ``CREATE TABLE x LIKE t`` concerns ``x`` only."""
    parsed = ddl_tables(query, default_db)
    if parsed is None:
        named = ddl_table(query, default_db)
        return named, table_filter.matches(named) if named is not None else table_filter.matches_db(default_db)
    if parsed.kind == "rename":
        order = [new for _, new in parsed.renames] + [old for old, _ in parsed.renames]
    elif parsed.kind == "create":
        order = [parsed.tables[0]]
    else:
        order = list(parsed.tables)
    for t in order:
        if table_filter.matches(t):
            return t, True
    return (order[0] if order else None), False


def table_actions(query: str, default_db: str, table_filter: TableFilter,
                  read_schema: Callable[[TableId], TableSchema | None]) -> list[dict[str, Any]] | None:
    """What a table-level DDL means for the captured tables, for the apply (SchemaChange.tables), or None for
    a DDL that keeps every table's name (ALTER, CREATE INDEX ...: the SchemaChange's schema says it all).

    Each action is a dict (JSON as it is in the SCHEMA record), in the order the apply performs them:

    - ``{"op": "create", "table": t, "schema": s}``: a new captured table (CREATE TABLE, ``LIKE``, ``SELECT``:
      the rows of a CREATE ... SELECT follow as row events); ``"if_not_exists": true`` when the statement
      said IF NOT EXISTS (MySQL logs it even when the table existed and nothing happened);
    - ``{"op": "drop", "table": t}``: a captured table dropped;
    - ``{"op": "rename", "table": new, "from": old, "schema": s}``: a captured table renamed to a captured
      name (the renames of one statement are netted: ``a TO tmp, b TO a, tmp TO b`` is two renames, a swap);
    - ``{"op": "rename_out", "table": old, "to": name}``: a captured table renamed to a name not captured;
    - ``{"op": "replace", "table": t, "from": shadow, "schema": s}``: the online schema change cut-over, a
      table named like t's shadow (SHADOW_NAMES) renamed to captured t; by the tool's contract it holds t's
      rows (in t's new shape);
    - ``{"op": "rename_in", "table": t, "from": name, "schema": s}``: any other table not captured renamed
      to a captured name: its rows were never in the stream.

    ``s`` is the table's definition read after the DDL (``read_schema``), None when it is already gone."""
    parsed = ddl_tables(query, default_db)
    if parsed is None or parsed.kind not in ("create", "drop", "rename"):
        return None
    cap = table_filter.matches

    def schema_json(t: TableId) -> dict[str, Any] | None:
        s = read_schema(t)
        return s.to_json() if s is not None else None

    if parsed.kind == "create":
        t = parsed.tables[0]
        if not cap(t):
            return []
        return [{"op": "create", "table": str(t), "schema": schema_json(t)}
                | ({"if_not_exists": True} if parsed.if_not_exists else {})]
    if parsed.kind == "drop":
        return [{"op": "drop", "table": str(t)} for t in parsed.tables if cap(t)]
    origin: dict[TableId, TableId] = {}  # name after the statement -> its name before it
    for old, new in parsed.renames:
        origin[new] = origin.pop(old, old)
    moves, outs, ins = [], [], []
    for new, old in origin.items():
        if new == old:
            continue
        if cap(old) and cap(new):
            moves.append({"op": "rename", "table": str(new), "from": str(old), "schema": schema_json(new)})
        elif cap(old) and origin.get(old) is not None and is_shadow(origin[old], old):
            pass  # renamed away and replaced by its shadow (the cut-over): the "replace" of ``old`` keeps it
        elif cap(old):
            outs.append({"op": "rename_out", "table": str(old), "to": str(new)})
        elif cap(new):
            op = "replace" if is_shadow(old, new) else "rename_in"
            ins.append({"op": op, "table": str(new), "from": str(old), "schema": schema_json(new)})
    return outs + moves + ins


def schema_reader(conn: Any, host: str | None) -> Callable[[TableId], TableSchema | None]:
    """``read_schema`` for table_actions: a table's definition from information_schema on ``conn``; a failed
    read is ConnectionLost (the reader reconnects and reads the DDL again)."""
    import pymysql

    from readers.mysql.errors import ConnectionLost
    from readers.mysql.schema import schema_from_information_schema

    def read(table: TableId) -> TableSchema | None:
        if conn is None:
            return None
        try:
            return schema_from_information_schema(conn, table.db, table.table)
        except pymysql.err.MySQLError as exc:
            raise ConnectionLost(f"cannot read the schema of {table} from {host}: {exc}", host=host) from exc
    return read


def rows_follow(query: str, in_transaction: bool) -> bool:
    """Whether the row events of a DDL follow it in its GTID group: a CREATE TABLE ... SELECT, which the binlog
    logs as the plain CREATE TABLE (MariaDB: in a GTID group that is not standalone, ``in_transaction``;
    MySQL 8: ending ``START TRANSACTION``), then the rows, then the commit. The reader then keeps the group
    open, so those rows are captured like any transaction's."""
    parsed = ddl_tables(query, "_")
    if parsed is None or parsed.kind != "create":
        return False
    return in_transaction or query.rstrip().upper().endswith("START TRANSACTION")
