"""litert_py.quant.requantizer.clip_ufunc: numpy 2's clip semantics on every supported numpy (1.x runs a shim).

The float kernels clamp with it as LiteRT's ``min(max(x, lo), hi)`` does: x stays unless x < lo (lo) or x > hi (hi),
so -0.0 and NaN pass through a bound of 0. numpy 1.x's own clip gives +0.0 for -0.0 at a bound of 0; its shim lost
x's zeros when ``out`` was ``x`` (28 fused-clamp failures on numpy 1.23). On 1.x the shim runs float32 / float64 as
``minimum(hi, maximum(lo, x))`` and float16 through the repairing clip: both forms are covered. Expected values come
from comparisons and np.where, not from a clip, and are compared bit for bit. Bounds are 0-d, as every float clamp
of the kernels has them (numpy 2.4's clip itself gives +0.0 for -0.0 at a bound of 0 when the bounds are arrays).
"""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.quant.requantizer import clip_ufunc

SPECIALS = [-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, -1.5, 0.5, 6.0, 7.0, -0.0, 1.0, -1.0, 3e38, -3e38, 6.5]
BOUNDS = [(0.0, 6.0), (0.0, np.finfo(np.float32).max), (-1.0, 1.0), (-0.0, 1.0), (-1.0, 0.0), (-1.0, -0.0)]


def _expected(x, lo, hi):
    return np.where(x < lo, lo, np.where(x > hi, hi, x)).astype(x.dtype)


def _assert_bits(ours, want):
    assert ours.dtype == want.dtype and ours.shape == want.shape
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[want.dtype.itemsize]
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(ours), nan)
    np.testing.assert_array_equal(ours.view(bits)[~nan], want.view(bits)[~nan])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("bounds", BOUNDS)
@pytest.mark.parametrize("mode", ["new", "out", "in-place", "in-place-positional", "reshaped-view", "strided"])
def test_clip_keeps_x_unless_outside(dtype, bounds, mode):
    with np.errstate(over="ignore"):  # float16: 3e38 and FLT_MAX become inf
        x = np.array(SPECIALS, dtype).reshape(4, 4)
        lo, hi = (np.array(b, dtype) for b in bounds)
    want = _expected(x, lo, hi)
    if mode == "new":
        ours = clip_ufunc(x, lo, hi)
    elif mode == "out":
        ours = np.empty_like(x)
        assert clip_ufunc(x, lo, hi, out=ours) is ours
    elif mode == "in-place":
        ours = x.copy()
        clip_ufunc(ours, lo, hi, out=ours)
    elif mode == "in-place-positional":
        ours = x.copy()
        clip_ufunc(ours, lo, hi, ours)
    elif mode == "reshaped-view":  # out: another view of x's buffer, as the requantizer passes out.reshape(p.shape)
        buf = x.reshape(-1).copy()
        clip_ufunc(buf.reshape(4, 4), lo, hi, out=buf.reshape(4, 4))
        ours = buf.reshape(4, 4)
    else:  # every other column in place: a strided x and out
        wide = np.repeat(x, 2, axis=1)
        clip_ufunc(wide[:, ::2], lo, hi, out=wide[:, ::2])
        ours = wide[:, ::2].copy()
        _assert_bits(wide[:, 1::2].copy(), x)  # the columns between are left alone
    _assert_bits(ours, want)


def test_clip_0d_x():
    for v in (-0.0, 0.0, np.nan, -2.0, 9.0):
        x0 = np.array(v, np.float32)
        r = clip_ufunc(x0, np.float32(0), np.float32(6))
        _assert_bits(np.asarray(r, np.float32), _expected(x0, np.float32(0), np.float32(6)))


def test_clip_integers_keep_their_dtype():
    x = np.array([-5, 0, 3, 200], np.int32)
    out = np.empty_like(x)
    clip_ufunc(x, -1, 100, out=out)
    np.testing.assert_array_equal(out, [-1, 0, 3, 100])
    u = np.array(9, np.uint8)
    r = clip_ufunc(u, np.array(0, np.uint8), np.array(7, np.uint8))
    assert np.asarray(r).dtype == np.uint8 and int(r) == 7


@pytest.mark.parametrize("bounds", [(0.0, 100.0), (-32768.0, 32767.0), (-0.0, 0.0)])
def test_clip_into_another_dtype(bounds):
    """Clamped in x's type, then cast into ``out`` (as the requantizers write int16 / int8 outputs): a value
    outside int16 becomes the bound, not a wrapped integer clamped afterwards."""
    x = np.array([-3.7, 40000.5, -0.0, 0.0, -40000.0, 99.9, 150.0, 0.4], np.float32)
    lo, hi = (np.array(b, np.float32) for b in bounds)
    out = np.empty(x.shape, np.int16)
    assert clip_ufunc(x, lo, hi, out=out, casting="unsafe") is out
    np.testing.assert_array_equal(out, _expected(x, lo, hi).astype(np.int16))


def test_clip_float_form_is_fast():
    """numpy 2: clip_ufunc is numpy's clip ufunc. numpy 1.x on x86-64: float32 / float64 take the bound-first
    maximum / minimum form (~2 us for 64 values), not the repairing clip (~17-24 us): its import-time check
    (``_bound_first_keeps_x``) holds there."""
    import platform

    from litert_py.quant import requantizer

    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        assert isinstance(clip_ufunc, np.ufunc) and clip_ufunc.__name__ == "clip"
    elif platform.machine().lower() in ("x86_64", "amd64"):
        assert requantizer._BOUND_FIRST == {np.dtype(np.float32), np.dtype(np.float64)}
        assert requantizer._bound_first_keeps_x() == requantizer._BOUND_FIRST
