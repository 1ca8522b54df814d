"""LUT builders and lookups against exact rational emulations of common.h's float arithmetic."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litert_py.quant import dtype_range, lut_int8, lut_int16, lut_lookup_int8, lut_lookup_int16
from tests.quant import ref

F32 = np.float32


def sigmoid_f32(v):
    return F32(1.0) / (F32(1.0) + np.exp(-v))  # 1.0f / (1.0f + expf(-v)), evaluated in float32


TRANSFORMS = {
    "identity": lambda v: v,
    "square_quarter": lambda v: v * v * F32(0.25),
    "rational": lambda v: F32(1.0) / (F32(1.0) + v * v),
    "sigmoid": sigmoid_f32,
    "tanh": np.tanh,
}


def _fr(x) -> Fraction:
    return Fraction(float(x))


# -------------------------------------------------------------------------------------------- int8
def _lut8_ref(fn, in_scale, in_zp, out_scale, out_zp, dtype):
    """LUTPopulateInt8 with every float32 operation rounded exactly (ref.to_f32)."""
    lo, hi = dtype_range(dtype)
    s_in = _fr(F32(in_scale))
    inverse_scale = ref.to_f32(1 / _fr(F32(out_scale)))
    vals = list(range(lo, hi + 1))
    deq = np.array([ref.to_f32(s_in * _fr(ref.to_f32(v - in_zp))) for v in vals], dtype=F32)
    transformed = np.asarray(fn(deq), dtype=F32)
    lut = [0] * 256
    for v, t in zip(vals, transformed):
        rescaled = ref.round_half_away(_fr(ref.to_f32(_fr(t) * _fr(inverse_scale))))
        shifted = ref.to_f32(rescaled + out_zp)
        q = ref.trunc_to_int32_x86(float(shifted))
        lut[v & 0xFF] = min(max(q, lo), hi)
    return lut


@settings(max_examples=30)
@given(
    st.sampled_from(sorted(TRANSFORMS)),
    st.sampled_from([np.int8, np.uint8]),
    st.floats(min_value=float(F32(0.002)), max_value=0.5, width=32),
    st.floats(min_value=float(F32(0.002)), max_value=0.5, width=32),
    st.data(),
)
def test_lut_int8_matches_reference(name, dtype, in_scale, out_scale, data):
    lo, hi = dtype_range(dtype)
    in_zp = data.draw(st.integers(lo, hi))
    out_zp = data.draw(st.integers(lo, hi))
    fn = TRANSFORMS[name]
    got = lut_int8(fn, in_scale, in_zp, out_scale, out_zp, dtype)
    assert got.dtype == np.dtype(dtype) and got.shape == (256,)
    assert got.astype(int).tolist() == _lut8_ref(fn, in_scale, in_zp, out_scale, out_zp, dtype)


def test_lut_int8_sigmoid_known_entries():
    lut = lut_int8(sigmoid_f32, 0.1, 0, 1 / 256, -128, np.int8)
    x = np.array([0, 1, -1, 127, -128], dtype=np.int8)
    # sigmoid(0)*256 = 128 -> 0; sigmoid(0.1)*256 = 134.39 -> 6; sigmoid(-0.1)*256 = 121.61 -> -6;
    # sigmoid(12.7)*256 rounds to 256 -> clamped 127; sigmoid(-12.8)*256 ~ 0.0007 -> -128
    assert lut_lookup_int8(x, lut).tolist() == [0, 6, -6, 127, -128]
    # int8 tables are indexed by the input byte: entry 255 is input -1
    assert int(lut[255]) == -6 and int(lut[128]) == -128


@pytest.mark.parametrize("dtype,zp", [(np.int8, 0), (np.int8, -7), (np.uint8, 128), (np.uint8, 3)])
def test_lut_int8_identity_roundtrip(dtype, zp):
    lo, hi = dtype_range(dtype)
    lut = lut_int8(lambda v: v, 0.0371, zp, 0.0371, zp, dtype)
    x = np.arange(lo, hi + 1).astype(dtype)
    assert np.array_equal(lut_lookup_int8(x, lut), x)


def test_lut_int8_rejects_bad_dtype_and_non_elementwise_fn():
    with pytest.raises(TypeError):
        lut_int8(np.tanh, 0.1, 0, 0.1, 0, np.int16)
    with pytest.raises(ValueError):
        lut_int8(lambda v: v.sum(), 0.1, 0, 0.1, 0, np.int8)


# ------------------------------------------------------------------------------------------- int16
def _lut16_ref(fn, in_scale, in_zp, out_scale, out_zp, precision):
    """LUTPopulateInt16<FloatT> with every FloatT operation rounded exactly (ref.to_f32 / ref.to_f64)."""
    ft = np.dtype(precision).type
    rnd = ref.to_f32 if ft is np.float32 else ref.to_f64

    def r(x):
        return _fr(rnd(x))

    s_in, s_out = r(_fr(in_scale)), r(_fr(out_scale))
    input_min = r(s_in * (-32768 - in_zp))
    input_max = r(s_in * (32767 - in_zp))
    output_min = r(s_out * (-32768 - out_zp))
    output_max = r(s_out * (32767 - out_zp))
    step = r(r(input_max - input_min) / 512)
    half_step = r(step / 2)
    scaling_inv = r(65536 / r(output_max - output_min))
    x_val = [r(input_min + r(i * step)) for i in range(512)]
    x_mid = [r(x + half_step) for x in x_val]
    x_next = [r(input_min + r((i + 1) * step)) for i in range(512)]

    def f(xs):
        return [_fr(v) for v in np.asarray(fn(np.array([float(x) for x in xs], dtype=ft)), dtype=ft)]

    val, val_mid, val_next, val_max = f(x_val), f(x_mid), f(x_next), f([input_max])[0]
    lut = []
    for i in range(512):
        sample_val = ref.round_half_away(r(val[i] * scaling_inv))
        interp = ref.round_half_away(r(r(r(val_next[i] * scaling_inv) + sample_val) / 2))
        midpoint_val = ref.round_half_away(r(val_mid[i] * scaling_inv))
        bias = ref.round_half_away(r(Fraction(interp - midpoint_val, 2)))
        lut.append(min(max(sample_val - bias, -32768), 32767))
    lut.append(min(max(ref.round_half_away(r(val_max * scaling_inv)), -32768), 32767))
    return lut


@settings(max_examples=8)
@given(
    st.sampled_from(["identity", "rational", "sigmoid", "tanh"]),
    st.sampled_from([np.float32, np.float64]),
    st.floats(min_value=float(F32(1e-5)), max_value=float(F32(0.01)), width=32),
    st.floats(min_value=float(F32(1e-5)), max_value=float(F32(0.01)), width=32),
    st.integers(-300, 300),
    st.integers(-300, 300),
)
def test_lut_int16_matches_reference(name, precision, in_scale, out_scale, in_zp, out_zp):
    base = TRANSFORMS[name]
    ftype = np.dtype(precision).type

    def fn(v):  # the transform evaluated in the table precision
        return (
            np.asarray(base(v.astype(np.float32)), dtype=np.float64).astype(ftype) if ftype is np.float64 else base(v)
        )

    got = lut_int16(fn, in_scale, in_zp, out_scale, out_zp, precision=precision)
    assert got.dtype == np.int16 and got.shape == (513,)
    assert got.astype(int).tolist() == _lut16_ref(fn, in_scale, in_zp, out_scale, out_zp, precision)


def test_lut_int16_identity_is_within_one_lsb():
    x = np.arange(-32768, 32768)
    for scale in (1 / 32768, 0.01, 3e-4):
        lut = lut_int16(lambda v: v, scale, 0, scale, 0)
        y = lut_lookup_int16(x, lut).astype(int)
        assert np.abs(y - x).max() <= 1


def test_lut_int16_monotone_transform_gives_monotone_lookup():
    x = np.arange(-32768, 32768)
    lut = lut_int16(np.tanh, 4 / 32768, 0, 1 / 32768, 0)
    y = lut_lookup_int16(x, lut).astype(int)
    assert np.all(np.diff(y) >= 0)
    assert y[0] < -32000 and y[-1] > 32000


# ------------------------------------------------------------------------------------ int16 lookup
def _lookup16_ref(x: int, lut) -> int:
    index = 256 + (x >> 7)
    offset = x & 0x7F
    base = int(lut[index])
    slope = ref.wrap(int(lut[index + 1]) - int(lut[index]), 16)  # stored in an int16_t
    delta = (slope * offset + 64) >> 7
    return ref.wrap(base + delta, 16)


@settings(max_examples=40)
@given(
    st.lists(st.integers(-32768, 32767), min_size=513, max_size=513),
    st.lists(st.integers(-32768, 32767), min_size=1, max_size=60),
)
def test_lut_lookup_int16(lut_vals, xs):
    lut = np.array(lut_vals, dtype=np.int16)
    got = lut_lookup_int16(np.array(xs, dtype=np.int16), lut)
    assert got.dtype == np.int16
    assert got.astype(int).tolist() == [_lookup16_ref(x, lut_vals) for x in xs]


def test_lut_lookup_int16_slope_wraps_in_int16():
    lut = np.zeros(513, dtype=np.int16)
    lut[256], lut[257] = -32768, 32767  # difference 65535 is stored as int16 -1
    x = np.array([0, 64, 127], dtype=np.int16)
    # delta = (-1 * off + 64) >> 7: 0 for off <= 64, -1 above; base -32768 + (-1) wraps to 32767
    assert lut_lookup_int16(x, lut).tolist() == [-32768, -32768, 32767]


def test_lut_int8_multiplies_by_reciprocal_not_divides():
    """common.h computes t * (1/s_out) in float32; dividing by s_out gives a different entry here."""
    s_in, s_out = 0.08760520070791245, 0.1498176008462906  # both exact float32 values
    lut = lut_int8(lambda v: v, s_in, 0, s_out, 0, np.int8)
    want = _lut8_ref(lambda v: v, s_in, 0, s_out, 0, np.int8)
    assert lut.astype(int).tolist() == want
    deq = ref.to_f32(_fr(F32(s_in)) * 59)
    by_division = ref.round_half_away(_fr(ref.to_f32(_fr(deq) / _fr(F32(s_out)))))
    assert (int(lut[59]), by_division) == (35, 34)
    assert (int(lut[256 - 59]), -by_division) == (-35, -34)
