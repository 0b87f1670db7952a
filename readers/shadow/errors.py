"""Errors of the shadow-table reader. All are terminal: the source stops at its last cycle."""

from __future__ import annotations

from cdc.errors import CdcError, Terminal


class ShadowError(CdcError, Terminal):
    """The shadow source cannot go on (bad resume state, unusable table)."""


class TableWithoutKey(ShadowError):
    """A configured table has no primary key (``table``): an update could not be told from a delete + insert."""
