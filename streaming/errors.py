"""Errors of the apply side. All carry the fields that locate the problem
(table, key, sequence, value, column) and pickle through Spark executors."""

from __future__ import annotations

from cdc.errors import CdcError, StreamCorrupt, Terminal, Transient

__all__ = ["ApplyError", "BadRecord", "OffsetsGone", "StreamCorrupt", "TargetError", "TargetRefused", "TargetTransient",
           "TargetUnavailable", "UnsupportedDdl"]


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


class TargetTransient(TargetError):
    """A target failure a retry may cure (a lock wait or statement timeout, a deadlock, a serialization
    failure, a lost connection): the batch was rolled back whole. Fields: target, batch, sequence (the
    batch's ``first..last``), cause (the driver's error class and SQLSTATE or error number)."""


class TargetUnavailable(ApplyError):
    """A batch kept failing transiently until its retries ran out. Nothing of it was applied (the target's
    progress row says where a restart resumes). Fields: target, batch, sequence, attempts, cause."""


class TargetRefused(ApplyError):
    """The target refused a statement for a reason that is neither bad data nor transient (a permission, a
    table or column changed behind the apply's back): a stop, never a dead letter. Fields: target, table,
    key, sequence, offset, cause."""
