"""litert_py.quant.gemmlowp: the one copy of gemmlowp's fixed-point helpers, checked against their definitions."""

import math

import numpy as np

from litert_py.quant import INT32_MAX, INT32_MIN, wrap32
from litert_py.quant import rounding_divide_by_pot as rdbpot
from litert_py.quant import saturating_rounding_doubling_high_mul as srdhm
from litert_py.quant.gemmlowp import (
    SoftmaxRowReciprocals,
    checked_log2,
    count_leading_sign_bits,
    get_reciprocal,
    one_over_one_plus_x_for_x_in_0_1,
    softmax_reciprocal,
    srdhm_int,
)


def _sat_shl(x, e):
    thr = (1 << (31 - e)) - 1
    return np.where(x > thr, INT32_MAX, np.where(x < -thr, INT32_MIN, x << e))


def _one_over_one_plus_x_saturating(a):
    """gemmlowp one_over_one_plus_x_for_x_in_0_1 step by step, every operation wrapping/saturating as in C++."""
    s = a + INT32_MAX
    half_denominator = (s + 1) >> 1
    x = wrap32(1515870810 + srdhm(half_denominator, -1010580540))
    for _ in range(3):
        one_minus = wrap32((1 << 29) - srdhm(half_denominator, x))
        x = wrap32(x + _sat_shl(srdhm(x, one_minus), 2))
    return _sat_shl(x, 1)


def test_one_over_one_plus_x_matches_the_saturating_form():
    rng = np.random.default_rng(0)
    a = np.concatenate(
        [np.arange(0, 1 << 12), (1 << 31) - 1 - np.arange(1 << 12), rng.integers(0, 1 << 31, 200_000)]
    ).astype(np.int64)
    np.testing.assert_array_equal(one_over_one_plus_x_for_x_in_0_1(a), _one_over_one_plus_x_saturating(a))
    assert [one_over_one_plus_x_for_x_in_0_1(int(v)) for v in a[:50]] == _one_over_one_plus_x_saturating(
        a[:50]
    ).tolist()


def test_get_reciprocal_is_close_to_one_over_x():
    b = np.arange(1, 5000, dtype=np.int64)
    scale, bits = get_reciprocal(b, 31)
    approx = scale / 2.0**31 / 2.0**bits  # 1/b = (1/(1+x)) / 2^bits_over_unit
    np.testing.assert_allclose(approx, 1.0 / b, rtol=1e-8)


def _unfused(total: int, out_bits: int) -> tuple:
    """reference/softmax.h's reciprocal step by step on Python ints: GetReciprocal(total, 12) (common.h: the
    count of leading zeros, the shifted sum, gemmlowp's one_over_one_plus_x_for_x_in_0_1 saturating form) and the
    output exponent, unclamped."""
    u = total & 0xFFFFFFFF
    headroom_plus_one = 32 - u.bit_length()
    shifted_minus_one = ((u << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31)
    scale = int(_one_over_one_plus_x_saturating(np.array([shifted_minus_one], np.int64))[0])
    return scale, 12 - headroom_plus_one + 31 - out_bits


def test_softmax_reciprocal_is_get_reciprocal_and_the_rounding():
    """softmax_reciprocal on Python ints and on an int64 array gives the same (scale, addend, shift); the scale is
    GetReciprocal(total, 12)'s (step by step, _unfused), and the fused rounding ``(e * scale + addend) >> shift``
    gives the unfused RDBPOT(SRDHM(e, scale), exponent) on terms e from 0 to INT32_MAX, wherever LiteRT's exponent
    is valid (0 <= exponent <= 31; below 1 and up to 32 the helper clamps it). Totals: 1 .. 2^12, every power of
    two and its neighbours, the top of the int32 range, random ones, and wrapped (negative) int32 sums."""
    rng = np.random.default_rng(2)
    pots = 1 << np.arange(31)
    top = INT32_MAX - np.arange(1 << 10)
    totals = np.concatenate([np.arange(1, 1 << 12), pots, pots[1:] - 1, pots + 1, top, rng.integers(1, 1 << 31, 9999)])
    totals = totals.astype(np.int64)
    wrapped = np.array([-1, -(1 << 20), INT32_MIN], np.int64)
    e = np.concatenate([[0, 1, INT32_MAX], rng.integers(0, 1 << 31, 200)]).astype(np.int64)
    checked = 0
    for out_bits in (8, 16):
        got = [softmax_reciprocal(int(v), out_bits) for v in np.concatenate([totals, wrapped]).tolist()]
        arrays = softmax_reciprocal(np.concatenate([totals, wrapped]), out_bits)
        assert np.stack(arrays, axis=1).tolist() == [list(g) for g in got]
        for total, (s, addend, shift) in zip(totals[::37].tolist(), got[::37]):
            scale, exponent = _unfused(total, out_bits)
            assert s == scale
            if 1 <= exponent <= 31:
                want = rdbpot(srdhm(e, s), exponent)
                assert ((e * s + addend) >> shift).tolist() == want.tolist()
                checked += 1
    assert checked > 200
    scale, bits = get_reciprocal(wrapped, 12)  # a wrapped sum: GetReciprocal's uint32 reading
    assert np.array_equal(softmax_reciprocal(wrapped, 8)[0], scale)


def test_softmax_row_reciprocals_are_softmax_reciprocal():
    """SoftmaxRowReciprocals gives softmax_reciprocal's (scale, addend, shift) for every total of a row of 1 ..
    ROW_MAX (4095) terms: 2^19 .. TOTAL_MAX, its bound; every entry of its tables (k = total >> 19) at both ends
    of its range of totals, random totals, 8- and 16-bit outputs; a second run on other totals overwrites the
    first's; totals down to 2^18 (the table's k = 0 entry: bit length 19). Just outside (2^18 - 1) its
    normalization is wrong and the scale differs."""
    rng = np.random.default_rng(3)
    k = np.arange(1, 1 << 12, dtype=np.int64)
    top = SoftmaxRowReciprocals.TOTAL_MAX
    totals = np.concatenate([k << 19, (k << 19) + (1 << 19) - 1, (k << 19) + 1, [1 << 18, (1 << 19) - 1, top]])
    totals = np.concatenate([totals, top - np.arange(500), rng.integers(1 << 19, top + 1, 20000)]).astype(np.int64)
    for out_bits in (8, 16):
        total = np.empty(totals.size, np.int64)
        op = SoftmaxRowReciprocals.build(total, out_bits)
        total[:] = totals[::-1]
        op()
        total[:] = totals
        got = np.stack(op(), axis=1)
        want = np.stack(softmax_reciprocal(totals, out_bits), axis=1)
        np.testing.assert_array_equal(got, want)
    total = np.array([(1 << 18) - 1], np.int64)
    got = SoftmaxRowReciprocals.build(total, 8)()
    assert got[0][0] != softmax_reciprocal((1 << 18) - 1, 8)[0]


def test_count_leading_sign_bits():
    x = np.array([0, -1, 1, INT32_MIN, INT32_MAX, 1 << 20, -(1 << 20) - 1], np.int64)
    assert count_leading_sign_bits(x).tolist() == [31, 31, 30, 0, 0, 10, 10]


def test_srdhm_int_is_the_array_form():
    vals = [INT32_MIN, INT32_MIN + 1, -(1 << 30), -3, -1, 0, 1, 3, 1 << 30, INT32_MAX]
    for a in vals:
        for b in vals:
            assert srdhm_int(a, b) == int(srdhm(a, b)), (a, b)


def test_checked_log2():
    for k in range(-30, 20):
        assert checked_log2(2.0**k) == (True, k)
    assert checked_log2(2.0**-7 * 2**5e-4) == (True, -7)  # within 1e-3 of the exponent
    assert checked_log2(2.0**-7 * 2**2e-3)[0] is False
    assert checked_log2(3.0) == (False, 2)  # log2 3 = 1.58: rounds to 2, not a power of two
    for bad in (0.0, -1.0, math.inf, math.nan):
        assert checked_log2(bad)[0] is False
