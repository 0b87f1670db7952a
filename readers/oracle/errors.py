"""Errors of the Oracle reader. Each names the SCN, XID, table and text involved."""

from __future__ import annotations

from cdc.errors import CdcError, DecodeError, SourceUnavailable, Terminal


class OracleReaderError(CdcError):
    """Root of the Oracle reader's own errors."""


class PositionError(OracleReaderError, Terminal):
    """A malformed SCN, XID or resume state."""


class RedoParseError(DecodeError):
    """A SQL_REDO statement could not be parsed.

    Fields: ``scn``, ``xid``, ``table``, ``offset`` (character position of the
    problem), ``text`` (the statement, truncated to 500 characters).
    """


class DictionaryMismatch(DecodeError):
    """LogMiner wrote ``"UNKNOWN"."OBJ# n"``: the dictionary does not know the object.

    The flat-file dictionary is older than the table (or the column set);
    rebuild it (``DBMS_LOGMNR_D.BUILD``) and restart from the reported SCN.
    """


class UnsupportedOperation(DecodeError):
    """LogMiner marked a row UNSUPPORTED (operation code 255) for a captured table."""


class SupplementalLoggingMissing(OracleReaderError, Terminal):
    """The primary does not log whole row images (``problems``: each setting with its fix)."""


class UnsupportedLob(UnsupportedOperation):
    """A LOB operation (SEL_LOB_LOCATOR, LOB_WRITE, LOB_TRIM, LOB_ERASE) on a captured table.

    The reader does not assemble LOB values from these rows; publishing the
    transaction without them would leave the column as the INSERT/UPDATE wrote
    it (EMPTY_CLOB()). Fields: ``scn``, ``xid``, ``table``, ``operation``, ``text``.
    """


class UnloggedRowChange(OracleReaderError, Terminal):
    """A DDL that removes or swaps rows without DML redo (ALTER TABLE ... TRUNCATE / DROP / EXCHANGE
    [SUB]PARTITION) on a captured table: ``scn``, ``xid``, ``table``, ``text``. The stream cannot say which
    rows went; the target would keep them."""


class MissingLog(OracleReaderError, Terminal):
    """No archived or standby redo log covers the SCN the reader must mine."""


class ArchiveLogMissing(MissingLog):
    """The logs from the SCN the reader must resume at were deleted (archive log gap past the checkpoint):
    ``scn``, ``thread``, ``oldest_sequence``, ``oldest_scn``; the message says the way out."""


class RedoGap(OracleReaderError, Terminal):
    """A redo thread's log sequence has a hole: ``thread``, ``missing_from``, ``missing_to``."""


class SessionError(SourceUnavailable):
    """A LogMiner session call failed in a way a new session may fix (ORA-03113 and friends)."""


class LogMinerError(OracleReaderError, Terminal):
    """A LogMiner call failed for a reason a retry cannot fix (ORA-01291, ORA-01292, ...)."""


class SchemaHistoryGone(OracleReaderError, Terminal):
    """The dictionary's past is no longer readable (``AS OF SCN`` beyond undo retention): the reader cannot
    know the definition in force at the SCN it must read (``scn``, ``table``); the message says the way back."""


class UnsupportedDdl(OracleReaderError, Terminal):
    """A DDL on a captured table whose effect on the table's name the reader cannot tell (``scn``, ``xid``,
    ``table``, ``text``); the message says the way back."""


class DictionaryStale(DictionaryMismatch, SourceUnavailable):
    """An ``"UNKNOWN"`` row after the flat-file dictionary was rebuilt for a DDL: the row's range was mined with
    the dictionary from before that DDL (sessions mine ahead). The daemon restarts the source, which builds the
    dictionary anew and resumes from the stream's checkpoint (``scn``, ``xid``, ``table``)."""


class ColumnSizesUnreadable(OracleReaderError, Terminal):
    """The dictionary did not give a column's size (ALL_TAB_COLUMNS DATA_LENGTH, CHAR_LENGTH, DATA_PRECISION,
    DATA_SCALE): ``table`` (and ``column``, ``data_type`` when one row lacked it). Without it a length change
    of the column would pass unseen; the message names what to grant or configure."""
