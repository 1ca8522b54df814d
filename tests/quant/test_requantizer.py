"""Prepared epilogues (litert_py.quant.requantizer) against the integer reference of MultiplyByQuantizedMultiplier.

Every kind of Requantizer and requantize_int64_inplace must equal clamp(ref.mbqm(acc, M, shift) + zp) (Python
integers, tests/quant/ref.py), ties included."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from litert_py.quant import (
    PerChannelMBQM,
    Requantizer,
    fused_exact_bound,
    quantize_multiplier_array,
    requantize_int64_inplace,
)
from tests.quant import ref
from tests.quant.ref import INT32_MAX, INT32_MIN


def _want(acc: np.ndarray, m, shift, zp: int, lo: int, hi: int, mbqm=ref.mbqm) -> np.ndarray:
    """The reference, per element, channels along the last axis."""
    c = acc.shape[-1]
    m = np.broadcast_to(np.asarray(m).reshape(-1), (c,))
    s = np.broadcast_to(np.asarray(shift).reshape(-1), (c,))
    flat = acc.reshape(-1, c)
    out = [[min(max(mbqm(int(v), int(m[k]), int(s[k])) + zp, lo), hi) for k, v in enumerate(row)] for row in flat]
    return np.array(out, np.int64).reshape(acc.shape)


def _multipliers(rng, log_scale: float, n: int):
    reals = 10.0 ** (log_scale + rng.uniform(-2, 2, n))
    k = min(3, n)
    reals[:k] = 2.0 ** (np.floor(np.log2(reals[:k])) - rng.integers(0, 3, k))  # powers of two: many exact ties
    return quantize_multiplier_array(reals)


@given(
    seed=st.integers(0, 2**32 - 1),
    zp=st.integers(-128, 127),
    log_scale=st.floats(-12, 1),
    channels=st.sampled_from([1, 7]),
)
def test_fused_within_its_bound_equals_the_reference(seed, zp, log_scale, channels):
    """The fused float64 form (constants made at prepare), per-channel or per-tensor, for accumulators up to
    its proven bound; small accumulators hit the ties."""
    rng = np.random.default_rng(seed)
    m, shift = _multipliers(rng, log_scale, channels)
    bound = fused_exact_bound(m, shift, zp)
    shape = (2, 3, 5, channels)
    r = Requantizer.build(m, shift, zp, -128, 127, float(max(bound, 1)), shape)
    assert r.kind in ("fused", "library") and not r.check
    b = max(bound, 1)
    acc = rng.integers(-b, b, shape, endpoint=True).astype(np.float64)
    acc.flat[::2] = rng.integers(-300, 300, acc.size // 2 + 1)[: acc.flat[::2].size]
    want = _want(acc.astype(np.int64), m, shift, zp, -128, 127)
    got = np.empty(shape, np.int8)
    r(acc.copy(), got)
    np.testing.assert_array_equal(got, want)
    got32 = np.empty(shape, np.int8)  # float32 accumulators (a float32 GEMM) are widened first
    if np.abs(acc).max() <= 2**24:
        r(acc.astype(np.float32), got32)
        np.testing.assert_array_equal(got32, want)


@given(seed=st.integers(0, 2**32 - 1), zp=st.integers(-128, 127))
def test_fused_beyond_its_bound_checks_the_data(seed, zp):
    """A static bound above the proven one: values beyond it take the library path, still exact."""
    rng = np.random.default_rng(seed)
    m, shift = _multipliers(rng, -1.0, 4)
    bound = fused_exact_bound(m, shift, zp)
    if bound < 1 << 16 or bound >= INT32_MAX:
        return
    shape = (3, 4)
    r = Requantizer.build(m, shift, zp, -128, 127, float(INT32_MAX), shape)
    assert r.kind == "fused" and r.check
    acc = rng.integers(INT32_MIN, INT32_MAX, shape, endpoint=True).astype(np.float64)
    got = np.empty(shape, np.int8)
    r(acc.copy(), got)
    np.testing.assert_array_equal(got, _want(acc.astype(np.int64), m, shift, zp, -128, 127))


@given(seed=st.integers(0, 2**32 - 1), zp=st.integers(-128, 127))
def test_wrap32_wraps_like_the_cpp_int32_sum(seed, zp):
    rng = np.random.default_rng(seed)
    m, shift = _multipliers(rng, -3.0, 3)
    shape = (4, 3)
    r = Requantizer.build(m, shift, zp, -128, 127, 2.0**40, shape)
    assert r.kind == "wrap32"
    acc = rng.integers(-(2**40), 2**40, shape).astype(np.float64)
    wrapped = ((acc.astype(np.int64) + 2**31) & 0xFFFFFFFF) - 2**31
    got = np.empty(shape, np.int8)
    r(acc.copy(), got)
    np.testing.assert_array_equal(got, _want(wrapped, m, shift, zp, -128, 127))


@given(seed=st.integers(0, 2**32 - 1), shift=st.integers(-20, 14))
def test_int64_kind_uses_the_int64_overload_up_to_shift_14(seed, shift):
    rng = np.random.default_rng(seed)
    m = rng.integers(2**30, INT32_MAX, 5)
    shape = (3, 5)
    r = Requantizer.build(m, np.full(5, shift), 0, -32768, 32767, 2.0**40, shape, int64_acc=True)
    assert r.kind == "int64"
    acc = rng.integers(-(2**40), 2**40, shape)
    got = np.empty(shape, np.int16)
    r(acc, got)
    np.testing.assert_array_equal(got, _want(acc, m, np.full(5, shift), 0, -32768, 32767, mbqm=ref.mbqm64))


@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(0, INT32_MAX),
    shift=st.integers(-31, 31),
    zp=st.integers(-40000, 40000),
)
def test_requantize_int64_inplace(seed, m, shift, zp):
    rng = np.random.default_rng(seed)
    acc = rng.integers(INT32_MIN, INT32_MAX, 64, endpoint=True)
    acc[:8] = [INT32_MIN, INT32_MAX, -1, 0, 1, 2**30, -(2**30), 12345]
    want = _want(acc[:, None], m, shift, zp, -32768, 32767)[:, 0]
    got = np.empty(64, np.int16)
    requantize_int64_inplace(acc.copy(), m, shift, zp, -32768, 32767, got)
    np.testing.assert_array_equal(got, want)


@given(
    seed=st.integers(0, 2**32 - 1),
    zp=st.integers(-128, 127),
    wrap=st.booleans(),
    shifts=st.lists(st.integers(-31, 31), min_size=1, max_size=6),
)
def test_per_channel_mbqm_equals_the_reference(seed, zp, wrap, shifts):
    """The prepared int64 fallback: mixed left and right shifts per channel (rs = 0 channels take no ties
    correction), x << ls wrapping to int32 when the bound allows it, ties (small accumulators, powers of two)."""
    rng = np.random.default_rng(seed)
    c = len(shifts)
    m = rng.integers(0, INT32_MAX, c, endpoint=True)
    m[: c // 2] = 1 << 30  # a power-of-two multiplier: exact ties
    shape = (5, 4, c)
    bound = INT32_MAX if wrap else 1 << 12
    r = PerChannelMBQM.build(m, shifts, zp, -128, 127, float(bound), shape)
    acc = rng.integers(-bound, bound, shape, endpoint=True)
    acc[0] = rng.integers(-600, 600, (4, c))
    if wrap:
        acc[1, 0] = INT32_MIN
        acc[1, 1] = INT32_MAX
    want = _want(acc, m, np.array(shifts), zp, -128, 127)
    got = np.empty(shape, np.int8)
    r(acc.astype(np.float64), got)
    np.testing.assert_array_equal(got, want)


def test_library_kind_uses_the_prepared_fallback():
    """Right shifts of ~15 or more with zero point -128 fail the fused bound: the prepared int64 fallback runs."""
    m, shift = quantize_multiplier_array(np.array([2.0**-20 * 1.3, 2.0**-17 * 1.7]))
    shape = (3, 2)
    r = Requantizer.build(m, shift, -128, -128, 127, float(1 << 20), shape)
    assert r.kind == "library" and r.fallback is not None
    acc = np.array([[1 << 20, -(1 << 20)], [3 << 16, 5 << 13], [-(3 << 16), 12345]], np.float64)
    got = np.empty(shape, np.int8)
    r(acc.copy(), got)
    np.testing.assert_array_equal(got, _want(acc.astype(np.int64), m, shift, -128, -128, 127))
