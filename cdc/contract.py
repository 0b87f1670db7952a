"""The contract between a reader and the publisher."""

from __future__ import annotations

from typing import Any, Iterator, Protocol

from cdc.events import Event


class Source(Protocol):
    """A log reader for one configured source.

    Lifecycle: ``start(resume)`` once, then iterate ``events()``, then
    ``close()``. ``resume`` is the ``resume`` dict of the last END, SCHEMA or
    HEARTBEAT record in the stream (None: no earlier stream, start at the
    source's current position). The first event yielded is the first one
    AFTER that state, so nothing is yielded twice across a restart.

    ``events()`` yields transactions in commit order (see cdc.events). It
    never blocks forever: when idle it yields a Heartbeat at least every
    ``heartbeat_interval`` seconds, so the caller can check for shutdown.
    ``request_stop()`` may be called from another thread or a signal
    handler; the iterator then ends at the next transaction boundary (it
    never stops between Begin and Commit unless the source itself fails).
    Reconnects and failover happen inside ``events()``; errors it cannot
    recover from are raised as cdc.errors.CdcError subclasses.
    """

    name: str

    def start(self, resume: dict[str, Any] | None) -> None: ...

    def events(self) -> Iterator[Event]: ...

    def request_stop(self) -> None: ...

    def close(self) -> None: ...
