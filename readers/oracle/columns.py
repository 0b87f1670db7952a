"""A table's columns from Oracle's dictionary (``ALL_TAB_COLUMNS``), with the sizes its DATA_TYPE leaves out.

DATA_TYPE names the type only (``VARCHAR2``, ``NUMBER``, ``RAW``); the size is in other columns of the view:
CHAR_LENGTH (characters of CHAR / VARCHAR2 / NCHAR / NVARCHAR2, under BYTE and CHAR semantics alike: a
``VARCHAR2(20 BYTE)`` holds at most 20 characters), DATA_LENGTH (bytes of RAW), DATA_PRECISION and
DATA_SCALE (NUMBER). The schema record spells the type as MySQL's ``COLUMN_TYPE`` does (``varchar2(40)``,
``number(12,2)``, ``raw(16)``), so the apply's widen / narrow rules (cdc.schema.evolution.type_change) see
an Oracle length change as they see a MySQL one:

    VARCHAR2(n), NVARCHAR2(n), CHAR(n), NCHAR(n)   ->  varchar2(n), nvarchar2(n), char(n), nchar(n)  (CHAR_LENGTH)
    RAW(n)                                       ->  raw(n)           (DATA_LENGTH)
    NUMBER(p,s), NUMBER(p)                       ->  number(p,s)
    NUMBER(*,s), INTEGER (a scale, no precision) ->  number(38,s)     (38 significant digits)
    NUMBER                                       ->  number
    anything else (DATE, TIMESTAMP(n) ...: the digits are in DATA_TYPE already; FLOAT, CLOB ...)  ->  DATA_TYPE

Fail closed: a dictionary that does not answer these columns, or answers no size for a type that has one,
raises ColumnSizesUnreadable naming what to grant or configure: without the sizes an Oracle length change
would pass the apply unseen.
"""

from __future__ import annotations

from collections.abc import Sequence

from cdc.stream.events import Column
from readers.oracle.convert import default_text
from readers.oracle.errors import ColumnSizesUnreadable
from readers.oracle.types import logical_type

# the select list of every definition read (LogMiner session and snapshot): one row per column, in this order
SELECT = "COLUMN_NAME, DATA_TYPE, NULLABLE, DATA_DEFAULT, DATA_LENGTH, CHAR_LENGTH, DATA_PRECISION, DATA_SCALE"
WIDTH = len(SELECT.split(", "))
_CHARS = ("varchar2", "nvarchar2", "char", "nchar")
WAY_OUT = ("the reader reads each column's size from ALL_TAB_COLUMNS (DATA_LENGTH, CHAR_LENGTH, DATA_PRECISION, "
           "DATA_SCALE); grant the login SELECT ANY DICTIONARY (or SELECT_CATALOG_ROLE), plus FLASHBACK ANY TABLE for "
           "the definitions AS OF SCN, and make sure no synonym or view named ALL_TAB_COLUMNS in the login's schema "
           "hides SYS.ALL_TAB_COLUMNS")


def type_text(table: str, column: str, data_type: str, data_length: object, char_length: object,
              precision: object, scale: object) -> str:
    """The schema record's type of one ALL_TAB_COLUMNS row (module docstring); raises ColumnSizesUnreadable."""
    t = str(data_type).strip().lower()

    def size(value: object, what: str) -> int:
        if value is None or int(value) <= 0:  # type: ignore[call-overload]
            raise ColumnSizesUnreadable(f"column {table}.{column} ({data_type}): the dictionary gave no {what} "
                                        f"({value!r}); {WAY_OUT}", table=table, column=column, data_type=data_type)
        return int(value)  # type: ignore[call-overload]

    if t in _CHARS:
        return f"{t}({size(char_length, 'CHAR_LENGTH')})"
    if t == "raw":
        return f"raw({size(data_length, 'DATA_LENGTH')})"
    if t == "number":
        if precision is not None:
            return f"number({size(precision, 'DATA_PRECISION')},{int(scale or 0)})"  # type: ignore[call-overload]
        return f"number(38,{int(scale)})" if scale is not None else "number"  # type: ignore[call-overload]
    return t


def columns(table: str, rows: Sequence[Sequence[object]]) -> tuple[Column, ...]:
    """The columns of ``table`` (OWNER.NAME) from the rows of ``SELECT {SELECT} FROM ALL_TAB_COLUMNS``."""
    out = []
    for row in rows:
        if len(row) != WIDTH:
            raise ColumnSizesUnreadable(f"the dictionary answered {len(row)} of the {WIDTH} columns the reader "
                                        f"asks of ALL_TAB_COLUMNS for {table} ({SELECT}); {WAY_OUT}", table=table)
        name, data_type, nullable, default, length, chars, precision, scale = row
        text = type_text(table, str(name), str(data_type), length, chars, precision, scale)
        out.append(Column(str(name), text, nullable == "Y", default_text(default), logical_type(text)))
    return tuple(out)


def unreadable(exc: Exception, table: str) -> ColumnSizesUnreadable | None:
    """The error of a definition read that failed on the size columns (ORA-00904 invalid identifier, ORA-01031
    insufficient privileges, ORA-00942), None for any other failure."""
    text = str(exc)
    if any(code in text for code in ("ORA-00904", "ORA-01031", "ORA-00942")):
        return ColumnSizesUnreadable(f"cannot read the definition of {table}: {text.strip().splitlines()[0]}; "
                                     f"{WAY_OUT}", table=table)
    return None
