"""litert_py.quant.requantizer.clip_ufunc: numpy 2's clip semantics on every supported numpy (1.x runs a shim).

The float kernels clamp with it as LiteRT's ``min(max(x, lo), hi)`` does: x stays unless x < lo (lo) or x > hi (hi),
so -0.0 and NaN pass through a bound of 0. numpy 1.x's own clip gives +0.0 for -0.0 at a bound of 0; its shim lost
x's zeros when ``out`` was ``x`` (28 fused-clamp failures on numpy 1.23). On 1.x the shim runs float32 / float64 as
``minimum(hi, maximum(lo, x))`` and float16 through the repairing clip: both forms are covered. Expected values come
from comparisons and np.where on the bits, not from a clip, and are compared bit for bit, NaNs included (payloads,
signs, signalling NaNs pass through unchanged). Bounds of equal zeros (-0.0, 0.0) / (0.0, -0.0) give lo below lo and
hi above hi, as std::min(std::max(x, lo), hi) does. Bounds are 0-d, as every float clamp of the kernels has them
(numpy 2.4's clip itself gives +0.0 for -0.0 at a bound of 0 when the bounds are arrays).
"""

from __future__ import annotations

import numpy as np
import pytest

from litert_py.quant.requantizer import clip_ufunc

SPECIALS = [-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, -1.5, 0.5, 6.0, 7.0, -0.0, 1.0, -1.0, 3e38, -3e38, 6.5]
#: per dtype: a quiet NaN with a payload, a signalling one, a negative signalling one with a payload, all ones
NAN_BITS = {
    np.dtype(np.float16): np.array([0x7E01, 0x7C01, 0xFC03, 0xFFFF], np.uint16),
    np.dtype(np.float32): np.array([0x7FC00001, 0x7F800001, 0xFF800003, 0xFFFFFFFF], np.uint32),
    np.dtype(np.float64): np.array([(0x7FF8 << 48) | 1, (0x7FF0 << 48) | 1, (0xFFF0 << 48) | 3, 2**64 - 1], np.uint64),
}
BOUNDS = [
    (0.0, 6.0),
    (0.0, np.finfo(np.float32).max),
    (-1.0, 1.0),
    (-0.0, 1.0),
    (-1.0, 0.0),
    (-1.0, -0.0),
    (-0.0, 0.0),
    (0.0, -0.0),
]


def _bits(x):
    return x.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def _expected(x, lo, hi):
    """lo where x < lo, hi where x > hi, else x: selected on the bits (NaNs, signed zeros kept exactly)."""
    lo_bits, hi_bits = _bits(np.asarray(lo, x.dtype)), _bits(np.asarray(hi, x.dtype))
    return np.where(x < lo, lo_bits, np.where(x > hi, hi_bits, _bits(x))).view(x.dtype)


def _assert_bits(ours, want):
    """Equal dtype, shape and every bit (a NaN's sign and payload, a signalling NaN, a zero's sign)."""
    assert ours.dtype == want.dtype and ours.shape == want.shape
    np.testing.assert_array_equal(_bits(ours), _bits(want))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("bounds", BOUNDS)
@pytest.mark.parametrize("mode", ["new", "out", "in-place", "in-place-positional", "reshaped-view", "strided"])
def test_clip_keeps_x_unless_outside(dtype, bounds, mode):
    with np.errstate(over="ignore"):  # float16: 3e38 and FLT_MAX become inf
        x = np.concatenate([np.array(SPECIALS, dtype), NAN_BITS[np.dtype(dtype)].view(dtype)]).reshape(4, 5)
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
        clip_ufunc(buf.reshape(4, 5), lo, hi, out=buf.reshape(4, 5))
        ours = buf.reshape(4, 5)
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


def test_clip_float_form_on_this_numpy(monkeypatch):
    """numpy 2: clip_ufunc is numpy's clip ufunc. numpy 1.x: the float dtypes that pass the import-time check
    (``_bound_first_keeps_x``; float32 / float64 on x86-64) clamp with maximum / minimum, never reaching 1.x's clip
    (``_clip_1x``), which the repairing form of the others (float16) calls; the results are exact either way."""
    import platform

    from litert_py.quant import requantizer

    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        assert isinstance(clip_ufunc, np.ufunc) and clip_ufunc.__name__ == "clip"
        return
    if platform.machine().lower() in ("x86_64", "amd64"):
        assert requantizer._BOUND_FIRST == {np.dtype(np.float32), np.dtype(np.float64)}
    called = []
    clip_1x = requantizer._clip_1x

    def spy(*args, **kwargs):
        called.append(np.asarray(args[0]).dtype)
        return clip_1x(*args, **kwargs)

    monkeypatch.setattr(requantizer, "_clip_1x", spy)
    for dtype in (np.float32, np.float64, np.float16):
        x = np.array([-0.0, 0.0, 7.0, -2.0, np.nan], dtype)
        lo, hi = np.array(0.0, dtype), np.array(6.0, dtype)
        _assert_bits(clip_ufunc(x, lo, hi), _expected(x, lo, hi))
    assert called == [
        d for d in map(np.dtype, (np.float32, np.float64, np.float16)) if d not in requantizer._BOUND_FIRST
    ]
