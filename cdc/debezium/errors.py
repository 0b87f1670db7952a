"""Errors of the Debezium record builder."""

from __future__ import annotations

from cdc.errors import CdcError, Terminal


class DebeziumValueError(CdcError, Terminal):
    """A stream value cannot be written in the configured Debezium encoding (``kafka.debezium``): names the
    table, column, type, value and the change's position, so the source stops there, never skips it."""


class SchemaRefused(CdcError, Terminal):
    """The Schema Registry refused a table's schema (incompatible under its mode, or invalid): names the
    subject; the source stops at that change instead of writing records no consumer can decode."""


class TruncateOnCompactedTopic(CdcError, Terminal):
    """A TRUNCATE for a compacted per-table topic: Debezium's ``op: "t"`` record has a null key, which a
    compacted topic refuses (the broker would fail the record again after every restart). The source stops
    before it, naming the table and position; publishing resumes there once the per-table topics are not
    compacted (``kafka.topics.per_table``)."""
