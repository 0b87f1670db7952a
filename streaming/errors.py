"""Errors of the apply side. All carry the fields that locate the problem
(table, key, sequence, value, column) and pickle through Spark executors."""

from __future__ import annotations

from cdc.errors import CdcError, StreamCorrupt, Terminal, Transient

__all__ = ["ApplyError", "BadRecord", "OffsetsGone", "StreamCorrupt", "TargetError", "UnsupportedDdl"]


class ApplyError(CdcError, Terminal):
    """The apply job cannot go on at this position."""


class BadRecord(ApplyError):
    """A record that cannot be applied: undecodable, missing key, a value the target
    cannot hold. Fields: table, key, sequence, value (and column, offset when known)."""


class UnsupportedDdl(ApplyError):
    """A schema change the apply does not follow (streaming/apply/catalog.py): the job stops at that sequence."""


class OffsetsGone(ApplyError):
    """Offsets the query needs were removed from Kafka (retention): never skipped."""


class TargetError(CdcError, Transient):
    """The target database could not be reached or refused a connection."""
