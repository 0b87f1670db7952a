"""Errors of the transforms (cdc/transforms): a bad rule, a key file, a rule that no longer fits its table."""

from __future__ import annotations

from cdc.errors import CdcError, Terminal


class TransformError(CdcError, Terminal):
    """A transform cannot be applied as configured: names the source, table and column, and the way back.

    Raised when a table's mapper is built (the reader's first sight of its shape, and after every DDL), so
    the source stops before any record of that table leaves it: nothing unshaped is ever published."""


class KeyFileError(TransformError):
    """A key file is missing, unreadable or of the wrong size; the message names the file, never the key."""


class DecryptError(TransformError):
    """A value is not one ``encrypt`` wrote, or the key is not the one that wrote it."""
