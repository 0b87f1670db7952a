"""Errors of the MySQL/MariaDB reader, classified by what to do about them.

``Transient`` ones (connection lost, no primary found yet) are retried with
backoff by the reader itself and, once its attempts are spent, by the daemon.
``Terminal`` ones (divergence, purged binlog, bad settings, bad data) stop the
source at its checkpoint: retrying cannot help and falling back would lose or
duplicate transactions.
"""

from __future__ import annotations

from cdc.errors import CdcError, DecodeError, SourceUnavailable, Terminal, Transient


class GtidParseError(CdcError, Terminal, ValueError):
    """A GTID or GTID set text is malformed (``text``, ``reason``)."""


class GtidFlavorMismatch(CdcError, Terminal, ValueError):
    """MySQL (uuid:interval) and MariaDB (domain-server-seq) sets were mixed."""


class ConnectionLost(SourceUnavailable):
    """The binlog connection dropped; reconnect from the reader's GTID state."""


class TransactionInterrupted(SourceUnavailable):
    """The connection dropped between Begin and Commit and the transaction could not be continued.

    The reader first reconnects and skips the changes it already yielded;
    when the binlog then continues with another GTID it raises this: the
    daemon restarts the source from the stream tail, the publisher writes
    ABORTED for the open transaction, and the whole transaction is read again.
    """


class NoPrimaryFound(SourceUnavailable):
    """No configured host is a writable primary right now (``hosts``, ``probes``)."""


class AuthenticationFailed(CdcError, Terminal):
    """The server rejected the user or password (``host``, ``user``)."""


class TlsFailed(CdcError, Terminal):
    """TLS to the server failed: certificate not trusted, wrong host name, no TLS offered (``host``).

    Terminal: a certificate does not become valid by retrying, and a silent plaintext
    fallback is exactly what a ``tls`` block forbids."""


class Divergence(CdcError, Terminal):
    """The candidate primary lacks GTIDs we already published (``host``, ``missing``).

    Never fall back to an older position: that would publish a different
    history under the same sequence numbers.
    """


class BinlogPurged(CdcError, Terminal):
    """The server purged binlogs past our checkpoint (``host``, ``checkpoint``, ``purged``)."""


class SettingsRefused(CdcError, Terminal):
    """``cdc check`` / startup found settings that make capture unsafe (``problems``)."""


class PartialRowImage(SettingsRefused):
    """A rows event of a captured table without every column (``binlog_row_image`` MINIMAL / NOBLOB in
    the writing session or on that server): ``table``, ``gtid``, ``position``, ``image``, ``missing``.

    The missing columns are not NULL, they are unknown: publishing the image would write NULL into
    the target. The source stops before the transaction's first record."""


class StatementFormatDml(SettingsRefused):
    """A DML statement logged in STATEMENT format on a captured table (``binlog_format`` STATEMENT or
    MIXED in the writing session): ``table``, ``gtid``, ``position``, ``statement``. Its rows are not in
    the binlog, so the change stream cannot carry them."""


class UnloggedRowChange(CdcError, Terminal):
    """A DDL that removes or swaps rows without row events (ALTER TABLE ... TRUNCATE / DROP / EXCHANGE
    PARTITION) on a captured table: ``table``, ``gtid``, ``position``, ``statement``. The stream cannot say
    which rows went; the target would keep them."""


class UndecodedEvent(CdcError, Terminal):
    """A binlog event the reader does not decode, met where it could carry changes of a captured table:
    ``event_type`` (name), ``code``, ``position`` (file:pos), ``gtid``, ``setting`` (the server option behind
    it, when known). Raised before the reader's GTID state takes the transaction: nothing of it is
    published and the checkpoint stays before it."""


class CompressedEventError(CdcError, Terminal):
    """A compressed binlog event (MariaDB ``log_bin_compress``, MySQL ``binlog_transaction_compression``)
    that cannot be inflated: ``event_type``, ``code``, ``log_pos``, ``reason``."""


class UnknownColumnType(DecodeError):
    """A column type this reader cannot convert (table, column, type, position)."""


__all__ = [
    "AuthenticationFailed",
    "BinlogPurged",
    "CompressedEventError",
    "ConnectionLost",
    "DecodeError",
    "Divergence",
    "GtidFlavorMismatch",
    "GtidParseError",
    "NoPrimaryFound",
    "PartialRowImage",
    "SettingsRefused",
    "StatementFormatDml",
    "TransactionInterrupted",
    "Transient",
    "UndecodedEvent",
    "UnknownColumnType",
    "UnloggedRowChange",
]


class PayloadUndecodable(DecodeError):
    """A MySQL TRANSACTION_PAYLOAD_EVENT (``binlog_transaction_compression=ON``) whose payload cannot be
    turned back into its events: unknown compression type, a header without its fields, a truncated or
    garbled zstd stream, an uncompressed size or an inner event length that does not add up (``what``,
    ``compression``, ``payload_size``, ``uncompressed_size``). Its rows are not read: the source stops
    before the transaction's first record."""


class TaggedGtidUndecodable(DecodeError):
    """A MySQL GTID_TAGGED_LOG_EVENT (type 42, tagged GTIDs ``uuid:tag:N``, MySQL 8.3+) that does not decode:
    unknown serialization version, a field missing, a non-ignorable field this reader does not know,
    truncated bytes (``what``). Without its GTID the checkpoint could not name the transaction."""
