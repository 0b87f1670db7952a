"""Which tables a source captures (``tables: [db.table, db.order_*]``, cdc.table_glob), which table a DDL names and which
tables a statement-format DML names."""

from __future__ import annotations

import re

from cdc import table_glob
from cdc.events import TableId

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
    """Matches ``db.table`` against the configured patterns (cdc.table_glob: the apply side's rule)."""

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

    def library_filters(self) -> tuple[list[str] | None, list[str] | None]:
        """(only_tables, only_schemas) for BinLogStreamReader: a coarse pre-filter, ``matches`` decides.
        A glob in a part turns that part's pre-filter off (None: everything)."""
        parts = [p.partition(".")[::2] for p in self.patterns]
        schemas = sorted({d for d, _ in parts}) if all(table_glob.is_literal(d) for d, _ in parts) else None
        tables = sorted({t for _, t in parts}) if all(table_glob.is_literal(t) for _, t in parts) else None
        return tables, schemas


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
