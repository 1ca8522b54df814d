"""Truncating 8-bit requantization epilogues of the quantized CONV_2D (issue 16): ``clamp(MBQM(acc) + zp, lo, hi)``
into an int8 / uint8 output with every value made non-negative before the float -> integer conversion, so the
conversion truncates (floor == trunc on values >= 0) straight into the output's uint8 view, and one uint8 add
(wrapping modulo 256) of a constant turns the bytes into the output's values: no casting floor, no temporaries,
scalar clip bounds. MBQM is tflite/kernels/internal/common.cc MultiplyByQuantizedMultiplier (double rounding);
the formulas are those of requant.py's module docstring.

* :class:`TruncEpilogue` follows the folded float64 GEMM of ReLU-like layers (lo >= zp, requant.py): the GEMM
  gives u + c' with c' = (1/2 + h) * 2^-rs and no zero point on any channel (the output zero point is added
  after the floor, as requant.LateZeroPointEpilogue does for some channels): clip to [lo - zp, hi - zp] (>= 0),
  truncate into the uint8 view, add zp modulo 256. Exact under :func:`fold_truncating`'s bound.
* :class:`ScaledEpilogue` follows an exact integer GEMM (float32 sums of raw input values and w - w_zp):
  u = sums * scale + offset * scale in float64, then (sign path, other layers) the ties-away term
  copysign(2^-(rs+1), u), the constant, clip, truncate, add. Its exactness is proven per layer at prepare by
  :func:`scaled_epilogue` (module section "monotone proof"), which makes it exact also for the near-dead channels
  (right shifts >= 15 with zero point -128) and the no-activation layers whose folded bound fails.

Monotone proof. For one channel, the exact result f(s) = clamp(MBQM(s + offset) + zp, lo, hi) is a monotone
non-decreasing function of the integer GEMM sum s (MBQM with M >= 0 is monotone: SRDHM and RoundingDivideByPOT
are), and so is the float64 epilogue g(s) (products by a positive scale, additions, v + copysign(h, v), clip and
truncation of non-negative values are monotone in IEEE arithmetic, which rounds monotonically; u = +0.0 for s = 0
is not -0.0 because an addition of +0.0 comes last). Two monotone functions on the integers [-B, B] are equal
when they are equal at -B, at B and at both sides (T - 1, T) of every step T of f: between two steps f is
constant and g, squeezed between equal values, too. f has at most hi - lo steps; prepare finds them by a
vectorized bisection with the exact integer requantization (litert_py.quant.requantize, int64) and evaluates g at
them with the invoke's own ufunc sequence (elementwise IEEE operations: the same bits at any array shape).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...quant import INT32_MAX, requantize
from ..common import clip_ufunc

FLOAT64_EXACT = 1 << 53
ZERO = np.array(0.0)  # a 0-d clip bound (a Python float operand is converted on every ufunc call)


def _wrap_constant(lo: int, dtype) -> np.uint8:
    """The uint8 addend that turns trunc values t (>= 0) into the bytes of t + lo in the output type."""
    return np.uint8(lo % 256) if np.dtype(dtype) == np.int8 else np.uint8(lo)


@dataclass(frozen=True, eq=False)
class TruncEpilogue:
    """``out = trunc(clip(v, lo2, hi2)) + k`` with ``v`` (float64, overwritten) the folded GEMM's u + c' (no zero
    point), 0 <= lo2 = lo - zp, hi2 = hi - zp and k = zp: clip in place, the truncating conversion into the
    output's uint8 view (exact: integers in [0, 255]), one wrapping uint8 add (skipped when k is 0)."""

    lo: np.ndarray  # 0-d float64 lo - zp (>= 0)
    hi: np.ndarray  # 0-d float64 hi - zp
    add: np.uint8 | None  # zp modulo 256; None when 0

    def __call__(self, v: np.ndarray, out: np.ndarray) -> None:
        clip_ufunc(v, self.lo, self.hi, out=v)
        dest = out.view(np.uint8)
        np.copyto(dest, v.reshape(dest.shape), casting="unsafe")
        if self.add is not None:
            np.add(dest, self.add, out=dest)


def fold_truncating(
    multiplier, shift, zero_point: int, lo: int, hi: int, offset, weight_abs_sums, max_abs_x: int, acc_bound: float,
    out_dtype,
):  # fmt: skip
    """(scale, const, TruncEpilogue) folding clamp(MBQM(acc, M[c], shift[c]) + zp, lo, hi) with
    acc = sum_k x_k * w_kc + offset[c] into a float64 GEMM (weights * scale, constant row const), or None.

    Needs a ReLU-like layer (lo >= zp: requant.py's argument that the ties-away correction is not needed), an int8
    or uint8 output, 0 <= M and acc_bound * 2^ls <= INT32_MAX (no int32 wrap in C++), and on every channel the
    exactness bound of the folded GEMM without the zero point (requant.py's "late" bound): every partial sum is a
    multiple of the unit 2^(ls-31-rs) (ls <= 30) below 2^53 units,
    M * (max|x| * sum|w - w_zp| + |offset|) + 2^(31-ls) + 2^(31+rs-ls) <= 2^53."""
    m = np.asarray(multiplier, np.int64).reshape(-1)
    s = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), m.shape)
    offset = np.asarray(offset, np.int64).reshape(-1)
    wsum = np.asarray(weight_abs_sums, np.int64).reshape(-1)
    if lo < zero_point or np.dtype(out_dtype) not in (np.int8, np.uint8) or (m < 0).any() or acc_bound > INT32_MAX:
        return None
    ls, rs = np.maximum(s, 0), np.maximum(-s, 0)
    for mc, lc, rc, w, off in zip(m.tolist(), ls.tolist(), rs.tolist(), wsum.tolist(), offset.tolist()):
        if lc > 30 or rc > 31 or acc_bound * 2.0**lc > INT32_MAX:
            return None
        if mc * (max_abs_x * w + abs(off)) + (1 << (31 - lc)) + (1 << (31 + rc - lc)) > FLOAT64_EXACT:
            return None
    unit = np.ldexp(1.0, ls - 31 - rs)
    scale = m * unit  # exact: M < 2^31
    const = (offset * m).astype(np.float64) * unit + np.where(rs > 0, np.ldexp(1.0, -1 - rs) + 0.5, 0.5)
    add = _wrap_constant(zero_point, out_dtype)
    epilogue = TruncEpilogue(np.array(float(lo - zero_point)), np.array(float(hi - zero_point)), add or None)
    return scale, const, epilogue


@dataclass(frozen=True, eq=False)
class ScaledEpilogue:
    """The requantization of exact integer GEMM sums (float32 or float64, the output's shape) into an int8 / uint8
    output, proven exact at prepare by :func:`scaled_epilogue` (module docstring). Every per-channel operand is
    full output-shaped (a broadcasting ufunc call costs up to twice a plain one)::

        v = sums * scale + const           ReLU-like: const = offset * scale + c' + zp - lo
        v += copysign(half, v); v += c2    sign path: const = offset * scale (v = u), c2 = zp + 1/2 - lo
        clip(v, 0, hi - lo); out bytes = trunc(v) + lo (mod 256)
    """

    scale: np.ndarray  # float64, the output's shape
    const: np.ndarray  # float64, the output's shape
    half: np.ndarray | None  # float64 2^-(rs+1) (0 where rs = 0), the output's shape; None: ReLU-like
    c2: np.ndarray | None  # 0-d float64 zp + 1/2 - lo (sign path)
    hi: np.ndarray  # 0-d float64 hi - lo
    add: np.uint8 | None  # lo modulo 256; None when 0
    v: np.ndarray  # float64 scratch, the output's shape
    sign: np.ndarray | None  # float64 scratch (sign path)

    def __call__(self, sums: np.ndarray, out: np.ndarray) -> None:
        v = self.values(sums, self.v, self.sign)
        dest = out.view(np.uint8)
        np.copyto(dest, v, casting="unsafe")  # integers in [0, 255] after truncation: exact
        if self.add is not None:
            np.add(dest, self.add, out=dest)

    def values(self, sums, v, sign):
        """The clipped float64 values (truncated by the conversion): the invoke's ufunc sequence, which
        scaled_epilogue also evaluates at the step points."""
        return _values(sums, self.scale, self.const, self.half, self.c2, self.hi, v, sign)


def _values(sums, scale, const, half, c2, hi, v, sign):
    np.multiply(sums, scale, out=v)
    np.add(v, const, out=v)  # +0.0 for s = 0 on the sign path (const = +0.0 when offset = 0)
    if half is not None:
        np.copysign(half, v, out=sign)
        np.add(v, sign, out=v)
        np.add(v, c2, out=v)
    clip_ufunc(v, ZERO, hi, out=v)
    return v


def _exact(s: np.ndarray, c: np.ndarray, m, shift, offset, zero_point: int, lo: int, hi: int) -> np.ndarray:
    """f(s) for GEMM sums ``s`` of channels ``c`` (int64 arrays): the exact integer requantization."""
    return requantize(s + offset[c], m[c], shift[c], zero_point, lo, hi, method="int64")


def scaled_epilogue(
    multiplier, shift, zero_point: int, lo: int, hi: int, offset, sum_bounds, out_shape, out_dtype
) -> ScaledEpilogue | None:
    """The ScaledEpilogue of clamp(MBQM(sum + offset[c], M[c], shift[c]) + zp, lo, hi) for integer GEMM sums with
    |sum| <= sum_bounds[c] (the float32 GEMM of raw input values: max|x| * sum|w - w_zp|) of an NHWC output of
    ``out_shape``, or None when the monotone proof (module docstring) fails on some channel, the output is not
    int8 / uint8, some M < 0 or the C++ int32 accumulator could wrap (|sum + offset| * 2^ls > INT32_MAX)."""
    m = np.asarray(multiplier, np.int64).reshape(-1)
    s = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), m.shape).copy()
    offset = np.asarray(offset, np.int64).reshape(-1)
    bound = np.asarray(sum_bounds, np.int64).reshape(-1)
    if np.dtype(out_dtype) not in (np.int8, np.uint8) or (m < 0).any() or (np.abs(s) > 31).any():
        return None
    ls, rs = np.maximum(s, 0), np.maximum(-s, 0)
    if (((bound + np.abs(offset)) << ls) > INT32_MAX).any():
        return None
    relu_like = lo >= zero_point or not rs.any()
    scale = m * np.ldexp(1.0, ls - 31 - rs)  # exact: M < 2^31
    ucon = offset.astype(np.float64) * scale  # rounded when |offset * M| >= 2^53: the proof covers it
    half = c2 = None
    if relu_like:
        const = ucon + (np.where(rs > 0, np.ldexp(1.0, -1 - rs) + 0.5, 0.5) + (zero_point - lo))
    else:
        const, half, c2 = ucon + 0.0, np.where(rs > 0, np.ldexp(1.0, -rs - 1), 0.0), np.array(zero_point + 0.5 - lo)
    top = np.array(float(hi - lo))
    if not _proven(m, s, zero_point, lo, hi, offset, bound, scale, const, half, c2, top):
        return None

    def full(a):
        return np.ascontiguousarray(np.broadcast_to(a, out_shape), np.float64)

    add = _wrap_constant(lo, out_dtype)
    return ScaledEpilogue(
        full(scale),
        full(const),
        None if half is None else full(half),
        c2,
        top,
        add or None,
        np.empty(out_shape),
        None if half is None else np.empty(out_shape),
    )


def _proven(m, s, zero_point, lo, hi, offset, bound, scale, const, half, c2, top) -> bool:
    """Whether g == f at -B, B and both sides of every step of f, on every channel (module docstring)."""
    channels = np.arange(m.size)
    f_lo = _exact(-bound, channels, m, s, offset, zero_point, lo, hi)
    f_hi = _exact(bound, channels, m, s, offset, zero_point, lo, hi)
    steps = (f_hi - f_lo).astype(np.int64)  # the values v in (f(-B), f(B)] each start at one step
    c = np.repeat(channels, steps)
    target = np.repeat(f_lo, steps) + 1 + np.arange(steps.sum()) - np.repeat(np.cumsum(steps) - steps, steps)
    left, right = -bound[c], bound[c].copy()  # f(left) < target <= f(right)
    while True:
        open_ = right - left > 1
        if not open_.any():
            break
        mid = (left + right) // 2
        up = _exact(mid, c, m, s, offset, zero_point, lo, hi) >= target
        right = np.where(open_ & up, mid, right)
        left = np.where(open_ & ~up, mid, left)
    points = np.concatenate([-bound, bound, right, right - 1])
    pc = np.concatenate([channels, channels, c, c])
    want = _exact(points, pc, m, s, offset, zero_point, lo, hi)
    v = np.empty(points.size)
    sign = None if half is None else np.empty(points.size)
    got = _values(points.astype(np.float64), scale[pc], const[pc], None if half is None else half[pc], c2, top, v,
                  sign)  # fmt: skip
    return bool((np.trunc(got).astype(np.int64) + lo == want).all())
