"""Which tables a source captures (``tables: [db.table, db.*]``) and which table a DDL names."""

from __future__ import annotations

import re

from cdc.events import TableId

_IDENT = r"(?:`((?:[^`]|``)+)`|([A-Za-z0-9_$]+))"
_QUALIFIED = rf"{_IDENT}(?:\s*\.\s*{_IDENT})?"
_DDL = re.compile(
    r"^\s*(?:/\*.*?\*/\s*)*(?:CREATE|ALTER|DROP|TRUNCATE|RENAME|OPTIMIZE|REPAIR)\s+"
    r"(?:(?:OR\s+REPLACE|ONLINE|OFFLINE|IGNORE|TEMPORARY)\s+)*(?:TABLE\s+)?(?:IF\s+(?:NOT\s+)?EXISTS\s+)?"
    + _QUALIFIED,
    re.IGNORECASE | re.DOTALL,
)
_NON_TABLE = re.compile(r"^\s*(?:CREATE|ALTER|DROP)\s+(?:DATABASE|SCHEMA|USER|VIEW|PROCEDURE|FUNCTION|TRIGGER|EVENT"
                        r"|SEQUENCE|ROLE|SERVER|DEFINER|ALGORITHM)\b", re.IGNORECASE)


class TableFilter:
    """Matches ``db.table`` against the configured list; ``db.*`` takes every table of db."""

    def __init__(self, patterns: list[str]) -> None:
        self.exact: set[tuple[str, str]] = set()
        self.whole_dbs: set[str] = set()
        for p in patterns:
            db, _, table = p.partition(".")
            if table == "*":
                self.whole_dbs.add(db)
            else:
                self.exact.add((db, table))

    def matches(self, table: TableId) -> bool:
        return table.db in self.whole_dbs or (table.db, table.table) in self.exact

    def matches_db(self, db: str) -> bool:
        return db in self.whole_dbs or any(d == db for d, _ in self.exact)

    def library_filters(self) -> tuple[list[str] | None, list[str]]:
        """(only_tables, only_schemas) for BinLogStreamReader: a coarse pre-filter, ``matches`` decides."""
        schemas = sorted(self.whole_dbs | {d for d, _ in self.exact})
        tables = None if self.whole_dbs else sorted({t for _, t in self.exact})
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
