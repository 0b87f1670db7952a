"""Test-side name of streaming.testing (realistic change streams built from cdc.envelope)."""

from streaming.testing import StreamBuilder, produce  # noqa: F401
