"""Truncating 8-bit requantization epilogues of the quantized CONV_2D (issue 16): ``clamp(MBQM(acc) + zp, lo, hi)``
into an int8 / uint8 output with every value made non-negative before the float -> integer conversion, so the
conversion truncates (floor == trunc on values >= 0; values below 0 clip to 0 either way) straight into the
output's uint8 view (through int16 where |v| < 2^15 is proven at prepare: the clip then runs in int16), and one
uint8 add (wrapping modulo 256) of a constant turns the bytes into the output's values: no casting floor, no
copysign, no temporaries, scalar clip bounds. MBQM is tflite/kernels/internal/common.cc
MultiplyByQuantizedMultiplier (double rounding); the formulas are those of requant.py's module docstring.

* :class:`TruncEpilogue` follows the folded float64 GEMM of ReLU-like layers (lo >= zp, requant.py): the GEMM
  gives u + c' with c' = (1/2 + h) * 2^-rs and no zero point on any channel (the output zero point is added
  after the floor, as requant.LateZeroPointEpilogue does for some channels): clip to [lo - zp, hi - zp] (>= 0),
  truncate into the uint8 view, add zp modulo 256. Exact under :func:`fold_truncating`'s bound.
* :class:`TruncSignEpilogue` follows the folded GEMM of the other layers: the GEMM gives u, the ties-away term
  copysign(h, u) comes from u's sign bit (two int64 passes), then the constant h + 1/2 + zp - lo, the clip and
  the truncation. Exact under the 2^53 bound of :func:`_exact_by_bound`.
* :class:`ScaledEpilogue` follows an exact integer GEMM (float32, the C++ accumulators): acc * scale + const in
  float64 (with the sign bit's term on the sign path), clip, truncate, add. Exact per channel by the 2^53 bound
  (_exact_by_bound: the values are requant.py's formula, computed exactly) or, on the channels it does not
  cover (near-dead channels: right shifts >= 15 with zero point -128, or with a no-activation clamp), by the
  monotone proof below, checked at prepare by :func:`scaled_epilogue`.

Monotone proof. For one channel, the exact result f(acc) = clamp(MBQM(acc) + zp, lo, hi) is a monotone
non-decreasing function of the integer accumulator (MBQM with M >= 0 is monotone: SRDHM and RoundingDivideByPOT
are), and so is the float64 epilogue g(acc) (products by a positive scale, additions, the subtraction of 2h where
acc < 0 (a step up at 0), clip and truncation are monotone in IEEE arithmetic, which rounds monotonically; a -0.0
accumulator gives the +0.0 result: floor(C - 2h) = floor(C) for C = h + 1/2 + zp - lo). Two monotone functions on
the integers [-B, B] are equal when they are equal at -B, at B and at both sides (T - 1, T) of every step T of f:
between two steps f is constant and g, squeezed between equal values, too. f has at most hi - lo steps; prepare
finds them by a bisection (bracketed by the step formula) with the exact integer requantization
(litert_py.quant.requantize, int64) and evaluates g at them with the invoke's own ufunc sequence (elementwise
IEEE operations: the same bits at any array shape).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...quant import INT32_MAX, requantize
from ..common import aligned_empty, clip_ufunc

FLOAT64_EXACT = 1 << 53
ZERO = np.array(0.0)  # a 0-d clip bound (a Python float operand is converted on every ufunc call)
ZERO16 = np.int16(0)


#: Outputs of at most this many values get per-channel constants of the output's shape (a broadcasting ufunc call
#: costs up to 1.4x a plain one); larger ones a (OW*O,) row broadcast over (N*OH, OW*O) rows (bounded memory:
#: the constants of a 112x112x64 layer would take 6 MB each).
FULL_CONSTANTS_MAX_VALUES = 1 << 16


def _layout(out_shape) -> tuple:
    """The shape the epilogue's scratch buffers (and the views of the accumulators and output) take."""
    values = int(np.prod(out_shape))
    if values <= FULL_CONSTANTS_MAX_VALUES:
        return tuple(out_shape)
    row = out_shape[2] * out_shape[3]
    return (values // row, row)


def _constant(a, out_shape, dtype=np.float64) -> np.ndarray:
    """Per-channel values ``a`` (O,) laid out for the epilogue (_layout): the output's shape, or one (OW*O,) row."""
    shape = _layout(out_shape)
    b = aligned_empty(shape if len(shape) == 4 else shape[1:], dtype)  # on a cache line: ufunc loops up to 2x faster
    b.reshape(-1, np.size(a))[...] = a
    return b


def _wrap_constant(lo: int, dtype) -> np.uint8:
    """The uint8 addend that turns trunc values t (>= 0) into the bytes of t + lo in the output type."""
    return np.uint8(lo % 256) if np.dtype(dtype) == np.int8 else np.uint8(lo)


@dataclass(frozen=True, eq=False)
class TruncEpilogue:
    """``out = trunc(clip(v, lo2, hi2)) + k`` with ``v`` (float64, overwritten) the folded GEMM's u + c' (no zero
    point), 0 <= lo2 = lo - zp, hi2 = hi - zp and k = zp: clip in place, the truncating conversion into the
    output's uint8 view (exact: integers in [0, 255]), one wrapping uint8 add (skipped when k is 0).

    ``wide`` (|v| < 2^15 proven at prepare): the truncating conversion to int16 first, then the clip in int16
    into the uint8 view (about 0.7x the time of the float64 clip and conversion). The same values: for v >= 0
    trunc = floor; for v < 0, trunc(v) <= 0 <= lo2 clips to lo2 as floor(clip(v)) does."""

    lo: np.ndarray  # 0-d float64 lo - zp (>= 0)
    hi: np.ndarray  # 0-d float64 hi - zp
    add: np.uint8 | None  # zp modulo 256; None when 0
    wide: np.ndarray | None = None  # int16 scratch of the output's shape
    lo16: np.int16 = np.int16(0)
    hi16: np.int16 = np.int16(255)

    def __call__(self, v: np.ndarray, out: np.ndarray) -> None:
        dest = out.view(np.uint8)
        wide = self.wide
        if wide is not None:
            np.copyto(wide, v.reshape(wide.shape), casting="unsafe")  # trunc toward zero, exact: |v| < 2^15
            clip_ufunc(wide, self.lo16, self.hi16, out=dest.reshape(wide.shape), casting="unsafe")
        else:
            clip_ufunc(v, self.lo, self.hi, out=v)
            np.copyto(dest, v.reshape(dest.shape), casting="unsafe")
        if self.add is not None:
            np.add(dest, self.add, out=dest)


def fold_truncating(
    multiplier, shift, zero_point: int, lo: int, hi: int, offset, weight_abs_sums, max_abs_x: int, acc_bound: float,
    out_dtype, out_shape,
):  # fmt: skip
    """(scale, const, TruncEpilogue) folding clamp(MBQM(acc, M[c], shift[c]) + zp, lo, hi) with
    acc = sum_k x_k * w_kc + offset[c] into a float64 GEMM (weights * scale, constant row const), or None. Layers
    that are not ReLU-like (lo < zp) take :func:`_fold_sign` (TruncSignEpilogue).

    Needs a ReLU-like layer (lo >= zp: requant.py's argument that the ties-away correction is not needed), an int8
    or uint8 output, 0 <= M and acc_bound * 2^ls <= INT32_MAX (no int32 wrap in C++), and on every channel the
    exactness bound of the folded GEMM without the zero point (requant.py's "late" bound): every partial sum is a
    multiple of the unit 2^(ls-31-rs) (ls <= 30) below 2^53 units,
    M * (max|x| * sum|w - w_zp| + |offset|) + 2^(31-ls) + 2^(31+rs-ls) <= 2^53."""
    m = np.asarray(multiplier, np.int64).reshape(-1)
    s = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), m.shape)
    offset = np.asarray(offset, np.int64).reshape(-1)
    wsum = np.asarray(weight_abs_sums, np.int64).reshape(-1)
    if np.dtype(out_dtype) not in (np.int8, np.uint8) or (m < 0).any() or acc_bound > INT32_MAX:
        return None
    ls, rs = np.maximum(s, 0), np.maximum(-s, 0)
    if lo < zero_point:
        if (ls > 30).any() or (rs > 31).any() or (acc_bound * np.ldexp(1.0, ls) > INT32_MAX).any():
            return None
        return _fold_sign(
            m, ls, rs, zero_point, lo, hi, offset, max_abs_x * wsum + np.abs(offset), out_dtype, out_shape
        )
    for mc, lc, rc, w, off in zip(m.tolist(), ls.tolist(), rs.tolist(), wsum.tolist(), offset.tolist()):
        if lc > 30 or rc > 31 or acc_bound * 2.0**lc > INT32_MAX:
            return None
        if mc * (max_abs_x * w + abs(off)) + (1 << (31 - lc)) + (1 << (31 + rc - lc)) > FLOAT64_EXACT:
            return None
    unit = np.ldexp(1.0, ls - 31 - rs)
    scale = m * unit  # exact: M < 2^31
    const = (offset * m).astype(np.float64) * unit + np.where(rs > 0, np.ldexp(1.0, -1 - rs) + 0.5, 0.5)
    add = _wrap_constant(zero_point, out_dtype)
    lo2, hi2 = lo - zero_point, hi - zero_point
    # |v| <= scale * (max|x| * sum|w| + |offset|) + c' (c' <= 1): int16 for the truncation when below 2^15
    top = max(float(sc) * (max_abs_x * w + abs(off)) for sc, w, off in zip(scale, wsum.tolist(), offset.tolist()))
    wide = aligned_empty(out_shape, np.int16) if top + 2 < 2**15 else None
    epilogue = TruncEpilogue(
        np.array(float(lo2)), np.array(float(hi2)), add or None, wide, np.int16(lo2), np.int16(hi2)
    )
    return scale, const, epilogue


@dataclass(frozen=True, eq=False)
class ScaledEpilogue:
    """The requantization of exact integer accumulators (float32 GEMM output whose ones column added the offset,
    the output's shape) into an int8 / uint8 output, proven exact at prepare by :func:`scaled_epilogue` (module
    docstring). Per-channel operands are output-shaped up to FULL_CONSTANTS_MAX_VALUES values (a broadcasting
    ufunc call costs up to 1.4x a plain one), rows beyond; the float32 -> float64 copy and a plain product cost
    less than one mixed-type product::

        v = acc (float64); [t = 2h where v < 0, else +0.0: the sign bit, shifted and masked as int64 bits]
        v = v * scale + const - t      const = c' + zp - lo (ReLU-like), h + 1/2 + zp - lo (sign path)
        clip(v, 0, hi - lo); out bytes = trunc(v) + lo (mod 256)

    so the sign path computes u + copysign(h, u) + zp + 1/2 - lo (u = acc * scale, h = 2^-(rs+1)) with two
    integer passes instead of copysign (not vectorized by numpy: 2-3x slower). ``wide`` (|v| < 2^15 proven at
    prepare): the truncation to int16, then the clip in int16 into the uint8 view (TruncEpilogue's argument:
    trunc(v) <= 0 clips to 0 as floor(clip(v)) does)."""

    scale: np.ndarray  # float64, the output's shape or one (OW*O,) row (_layout)
    const: np.ndarray  # float64, as scale
    twice_half: np.ndarray | None  # int64 bits of the float64 2h = 2^-rs (+0.0 where rs = 0); None: ReLU-like
    hi: np.ndarray  # 0-d float64 hi - lo
    add: np.uint8 | None  # lo modulo 256; None when 0
    v: np.ndarray  # float64 scratch, the output's shape or (N*OH, OW*O) (_layout)
    t: np.ndarray | None  # float64 scratch (sign path)
    wide: np.ndarray | None = None  # int16 scratch, as v
    hi16: np.int16 = np.int16(255)

    def __call__(self, acc: np.ndarray, out: np.ndarray) -> None:
        acc = acc.reshape(self.v.shape)
        dest = out.view(np.uint8).reshape(self.v.shape)
        wide = self.wide
        if wide is not None:
            v = _values(acc, self.scale, self.const, self.twice_half, None, self.v, self.t)
            np.copyto(wide, v, casting="unsafe")  # trunc toward zero, exact: |v| < 2^15
            clip_ufunc(wide, ZERO16, self.hi16, out=dest, casting="unsafe")
        else:
            v = _values(acc, self.scale, self.const, self.twice_half, self.hi, self.v, self.t)
            np.copyto(dest, v, casting="unsafe")  # integers in [0, 255] after truncation: exact
        if self.add is not None:
            np.add(dest, self.add, out=dest)


def _values(acc, scale, const, twice_half, hi, v, t):
    """The clipped float64 values the conversion truncates: the invoke's ufunc sequence, which scaled_epilogue also
    evaluates at the step points (``acc`` +0.0 where 0: the ones column's +0.0 term makes the GEMM's zero +0.0)."""
    np.copyto(v, acc)
    if twice_half is not None:
        bits = t.view(np.int64)
        np.right_shift(v.view(np.int64), 63, out=bits)  # -1 (all bits) where v < 0, else 0
        np.bitwise_and(bits, twice_half, out=bits)  # 2h where v < 0, else +0.0
    np.multiply(v, scale, out=v)
    np.add(v, const, out=v)
    if twice_half is not None:
        np.subtract(v, t, out=v)
    if hi is not None:  # None: the caller clips after the truncation
        clip_ufunc(v, ZERO, hi, out=v)
    return v


def _exact(acc: np.ndarray, c: np.ndarray, m, shift, zero_point: int, lo: int, hi: int) -> np.ndarray:
    """f(acc) for accumulators ``acc`` of channels ``c`` (int64 arrays): the exact integer requantization."""
    return requantize(acc, m[c], shift[c], zero_point, lo, hi, method="int64")


def scaled_epilogue(
    multiplier, shift, zero_point: int, lo: int, hi: int, acc_bounds, out_shape, out_dtype
) -> ScaledEpilogue | None:
    """The ScaledEpilogue of clamp(MBQM(acc, M[c], shift[c]) + zp, lo, hi) for integer accumulators with
    |acc| <= acc_bounds[c] of an NHWC output of ``out_shape``, or None when the monotone proof (module docstring)
    fails on some channel, the output is not int8 / uint8, some M < 0 or the C++ int32 accumulator could wrap
    (acc_bounds[c] * 2^ls > INT32_MAX)."""
    m = np.asarray(multiplier, np.int64).reshape(-1)
    s = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), m.shape).copy()
    bound = np.asarray(acc_bounds, np.int64).reshape(-1)
    if np.dtype(out_dtype) not in (np.int8, np.uint8) or (m < 0).any() or (np.abs(s) > 31).any():
        return None
    ls, rs = np.maximum(s, 0), np.maximum(-s, 0)
    if ((bound << ls) > INT32_MAX).any():
        return None
    relu_like = lo >= zero_point or not rs.any()
    scale = m * np.ldexp(1.0, ls - 31 - rs)  # exact: M < 2^31
    h = np.where(rs > 0, np.ldexp(1.0, -1 - rs), 0.0)
    const = h + 0.5 + (zero_point - lo)  # c' (+ zp - lo), or h + 1/2 + zp - lo before the sign term: the same
    twice_half = None if relu_like else (2 * h).view(np.int64)
    top = np.array(float(hi - lo))
    check = ~_exact_by_bound(m, ls, rs, bound, abs(zero_point - lo))
    if check.any() and not _proven(
        m[check], s[check], zero_point, lo, hi, bound[check], scale[check], const[check],
        None if twice_half is None else twice_half[check], top,
    ):  # fmt: skip
        return None

    shape = _layout(out_shape)
    add = _wrap_constant(lo, out_dtype)
    sign = twice_half is not None
    # |v| <= B * scale + |const| (+ 2h <= 1): int16 for the truncation when below 2^15
    wide = float((bound * scale).max() + np.abs(const).max()) + 2 < 2**15
    return ScaledEpilogue(
        _constant(scale, out_shape),
        _constant(const, out_shape),
        _constant(twice_half, out_shape, np.int64) if sign else None,
        top,
        add or None,
        aligned_empty(shape, np.float64),
        aligned_empty(shape, np.float64) if sign else None,
        aligned_empty(shape, np.int16) if wide else None,
        np.int16(hi - lo),
    )


def _exact_by_bound(m, ls, rs, bound, zp_lo: int) -> np.ndarray:
    """Per channel: whether every value the epilogue computes is exact (a multiple of the unit 2^(ls-31-rs) below
    2^53 units: ls <= 30, B * M + (|zp - lo| + 1) * 2^(31+rs-ls) + 2^(31-ls) <= 2^53), so that it computes
    requant.py's formula exactly (ReLU-like: without the ties-away term; else keyed on acc < 0) and needs no
    step check (most channels: the monotone proof then runs on the others, the near-dead ones)."""
    return np.array(
        [
            lc <= 30 and b * mc + ((zp_lo + 1) << (31 + rc - lc)) + (1 << (31 - lc)) <= FLOAT64_EXACT
            for mc, lc, rc, b in zip(m.tolist(), ls.tolist(), rs.tolist(), bound.tolist())
        ],
        bool,
    )


def _proven(m, s, zero_point, lo, hi, bound, scale, const, twice_half, top) -> bool:
    """Whether g == f at -B, B and both sides of every step of f, on every channel (module docstring)."""
    channels = np.arange(m.size)
    f_lo = _exact(-bound, channels, m, s, zero_point, lo, hi)
    f_hi = _exact(bound, channels, m, s, zero_point, lo, hi)
    steps = (f_hi - f_lo).astype(np.int64)  # the values v in (f(-B), f(B)] each start at one step
    c = np.repeat(channels, steps)
    target = np.repeat(f_lo, steps) + 1 + np.arange(steps.sum()) - np.repeat(np.cumsum(steps) - steps, steps)
    left, right = _bracket(m, s, zero_point, lo, hi, bound, c, target)  # f(left) < target <= f(right)
    while True:
        open_ = right - left > 1
        if not open_.any():
            break
        mid = (left + right) // 2
        up = _exact(mid, c, m, s, zero_point, lo, hi) >= target
        right = np.where(open_ & up, mid, right)
        left = np.where(open_ & ~up, mid, left)
    points = np.concatenate([-bound, bound, right, right - 1])
    pc = np.concatenate([channels, channels, c, c])
    want = _exact(points, pc, m, s, zero_point, lo, hi)
    v, t = np.empty(points.size), np.empty(points.size)
    got = _values(points.astype(np.float64), scale[pc], const[pc], None if twice_half is None else twice_half[pc],
                  top, v, t)  # fmt: skip
    return bool((np.trunc(got).astype(np.int64) + lo == want).all())


def _bracket(m, s, zero_point, lo, hi, bound, c, target):
    """(left, right) with f(left) < target <= f(right) around each step: the step of the formula without the
    ties-away term, ceil(((target - zp) * 2^(31+rs) - 2^30 - h * 2^31) / (M * 2^ls)) in float64, is within 2
    accumulators of the exact one (the term moves it by 2^31 / (M * 2^ls) <= 2; float64's error is far below
    one); where the exact f does not confirm the bracket, the whole range [-B, B] (then bisected)."""
    ls, rs = np.maximum(s[c], 0), np.maximum(-s[c], 0)
    num = (target - zero_point) * np.ldexp(1.0, 31 + rs) - 2.0**30 - np.where(rs > 0, np.ldexp(1.0, 30 + rs), 0.0)
    with np.errstate(all="ignore"):
        approx = np.ceil(num / (m[c] * np.ldexp(1.0, ls)))
    b = bound[c]
    approx = np.clip(np.nan_to_num(approx), -b, b).astype(np.int64)
    left, right = np.maximum(approx - 4, -b), np.minimum(approx + 4, b)
    ok = (_exact(right, c, m, s, zero_point, lo, hi) >= target) & (
        (left == -b) | (_exact(left, c, m, s, zero_point, lo, hi) < target)
    )
    return np.where(ok, left, -b), np.where(ok, right, b)


@dataclass(frozen=True, eq=False)
class TruncSignEpilogue:
    """The folded GEMM's epilogue for layers that are not ReLU-like: ``v`` (float64, overwritten) holds u exactly
    (the GEMM's constant row is offset * scale); then, as ScaledEpilogue's sign path, t = 2h where v < 0 (the sign
    bit shifted and masked as int64 bits, +0.0 elsewhere; u = 0 is +0.0: the constant row's +0.0 term), v + C - t
    with C = h + 1/2 + zp - lo, so u + copysign(h, u) + zp + 1/2 - lo (requant.py's sign path), the truncation to
    int16 (|v| < 2^15 proven at prepare), the clip to [0, hi - lo] into the uint8 view, + lo modulo 256."""

    const: np.ndarray  # float64 C, the output's shape or one (OW*O,) row (_layout)
    twice_half: np.ndarray  # int64 bits of 2h, as const
    t: np.ndarray  # float64 scratch, the output's shape or (N*OH, OW*O)
    wide: np.ndarray  # int16 scratch, as t
    hi16: np.int16
    add: np.uint8 | None  # lo modulo 256; None when 0

    def __call__(self, v: np.ndarray, out: np.ndarray) -> None:
        v = v.reshape(self.t.shape)
        bits = self.t.view(np.int64)
        np.right_shift(v.view(np.int64), 63, out=bits)  # -1 (all bits) where v < 0, else 0
        np.bitwise_and(bits, self.twice_half, out=bits)
        np.add(v, self.const, out=v)
        np.subtract(v, self.t, out=v)
        wide, dest = self.wide, out.view(np.uint8).reshape(self.t.shape)
        np.copyto(wide, v, casting="unsafe")  # trunc toward zero, exact: |v| < 2^15
        clip_ufunc(wide, ZERO16, self.hi16, out=dest, casting="unsafe")  # trunc(v) <= 0 clips to 0 as floor does
        if self.add is not None:
            np.add(dest, self.add, out=dest)


def _fold_sign(m, ls, rs, zero_point: int, lo: int, hi: int, offset, bound, out_dtype, out_shape):
    """fold_truncating for a layer that is not ReLU-like: (scale, offset * scale, TruncSignEpilogue), or None
    unless on every channel every value is exact (_exact_by_bound with B = max|x| * sum|w| + |offset|: the
    GEMM's partial sums and u + C - t are multiples of the unit below 2^53) and |v| < 2^15."""
    if not _exact_by_bound(m, ls, rs, bound, abs(zero_point - lo)).all():
        return None
    unit = np.ldexp(1.0, ls - 31 - rs)
    scale = m * unit
    h = np.where(rs > 0, np.ldexp(1.0, -1 - rs), 0.0)
    const = h + 0.5 + (zero_point - lo)
    if float((bound * scale).max()) + float(np.abs(const).max()) + 2 >= 2**15:
        return None

    shape = _layout(out_shape)
    epilogue = TruncSignEpilogue(
        _constant(const, out_shape),
        _constant((2 * h).view(np.int64), out_shape, np.int64),
        aligned_empty(shape, np.float64),
        aligned_empty(shape, np.int16),
        np.int16(hi - lo),
        _wrap_constant(lo, out_dtype) or None,
    )
    return scale, (offset * m).astype(np.float64) * unit, epilogue
