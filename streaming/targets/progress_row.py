"""The progress row: how far a target has applied a source.

Table ``cdc_progress`` in every target, one row per source, written in the
SAME target transaction as the data of the batch, so it is exactly as fresh
as the data next to it:

    source            the source name (primary key)
    last_sequence     stream sequence of the last applied record; anything at
                      or below it is a replay and is dropped
    last_position     JSON: native commit position of the last END (GTID set,
                      commit SCN...) plus ``kafka`` = next offsets to read and
                      the topic's id (``{"next": {"0": n}, "stream": id,
                      "topic": t}``): the identity of the stream the target
                      was applied from (streaming.apply.checkpoint), and
                      ``epoch`` = the highest writer epoch applied (header
                      ``cdc.epoch``; absent in rows written before epochs: 0),
                      so a restarted apply holds the stream to the epoch rules
                      from where it stopped (streaming.apply.engine)
    batch_id          Spark micro-batch id that wrote it
    applied_at        target-side time of the apply (UTC)
    last_commit_ts    source commit time of the last applied transaction (UTC)

``cdc_schema`` (same transaction) remembers each table's source schema so a
restarted job knows the tables without re-reading the stream.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

PROGRESS_TABLE = "cdc_progress"
SCHEMA_TABLE = "cdc_schema"


@dataclass(frozen=True, slots=True)
class Progress:
    source: str
    last_sequence: int
    batch_id: int
    last_position: dict[str, Any] = field(default_factory=dict)
    last_commit_ts_ms: int | None = None
    applied_at: dt.datetime | None = None

    @property
    def next_offsets(self) -> dict[str, Any] | None:
        """Kafka offsets to resume from when the Spark checkpoint is gone (with the topic id in ``stream``)."""
        return self.last_position.get("kafka") if self.last_position else None

    @property
    def epoch(self) -> int:
        """The highest writer epoch the target has applied (0: none known, e.g. a row written before epochs).
        Kept in ``last_position`` so every target stores it without a new column."""
        value = self.last_position.get("epoch") if self.last_position else None
        return value if type(value) is int and value > 0 else 0


def ts_from_ms(ms: int | None) -> dt.datetime | None:
    if ms is None:
        return None
    return dt.datetime.fromtimestamp(ms / 1000.0, tz=dt.timezone.utc).replace(tzinfo=None)


def ms_from_ts(ts: Any) -> int | None:
    if ts is None:
        return None
    if isinstance(ts, str):
        ts = dt.datetime.fromisoformat(ts)
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=dt.timezone.utc)
    return int(round(ts.timestamp() * 1000))


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
