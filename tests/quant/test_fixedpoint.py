"""Fixed-point primitives against exact Python-integer references (tests/quant/ref.py)."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litert_py.quant import (
    downscale_int32_to_int16_multiplier,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_int64,
    quantize_multiplier,
    quantize_multiplier_array,
    round_away,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    trunc_to_int32,
    wrap32,
)
from tests.quant import ref
from tests.quant.ref import INT32_MAX, INT32_MIN

EXTREMES = [INT32_MIN, INT32_MIN + 1, -(2**30) - 1, -(2**30), -65536, -2, -1, 0, 1, 2, 2**30, INT32_MAX - 1, INT32_MAX]
int32s = st.one_of(st.sampled_from(EXTREMES), st.integers(INT32_MIN, INT32_MAX), st.integers(-300, 300))
# Quantized multipliers: the normal range [2^30, 2^31), negatives (negative reals), 0 and the edges.
multipliers = st.one_of(
    st.sampled_from([0, 1, 2**30, 2**30 + 1, 3 * 2**29, INT32_MAX, INT32_MIN, -(2**30)]),
    st.integers(2**30, INT32_MAX),
    st.integers(INT32_MIN, INT32_MAX),
)
shifts = st.one_of(st.sampled_from([-31, -30, -1, 0, 1, 30]), st.integers(-31, 30))


# ---------------------------------------------------------------------------------------- wrap / cast
@settings(max_examples=200)
@given(st.integers(-(2**62), 2**62))
def test_wrap32(v):
    assert int(wrap32(v)) == ref.wrap32(v)


@settings(max_examples=200)
@given(
    st.one_of(
        st.floats(width=64),
        st.floats(width=32),
        st.sampled_from(
            [
                2.0**31,
                -(2.0**31),
                2.0**31 - 1,
                -(2.0**31) - 1,
                2147483520.0,
                -0.5,
                0.999,
                -0.999,
                math.inf,
                -math.inf,
                math.nan,
            ]
        ),
    )
)
def test_trunc_to_int32(x):
    assert int(trunc_to_int32(np.float64(x))) == ref.trunc_to_int32_x86(x)


def test_trunc_to_int32_float32_boundary():
    # float32(INT32_MAX) == 2^31 is out of range (x86 gives INT32_MIN); 2^31 - 128 is the largest in range.
    got = trunc_to_int32(np.array([2147483647.0, 2147483520.0, -2147483648.0], dtype=np.float32))
    assert got.tolist() == [INT32_MIN, 2147483520, INT32_MIN]


# ---------------------------------------------------------------------------------------- round_away
def _round_ref(x, dtype):
    if math.isnan(x) or math.isinf(x):
        return x
    r = ref.round_half_away(Fraction(x))
    return math.copysign(float(r), x) if r == 0 else float(r)


@settings(max_examples=300)
@given(
    st.one_of(
        st.floats(width=32),
        st.sampled_from(
            [0.49999997, 0.5, 1.5, 2.5, -0.5, -2.5, -0.49999997, 8388607.5, -8388607.5, 8388609.0, -0.0, 0.0]
        ),
    )
)
def test_round_away_float32(x):
    x32 = np.float32(x)
    got = round_away(x32)
    assert got.dtype == np.float32
    want = np.float32(_round_ref(float(x32), np.float32))
    assert np.array_equal(got, want, equal_nan=True)
    assert math.copysign(1.0, got) == math.copysign(1.0, want)  # std::round keeps the sign of zero


@settings(max_examples=300)
@given(
    st.one_of(
        st.floats(),
        st.sampled_from(
            [0.49999999999999994, 2.5, -2.5, 4503599627370495.5, -4503599627370495.5, 4503599627370497.0, 1e300, -0.0]
        ),
    )
)
def test_round_away_float64(x):
    got = round_away(np.float64(x))
    assert got.dtype == np.float64
    want = _round_ref(x, np.float64)
    assert np.array_equal(got, np.float64(want), equal_nan=True)
    assert math.copysign(1.0, got) == math.copysign(1.0, want)


def test_round_away_array_and_differs_from_numpy_round():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, -0.49999997], dtype=np.float32)
    got = round_away(x)
    assert got.dtype == np.float32
    assert got.tolist() == [1.0, 2.0, 3.0, -1.0, -3.0, 0.0, -0.0]
    assert not np.array_equal(got, np.round(x))


# ------------------------------------------------------------------------------- quantize_multiplier
def _qm_ref(d: float):
    """QuantizeMultiplier written directly from quantization_util.cc with math.frexp."""
    if d == 0.0:
        return 0, 0
    q, shift = math.frexp(d)
    q_fixed = ref.round_half_away(Fraction(q) * 2**31)
    assert q_fixed <= 2**31
    if q_fixed == 2**31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        shift, q_fixed = 0, 0
    return q_fixed, shift


doubles = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),  # includes subnormals, huge and tiny values
    st.floats(min_value=2.0**-40, max_value=2.0**10),
    st.builds(
        lambda e, neg: -math.ldexp(1.0, e) if neg else math.ldexp(1.0, e), st.integers(-1074, 1023), st.booleans()
    ),  # exact powers of two, incl. the smallest denormal
    st.builds(lambda e: math.ldexp(2**32 - 1, e), st.integers(-80, 60)),  # q*2^31 = 2^31 - 1/2: carry
    st.builds(lambda k, e: math.ldexp(2 * k + 1, e), st.integers(2**30, 2**31 - 1), st.integers(-80, 20)),
    st.floats(width=32, allow_nan=False, allow_infinity=False),
)


@settings(max_examples=400)
@given(doubles)
def test_quantize_multiplier_matches_frexp_reference(d):
    m, shift = quantize_multiplier(d)
    assert (m, shift) == _qm_ref(d)
    assert isinstance(m, int) and isinstance(shift, int)
    if m != 0:
        assert 2**30 <= abs(m) <= 2**31
        assert INT32_MIN <= m <= INT32_MAX
        # |M * 2^(shift-31) - d| <= half an ulp of the 31-bit mantissa
        err = abs(Fraction(m) * Fraction(2) ** (shift - 31) - Fraction(d))
        assert err <= Fraction(2) ** (shift - 32)
    else:
        assert d == 0.0 or abs(d) < 2.0**-32


def test_quantize_multiplier_known_values():
    assert quantize_multiplier(0.0) == (0, 0)
    assert quantize_multiplier(1.0) == (2**30, 1)
    assert quantize_multiplier(0.5) == (2**30, 0)
    assert quantize_multiplier(0.0625) == (2**30, -3)
    assert quantize_multiplier(0.3) == (1288490189, -1)  # 0.6 * 2^31 = 1288490188.8
    assert quantize_multiplier(-0.3) == (-1288490189, -1)
    assert quantize_multiplier(1 - 2.0**-32) == (2**30, 1)  # rounds to 2^31: the carry
    assert quantize_multiplier(2.0**-32) == (2**30, -31)  # smallest kept
    assert quantize_multiplier(2.0**-33) == (0, 0)  # flushed
    assert quantize_multiplier(-(1 - 2.0**-33)) == (INT32_MIN, 0)  # -2^31 does not carry
    assert quantize_multiplier(np.float32(0.25)) == (2**30, -1)
    for bad in (math.inf, -math.inf, math.nan):
        with pytest.raises(ValueError):
            quantize_multiplier(bad)
    with pytest.raises(ValueError):
        quantize_multiplier_array([1.0, math.nan])


@settings(max_examples=100)
@given(st.lists(doubles, min_size=0, max_size=40))
def test_quantize_multiplier_array_equals_scalar(ds):
    m, s = quantize_multiplier_array(np.array(ds, dtype=np.float64))
    assert m.dtype == np.int64 and s.dtype == np.int64
    assert m.shape == (len(ds),)
    assert [(int(a), int(b)) for a, b in zip(m, s)] == [quantize_multiplier(d) for d in ds]


def test_quantize_multiplier_array_shape_and_float32_input():
    reals = np.array([[0.1, 0.2], [3e-10, 7.5]], dtype=np.float32)
    m, s = quantize_multiplier_array(reals)
    assert m.shape == s.shape == (2, 2)
    for idx in np.ndindex(2, 2):
        assert (int(m[idx]), int(s[idx])) == _qm_ref(float(reals[idx]))


# ------------------------------------------------------------------------------------ SRDHM / RDBPOT
@settings(max_examples=400)
@given(int32s, int32s)
def test_srdhm(a, b):
    assert int(saturating_rounding_doubling_high_mul(a, b)) == ref.srdhm(a, b)


def test_srdhm_saturation_and_ties():
    assert int(saturating_rounding_doubling_high_mul(INT32_MIN, INT32_MIN)) == INT32_MAX
    # a*b/2^31 = -0.5 exactly: ties go toward +inf (to 0), not away from zero
    assert int(saturating_rounding_doubling_high_mul(-1, 2**30)) == 0
    assert int(saturating_rounding_doubling_high_mul(1, 2**30)) == 1
    assert int(saturating_rounding_doubling_high_mul(-3, 2**30)) == -1  # -1.5 -> -1


@settings(max_examples=400)
@given(int32s, st.integers(0, 31))
def test_rdbpot(x, e):
    assert int(rounding_divide_by_pot(x, e)) == ref.rdbpot(x, e)
    # and as a property: x / 2^e rounded half away from zero
    assert int(rounding_divide_by_pot(x, e)) == ref.round_half_away(Fraction(x, 2**e))


def test_rdbpot_rejects_bad_exponent():
    with pytest.raises(ValueError):
        rounding_divide_by_pot(5, -1)
    with pytest.raises(ValueError):
        rounding_divide_by_pot(5, 32)


@settings(max_examples=60)
@given(st.lists(st.tuples(int32s, int32s, st.integers(0, 31)), min_size=1, max_size=50))
def test_srdhm_rdbpot_vectorized(rows):
    a, b, e = (np.array(c, dtype=np.int64) for c in zip(*rows))
    assert saturating_rounding_doubling_high_mul(a, b).tolist() == [ref.srdhm(*r[:2]) for r in rows]
    assert rounding_divide_by_pot(a, e).tolist() == [ref.rdbpot(r[0], r[2]) for r in rows]


# ------------------------------------------------------------------------------------------ MBQM
@settings(max_examples=500)
@given(int32s, multipliers, shifts)
def test_mbqm_scalar(x, m, shift):
    got = multiply_by_quantized_multiplier(x, m, shift)
    assert got.dtype == np.int64
    assert int(got) == ref.mbqm(x, m, shift)


@settings(max_examples=300)
@given(st.integers(-(2**20), 2**20), st.integers(2**30, INT32_MAX), st.integers(-31, 0))
def test_mbqm_is_two_roundings(x, m, shift):
    """Semantic check: round-half-up of x*M/2^31, then round-half-away by 2^-shift."""
    y = ref.round_half_up(Fraction(x * m, 2**31))
    assert int(multiply_by_quantized_multiplier(x, m, shift)) == ref.round_half_away(Fraction(y, 2**-shift))


@settings(max_examples=60)
@given(st.lists(st.tuples(int32s, multipliers, shifts), min_size=1, max_size=60))
def test_mbqm_vectorized_equals_scalar(rows):
    x, m, s = (np.array(c, dtype=np.int64) for c in zip(*rows))
    got = multiply_by_quantized_multiplier(x, m, s)
    assert got.tolist() == [ref.mbqm(*r) for r in rows]
    buf = np.empty(len(rows), dtype=np.int64)
    res = multiply_by_quantized_multiplier(x.astype(np.int32), m.astype(np.int32), s, out=buf)
    assert res is buf and buf.tolist() == got.tolist()


@settings(max_examples=40)
@given(st.lists(int32s, min_size=1, max_size=12), st.lists(st.tuples(multipliers, shifts), min_size=1, max_size=5))
def test_mbqm_per_channel_broadcast(xs, chans):
    x = np.array(xs, dtype=np.int64)[:, None] * np.ones(len(chans), dtype=np.int64)  # (n, C)
    m = np.array([c[0] for c in chans], dtype=np.int64)
    s = np.array([c[1] for c in chans], dtype=np.int64)
    got = multiply_by_quantized_multiplier(x, m, s)
    assert got.shape == x.shape
    for i, xv in enumerate(xs):
        for c, (mc, sc) in enumerate(chans):
            assert int(got[i, c]) == ref.mbqm(xv, mc, sc)


def test_mbqm_tie_probe_section_8_3():
    """MUL int8, s1=0.5, s2=0.125, s_out=1, x2=1, x1 in -120..120: multiplier 1/16, ties at x1 = 8 mod 16.

    Double rounding (the default build) gives -1 at x1 = -8; single rounding would give 0.
    """
    real = np.float32(np.float32(0.5) * np.float32(0.125) / np.float32(1.0))  # MUL: f32 (doc section 2.3)
    m, shift = quantize_multiplier(float(real))
    assert (m, shift) == (2**30, -3)
    x1 = np.arange(-120, 121)
    got = multiply_by_quantized_multiplier(x1 * 1, m, shift)
    assert int(got[x1 == -8][0]) == -1
    assert int(got[x1 == 8][0]) == 1
    assert int(got[x1 == -24][0]) == -2
    # Single rounding (TFLITE_SINGLE_ROUNDING=1) differs at the negative ties x = -8 mod 16 (tie -> up)
    # and at x = 7 mod 16, x > 0 (x/2 rounds up to a tie, which then rounds up again).
    single = [(int(v) * m + (1 << (30 - shift))) >> (31 - shift) for v in x1]
    differ = [int(v) for v, a, b in zip(x1, got, single) if a != b]
    assert differ == [v for v in range(-120, 121) if (v < 0 and v % 16 == 8) or (v > 0 and v % 16 == 7)]
    assert got.tolist() == [ref.round_half_away(Fraction(ref.round_half_up(Fraction(int(v), 2)), 8)) for v in x1]


def test_mbqm_rejects_bad_shift():
    with pytest.raises(ValueError):
        multiply_by_quantized_multiplier(1, 2**30, -32)


# ------------------------------------------------------------------------------------- MBQM int64
int48s = st.one_of(st.sampled_from([-(2**47), 2**47 - 1, -1, 0, 1]), st.integers(-(2**47), 2**47 - 1))


@settings(max_examples=400)
@given(
    int48s,
    st.one_of(st.integers(0, INT32_MAX), st.sampled_from([0x7FFEFFFF, 0x7FFF0000, INT32_MAX])),
    st.integers(-31, 14),
)
def test_mbqm_int64(x, m, shift):
    assert int(multiply_by_quantized_multiplier_int64(x, m, shift)) == ref.mbqm64(x, m, shift)


@settings(max_examples=40)
@given(st.lists(st.tuples(int48s, st.integers(0, INT32_MAX), st.integers(-31, 14)), min_size=1, max_size=40))
def test_mbqm_int64_vectorized(rows):
    x, m, s = (np.array(c, dtype=np.int64) for c in zip(*rows))
    assert multiply_by_quantized_multiplier_int64(x, m, s).tolist() == [ref.mbqm64(*r) for r in rows]


@pytest.mark.parametrize("shift", [-32, 15])
def test_mbqm_int64_rejects_shift_outside_the_defined_range(shift):
    with pytest.raises(ValueError, match=r"\[-31, 14\]"):
        multiply_by_quantized_multiplier_int64(1, 2**30, shift)


def test_mbqm_int64_is_lower_precision_than_int32():
    # 16-bit reduced multiplier: differs from the int32 overload for some inputs (doc section 3.4).
    m, shift = quantize_multiplier(0.7071067811865476)
    x = np.arange(-5000, 5000)
    assert not np.array_equal(
        multiply_by_quantized_multiplier_int64(x, m, shift), multiply_by_quantized_multiplier(x, m, shift)
    )


# ------------------------------------------------------------------------------------ downscale 16
@settings(max_examples=200)
@given(
    st.one_of(
        st.integers(0, INT32_MAX), st.sampled_from([0, 2**30, INT32_MAX, INT32_MAX - 2**15, INT32_MAX - 2**15 - 1])
    )
)
def test_downscale_int32_to_int16(m):
    assert int(downscale_int32_to_int16_multiplier(m)) == ref.downscale16(m)


def test_downscale_known():
    got = downscale_int32_to_int16_multiplier(np.array([2**30, INT32_MAX, (2**30) + 2**15 - 1, 2**30 + 2**15]))
    assert got.tolist() == [16384, 32767, 16384, 16385]


def test_float32_bits_helper_sanity():
    # guards the reference's binary32 rounding used by the params/lut tests
    for x in (0.1, 1 / 3, 1e-40, 3.4e38, -2.5e-45):
        assert ref.to_f32(Fraction(x)) == np.float32(x)
        assert struct.pack("<f", ref.to_f32(Fraction(x))) == struct.pack("<f", np.float32(x))
