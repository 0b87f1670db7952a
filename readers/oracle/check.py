"""Startup check of an Oracle source: supplemental logging, without which LogMiner's row images are partial
(and, for `cdc check`, that the dictionary gives the column sizes: readers/oracle/columns.py).

LogMiner can only write a whole row image into SQL_REDO when the primary logs
it: database-wide minimal supplemental logging (``V$DATABASE.
SUPPLEMENTAL_LOG_DATA_MIN`` YES or IMPLICIT) and, for every captured table,
ALL COLUMNS logging (a log group of type ``ALL COLUMN LOGGING`` in
``ALL_LOG_GROUPS``, or ``SUPPLEMENTAL_LOG_DATA_ALL = YES`` for the whole
database). Without them an UPDATE shows only the changed columns and the key
and the stream would carry NULL for every other column. The reader runs
:func:`refuse_unlogged` on the standby before mining and refuses to start,
naming each missing setting with the statement that fixes it (run on the
PRIMARY: the standby is read-only and receives the setting with the redo).
"""

from __future__ import annotations

from typing import Any

from cdc.schema import table_glob
from readers.oracle.errors import SupplementalLoggingMissing

DATABASE_SQL = "SELECT SUPPLEMENTAL_LOG_DATA_MIN, SUPPLEMENTAL_LOG_DATA_ALL FROM V$DATABASE"
GROUPS_SQL = ("SELECT OWNER, TABLE_NAME FROM ALL_LOG_GROUPS WHERE LOG_GROUP_TYPE = 'ALL COLUMN LOGGING' "
              "AND OWNER = :owner")
TABLES_SQL = "SELECT OWNER, TABLE_NAME FROM ALL_TABLES WHERE OWNER = :owner"


def supplemental_problems(query: Any, patterns: list[str]) -> list[str]:
    """Each missing setting as ``what is wrong; fix: <statement>`` (empty: capture is safe).

    ``query(sql, binds)`` runs on the standby; ``patterns`` are the configured ``SCHEMA.TABLE``
    patterns (cdc.schema.table_glob): every table of ``ALL_TABLES`` they match now."""
    problems: list[str] = []
    minimal, every_column = (str(v or "NO").upper() for v in query(DATABASE_SQL)[0])
    if minimal not in ("YES", "IMPLICIT"):
        problems.append(f"database minimal supplemental logging is off (V$DATABASE.SUPPLEMENTAL_LOG_DATA_MIN = "
                        f"{minimal}); fix on the primary: ALTER DATABASE ADD SUPPLEMENTAL LOG DATA;")
    if every_column == "YES":
        return problems
    upper = [p.upper() for p in patterns]
    for owner in sorted({p.partition(".")[0] for p in upper}):
        logged = {str(t) for _, t in query(GROUPS_SQL, {"owner": owner})}
        wanted = [t for t in sorted({str(t) for _, t in query(TABLES_SQL, {"owner": owner})})
                  if table_glob.matches(f"{owner}.{t}", upper)]
        for table in wanted:
            if table not in logged:
                problems.append(f'table {owner}.{table} has no ALL COLUMNS supplemental logging (no log group of '
                                f"type 'ALL COLUMN LOGGING' in ALL_LOG_GROUPS); fix on the primary: "
                                f'ALTER TABLE "{owner}"."{table}" ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS;')
    return problems


def checks(config: Any, key: str) -> list[Any]:
    """`cdc check` (cdc/checks.py) of a ``kind: oracle`` source, on its standby: supplemental logging, then each
    ``tables`` pattern against ``ALL_TABLES`` of its schema (``key``: where the source is in the config file)."""
    from cdc.checks import Check, pattern_checks
    from cdc.errors import CdcError
    from readers.oracle import columns
    from readers.oracle.errors import ColumnSizesUnreadable
    from readers.oracle.session import Standby

    name = f"source {config.name}"
    try:
        standby = Standby(config)
    except CdcError as exc:
        return [Check(f"{name}: standby", False, f"cannot connect: {exc}", f"check {key}.standby_dsn / dsn, user "
                                                                           "and password")]
    sizes = None
    try:
        problems = supplemental_problems(standby.query, config.tables)
        owners = sorted({p.upper().partition(".")[0] for p in config.tables})
        tables = [f"{o}.{t}" for owner in owners for o, t in standby.query(TABLES_SQL, {"owner": owner})]
        captured = [t for t in tables if table_glob.matches(t, [p.upper() for p in config.tables])]
        if captured:  # the column sizes a length change is seen by (readers/oracle/columns.py)
            try:
                standby.table_schema(*captured[0].split(".", 1))
                sizes = Check(f"{name}: column sizes", True, f"ALL_TAB_COLUMNS gives them ({captured[0]})")
            except ColumnSizesUnreadable as exc:
                sizes = Check(f"{name}: column sizes", False, str(exc).partition("; ")[0], columns.WAY_OUT)
    except CdcError as exc:
        return [Check(f"{name}: standby", False, f"cannot read the catalog: {exc}", "grant SELECT_CATALOG_ROLE")]
    finally:
        standby.close()
    out = [Check(f"{name}: supplemental logging", False, p.partition("; fix on the primary: ")[0],
                 "on the primary: " + p.partition("; fix on the primary: ")[2]) for p in problems]
    if not problems:
        out.append(Check(f"{name}: supplemental logging", True, "minimal + ALL COLUMNS on every captured table"))
    return out + ([sizes] if sizes else []) + pattern_checks(name, [p.upper() for p in config.tables], tables,
                                                             "the standby", f"{key}.tables")


def refuse_unlogged(query: Any, source: str, patterns: list[str]) -> None:
    """Raise SupplementalLoggingMissing naming every problem (see the module docstring)."""
    problems = supplemental_problems(query, patterns)
    if problems:
        raise SupplementalLoggingMissing(
            f"source {source}: LogMiner would deliver partial row images:\n  " + "\n  ".join(problems),
            source=source, problems=problems)
