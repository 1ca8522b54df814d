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
    softmax_reciprocal_int,
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


def test_softmax_reciprocal_int_is_the_array_form():
    """The scale is GetReciprocal(total, 12)'s (the array form), and the fused rounding ``(e * scale + addend) >>
    shift`` gives the unfused RDBPOT(SRDHM(e, scale), exponent) on terms e from 0 to INT32_MAX, wherever LiteRT's
    exponent is valid (0 <= exponent <= 31; below 1 and up to 32 the helper clamps it)."""
    rng = np.random.default_rng(2)
    totals = np.concatenate(
        [np.arange(1, 1 << 12), (1 << 31) - 1 - np.arange(1 << 10), 1 << np.arange(31), rng.integers(1, 1 << 31, 9999)]
    ).astype(np.int64)
    e = np.concatenate([[0, 1, INT32_MAX], rng.integers(0, 1 << 31, 200)]).astype(np.int64)
    checked = 0
    for out_bits in (8, 16):
        scale, bits = get_reciprocal(totals, 12)
        got = [softmax_reciprocal_int(int(v), out_bits) for v in totals]
        assert [g[0] for g in got] == scale.tolist()
        for (s, addend, shift), b in zip(got[::97], bits[::97].tolist()):
            exponent = b + 31 - out_bits
            if 1 <= exponent <= 31:
                want = rdbpot(srdhm(e, s), exponent)
                assert ((e * s + addend) >> shift).tolist() == want.tolist()
                checked += 1
    assert checked > 100


def test_softmax_row_reciprocals_are_softmax_reciprocal_int():
    """SoftmaxRowReciprocals gives softmax_reciprocal_int's (scale, addend, shift) for every total of a row of
    1 .. TOTAL_ROW_MAX terms (2^19 .. 511 * 2^19, its bound: the clamp it leaves out never acts there), and a
    second call on other totals overwrites the first's; just outside (a total of 2^29, bit length 30, 8-bit
    output) the clamp would act and the arrays differ."""
    rng = np.random.default_rng(3)
    top = SoftmaxRowReciprocals.TOTAL_ROW_MAX << 19
    totals = np.concatenate(
        [1 << np.arange(19, 28), (1 << np.arange(20, 28)) - 1, (1 << np.arange(19, 28)) + 1, [1 << 19, top]]
    )
    totals = np.concatenate([totals, top - np.arange(500), rng.integers(1 << 19, top + 1, 5000)]).astype(np.int64)
    for out_bits in (8, 16):
        op = SoftmaxRowReciprocals.build(totals.size, out_bits)
        op(totals[::-1].copy())
        got = np.stack(op(totals), axis=1).tolist()
        assert got == [list(softmax_reciprocal_int(int(v), out_bits)) for v in totals]
    outside = np.array([1 << 29], np.int64)
    got = [int(a[0]) for a in SoftmaxRowReciprocals.build(1, 8)(outside)]
    assert got != list(softmax_reciprocal_int(1 << 29, 8))


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
