"""Errors of maintained views. They name the view and what is wrong with it."""

from __future__ import annotations

from cdc.errors import CdcError, Terminal


class ViewError(CdcError, Terminal):
    """A view cannot be defined or maintained. Fields: view (and construct,
    table, column where they apply)."""


class ViewDefinitionError(ViewError):
    """The view definition is invalid or uses an unsupported construct."""


class ViewInconsistent(ViewError):
    """The maintained view no longer matches its base tables (a derivation
    count would go negative). Run ``cdc views rebuild``."""
