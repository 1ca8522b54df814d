"""Activation ranges, QUANTIZE / DEQUANTIZE arithmetic against exact rational references."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litert_py.errors import PrepareError
from litert_py.quant import (
    ACT_NONE,
    ACT_RELU,
    ACT_RELU6,
    ACT_RELU_N1_TO_1,
    ACT_SIGN_BIT,
    ACT_TANH,
    calculate_activation_range_float,
    calculate_activation_range_quantized,
    dequantize,
    dequantize_per_axis,
    dtype_range,
    quantize,
    quantize_per_axis,
)
from tests.quant import ref

DTYPES = [np.int8, np.uint8, np.int16, np.int32]
scales = st.floats(min_value=float(np.float32(1e-6)), max_value=10.0, width=32)
# QUANTIZE: keep |x / scale| far below 2^31 (the overflowing cast is platform-specific UB).
qscales = st.floats(min_value=float(np.float32(1e-4)), max_value=10.0, width=32)


def _q_bound(f: float, scale, zp: int) -> int:
    """kernel_util.cc Quantize(): zp + int32(roundf(f32(f / scale)))."""
    quotient = ref.to_f32(Fraction(float(np.float32(f))) / Fraction(float(np.float32(scale))))
    return zp + ref.round_half_away(Fraction(float(quotient)))


def _act_ref(act, scale, zp, qmin, qmax):
    if act == ACT_RELU:
        return max(qmin, _q_bound(0.0, scale, zp)), qmax
    if act == ACT_RELU6:
        return max(qmin, _q_bound(0.0, scale, zp)), min(qmax, _q_bound(6.0, scale, zp))
    if act == ACT_RELU_N1_TO_1:
        return max(qmin, _q_bound(-1.0, scale, zp)), min(qmax, _q_bound(1.0, scale, zp))
    return qmin, qmax


@settings(max_examples=300)
@given(
    st.sampled_from([ACT_NONE, ACT_RELU, ACT_RELU_N1_TO_1, ACT_RELU6, ACT_TANH, ACT_SIGN_BIT]),
    st.one_of(scales, st.sampled_from([0.4, 1 / 256, 6 / 255, 2 / 255, 0.1, 0.5, 1 / 3])),
    st.sampled_from([np.int8, np.uint8, np.int16]),
    st.data(),
)
def test_activation_range_quantized(act, scale, dtype, data):
    qmin, qmax = dtype_range(dtype)
    zp = data.draw(st.integers(qmin, qmax))
    got = calculate_activation_range_quantized(act, np.float32(scale), zp, qmin, qmax)
    assert got == _act_ref(act, scale, zp, qmin, qmax)
    assert all(isinstance(v, int) for v in got)


def test_activation_range_known_values():
    # 1/f32(0.4) rounds to exactly 2.5 in float32; roundf gives 3 (half away from zero), rint would give 2.
    assert calculate_activation_range_quantized(ACT_RELU_N1_TO_1, 0.4, 0, -128, 127) == (-3, 3)
    assert calculate_activation_range_quantized(ACT_RELU, 0.5, 10, 0, 255) == (10, 255)
    assert calculate_activation_range_quantized(ACT_RELU6, 6 / 255, -128, -128, 127) == (-128, 127)
    assert calculate_activation_range_quantized(ACT_RELU6, 0.1, -10, -128, 127) == (-10, 50)
    assert calculate_activation_range_quantized(ACT_RELU_N1_TO_1, 0.02, 0, -128, 127) == (-50, 50)
    assert calculate_activation_range_quantized(ACT_NONE, 0.1, 3, -128, 127) == (-128, 127)
    assert calculate_activation_range_quantized(ACT_TANH, 0.1, 3, -32768, 32767) == (-32768, 32767)
    with pytest.raises(PrepareError):
        calculate_activation_range_quantized(ACT_RELU6, 1e-30, 0, -128, 127)
    with pytest.raises(PrepareError):
        calculate_activation_range_quantized(ACT_RELU, 0.0, 0, -128, 127)  # 0/0 = NaN


def test_activation_range_float():
    fmax = np.finfo(np.float32).max
    assert calculate_activation_range_float(ACT_NONE) == (-fmax, fmax)
    assert calculate_activation_range_float(ACT_RELU) == (0.0, fmax)
    assert calculate_activation_range_float(ACT_RELU6) == (0.0, 6.0)
    assert calculate_activation_range_float(ACT_RELU_N1_TO_1) == (-1.0, 1.0)
    assert calculate_activation_range_float(ACT_TANH) == (-fmax, fmax)
    lo, hi = calculate_activation_range_float(ACT_RELU6)
    assert lo.dtype == hi.dtype == np.float32


def test_dtype_range():
    assert dtype_range(np.int8) == (-128, 127)
    assert dtype_range("uint8") == (0, 255)
    assert dtype_range(np.int16) == (-32768, 32767)
    assert dtype_range(np.int32) == (-(2**31), 2**31 - 1)
    with pytest.raises(TypeError):
        dtype_range(np.float32)


# ----------------------------------------------------------------------------------------- QUANTIZE
def _quantize_ref(x: float, scale, zp: int, dtype) -> int:
    qmin, qmax = dtype_range(dtype)
    quotient = ref.to_f32(Fraction(float(np.float32(x))) / Fraction(float(np.float32(scale))))
    r = ref.round_half_away(Fraction(float(quotient)))
    return min(max(r + zp, qmin), qmax)


finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-1e4, max_value=1e4)


@settings(max_examples=150)
@given(st.lists(finite32, min_size=1, max_size=30), qscales, st.sampled_from(DTYPES[:3]), st.data())
def test_quantize(xs, scale, dtype, data):
    qmin, qmax = dtype_range(dtype)
    zp = data.draw(st.integers(qmin, qmax))
    got = quantize(np.array(xs, dtype=np.float32), np.float32(scale), zp, dtype)
    assert got.dtype == np.dtype(dtype)
    assert got.tolist() == [_quantize_ref(x, scale, zp, dtype) for x in xs]


def test_quantize_ties_away_from_zero():
    x = np.array([1.25, -1.25, 0.75, -0.75, 0.25, -0.25, 63.75, 64.0], dtype=np.float32)
    # x / 0.5 = 2.5, -2.5, 1.5, -1.5, 0.5, -0.5, 127.5, 128
    assert quantize(x, 0.5, 0, np.int8).tolist() == [3, -3, 2, -2, 1, -1, 127, 127]
    assert quantize(x, 0.5, 128, np.uint8).tolist() == [131, 125, 130, 126, 129, 127, 255, 255]


@settings(max_examples=40)
@given(st.integers(1, 4), st.integers(0, 2), st.data())
def test_quantize_per_axis(n_ch, axis, data):
    shape = [2, 3, 2]
    shape[axis] = n_ch
    xs = data.draw(st.lists(finite32, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    x = np.array(xs, dtype=np.float32).reshape(shape)
    sc = data.draw(st.lists(qscales, min_size=n_ch, max_size=n_ch))
    zps = data.draw(st.lists(st.integers(-128, 127), min_size=n_ch, max_size=n_ch))
    got = quantize_per_axis(x, sc, zps, axis, np.int8)
    for idx in np.ndindex(*shape):
        c = idx[axis]
        assert int(got[idx]) == _quantize_ref(float(x[idx]), sc[c], zps[c], np.int8)


def test_quantize_per_axis_rejects_bad_params():
    with pytest.raises(ValueError):
        quantize_per_axis(np.zeros((2, 3), np.float32), [0.1, 0.2], [0, 0], 1, np.int8)
    with pytest.raises(ValueError):
        quantize_per_axis(np.zeros((2, 3), np.float32), [0.1, 0.2], [0, 0], 2, np.int8)


# --------------------------------------------------------------------------------------- DEQUANTIZE
def _dequant_ref(q: int, scale, zp: int) -> np.float32:
    return ref.to_f32(Fraction(float(np.float32(scale))) * (q - zp))


@settings(max_examples=150)
@given(
    st.sampled_from(DTYPES[:3]),
    st.one_of(scales, st.floats(min_value=float(np.float32(1e-38)), max_value=float(np.float32(1e30)), width=32)),
    st.data(),
)
def test_dequantize(dtype, scale, data):
    qmin, qmax = dtype_range(dtype)
    zp = data.draw(st.integers(qmin, qmax))
    qs = data.draw(st.lists(st.integers(qmin, qmax), min_size=1, max_size=30))
    got = dequantize(np.array(qs, dtype=dtype), np.float32(scale), zp)
    assert got.dtype == np.float32
    want = np.array([_dequant_ref(q, scale, zp) for q in qs], dtype=np.float32)
    assert np.array_equal(got.view(np.int32), want.view(np.int32))


@settings(max_examples=40)
@given(st.integers(1, 4), st.integers(0, 1), st.data())
def test_dequantize_per_axis(n_ch, axis, data):
    shape = [3, 3]
    shape[axis] = n_ch
    qs = data.draw(st.lists(st.integers(-128, 127), min_size=3 * n_ch, max_size=3 * n_ch))
    q = np.array(qs, dtype=np.int8).reshape(shape)
    sc = data.draw(st.lists(scales, min_size=n_ch, max_size=n_ch))
    zps = data.draw(st.lists(st.integers(-128, 127), min_size=n_ch, max_size=n_ch))
    got = dequantize_per_axis(q, sc, zps, axis)
    assert got.dtype == np.float32
    for idx in np.ndindex(*shape):
        c = idx[axis]
        assert got[idx] == _dequant_ref(int(q[idx]), sc[c], zps[c])
        # per-axis float math gives the same bits as the per-tensor double formula for 8-bit data
        assert got[idx] == dequantize(q[idx], sc[c], zps[c])


def test_dequantize_known():
    got = dequantize(np.array([-128, 0, 127], dtype=np.int8), 0.5, -128)
    assert got.tolist() == [0.0, 64.0, 127.5]


def test_dequantize_rounds_python_float_scale_to_float32():
    # TFLite scales are float32; a float64 scale is rounded first (here that changes the result's last bit).
    s = 0.42390312252360307
    got = dequantize(np.array([-49], dtype=np.int8), s, 0)
    want = ref.to_f32(Fraction(float(np.float32(s))) * -49)
    assert got[0] == want
    assert got[0] != np.float32(s * -49)
