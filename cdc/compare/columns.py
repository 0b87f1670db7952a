"""A compared column as the catalog describes it, and its fingerprint family (cdc.compare.fingerprint)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Family = Literal["int", "bool", "decimal", "float", "string", "binary", "date", "datetime",
                 "timestamptz", "time", "json", "other"]


@dataclass(frozen=True)
class ColumnInfo:
    """A column as the catalog describes it. ``type`` is the database's own text."""

    name: str
    type: str
    family: Family
    scale: int | None = None  # decimal scale, fractional seconds digits
    nullable: bool = True
    charset: str | None = None  # MySQL character set of string columns
    expr: str | None = None  # the canonical text as SQL, rendering a transform (cdc/compare/transformed.py)
