"""Query events whose status variables python-mysql-replication 1.0.17 does not know.

A real MySQL 9.7.4 server writes a status variable with code 0x15 (after ``Q_DEFAULT_TABLE_ENCRYPTION``,
0x14, the last one the library knows) into the QUERY_EVENT of a statement-format write; the library raises
``StatusVariableMismatch`` and the event (a DDL, a BEGIN, or a statement the reader must refuse by name)
cannot be read at all. MySQL's own reader skips an unknown code to the end of the status block, whose
length the event header gives ("you must write status vars in growing order of code", statement_events.cpp);
:func:`install` does the same. The reader uses none of the status variables past the ones the library reads.
"""

from __future__ import annotations

from typing import Any

from pymysqlreplication import event

_KNOWN_LAST = 0x14  # Q_DEFAULT_TABLE_ENCRYPTION
_MARIADB = (0x80, 0x81)  # Q_HRNOW, Q_XID
_ORIGINAL_ADVANCE = event.BinLogEvent._advance_to_payload
_ORIGINAL_STATUS = event.QueryEvent._read_status_vars_value_for_key


def _advance_to_payload(self: Any, *args: Any, **kwargs: Any) -> Any:
    out = _ORIGINAL_ADVANCE(self, *args, **kwargs)
    if isinstance(self, event.QueryEvent):  # the status block starts here (QueryEvent.__init__)
        self._cdc_status_end = self.packet.read_bytes + self.status_vars_length
    return out


def _read_status_vars_value_for_key(self: Any, key: int) -> None:
    end = getattr(self, "_cdc_status_end", None)
    if key > _KNOWN_LAST and key not in _MARIADB and end is not None and end >= self.packet.read_bytes:
        self.packet.read(end - self.packet.read_bytes)  # as the server does: the rest of the block
        return
    _ORIGINAL_STATUS(self, key)


def install() -> None:
    """Skip unknown QUERY_EVENT status variables to the end of their block. Idempotent."""
    event.QueryEvent._advance_to_payload = _advance_to_payload
    event.QueryEvent._read_status_vars_value_for_key = _read_status_vars_value_for_key
