"""Errors of the consumer library. A gap or a broken transaction is cdc.errors.StreamCorrupt."""

from __future__ import annotations

from cdc.errors import CdcError, StreamCorrupt, Terminal, Transient

__all__ = ["BrokerUnreachable", "CommitFailed", "ConsumerError", "ReadFailed", "StreamCorrupt", "TopicMissing"]


class ConsumerError(CdcError):
    """Misuse of the consumer (commit of an item it did not deliver, start after the first poll...)."""


class CommitFailed(ConsumerError, Transient):
    """The broker did not store the group's offset: the item is not committed (retry commit())."""


class BrokerUnreachable(ConsumerError, Transient):
    """The broker did not answer (metadata, watermarks, a fetch error)."""


class ReadFailed(ConsumerError, Terminal):
    """The Kafka client reported an error it cannot recover from (names topic and offset)."""


class TopicMissing(ConsumerError, Transient):
    """The change stream's topic does not exist (yet): the daemon has not published this source."""
