"""What an Oracle DDL statement (a LogMiner DDL row's SQL_REDO) does to tables, by name.

LogMiner's SEG_OWNER / TABLE_NAME of a DDL row name the object the statement is on, which is not always
a table (``CREATE INDEX``: the index; ``RENAME``: the old name). The statement decides:

    create    CREATE [GLOBAL|PRIVATE TEMPORARY ...] TABLE t
    drop      DROP TABLE t [CASCADE CONSTRAINTS] [PURGE]
    rename    ALTER TABLE t RENAME TO u, and RENAME t TO u (the new name takes the old one's owner)
    truncate  TRUNCATE TABLE t
    index     CREATE / ALTER / DROP INDEX (the table: ``ON t``, else None): no shape of a table changes
    alter     ALTER TABLE t ... (columns, constraints, defaults): the table's definition after it says what
    other     anything else (COMMENT ON, GRANT, ...): the row's own SEG_OWNER / TABLE_NAME

``table_actions`` turns create / drop / rename into the list the apply performs (the ``tables`` of a SCHEMA
record, streaming/apply/table_ddl.py), as readers/mysql/tables.py does for MySQL.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cdc.stream.events import TableId, TableSchema

_ID = r'(?:"((?:[^"]|"")+)"|([A-Za-z][A-Za-z0-9_$#]*))'
_NAME = rf"{_ID}(?:\s*\.\s*{_ID})?"
_CREATE = re.compile(rf"^\s*create\s+(?:(?:global|private)\s+temporary\s+|sharded\s+|duplicated\s+|"
                     rf"(?:immutable\s+)?blockchain\s+|immutable\s+)?table\s+{_NAME}", re.IGNORECASE)
_DROP = re.compile(rf"^\s*drop\s+table\s+{_NAME}", re.IGNORECASE)
_ALTER_RENAME = re.compile(rf"^\s*alter\s+table\s+{_NAME}\s+rename\s+to\s+{_NAME}", re.IGNORECASE)
_RENAME = re.compile(rf"^\s*rename\s+{_NAME}\s+to\s+{_NAME}", re.IGNORECASE)
_TRUNCATE = re.compile(rf"^\s*truncate\s+table\s+{_NAME}", re.IGNORECASE)
_INDEX = re.compile(r"^\s*(?:create\s+(?:unique\s+|bitmap\s+|multivalue\s+)?|alter\s+|drop\s+)index\b", re.IGNORECASE)
_INDEX_ON = re.compile(rf"\bon\s+{_NAME}\s*\(", re.IGNORECASE)
_ALTER = re.compile(rf"^\s*alter\s+table\s+{_NAME}", re.IGNORECASE)


@dataclass(frozen=True)
class OracleDdl:
    kind: str  # create | drop | rename | truncate | index | alter | other
    table: TableId | None  # the table the statement is on (rename: the NEW name)
    old: TableId | None = None  # rename: the old name


def _ident(quoted: str | None, bare: str | None) -> str | None:
    if quoted is not None:
        return quoted.replace('""', '"')
    return bare.upper() if bare is not None else None  # unquoted identifiers are upper case in the dictionary


def _table(m: re.Match, first: int, owner: str | None) -> TableId | None:
    a, b = _ident(m.group(first), m.group(first + 1)), _ident(m.group(first + 2), m.group(first + 3))
    if b is not None:
        return TableId(a or "", b)
    return TableId(owner, a) if owner and a else None


def classify(sql: str, owner: str | None, table: str | None) -> OracleDdl:
    """The statement's kind and table(s); ``owner`` / ``table``: the row's SEG_OWNER / TABLE_NAME (the owner
    of names the statement leaves unqualified)."""
    for kind, rx in (("create", _CREATE), ("drop", _DROP), ("truncate", _TRUNCATE)):
        m = rx.match(sql)
        if m:
            return OracleDdl(kind, _table(m, 1, owner))
    for rx in (_ALTER_RENAME, _RENAME):
        m = rx.match(sql)
        if m:
            old = _table(m, 1, owner)
            new = _table(m, 5, old.db if old is not None else owner)
            return OracleDdl("rename", new, old)
    if _INDEX.match(sql):
        m = _INDEX_ON.search(sql)
        return OracleDdl("index", _table(m, 1, owner) if m else None)
    m = _ALTER.match(sql)
    if m:
        return OracleDdl("alter", _table(m, 1, owner))
    return OracleDdl("other", TableId(owner, table) if owner and table else None)


def table_actions(ddl: OracleDdl, captured: Callable[[TableId], bool],
                  read_schema: Callable[[TableId], TableSchema | None]) -> list[dict[str, Any]] | None:
    """The apply's table-level actions of a create / drop / rename (None for any other kind), in the shape of
    readers/mysql/tables.py ``table_actions``; ``read_schema``: the table's definition after the DDL."""
    def schema_json(t: TableId) -> dict[str, Any] | None:
        s = read_schema(t)
        return s.to_json() if s is not None else None

    t = ddl.table
    if ddl.kind == "create":
        return [{"op": "create", "table": str(t), "schema": schema_json(t)}] if t is not None and captured(t) else []
    if ddl.kind == "drop":
        return [{"op": "drop", "table": str(t)}] if t is not None and captured(t) else []
    if ddl.kind != "rename" or t is None or ddl.old is None:
        return None
    old_in, new_in = captured(ddl.old), captured(t)
    if old_in and new_in:
        return [{"op": "rename", "table": str(t), "from": str(ddl.old), "schema": schema_json(t)}]
    if old_in:
        return [{"op": "rename_out", "table": str(ddl.old), "to": str(t)}]
    if new_in:
        return [{"op": "rename_in", "table": str(t), "from": str(ddl.old), "schema": schema_json(t)}]
    return []
