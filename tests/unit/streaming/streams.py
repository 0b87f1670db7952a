"""Test-side name of streaming.streamgen (realistic change streams built from cdc.envelope)."""

from streaming.streamgen import StreamBuilder, produce  # noqa: F401
