"""What the MySQL reader refuses to publish, because the binlog does not hold the whole change.

The startup check (check.py) sees the server's GLOBAL settings; a session can still
override them, and some DDL removes rows without row events. Each function below
raises a Terminal error naming table, GTID, binlog ``file:pos`` and the setting or
statement, BEFORE the transaction's first record and before the reader's GTID state
takes the transaction: the source stops at its checkpoint and nothing of it is in
the stream (the target would otherwise hold NULL for unknown columns, or keep rows
the source no longer has).

* :func:`refuse_partial` -- a rows event whose column bitmap is not full
  (``SET SESSION binlog_row_image=MINIMAL``, NOBLOB, MariaDB's FULL_NODUP);
* :func:`refuse_statement` -- a DML logged as a statement on a captured table
  (``SET SESSION binlog_format=STATEMENT`` or MIXED);
* :func:`refuse_unlogged_ddl` -- ``ALTER TABLE ... TRUNCATE / DROP / EXCHANGE PARTITION``.
"""

from __future__ import annotations

import re
from typing import Any

from pymysqlreplication.row_event import UpdateRowsEvent

from cdc.stream.events import TableId
from readers.mysql.errors import PartialRowImage, StatementFormatDml, UnloggedRowChange
from readers.mysql.tables import TableFilter, dml_tables

_PARTITION_ROWS = re.compile(r"\b(?:TRUNCATE|DROP|EXCHANGE)\s+PARTITION\b", re.IGNORECASE)
_RESTART = ("the source stops at its checkpoint. Way back, once the setting is fixed: `cdc source skip --config "
            "<file> --source <name> --gtid <the GTID above> --yes --resync` moves past this one transaction, records "
            "it in the stream and re-snapshots the tables it touched while streaming goes on")


def partial_image(ev: Any) -> bool:
    """True when a rows event's images lack a column (the reader's per-event test; :func:`refuse_partial` then
    says which, its message built only then)."""
    full = (1 << ev.number_of_columns) - 1
    if int.from_bytes(ev.columns_present_bitmap, "little") & full != full:
        return True
    return isinstance(ev, UpdateRowsEvent) and int.from_bytes(ev.columns_present_bitmap2, "little") & full != full


def refuse_partial(ev: Any, table: TableId, gtid: str, where: str, table_map: Any, host: str | None) -> None:
    """PartialRowImage unless every column of ``table`` is in the rows event's images."""
    full = (1 << ev.number_of_columns) - 1
    images = [("before" if isinstance(ev, UpdateRowsEvent) else "row", ev.columns_present_bitmap)]
    if isinstance(ev, UpdateRowsEvent):
        images.append(("after", ev.columns_present_bitmap2))
    for image, bitmap in images:
        present = int.from_bytes(bitmap, "little") & full
        if present == full:
            continue
        names = [c.name for c in table_map.columns] if table_map is not None else []
        missing = [names[i] if i < len(names) else f"#{i}" for i in range(ev.number_of_columns)
                   if not present >> i & 1]
        raise PartialRowImage(
            f"partial row image of {table} at {where} gtid {gtid}: the {image} image lacks column(s) "
            f"{', '.join(missing)} (the writing session or server logged binlog_row_image=MINIMAL, NOBLOB or "
            f"FULL_NODUP). Nothing of transaction {gtid} is published; {_RESTART}. Fix: binlog_row_image=FULL "
            "globally and in my.cnf, and no client may SET SESSION binlog_row_image",
            table=str(table), gtid=gtid, position=where, image=image, missing=missing,
            setting="binlog_row_image", host=host)


def refuse_statement(query: str, db: str, tables_filter: TableFilter, gtid: str, where: str,
                     host: str | None) -> None:
    """StatementFormatDml when a DML logged as a statement writes a captured table (or names no table
    we can read while its default database is captured); a DML on tables we do not capture passes."""
    tables = dml_tables(query, db) or []
    hit = next((t for t in tables if tables_filter.matches(t)), None)
    if hit is None and (tables or not tables_filter.matches_db(db)):
        return
    name = str(hit) if hit is not None else f"{db}.?"
    raise StatementFormatDml(
        f"statement-format DML on captured table {name} at {where} gtid {gtid}: {query[:200]!r} (the writing "
        "session ran with binlog_format=STATEMENT or MIXED: its rows are not in the binlog). Nothing of "
        f"transaction {gtid} is published; {_RESTART}. Fix: binlog_format=ROW globally and in my.cnf, and no "
        "client may SET SESSION binlog_format",
        table=name, gtid=gtid, position=where, statement=query[:500], setting="binlog_format", host=host)


def refuse_unlogged_ddl(query: str, table: TableId, gtid: str, where: str, host: str | None) -> None:
    """UnloggedRowChange for a DDL on captured ``table`` that removes or swaps rows without row events."""
    if _PARTITION_ROWS.search(query):
        raise UnloggedRowChange(
            f"{query[:200]!r} on captured table {table} at {where} gtid {gtid} removes or swaps rows without row "
            f"events: the change stream cannot carry it and the target would keep those rows. {_RESTART} (or "
            "delete the rows with DML instead)",
            table=str(table), gtid=gtid, position=where, statement=query[:500], host=host)
