"""The contract between a reader and the daemon: the ``Source`` protocol and its ``SourceContext``.

A reader class (registered in cdc.registry) is constructed as ``cls(config, context)`` with its
own pydantic config model (readers/<kind>/config.py) and a SourceContext, and implements Source.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol

from pydantic import Field

from cdc.metrics import SourceMetrics
from cdc.spill.dirs import default_spill_dir
from cdc.stream.events import Event

STOP_CHECK_S = 1.0  # an idle reader looks at request_stop() at least this often

# ``sources[].heartbeat_interval_s`` of every reader. A HEARTBEAT record carries the reader's resume state
# while nothing it captures happens: a restart then resumes there instead of re-reading the log since the
# last transaction (filtered-out transactions, an Oracle low watermark that moved on), and consumers see
# that the source is alive. Off (0 or null): no HEARTBEAT records; nothing is lost (the resume state of
# the last END still holds), a restart re-reads more of the log, and /readyz stops judging the source by
# acknowledgements (an idle source has nothing to acknowledge).
HeartbeatInterval = Annotated[float | None, Field(ge=0, description="seconds between HEARTBEAT records while "
                                                  "idle; 0 or null: no heartbeats")]


class Source(Protocol):
    """A log reader for one configured source.

    Lifecycle: ``start(resume)`` once, then iterate ``events()``, then
    ``close()``. ``resume`` is the ``resume`` dict of the last END, SCHEMA or
    HEARTBEAT record in the stream (None: no earlier stream, start at the
    source's current position). The first event yielded is the first one
    AFTER that state, so nothing is yielded twice across a restart.

    ``events()`` yields transactions in commit order (see cdc.stream.events). When
    idle it yields a Heartbeat every ``heartbeat_interval_s`` seconds (none
    when heartbeats are off: :data:`HeartbeatInterval`). ``request_stop()``
    may be called from another thread or a signal handler; the iterator then
    ends at the next transaction boundary (it never stops between Begin and
    Commit unless the source itself fails). While idle, a reader yields a
    Heartbeat or else cdc.stream.events.Idle (no record) at least every
    :data:`STOP_CHECK_S`, so the caller takes in the broker's
    acknowledgements and sees a stop request: shutdown never waits for a
    heartbeat, whatever its interval.
    Reconnects and failover happen inside ``events()``; errors it cannot
    recover from are raised as cdc.errors.CdcError subclasses.
    """

    name: str

    def start(self, resume: dict[str, Any] | None) -> None: ...

    def events(self) -> Iterator[Event]: ...

    def request_stop(self) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Observation:
    """What a reader says it is doing, for the operations API (cdc/ops): see :class:`Observable`.

    - ``snapshot``: the snapshot being read now (None: none), ``{"kind": "initial"|"incremental", "table":
      the table being read (None: not begun), "tables_done", "tables_total" (None: not known), "after": the key
      of the last chunk read, "resync"}``;
    - ``open_transactions``: transactions the reader holds read but not committed, oldest first, each
      ``{"xid", "start_scn", "started_ms" (source time, None: not known), "age_s", "rows", "bytes"}``
      (None: the reader keeps none of its own, e.g. MySQL: the binlog holds only committed transactions);
    - ``lag_transactions``: source transactions not yet published (at or after ``checkpoint``), counted;
      None with ``lag_transactions_why`` saying why when it is not known.
    """

    snapshot: dict[str, Any] | None = None
    open_transactions: list[dict[str, Any]] | None = None
    lag_transactions: int | None = None
    lag_transactions_why: str | None = None


class Observable(Protocol):
    """Optional part of a reader (a Source without it is reported as "not known").

    ``observe(checkpoint)`` is called from the operations API's threads while ``events()`` runs in the
    source's thread: it only reads (copies what it looks at; never a lock ``events()`` waits on, never the
    reader's own connection) and answers within a few seconds; what it says may be a moment old.
    ``checkpoint``: the resume state of the last record the broker acknowledged (None: none yet).
    """

    def observe(self, checkpoint: dict[str, Any] | None) -> Observation: ...


@dataclass
class SourceContext:
    """What the daemon hands a reader besides its own config."""

    metrics: SourceMetrics
    spill_dir: str = field(default_factory=default_spill_dir)  # the config key's one default
    max_buffer_bytes: int = 64 * 1024 * 1024
    extra: dict[str, Any] = field(default_factory=dict)
    # Set by the daemon only when kafka.dead_letter_topic is configured:
    # dead_letter(error: DecodeError, raw) sends ONE undecodable change there and
    # the reader skips it. None: the reader raises the DecodeError (the source
    # stops at that position). See cdc.publish.publisher.Publisher.dead_letter.
    dead_letter: Callable[[Exception, Any], None] | None = None
