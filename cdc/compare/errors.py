"""Errors of the compare/shadow/snapshot area."""

from __future__ import annotations

from cdc.errors import CdcError, Terminal


class CompareError(CdcError, Terminal):
    """A compare cannot run as asked: names the table (and column or key) at fault."""


class OrderError(CompareError):
    """A database returned keys out of the order the merge needs (collation disagreement)."""
