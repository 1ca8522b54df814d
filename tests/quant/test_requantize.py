"""requantize (int64 and float64 paths) and the float64 exactness proof against the integer reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from litert_py.quant import requantize, requantize_float64_ok
from tests.quant import ref
from tests.quant.ref import INT32_MAX, INT32_MIN

TYPES = [(-128, 127), (0, 255), (-32768, 32767), (INT32_MIN, INT32_MAX)]


def _want(acc, m, shift, zp, qmin, qmax):
    return min(max(ref.mbqm(acc, m, shift) + zp, qmin), qmax)


def _float_bound(m: int, shift: int) -> int:
    """Largest accumulator bound for which the float64 formulation is exact (the documented condition)."""
    ls = max(shift, 0)
    a = (2**53 - 2**30) // (abs(m) << ls) if m else INT32_MAX
    return min(a, INT32_MAX >> ls)


accs = st.one_of(
    st.sampled_from([INT32_MIN, INT32_MIN + 1, -1, 0, 1, INT32_MAX]),
    st.integers(INT32_MIN, INT32_MAX),
    st.integers(-(2**20), 2**20),
)
mults = st.one_of(
    st.sampled_from([0, 2**30, 2**30 + 1, 3 * 2**29, INT32_MAX, INT32_MIN]),
    st.integers(2**30, INT32_MAX),
    st.integers(-INT32_MAX, INT32_MAX),
)
shifts = st.integers(-31, 30)


@settings(max_examples=60)
@given(
    st.lists(st.tuples(accs, mults, shifts), min_size=1, max_size=40),
    st.integers(-40000, 40000),
    st.sampled_from(TYPES),
)
def test_requantize_int64_path(rows, zp, qrange):
    qmin, qmax = qrange
    acc, m, s = (np.array(c, dtype=np.int64) for c in zip(*rows))
    got = requantize(acc, m, s, zp, qmin, qmax)
    assert got.dtype == np.int64
    assert got.tolist() == [_want(*r, zp, qmin, qmax) for r in rows]


@settings(max_examples=60)
@given(
    st.lists(accs, min_size=1, max_size=30),
    st.lists(st.tuples(mults, st.integers(-31, 2)), min_size=1, max_size=6),
    st.lists(st.integers(-128, 127), min_size=1, max_size=1),
)
def test_requantize_per_channel_into_int8(accl, chans, zpl):
    zp = zpl[0]
    c = len(chans)
    acc = np.array(accl, dtype=np.int64)[:, None] + np.zeros(c, dtype=np.int64)
    m = np.array([ch[0] for ch in chans], dtype=np.int64)
    s = np.array([ch[1] for ch in chans], dtype=np.int64)
    out = np.empty(acc.shape, dtype=np.int8)
    res = requantize(acc.astype(np.int32), m, s, zp, -128, 127, out=out)
    assert res is out
    for i, a in enumerate(accl):
        for j, (mj, sj) in enumerate(chans):
            assert int(out[i, j]) == _want(a, mj, sj, zp, -128, 127)


@st.composite
def float_cases(draw):
    m = draw(
        st.one_of(
            st.sampled_from([2**30, 2**30 + 1, 3 * 2**29, INT32_MAX, 1, -(2**30)]),
            st.integers(2**30, INT32_MAX),
            st.integers(-INT32_MAX, -(2**30)),
        )
    )
    shift = draw(st.one_of(st.integers(-31, 0), st.integers(-31, 4)))
    bound = _float_bound(m, shift)
    assume(bound >= 1)
    a = draw(st.one_of(st.just(bound), st.integers(1, bound)))
    accs_ = draw(
        st.lists(
            st.one_of(st.sampled_from([a, -a, 0, 1, -1, a - 1, -a + 1]), st.integers(-a, a)), min_size=1, max_size=40
        )
    )
    zp = draw(st.one_of(st.integers(-128, 127), st.integers(-(2**31), 2**31 - 1)))
    return m, shift, a, accs_, zp


@settings(max_examples=250)
@given(float_cases(), st.sampled_from(TYPES))
def test_float64_path_exact_within_proven_bound(case, qrange):
    m, shift, a, accs_, zp = case
    qmin, qmax = qrange
    assert requantize_float64_ok(m, shift, a)
    acc = np.array(accs_, dtype=np.float64)
    got = requantize(acc, m, shift, zp, qmin, qmax, method="float64", max_abs_acc=a)
    assert got.tolist() == [_want(int(v), m, shift, zp, qmin, qmax) for v in accs_]


@pytest.mark.parametrize("shift", [0, -1, -2, -3, -5, -8, -13, -31, 1, 3])
@pytest.mark.parametrize("m", [2**30, 3 * 2**29, 2**30 + 1, INT32_MAX, -(2**30)])
def test_float64_path_exhaustive_small_accumulators(m, shift):
    """Every accumulator in a window, with multipliers that make exact ties frequent."""
    acc = np.arange(-5000, 5001)
    a = 5000
    assert requantize_float64_ok(m, shift, a)
    got = requantize(acc.astype(np.float64), m, shift, 3, INT32_MIN, INT32_MAX, method="float64")
    want = [ref.mbqm(int(v), m, shift) + 3 for v in acc]
    assert got.tolist() == want
    assert requantize(acc, m, shift, 3, INT32_MIN, INT32_MAX, method="int64").tolist() == want


def test_float64_ok_rejects_unprovable():
    assert requantize_float64_ok(2**30, -8, 2**20)
    assert not requantize_float64_ok(2**30, -8, 2**31)  # accumulator leaves int32
    assert not requantize_float64_ok(INT32_MAX, -1, 2**23)  # 2^23 * 2^31 > 2^53
    assert not requantize_float64_ok(2**30, 5, 2**27)  # left shift would wrap
    assert not requantize_float64_ok(2**30, -8, float("inf"))
    assert requantize_float64_ok(np.array([2**30, INT32_MAX]), np.array([-8, -9]), 2**21)
    assert not requantize_float64_ok(np.array([2**30, INT32_MAX]), np.array([-8, -9]), 2**22 + 1)
    with pytest.raises(ValueError):
        requantize(np.array([1.0, 2.0**30]), INT32_MAX, -1, 0, -128, 127, method="float64")


def test_float64_path_fails_beyond_bound_is_detected():
    """Beyond 2^53 float64 rounding breaks ties: auto mode must fall back to the int path."""
    m, shift = INT32_MAX, -20
    acc = np.array([2**31 - 1, -(2**31) + 1, 2**30 + 12345, -(2**30) - 777], dtype=np.int64)
    want = [ref.mbqm(int(v), m, shift) for v in acc]
    assert not requantize_float64_ok(m, shift, 2**31 - 1)
    got = requantize(acc.astype(np.float64), m, shift, 0, INT32_MIN, INT32_MAX)  # auto -> int64
    assert got.tolist() == want


def test_auto_float_accumulators_and_out_buffer():
    rng = np.random.default_rng(1)
    acc = rng.integers(-(2**18), 2**18, size=(50, 8))
    m = np.array([2**30 + 7 * k * 1000003 for k in range(8)], dtype=np.int64)
    s = np.array([-3, -4, -5, -6, -7, -8, -9, 0])
    want = np.array([[_want(int(acc[i, j]), int(m[j]), int(s[j]), -5, -128, 127) for j in range(8)] for i in range(50)])
    out = np.empty(acc.shape, dtype=np.int8)
    requantize(acc.astype(np.float64), m, s, -5, -128, 127, out=out)
    assert np.array_equal(out, want)
    assert np.array_equal(requantize(acc, m, s, -5, -128, 127), want)
    with pytest.raises(ValueError):
        requantize(acc, m, s, 0, -128, 127, method="bogus")


def test_requantize_left_shift_wraps_like_int32():
    # x << ls overflows int32 and wraps before the multiply (UB in C++, wrapping in practice).
    acc = np.array([2**29, -(2**29) - 1, 2**30 + 5])
    got = requantize(acc, 2**30, 3, 0, INT32_MIN, INT32_MAX)
    assert got.tolist() == [ref.mbqm(int(v), 2**30, 3) for v in acc]


def test_scalar_inputs():
    from litert_py.quant import multiply_by_quantized_multiplier

    assert int(multiply_by_quantized_multiplier(-8, 2**30, -3)) == -1
    assert int(requantize(-8, 2**30, -3, 5, -128, 127)) == 4
    assert int(requantize(-8.0, 2**30, -3, 5, -128, 127, method="float64")) == 4
    assert int(requantize(np.float64(1000.0), 2**30, -31, 0, -128, 127)) == ref.mbqm(1000, 2**30, -31)
    assert np.asarray(requantize(3, 2**30, 0, 0, -128, 127)).dtype == np.int64
