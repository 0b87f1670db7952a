"""The consumer library of the ordered change stream (public API).

Hands a Python service whole source transactions, in commit order, from
``<prefix>.<source>.changes``, keeping the stream contract for it: duplicates
(same ``sequence`` again) dropped, a gap in ``sequence`` a loud stop, ABORTED
transactions never handed out, offsets committed only when the caller says an
item is done. Runs on confluent-kafka (default) or kafka-python (pure Python)::

    from cdc.consumer import ChangeStreamConsumer, SchemaChange

    consumer = ChangeStreamConsumer("127.0.0.1:9092", "cdc.shop.changes", group_id="billing")
    for tx in consumer:
        if isinstance(tx, SchemaChange):
            ...                               # a DDL / table definition between transactions
        for ch in tx.changes:                 # RowChange: table, op (c/u/d/r/t), key, before, after
            ...
        consumer.commit(tx)                   # the group resumes after tx next time

For exactly-once side effects, write ``str(tx.position)`` in the same database
transaction as the effects and, after a restart, ``consumer.start_after(saved)``
before the first poll. See cdc.consumer.stream_consumer for every guarantee.
"""

from cdc.consumer.errors import (
    BrokerUnreachable,
    CommitFailed,
    ConsumerError,
    ReadFailed,
    StreamCorrupt,
    TopicMissing,
)
from cdc.consumer.kafka_clients import CLIENTS
from cdc.consumer.position import Position
from cdc.consumer.stream_consumer import ChangeStreamConsumer
from cdc.consumer.transactions import RowChange, SchemaChange, Transaction

__all__ = [
    "CLIENTS",
    "BrokerUnreachable",
    "ChangeStreamConsumer",
    "CommitFailed",
    "ConsumerError",
    "Position",
    "ReadFailed",
    "RowChange",
    "SchemaChange",
    "StreamCorrupt",
    "TopicMissing",
    "Transaction",
]
