"""The logical type of a shadow source's column (cdc.schema.logical), from the compare catalog read that
describes the table (cdc.compare.columns.ColumnInfo: its family and scale).

The shadow source reads any database the compare reads, so its columns come with the compare family the
catalog read gave them (the compare dialects own those spellings); this maps that family to the logical
one. It is coarser than a log reader's: an ``int`` is a 64-bit integer, a ``float`` a double, a string has
no length.
"""

from __future__ import annotations

from dataclasses import replace

from cdc.compare.columns import ColumnInfo, Family
from cdc.compare.dialects import COMPARE_DIALECTS
from cdc.compare.type_families import common_family
from cdc.schema.logical import LogicalType


def from_family(family: Family, scale: int | None) -> LogicalType:
    """The logical type of a compare family (and its decimal scale / fraction digits)."""
    if family == "int":
        return LogicalType("integer", length=64)
    if family == "bool":
        return LogicalType("boolean")
    if family == "decimal":
        return LogicalType("decimal", scale=scale)
    if family == "float":
        return LogicalType("double")
    if family in ("string", "binary", "date"):
        return LogicalType(family)
    if family == "datetime":
        return LogicalType("timestamp", precision=scale)
    if family == "timestamptz":
        return LogicalType("timestamp_tz", precision=scale, time_zone="utc")
    if family == "time":
        return LogicalType("time", precision=scale)
    return LogicalType("other")


def of_column(col: ColumnInfo, dialect: str | None = None) -> LogicalType:
    """``dialect``: the compare dialect of the database the shadow reads (cdc.schema.logical ``dialect``: a
    target of that dialect takes the catalog's type text as it is)."""
    return replace(from_family(col.family, col.scale), dialect=dialect)


def logical_type(type_text: str) -> LogicalType:
    """The logical type of a shadow SCHEMA record's type text written without one (the spellings all
    databases share, cdc.compare.type_families, and each compare dialect's own); ``other`` where they do not
    name it."""
    t = type_text.strip().lower()
    found = next((f for d in COMPARE_DIALECTS.values() if (f := d.spelled_family(t)) is not None), None) \
        or common_family(t, None, "datetime")
    return from_family(*found) if found is not None else LogicalType("other")
