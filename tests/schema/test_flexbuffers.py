"""schema/flexbuffers.py: flexbuffers' Reference::As* conversions (flatbuffers/flexbuffers.h), type by type."""

import math

import pytest
from flatbuffers import flexbuffers as fb

from litert_py.schema import flexbuffers as F


def test_loads_round_trip_and_malformed():
    raw = fb.Dumps({"a": 3, "b": 1.5, "c": True})
    assert F.loads(raw) == {"a": 3, "b": 1.5, "c": True}
    with pytest.raises(F.FlexBufferError, match="ValueError"):
        F.loads(raw[:2])


@pytest.mark.parametrize(
    ("v", "i64", "dbl", "b"),
    [
        (None, 0, 0.0, False),
        (True, 1, 1.0, True),
        (-7, -7, -7.0, True),
        (2.9, 2, 2.9, True),
        (-2.9, -2, -2.9, True),
        (0.5, 0, 0.5, False),  # AsBool of a float is AsUInt64() != 0: truncated first
        (math.nan, 0, math.nan, False),
        ("12", 12, 12.0, True),
        ("x", 0, 0.0, False),
        ([1, 2, 3], 3, 3.0, True),
        ({"k": 1}, 1, 1.0, True),
    ],
)
def test_conversions(v, i64, dbl, b):
    assert F.as_int64(v) == i64
    d = F.as_double(v)
    assert (math.isnan(d) and math.isnan(dbl)) or d == dbl
    assert F.as_bool(v) is b


def test_int32_wraps_and_float_rounds_to_float32():
    assert F.as_int32(2**31) == -(2**31)
    assert F.as_int32(2**32 + 5) == 5
    assert F.as_float(0.1) == 0.10000000149011612
    assert F.as_float(1e300) == math.inf
