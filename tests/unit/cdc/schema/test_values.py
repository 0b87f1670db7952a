"""Every read path turns a MySQL value into the same stream value (cdc.schema.values).

For each MySQL type family hypothesis draws a value the server holds, then builds what each
library hands Python for it: python-mysql-replication from the binlog (TIME through the binary
TIME2 format the server writes and readers.mysql.binlog.fastrows decodes; SET as a set of labels; BIT
as a bit string; FLOAT as the float32; MySQL JSON as a parsed document) and PyMySQL from the
server's text (through PyMySQL's own converters; BIT as bytes; FLOAT read through
cdc.schema.values.select_expr, i.e. widened by the server and printed in full; JSON as spaced text). The binlog converter (readers.mysql.binlog.decode) and the DB-API path
(cdc.schema.values.stream_value, used by snapshots, compare repair and the shadow source) must agree.
The user-visible fault without this: a snapshot row and a binlog row of the same values differ
in the target (negative fractional TIME came out -00:00:01.750000 for -00:00:01.25).
"""

from __future__ import annotations

import datetime as dt
import json
import struct
from decimal import Decimal
from types import SimpleNamespace as NS

import pymysql.converters as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pymysqlreplication.constants import FIELD_TYPE as T

from cdc.compare.shapes import classify
from cdc.schema.values import select_expr, stream_value, stream_value_is_identity, time_text, value_kind
from readers.mysql.binlog.decode import converter_for
from readers.mysql.binlog.fastrows import time2_from_bytes


def agree(type_code: int, column_type: str, binlog_value, text_value, **column) -> object:
    """(binlog path result) == (DB-API path result); return it."""
    conv = converter_for(NS(name="c", type=type_code, **column))
    from_binlog = binlog_value if conv is None else conv(binlog_value)
    kind = value_kind(column_type, classify(column_type, None, "mysql")[0], "mysql")
    from_rows = stream_value(text_value, kind)
    assert from_binlog == from_rows, (column_type, binlog_value, text_value)
    assert type(from_binlog) is type(from_rows)
    return from_binlog


# ---- TIME: the server's binary TIME2 (MariaDB/MySQL my_time_packed_to_binary) ------------------
def time2_bytes(neg: bool, h: int, m: int, s: int, us: int, fsp: int) -> bytes:
    packed = ((h << 12 | m << 6 | s) << 24) + us
    if neg:
        packed = -packed
    int_part = packed >> 24  # arithmetic shift, as the server's macro
    frac = abs(packed) % (1 << 24) * (-1 if packed < 0 else 1)  # C remainder: sign of the dividend
    if fsp == 0:
        return (int_part + 0x800000).to_bytes(3, "big")
    if fsp in (1, 2):
        q = abs(frac) // 10_000 * (-1 if frac < 0 else 1)
        return (int_part + 0x800000).to_bytes(3, "big") + (q & 0xFF).to_bytes(1, "big")
    if fsp in (3, 4):
        q = abs(frac) // 100 * (-1 if frac < 0 else 1)
        return (int_part + 0x800000).to_bytes(3, "big") + (q & 0xFFFF).to_bytes(2, "big")
    return (packed + 0x800000000000).to_bytes(6, "big")


@st.composite
def times(draw):
    fsp = draw(st.integers(0, 6))
    h, m, s = draw(st.integers(0, 838)), draw(st.integers(0, 59)), draw(st.integers(0, 59))
    us = draw(st.integers(0, 10 ** fsp - 1)) * 10 ** (6 - fsp) if fsp else 0
    neg = draw(st.booleans()) and (h or m or s or us)
    return bool(neg), h, m, s, us, fsp


@given(times())
@settings(max_examples=400, deadline=None)
def test_time_all_paths_agree(t):
    neg, h, m, s, us, fsp = t
    text = f"{'-' if neg else ''}{h:02d}:{m:02d}:{s:02d}" + (f".{us // 10 ** (6 - fsp):0{fsp}d}" if fsp else "")
    binlog = time2_from_bytes(time2_bytes(*t))
    out = agree(T.TIME2, f"time({fsp})" if fsp else "time", binlog, pc.convert_timedelta(text), fsp=fsp)
    expected = f"{'-' if neg else ''}{h:02d}:{m:02d}:{s:02d}" + (f".{us:06d}" if us else "")
    assert out == expected


@pytest.mark.parametrize("text, stream", [
    ("-00:00:01.25", "-00:00:01.250000"), ("-838:59:59.999999", "-838:59:59.999999"),
    ("-00:00:00.000001", "-00:00:00.000001"), ("838:59:59", "838:59:59"), ("-00:00:01", "-00:00:01")])
def test_time_examples(text, stream):
    assert time_text(pc.convert_timedelta(text)) == stream


# ---- the other families ---------------------------------------------------------------------------
@given(st.decimals(allow_nan=False, allow_infinity=False, places=4, min_value=-10 ** 12, max_value=10 ** 12))
def test_decimal(d):
    assert agree(T.NEWDECIMAL, "decimal(20,4)", d, pc.Decimal(str(d))) == format(d, "f")


@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_float32(f):
    # the column's own text has 6 significant digits; select_expr reads it widened to a double, printed in full
    assert select_expr("`f`", value_kind("float", "float", "mysql")) == "(`f` + 0e0)"
    assert agree(T.FLOAT, "float", f, float(repr(f))) == f


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_double(f):
    assert agree(T.DOUBLE, "double", f, float(repr(f))) == f


@given(st.datetimes(min_value=dt.datetime(1000, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59)))
def test_datetime(v):
    text = v.isoformat(" ")
    assert agree(T.DATETIME2, "datetime(6)", v, pc.convert_datetime(text)) == v.isoformat()


@given(st.datetimes(min_value=dt.datetime(1970, 1, 1, 0, 0, 1), max_value=dt.datetime(2038, 1, 19, 3, 14, 7)))
def test_timestamp(v):
    text = v.isoformat(" ")  # a UTC session (snapshots and compare set time_zone = '+00:00')
    assert agree(T.TIMESTAMP2, "timestamp(6)", v, pc.convert_datetime(text)) == v.isoformat() + "Z"


@given(st.dates(min_value=dt.date(1000, 1, 1)))
def test_date(v):
    assert agree(T.DATE, "date", v, pc.convert_date(v.isoformat())) == v.isoformat()


@given(st.integers(-2 ** 63, 2 ** 64 - 1), st.sampled_from([(T.LONGLONG, "bigint(20)"), (T.TINY, "tinyint(1)"),
                                                          (T.YEAR, "year(4)"), (T.INT24, "mediumint(9)")]))
def test_integers(i, type_):
    assert agree(type_[0], type_[1], i, i) == i


@given(st.text())
def test_text(s):
    assert agree(T.VARCHAR, "varchar(255)", s, s) == s


@given(st.binary(max_size=64), st.sampled_from([(T.BLOB, "blob"), (T.VARCHAR, "varbinary(64)"),
                                                (T.GEOMETRY, "geometry")]))
def test_binary(b, type_):
    out = agree(type_[0], type_[1], b, b)
    assert isinstance(out, str)


LABELS = ["p", "q", "r", "s"]


@given(st.sets(st.sampled_from(LABELS)))
def test_set(labels):
    text = ",".join(x for x in LABELS if x in labels)  # the server sends declaration order
    assert agree(T.SET, "set('p','q','r','s')", set(labels), text, set_values=LABELS) == text


@given(st.sampled_from(["x", "y", ""]))
def test_enum(label):
    assert agree(T.ENUM, "enum('x','y')", label, label) == label


@given(st.integers(1, 64).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, 2 ** n - 1))))
def test_bit(nv):
    n, v = nv
    bits = format(v, f"0{n}b")  # python-mysql-replication: a string of bits
    raw = v.to_bytes((n + 7) // 8, "big")  # PyMySQL: the bytes the server sends
    assert agree(T.BIT, f"bit({n})", bits, raw) == v


json_docs = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 53, 2 ** 53) | st.text(max_size=8),
                         lambda inner: st.lists(inner, max_size=3)
                         | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)


def _as_binlog_doc(v):
    if isinstance(v, str):
        return v.encode()
    if isinstance(v, dict):
        return {k.encode(): _as_binlog_doc(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_as_binlog_doc(x) for x in v]
    return v


@given(json_docs)
def test_json_mysql(doc):
    text = json.dumps(doc, ensure_ascii=False)  # MySQL's text: ", " and ": " separators
    out = agree(T.JSON, "json", _as_binlog_doc(doc), text)
    assert json.loads(out) == doc


@given(json_docs)
def test_json_mariadb_is_text_on_both_paths(doc):
    text = json.dumps(doc)
    assert agree(T.BLOB, "longtext", text, text) == text


def test_float32_keeps_the_binlog_value():
    widened = struct.unpack("<f", struct.pack("<f", 0.1))[0]
    assert agree(T.FLOAT, "float", widened, widened) == widened
    assert select_expr("`d`", value_kind("double", "float", "mysql")) == "`d`"


def test_other_dialects_keep_their_family():
    assert value_kind("float", "float", "duckdb") == "float"
    assert value_kind("bit", "other", "postgres") == "other"
    assert stream_value(dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=2))), "other") \
        == "2024-01-02T01:04:05Z"
    assert stream_value(Decimal("1.50"), "decimal") == "1.50"
    assert stream_value(memoryview(b"\x00"), "binary") == "AA=="
    assert stream_value(True, "bool") is True


def test_binlog_value_losses_are_repaired():
    """Issue #14: BINARY(n) padding, YEAR 0000, the zero TIMESTAMP, zero dates read as text."""
    import base64

    from cdc.schema.values import binary_padded, timestamp_text, year_value

    assert binary_padded(4)(b"t") == base64.b64encode(b"t\0\0\0").decode()
    assert binary_padded(1)("") == base64.b64encode(b"\0").decode()
    assert (year_value(1900), year_value(1901), year_value(2155)) == (0, 1901, 2155)
    assert timestamp_text(dt.datetime(1970, 1, 1)) is None
    assert timestamp_text(dt.datetime(1970, 1, 1, 0, 0, 1)) == "1970-01-01T00:00:01Z"
    for kind in ("date", "datetime", "timestamptz"):
        assert stream_value("0000-00-00", kind) is None
    assert stream_value("0000-00-00", "string") == "0000-00-00"


@pytest.mark.parametrize("kind", ["int", "text", "float", "float32", "decimal", "bytes", "bool", "time", "other",
                                  "vector", "date", "datetime", "timestamptz", "bit", "json"])
def test_stream_value_is_identity_only_where_it_is(kind):
    """The snapshot's fast path (readers/mysql/snapshot.py) keeps int/str/float/bool/None values as read
    where this says so: stream_value must then return each of them unchanged."""
    samples = [0, -7, 2**63, "x", "0000-00-00", "", 1.5, True, None]
    if stream_value_is_identity(kind):
        assert all(stream_value(v, kind) is v for v in samples), kind
    else:
        assert kind in ("date", "datetime", "timestamptz", "bit", "json")
        assert any(stream_value(v, kind) != v for v in ("0000-00-00", "0", "[1, 2]")
                   if not _raises(stream_value, v, kind))


def _raises(f, *a) -> bool:
    try:
        f(*a)
    except Exception:  # noqa: BLE001 - a value the kind does not take
        return True
    return False
