"""The logical type of a column: what its values are, independent of how the source spells the type.

A reader reads its source's type text (MySQL ``COLUMN_TYPE``, Oracle ``ALL_TAB_COLUMNS``, a table map's
metadata) and makes a :class:`LogicalType` next to that text (cdc.stream.events.Column: ``type`` keeps the
text, ``logical`` this). The core switches on ``family`` and the sizes here, never on a spelling: only
``readers/`` know that ``varchar2(40)`` and ``varchar(40)`` are both a string of 40 characters
(tests/unit/cdc/test_type_spellings.py holds the core to it).

Families and the fields each one uses:

- ``integer``: ``length`` = storage bits (8, 16, 24, 32, 64), ``unsigned``;
- ``decimal``: ``precision``, ``scale`` (both None: any number of digits at any scale, Oracle NUMBER);
- ``float`` (single precision), ``double``;
- ``boolean``;
- ``string``, ``binary``: ``length`` = most characters / bytes (None: unbounded), ``fixed`` (CHAR, BINARY:
  padded to ``length``);
- ``date``; ``time`` (a time of day or a duration), ``timestamp`` (a wall clock) and ``timestamp_tz`` (an
  instant): ``precision`` = fraction digits; ``time_zone`` of a ``timestamp_tz``: ``utc`` (the stream
  carries it in UTC with 'Z') or ``local`` (Oracle WITH LOCAL TIME ZONE: the session's wall clock);
- ``json``; ``enum``, ``set``: ``values`` = the labels in declared order; ``bit``: ``length`` = bits;
  ``year``; ``interval``; ``spatial``: ``subtype`` (``point``, ``geometry``, ...); ``vector``: ``length``;
- ``other``: a type the reader does not know; its values travel as text.

``subtype`` also marks what the family and length cannot: ``lob`` (MySQL TINYTEXT..LONGTEXT and the BLOB family,
Oracle CLOB/NCLOB/LONG/XMLTYPE and BLOB/BFILE/LONG RAW: a large-object type, whatever its length) and ``national``
(Oracle NCHAR/NVARCHAR2/NCLOB: the national character set). ``precision`` None on a temporal family: the source
declared no fraction digits (MySQL plain ``datetime``), distinct from an explicit 0 (``datetime(0)``).

``dialect``: the source dialect whose type text the reader read (``mysql``, ``oracle``; the shadow source's
compare dialect; None: no reader, e.g. a masked column's type). A target of that same dialect passes the column's
declared text through (streaming/targets/<kind>/typemap.py); it is provenance, not part of the type, so it takes no
part in equality.

``stream_form``: how the stream spells a value where it is not the family's plain form (the reader's
declaration): ``hextoraw`` (Oracle RAW: ``HEXTORAW('00ff')``), ``text`` (Oracle BINARY_FLOAT/DOUBLE:
``'1.1E+000'``, ``'Nan'``); None: the plain form (cdc.stream.events.Change).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

FAMILIES = frozenset({"integer", "decimal", "float", "double", "boolean", "string", "binary", "date", "time",
                      "timestamp", "timestamp_tz", "json", "enum", "set", "bit", "year", "interval", "spatial",
                      "vector", "other"})
TIME_ZONES = frozenset({"utc", "local"})


class LogicalTypeError(ValueError):
    """A logical type that is not one (an unknown family, a bad JSON form)."""


@dataclass(frozen=True, slots=True)
class LogicalType:
    """See the module doc. Hashable, comparable; ``to_json`` writes only the fields that are set."""

    family: str
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    unsigned: bool = False
    time_zone: str | None = None
    fixed: bool = False
    values: tuple[str, ...] = ()
    subtype: str | None = None
    stream_form: str | None = None
    dialect: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise LogicalTypeError(f"unknown logical type family {self.family!r}; one of {sorted(FAMILIES)}")
        if self.time_zone is not None and self.time_zone not in TIME_ZONES:
            raise LogicalTypeError(f"unknown time zone {self.time_zone!r} of a {self.family}; one of "
                                   f"{sorted(TIME_ZONES)}")

    def to_json(self) -> dict[str, Any]:
        """``{"family": f, ...}`` with the other fields only where they differ from their default."""
        out: dict[str, Any] = {"family": self.family}
        for f in fields(self)[1:]:
            v = getattr(self, f.name)
            if v != f.default:
                out[f.name] = list(v) if isinstance(v, tuple) else v
        return out

    @classmethod
    def from_json(cls, obj: Any) -> LogicalType:
        """The inverse of :meth:`to_json`; raises LogicalTypeError naming the bad field."""
        if not isinstance(obj, dict) or not isinstance(obj.get("family"), str):
            raise LogicalTypeError(f"a logical type is an object with a 'family' string, not {obj!r}")
        known = {f.name for f in fields(cls)}
        extra = set(obj) - known
        if extra:
            raise LogicalTypeError(f"logical type {obj!r} has unknown fields {sorted(extra)}")
        kw = dict(obj)
        if "values" in kw:
            kw["values"] = tuple(kw["values"])
        return cls(**kw)

    def int_range(self) -> tuple[int, int] | None:
        """(lowest, highest) value of an ``integer``; None for any other family."""
        if self.family != "integer" or self.length is None:
            return None
        bits = self.length
        return (0, 2 ** bits - 1) if self.unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
