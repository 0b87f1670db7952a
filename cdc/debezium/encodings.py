"""Column types -> Kafka Connect field types and value encodings, as Debezium's connectors write them.

One function, :func:`codec`, maps a column's logical type (cdc.schema.logical, made by the reader from its
type text: only readers read a source's spellings) and the ``kafka.debezium`` options to a
:class:`Codec`: the Connect type (with Debezium's logical name, version and parameters) and the function
that turns the ordered stream's value into the payload value. References, per mode:

- MySQL connector, "Data type mappings" (https://debezium.io/documentation/reference/stable/connectors/
  mysql.html#mysql-data-types): ``time.precision.mode`` ``adaptive_time_microseconds`` (our
  ``adaptive_micros``: DATE -> io.debezium.time.Date epoch days, TIME -> MicroTime microseconds,
  DATETIME(0-3) -> Timestamp ms, (4-6) -> MicroTimestamp us, TIMESTAMP -> ZonedTimestamp UTC text) and
  ``connect`` (org.apache.kafka.connect.data.Date/Time/Timestamp); ``decimal.handling.mode`` ``precise``
  (org.apache.kafka.connect.data.Decimal: the unscaled value's big-endian two's complement bytes), ``double``,
  ``string``; BIT(1) boolean, BIT(n) io.debezium.data.Bits little-endian bytes; ENUM/SET io.debezium.data.Enum/
  EnumSet; JSON io.debezium.data.Json; spatial types io.debezium.data.geometry.Geometry/Point; MySQL 9
  VECTOR io.debezium.data.FloatVector (a Connect array of float32, Debezium 3's mapping).
- Oracle connector, "Data type mappings" (.../connectors/oracle.html#oracle-data-type-mappings): DATE and
  TIMESTAMP(0-3) -> Timestamp, (4-6) -> MicroTimestamp, (7-9) -> NanoTimestamp, WITH [LOCAL] TIME ZONE ->
  ZonedTimestamp; NUMBER(p,0) -> int8/16/32/64 by precision, NUMBER(p,s) -> Decimal, NUMBER ->
  io.debezium.data.VariableScaleDecimal; BINARY_FLOAT/DOUBLE float32/64; RAW bytes.

``temporal: iso`` is the ordered stream's own encoding, unchanged (the per-table topics' values before this
module): temporal values as ISO text (schema names io.debezium.time.IsoDate/IsoTime/IsoTimestamp, as
Debezium's ``isostring`` mode), and every other value as the stream carries it (BIT as an integer, Oracle
NUMBER/BINARY_DOUBLE/RAW as their SQL text, spatial values and VECTOR's float32 bytes as base64). ``connect`` and ``adaptive_micros``
give Debezium's typed encodings for those too. ``decimal`` applies in every mode.
"""

from __future__ import annotations

import base64
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

from cdc.schema.logical import LogicalType

# a date and time inside ISO text ('2024-02-29T12:34:56.5Z') or SQL_REDO text (TO_DATE('2024-02-29 12:34:56', ..))
_DATETIME = re.compile(r"(-?\d{4,})-(\d\d)-(\d\d)(?:[T ](\d\d):(\d\d):(\d\d)(?:\.(\d{0,9}))?)?")
_TIME = re.compile(r"^(-)?(\d+):(\d\d):(\d\d)(?:\.(\d{1,9}))?$")
_HEXTORAW = re.compile(r"^HEXTORAW\('([0-9A-Fa-f]*)'\)$")
_EPOCH_DAY = date(1970, 1, 1).toordinal()

Convert = Callable[[Any], Any]

# integer storage bits -> (Connect type signed, unsigned), as Debezium's MySQL connector
_INT_TYPES = {8: ("int16", "int16"), 16: ("int16", "int32"), 24: ("int32", "int32"), 32: ("int32", "int64"),
              64: ("int64", "int64")}


@dataclass(frozen=True, slots=True)
class Codec:
    """A column's Kafka Connect type and its value encoding. ``convert`` None: the stream value as is."""

    type: str
    name: str | None = None
    version: int | None = None
    parameters: dict[str, str] | None = None
    fields: tuple[dict[str, Any], ...] = ()  # a struct's field schemas
    items: dict[str, Any] | None = None  # an array's element schema
    convert: Convert | None = field(default=None, compare=False)

    def schema(self, optional: bool, field_name: str | None = None) -> dict[str, Any]:
        """The Connect JSON schema of this type, keys in JsonConverter's order."""
        out: dict[str, Any] = {"type": self.type}
        if self.fields:
            out["fields"] = list(self.fields)
        if self.items is not None:
            out["items"] = dict(self.items)
        out["optional"] = optional
        if self.name is not None:
            out["name"] = self.name
        if self.version is not None:
            out["version"] = self.version
        if self.parameters is not None:
            out["parameters"] = self.parameters
        if field_name is not None:
            out["field"] = field_name
        return out


def codec(logical: LogicalType, connector: str, temporal: str, decimal: str) -> Codec:
    """The Codec of one column of ``logical`` type (cdc.schema.logical; cdc.registry.logical_of makes it for a
    column that came without one). ``connector``: the source kind, for the one rule Debezium's connectors
    differ in (Oracle NUMBER(p[,0]) is an integer by precision, a MySQL DECIMAL(p,0) a decimal). Unknown
    families are strings carrying the stream value."""
    typed = temporal != "iso"
    family = logical.family
    if family == "integer":
        if logical.length == 64 and logical.unsigned:
            return _unsigned_bigint(decimal)
        return Codec(_INT_TYPES.get(logical.length or 64, ("int64", "int64"))[1 if logical.unsigned else 0])
    if family == "decimal":
        scale = logical.scale or 0
        if connector == "oracle" and scale <= 0:  # NUMBER(p[,0]) or NUMBER(p,-s): integers; NUMBER: any scale
            return _number(logical.precision, decimal, typed)
        return _decimal(logical.precision or 10, scale, decimal)
    if family in ("float", "double"):
        kind = "float32" if family == "float" else "float64"
        if logical.stream_form == "text":  # Oracle: SQL_REDO text ('1.1E+000', 'Nan', 'Inf')
            return Codec(kind, convert=_float) if typed else Codec("string")
        return Codec(kind)  # MySQL: numbers in the stream
    if family == "boolean":
        return Codec("boolean")
    if family == "bit":
        return _bit(logical.length or 1, typed)
    if family == "year":
        return Codec("int32", "io.debezium.time.Year", 1)
    if family == "date":
        return _date(temporal)
    if family == "timestamp_tz":  # an instant, published in UTC (MySQL TIMESTAMP, Oracle WITH [LOCAL] TIME ZONE)
        return _zoned(logical.precision or 0, typed)
    if family == "timestamp":  # a wall clock; Oracle DATE is one to the second
        return _timestamp(logical.precision or 0, temporal)
    if family == "time":
        return _time(temporal)
    if family in ("enum", "set"):
        name = "io.debezium.data.Enum" if family == "enum" else "io.debezium.data.EnumSet"
        return Codec("string", name, 1, {"allowed": ",".join(logical.values)})
    if family == "json":
        return Codec("string", "io.debezium.data.Json", 1)
    if family == "binary":
        if logical.stream_form == "hextoraw":
            return Codec("bytes", convert=_raw) if typed else Codec("string")
        return Codec("bytes")
    if family == "spatial":
        return _spatial(logical.subtype or "geometry", typed)
    if family == "vector" and typed:
        return Codec("array", "io.debezium.data.FloatVector", 1, items=_FLOAT32, convert=_float_vector)
    return Codec("string")  # strings, intervals, and types we do not know


# ---------------------------------------------------------------- numbers
def _float(v: Any) -> Any:
    """Oracle's BINARY_FLOAT/DOUBLE text ('1.10000002E+000', 'Nan', 'Inf', '-Inf') or a number -> float."""
    if v is None or isinstance(v, (int, float)):
        return v
    return float({"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(v.lower(), v))


def _decimal(precision: int, scale: int, mode: str) -> Codec:
    if mode == "string":
        return Codec("string")
    if mode == "double":
        return Codec("float64", convert=_float_of_text)
    return Codec("bytes", "org.apache.kafka.connect.data.Decimal", 1,
                 {"scale": str(scale), "connect.decimal.precision": str(precision)}, convert=_unscaled_b64(scale))


def _unsigned_bigint(mode: str) -> Codec:
    """BIGINT UNSIGNED: int64, as Debezium's default ``bigint.unsigned.handling.mode=long``; ``precise``
    decimals make it Decimal(20,0) as ``bigint.unsigned.handling.mode=precise`` does (no value wraps)."""
    if mode == "precise":
        return _decimal(20, 0, "precise")
    return Codec("int64")


def _number(p: int | None, mode: str, typed: bool) -> Codec:
    """Oracle NUMBER(p[,0]) -> an integer type by precision; NUMBER -> VariableScaleDecimal (``precise``)."""
    if p is not None:
        if p < 19:
            kind = "int8" if p < 3 else "int16" if p < 5 else "int32" if p < 10 else "int64"
            return Codec(kind, convert=_int) if typed else Codec("string")
        return _decimal(p, 0, mode)
    if mode == "string":
        return Codec("string")
    if mode == "double":
        return Codec("float64", convert=_float_of_text)
    return Codec("struct", "io.debezium.data.VariableScaleDecimal", 1, None,
                 ({"type": "int32", "optional": False, "field": "scale"},
                  {"type": "bytes", "optional": False, "field": "value"}), convert=_variable_scale)


def _int(v: Any) -> Any:
    return v if v is None or isinstance(v, int) else int(Decimal(v))


def _float_of_text(v: Any) -> Any:
    return v if v is None or isinstance(v, float) else float(Decimal(str(v)))


def _twos_complement(n: int) -> bytes:
    """Java BigInteger.toByteArray(): the minimal big-endian two's complement bytes."""
    return n.to_bytes(((n if n >= 0 else ~n).bit_length() // 8) + 1, "big", signed=True)


def _unscaled(d: Decimal, scale: int) -> int:
    """``d`` * 10**scale as an exact integer (Decimal.scaleb would round to the context's 28 digits);
    ValueError when ``d`` has more than ``scale`` fraction digits."""
    if not d.is_finite():
        raise ValueError("not a finite number")
    sign, digits, exponent = d.as_tuple()
    n = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift < 0:
        n, rest = divmod(n, 10 ** -shift)
        if rest:
            raise ValueError(f"more than {scale} fraction digits")
    else:
        n *= 10 ** shift
    return -n if sign else n


def _unscaled_b64(scale: int) -> Convert:
    def convert(v: Any) -> Any:
        if v is None:
            return None
        return base64.b64encode(_twos_complement(_unscaled(Decimal(str(v)), scale))).decode()
    return convert


def _variable_scale(v: Any) -> Any:
    if v is None:
        return None
    d = Decimal(str(v))
    scale = max(0, -d.as_tuple().exponent) if d.is_finite() else 0
    return {"scale": scale, "value": base64.b64encode(_twos_complement(_unscaled(d, scale))).decode()}


# ---------------------------------------------------------------- bits, bytes, spatial
def _bit(n: int, typed: bool) -> Codec:
    if not typed:
        return Codec("int64")
    if n == 1:
        return Codec("boolean", convert=lambda v: v if v is None else bool(v))
    width = (n + 7) // 8
    return Codec("bytes", "io.debezium.data.Bits", 1, {"length": str(n)},
                 convert=lambda v: v if v is None else base64.b64encode(int(v).to_bytes(width, "little")).decode())


def _raw(v: Any) -> Any:
    """Oracle RAW as SQL_REDO writes it (HEXTORAW('00ff')) -> base64 of its bytes."""
    if v is None:
        return None
    m = _HEXTORAW.match(v)
    if m is None:
        raise ValueError("not a HEXTORAW('..') text")
    return base64.b64encode(bytes.fromhex(m.group(1))).decode()


_WKB = {"type": "bytes", "optional": False, "field": "wkb"}
_SRID = {"type": "int32", "optional": True, "field": "srid"}


def _spatial(base: str, typed: bool) -> Codec:
    """The stream's base64 of MySQL's internal value (4-byte little-endian SRID + WKB) -> Debezium's struct."""
    if not typed:
        return Codec("bytes")
    if base == "point":
        return Codec("struct", "io.debezium.data.geometry.Point", 1, None,
                      ({"type": "float64", "optional": False, "field": "x"},
                       {"type": "float64", "optional": False, "field": "y"},
                       {**_WKB, "optional": True}, _SRID), convert=_point)
    return Codec("struct", "io.debezium.data.geometry.Geometry", 1, None, (_WKB, _SRID), convert=_geometry)


def _split_srid(v: str) -> tuple[int, bytes]:
    raw = base64.b64decode(v, validate=True)
    if len(raw) < 5:
        raise ValueError("shorter than an SRID and a WKB header")
    return struct.unpack_from("<I", raw)[0], raw[4:]


def _geometry(v: Any) -> Any:
    if v is None:
        return None
    srid, wkb = _split_srid(v)
    return {"wkb": base64.b64encode(wkb).decode(), "srid": srid}


def _point(v: Any) -> Any:
    if v is None:
        return None
    srid, wkb = _split_srid(v)
    x, y = struct.unpack_from("<dd" if wkb[0] == 1 else ">dd", wkb, 5)
    return {"x": x, "y": y, "wkb": base64.b64encode(wkb).decode(), "srid": srid}


_FLOAT32 = {"type": "float32", "optional": False}


def _float_vector(v: Any) -> Any:
    """The stream's base64 of a VECTOR's stored bytes (little-endian float32s) -> the list of its elements."""
    if v is None:
        return None
    raw = base64.b64decode(v, validate=True)
    if len(raw) % 4:
        raise ValueError(f"{len(raw)} bytes are not a whole number of float32 elements")
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


# ---------------------------------------------------------------- temporal
def _date(temporal: str) -> Codec:
    if temporal == "iso":
        return Codec("string", "io.debezium.time.IsoDate", 1)
    name = "org.apache.kafka.connect.data.Date" if temporal == "connect" else "io.debezium.time.Date"
    return Codec("int32", name, 1, convert=_epoch_days)


def _timestamp(precision: int, temporal: str) -> Codec:
    """A zone-less date and time (MySQL DATETIME, Oracle DATE/TIMESTAMP): the wall clock read as UTC."""
    if temporal == "iso":
        return Codec("string", "io.debezium.time.IsoTimestamp", 1)
    if temporal == "connect":
        return Codec("int64", "org.apache.kafka.connect.data.Timestamp", 1, convert=_epoch_units(3))
    if precision <= 3:
        return Codec("int64", "io.debezium.time.Timestamp", 1, convert=_epoch_units(3))
    if precision <= 6:
        return Codec("int64", "io.debezium.time.MicroTimestamp", 1, convert=_epoch_units(6))
    return Codec("int64", "io.debezium.time.NanoTimestamp", 1, convert=_epoch_units(9))


def _zoned(precision: int, typed: bool) -> Codec:
    """MySQL TIMESTAMP, Oracle WITH [LOCAL] TIME ZONE: UTC ISO text with the column's fraction digits."""
    if not typed:
        return Codec("string", "io.debezium.time.ZonedTimestamp", 1)
    return Codec("string", "io.debezium.time.ZonedTimestamp", 1, convert=_zoned_text(precision))


def _time(temporal: str) -> Codec:
    if temporal == "iso":
        return Codec("string", "io.debezium.time.IsoTime", 1)
    if temporal == "connect":
        return Codec("int32", "org.apache.kafka.connect.data.Time", 1, convert=lambda v: _micros_of_day(v, 3))
    return Codec("int64", "io.debezium.time.MicroTime", 1, convert=lambda v: _micros_of_day(v, 6))


def _parts(v: str) -> tuple[int, int, str]:
    """(epoch day, second of the day, fraction digits) of a date/time text."""
    m = _DATETIME.search(v)
    if m is None:
        raise ValueError("not a date/time text")
    y, mo, d, hh, mi, ss, frac = m.groups()
    day = date(int(y), int(mo), int(d)).toordinal() - _EPOCH_DAY
    return day, int(hh or 0) * 3600 + int(mi or 0) * 60 + int(ss or 0), frac or ""


def _epoch_days(v: Any) -> Any:
    return v if v is None else _parts(v)[0]


def _epoch_units(digits: int) -> Convert:
    """Epoch time in units of 10**-digits seconds (3: ms, 6: us, 9: ns); finer digits are cut, as Java's
    Instant -> millis/micros conversions do."""
    unit = 10 ** digits

    def convert(v: Any) -> Any:
        if v is None:
            return None
        day, second, frac = _parts(v)
        return (day * 86400 + second) * unit + int((frac + "0" * digits)[:digits])
    return convert


def _zoned_text(precision: int) -> Convert:
    def convert(v: Any) -> Any:
        if v is None:
            return None
        m = _DATETIME.search(v)
        if m is None or not v.endswith("Z"):
            raise ValueError("not a UTC date/time text ending in Z")
        y, mo, d, hh, mi, ss, frac = m.groups()
        fraction = "." + ((frac or "") + "0" * precision)[:precision] if precision else ""
        return f"{y}-{mo}-{d}T{hh}:{mi}:{ss}{fraction}Z"
    return convert


def _micros_of_day(v: Any, digits: int) -> Any:
    """'[-]HHH:MM:SS[.f]' (MySQL TIME spans +-838 h) -> signed units (3: ms, 6: us)."""
    if v is None:
        return None
    m = _TIME.match(v)
    if m is None:
        raise ValueError("not a [-]HH:MM:SS[.ffffff] text")
    sign, hh, mi, ss, frac = m.groups()
    unit = 10 ** digits
    total = (int(hh) * 3600 + int(mi) * 60 + int(ss)) * unit + int(((frac or "") + "0" * digits)[:digits])
    return -total if sign else total

