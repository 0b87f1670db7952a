"""LOB values assembled from LogMiner's LOB rows, as LogMiner delivers them.

An INSERT of a row with a CLOB/BLOB shows in V$LOGMNR_CONTENTS as the INSERT with
``EMPTY_CLOB()`` / ``EMPTY_BLOB()`` for the column, then a ``SEL_LOB_LOCATOR`` row
(``DECLARE loc_c CLOB; ... BEGIN select "DOC" into loc_c from "S"."T" where "ID" = '1'
and ROWID = '...' for update;``) naming the column and the row, then ``LOB_WRITE`` rows
carrying the data in pieces (``buf_c := '...'; dbms_lob.write(loc_c, <length>, <offset>,
buf_c);``, a BLOB as ``HEXTORAW('...')``), possibly ``LOB_TRIM`` (``dbms_lob.trim(loc_c,
<length>);``) and ``LOB_ERASE`` (``dbms_lob.erase(loc_c, <amount>, <offset>);``).

:class:`LobAssembler` (one per transaction) builds each column's final value and puts it
into the INSERT's after image at COMMIT. It only accepts what it can complete exactly: the
locator must name a row this transaction inserted (and still buffers in memory), and no
later change of that row may follow in the transaction (its images would lack the value).
Anything else is refused with a reason; the dispatcher then stops the source (or dead-letters
the rows), never publishes the row with its LOB missing.
Values: a CLOB/NCLOB as its text, a BLOB as ``HEXTORAW('<hex>')`` (the parser's literal form).
"""

from __future__ import annotations

import re
from typing import Any

_LOCATOR = re.compile(r'select "(?P<col>[^"]+)" into loc_(?P<kind>c|b|nc) from "(?P<owner>[^"]+)"\."(?P<table>[^"]+)" '
                      r"where (?P<where>.*?)\s*for update;", re.DOTALL)
_EQ = re.compile(r"\"([^\"]+)\" = ('(?:[^']|'')*'|[^\s']+)")
_WRITE = re.compile(r"buf_(?:c|b|nc) := (HEXTORAW\()?'((?:[^']|'')*)'\)?;\s*dbms_lob\.write\(loc_\w+,\s*(\d+)\s*,"
                    r"\s*(\d+)\s*,\s*buf_\w+\s*\);", re.DOTALL)
_TRIM = re.compile(r"dbms_lob\.trim\(loc_\w+,\s*(\d+)\s*\);")
_ERASE = re.compile(r"dbms_lob\.erase\(loc_\w+,\s*(\d+)\s*,\s*(\d+)\s*\);")
SEL_LOB_LOCATOR, LOB_WRITE, LOB_TRIM = 9, 10, 11


class _Lob:
    __slots__ = ("binary", "data")

    def __init__(self, binary: bool) -> None:
        self.binary = binary
        self.data: Any = bytearray() if binary else ""

    def write(self, offset: int, piece: Any) -> None:
        """Write ``piece`` at 1-based ``offset`` (characters for a CLOB, bytes for a BLOB)."""
        pad = (b"\0" if self.binary else " ") * max(0, offset - 1 - len(self.data))
        head = self.data[:offset - 1] + pad
        self.data = head + piece + self.data[offset - 1 + len(piece):]

    def value(self) -> str:
        return f"HEXTORAW('{bytes(self.data).hex().upper()}')" if self.binary else self.data


class LobAssembler:
    """The LOB columns one transaction writes: ``row_id -> (owner, table, key values, {column: _Lob})``."""

    __slots__ = ("by_table", "current", "rows")

    def __init__(self) -> None:
        self.rows: dict[str, tuple[str, str, dict[str, str], dict[str, _Lob]]] = {}
        self.by_table: dict[tuple[str, str], list[str]] = {}
        self.current: _Lob | None = None

    def feed(self, op: int, row_id: str | None, sql: str, inserted: bool) -> str | None:
        """Apply one LOB row; returns why it cannot be assembled (None: taken). ``inserted``: the
        transaction holds an INSERT of ``row_id`` (only meaningful for SEL_LOB_LOCATOR)."""
        if op == SEL_LOB_LOCATOR:
            self.current = None  # the rows after a refused locator are refused too
            m = _LOCATOR.search(sql)
            if m is None:
                return "SEL_LOB_LOCATOR text not understood"
            if not inserted:
                return "the LOB of a row this transaction did not insert (its other columns are not in the redo)"
            key = {c: v[1:-1].replace("''", "'") if v.startswith("'") else v for c, v in _EQ.findall(m["where"])}
            owner, table, col = m["owner"], m["table"], m["col"]
            entry = self.rows.get(row_id or "")
            if entry is None:
                entry = self.rows[row_id or ""] = (owner, table, key, {})
                self.by_table.setdefault((owner, table), []).append(row_id or "")
            lob = entry[3][col] = _Lob(m["kind"] == "b")
            self.current = lob
            return None
        lob = self.current
        if lob is None:
            return "LOB row without a preceding SEL_LOB_LOCATOR in the transaction"
        if op == LOB_WRITE:
            m = _WRITE.search(sql)
            if m is None:
                return "LOB_WRITE text not understood"
            text = m[2].replace("''", "'")
            piece: Any = bytes.fromhex(text) if lob.binary else text
            if bool(m[1]) != lob.binary or len(piece) != int(m[3]):
                return f"LOB_WRITE of {len(piece)} units announces {m[3]}"
            lob.write(int(m[4]), piece)
            return None
        if op == LOB_TRIM:
            m = _TRIM.search(sql)
            if m is None:
                return "LOB_TRIM text not understood"
            lob.data = lob.data[:int(m[1])]
            return None
        m = _ERASE.search(sql)  # LOB_ERASE: the range becomes spaces (CLOB) or zero bytes (BLOB)
        if m is None:
            return "LOB_ERASE text not understood"
        amount, offset = int(m[1]), int(m[2])
        end = min(len(lob.data), offset - 1 + amount)
        lob.write(offset, (b"\0" if lob.binary else " ") * max(0, end - offset + 1))
        return None

    def touches(self, row_id: str | None) -> bool:
        return row_id in self.rows

    def patch(self, owner: str, table: str, after: dict[str, Any]) -> None:
        """Put the assembled values into the INSERT image of their row (matched by the locator's key)."""
        for row_id in self.by_table.get((owner, table), ()):
            _, _, key, cols = self.rows[row_id]
            if all(str(after.get(c)) == v for c, v in key.items()):
                for col, lob in cols.items():
                    after[col] = lob.value()
