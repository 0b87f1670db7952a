"""Errors of the operations API."""

from __future__ import annotations

from typing import Any


class Refusal(Exception):
    """An answer other than 200: ``status`` and the message (no secret in it)."""

    def __init__(self, status: int, message: str, fields: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status, self.fields = status, fields or {}
