"""Errors of the Debezium record builder."""

from __future__ import annotations

from cdc.errors import CdcError, Terminal


class DebeziumValueError(CdcError, Terminal):
    """A stream value cannot be written in the configured Debezium encoding (``kafka.debezium``): names the
    table, column, type, value and the change's position, so the source stops there, never skips it."""


class SchemaRefused(CdcError, Terminal):
    """The Schema Registry refused a table's schema (incompatible under its mode, or invalid): names the
    subject; the source stops at that change instead of writing records no consumer can decode."""
