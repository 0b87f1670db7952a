"""cdc.spill_codec: every value a spilled row may hold comes back exactly; damage is named, never decoded."""

from __future__ import annotations

import datetime as dt
import math
import pickle
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.spill import codec as spill_codec
from cdc.spill.codec import ChunkCorrupt, decode, encode

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2 ** 200), max_value=2 ** 200),
    st.floats(allow_nan=True, allow_infinity=True), st.text(), st.binary(),
    st.decimals(allow_nan=True, allow_infinity=True), st.datetimes(), st.dates(), st.times(), st.timedeltas(),
    st.datetimes(timezones=st.timezones()), st.times(timezones=st.sampled_from(
        [dt.timezone.utc, dt.timezone(dt.timedelta(hours=-7, minutes=-30))])),
)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner),
    st.dictionaries(st.one_of(st.text(max_size=5), st.integers()), inner, max_size=4)), max_leaves=20)


def same(a, b) -> bool:
    """Equal, with NaN equal to NaN, the sign of zero kept, lists read back as tuples, aware times equal
    as the same wall time at the same offset."""
    if isinstance(a, (list, tuple)):
        return type(b) is tuple and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float):
        return type(b) is float and (math.isnan(a) and math.isnan(b) or a == b and
                                     math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, Decimal):
        return type(b) is Decimal and (a.is_nan() and b.is_nan() and a.is_signed() == b.is_signed()
                                       or str(a) == str(b))
    if isinstance(a, (dt.datetime, dt.time)):
        # the wall time and its offset (an inter-zone == is False at a DST fold, whatever the instant)
        return (type(b) is type(a) and a.replace(tzinfo=None) == b.replace(tzinfo=None)
                and a.utcoffset() == b.utcoffset())
    return type(a) is type(b) and a == b


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 10 ** 6), st.one_of(st.text(), st.integers()), VALUES), max_size=8))
def test_every_value_type_round_trips(rows):
    assert same(rows, decode(encode(rows)))


def test_the_oracle_dispatcher_items_round_trip_as_written():
    # (index, ROW_ID, (SCN, SQL_REDO, owner, table, RS_ID, SSN)): what readers/oracle/dispatcher.py spills
    chunk = [(i, f"AAAR3sAAEAAAACXAA{i}", (2 ** 63 + i, f"update \"S\".\"T\" set \"V\" = '{i}'", "S", "T",
                                            " 0x000123.0000abcd.0010 ", 0)) for i in range(1000)]
    assert decode(encode(chunk)) == tuple(chunk)


def test_a_value_the_format_does_not_carry_is_refused_by_type_when_written():
    with pytest.raises(TypeError, match="type set"):
        encode([(0, "k", ({1, 2},))])


def test_a_pickle_is_not_read():
    with pytest.raises(ChunkCorrupt, match="wrong magic"):
        decode(pickle.dumps([(0, "k", ("row",))]))


@pytest.mark.parametrize("at", [0, 9, 20, spill_codec.HEADER, spill_codec.HEADER + 17, -1])
def test_any_flipped_byte_is_caught(at):
    frame = bytearray(encode([(i, f"k{i}", ("value", i, Decimal("1.5"))) for i in range(50)]))
    frame[at] ^= 0x01
    with pytest.raises(ChunkCorrupt) as err:
        decode(bytes(frame))
    assert err.value.offset in (0, spill_codec.HEADER, len(frame)) or "announces" in err.value.what


@pytest.mark.parametrize("keep", [0, 5, spill_codec.HEADER - 1, spill_codec.HEADER, spill_codec.HEADER + 10])
def test_a_truncated_frame_names_where_it_ends(keep):
    frame = encode([(i, f"k{i}", ("value", i)) for i in range(50)])
    with pytest.raises(ChunkCorrupt, match="truncated") as err:
        decode(frame[:keep])
    assert err.value.offset == keep


def test_trailing_bytes_are_not_ignored():
    frame = encode([(0, "k", ("v",))])
    with pytest.raises(ChunkCorrupt, match="trailing bytes") as err:
        decode(frame + b"\x00")
    assert err.value.offset == len(frame)
