"""The error hierarchy. Every error the service raises on purpose is a CdcError.

Mix-ins classify what to do about it: ``Transient`` (retry with backoff,
count a reconnect) and ``Terminal`` (stop the source at its position, alert).
Errors carry their fields as attributes and pickle cleanly, because they
cross into Spark executors and back.
"""

from __future__ import annotations

from typing import Any


class CdcError(Exception):
    """Root of all intended errors. ``fields`` name what and where."""

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields
        for key, value in fields.items():
            setattr(self, key, value)

    def __reduce__(self):  # pickle through executors with fields intact
        return (_rebuild, (type(self), self.message, self.fields))

    def __str__(self) -> str:
        if not self.fields:
            return self.message
        detail = ", ".join(f"{k}={v!r}" for k, v in self.fields.items() if v is not None and not _quoted(v, self.message))
        return f"{self.message} ({detail})" if detail else self.message


def _quoted(value: Any, message: str) -> bool:
    """A long field value (or list of them) the message already says word for word: not printed twice."""
    items = value if isinstance(value, (list, tuple)) and value else [value]
    return all(isinstance(v, str) and len(v) >= 20 and v in message for v in items)


def _rebuild(cls: type, message: str, fields: dict[str, Any]) -> "CdcError":
    err = cls.__new__(cls)
    CdcError.__init__(err, message, **fields)
    return err


class Transient:
    """Mix-in: the operation may succeed if retried (network, failover)."""


class Terminal:
    """Mix-in: retrying cannot help; stop at the current position."""


class ConfigError(CdcError, Terminal):
    """Bad configuration: names the key and the file (or env var) it came from."""


class DecodeError(CdcError, Terminal):
    """A change could not be decoded: names table, column, position, value."""


class SourceUnavailable(CdcError, Transient):
    """The source could not be reached (connection refused, lost, timeout)."""


class PublishError(CdcError, Transient):
    """The broker did not acknowledge a record."""


class SpillError(CdcError, Terminal):
    """The spill directory is not private, or a chunk file could not be written or read back."""


class StreamCorrupt(CdcError, Terminal):
    """The change stream in Kafka is not what the contract says it is."""
