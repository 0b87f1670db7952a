"""One way to open a publisher for a source's change stream, with the writer lease: every writer uses it.

The daemon (cdc.runtime.daemon), ``cdc source skip`` (readers/*/skip_cmd.py) and ``cdc compare --repair``
(cdc.compare.repair) all write into a source's changes topic. Each must hold the stream's writer lease
(cdc.publish.lease) while it does, or it would interleave with a running daemon and write records a
consumer cannot tell from a fenced writer's. :func:`open_publisher` is the one place that builds a
:class:`~cdc.publish.publisher.Publisher` with it:

- the lease is taken when ``kafka.writer_fencing`` is on (the default): ``Publisher.recover()`` acquires
  it before reading the stream's tail (fencing a daemon still running for the source), and every
  record's ``cdc.epoch`` header is the lease's epoch;
- with ``kafka.writer_fencing: false`` (a broker without transactions) there is no lease, for every
  writer alike; one writer per source is then the operator's promise;
- the daemon passes the lease it keeps across its publisher's restarts (``lease=``), so the same
  process never fences itself.

:func:`close_publisher` closes both; the lease's ``release`` record lets the next writer start without
waiting out the grace.
"""

from __future__ import annotations

from typing import Any

from cdc.metrics import SourceMetrics
from cdc.publish.lease import WriterLease
from cdc.publish.publisher import Publisher

LEASE_TIMEOUT_S = 30.0  # a broker that does not answer a proof for this long (or the delivery timeout): PublishError


def writer_lease(kafka: Any, source: str) -> WriterLease | None:
    """The writer lease of ``source``'s stream (not yet taken), or None with ``kafka.writer_fencing: false``."""
    if not getattr(kafka, "writer_fencing", False):  # (KafkaConfig's default is True; a bare test double: off)
        return None
    return WriterLease(kafka.connection(), kafka.topic_prefix, source,
                       timeout_s=min(LEASE_TIMEOUT_S, getattr(kafka, "delivery_timeout_s", LEASE_TIMEOUT_S)))


def open_publisher(kafka: Any, source: str, connector: str, metrics: SourceMetrics | None = None, *,
                   lease: WriterLease | None = None, producer_config: dict | None = None,
                   ) -> tuple[Publisher, WriterLease | None]:
    """A Publisher of ``source``'s stream holding the writer lease (``lease`` when given, else a new one;
    none with ``kafka.writer_fencing: false``), and that lease. Call ``recover()`` on it before publishing:
    that takes the lease."""
    if lease is None:
        lease = writer_lease(kafka, source)
    publisher = Publisher(source, connector, kafka, metrics or SourceMetrics(source), producer_config=producer_config,
                          lease=lease)
    return publisher, lease


def close_publisher(publisher: Publisher | None, lease: WriterLease | None) -> None:
    """Close the publisher (what is not acknowledged is purged), then release the lease; never raises."""
    if publisher is not None:
        publisher.close()
    if lease is not None:
        lease.close()
