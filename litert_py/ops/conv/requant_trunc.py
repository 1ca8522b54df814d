"""Truncating 8-bit requantization epilogues (issue 16), one mechanism shared by the quantized CONV_2D (its folded
float64 GEMM and its exact float32 GEMM: conv2d_quantized.py) and the DEPTHWISE_CONV_2D rows path
(depthwise_rows.py, depthwise_into_rows.py): ``clamp(MBQM(acc) + zp, lo, hi)`` into an int8 / uint8 output. MBQM
is tflite/kernels/internal/common.cc MultiplyByQuantizedMultiplier (double rounding); the formulas are those of
requant.py's module docstring: with u = acc * M * 2^(ls-31-rs) and h = 2^-(rs+1) (0 where rs = 0), ReLU-like
layers (lo >= zp, or no right shift on any channel) give floor(clip(u + zp + 1/2 + h, lo, hi)), the others
floor(clip(u + copysign(h, u) + zp + 1/2, lo, hi)).

The mechanism (:class:`TruncEpilogue`, its constants folded by :func:`fold_truncating`, or :func:`scaled_epilogue`
for the float32 GEMM's accumulators): with a base b <= lo (b = 0 where lo >= 0, else min(zp, lo)), the values
v = (the result before the floor) - b are computed (the GEMM's or tap sums' constant holds zp - b + 1/2 + h on
ReLU-like layers; on the others the epilogue adds copysign(h, v) and then the scalar zp - b + 1/2) and clipped to
[lo - b, hi - b], which lies in [0, 255]: every clipped value is >= 0, so the truncating float -> integer
conversion is the floor, straight into the output's uint8 view; one wrapping uint8 add of b modulo 256 turns those
bytes into the output's (for int8, b = -128 adds 128: the two's complement pattern; no add where b = 0, uint8
layers). No casting floor, no temporaries, scalar clip bounds. Where |v| < 2^15 is proven (the ``wide`` form), the
truncation goes to int16 first and the clip runs in int16 into the uint8 view: the same values (for v >= 0
trunc = floor; for v < 0, trunc(v) <= 0 <= lo - b clips to lo - b as floor(clip(v)) does). Large int8 outputs
(WRAP_MIN_VALUES) in that form take the wrapped base b = -256 (:func:`_wrapped_base`): the clipped values lie in
[128, 383] and the int16 -> uint8 cast keeps their low byte (modulo 256, a C conversion to an unsigned type),
which is the int8 result's byte: no add at all. Its bound is the one below with |zp - b| up to 383, and |v| < 2^15.

Exactness (written once, checked per channel by :func:`_exact_by_bound` inside fold_truncating and
scaled_epilogue): every value the epilogue (and the GEMM or tap sums before it, in whatever order they add) computes
is an integer multiple of the unit 2^(ls-31-rs) (needs ls <= 30; h, 1/2 and the integers are multiples) below 2^53
units, so each is exact and the float result is requant.py's formula exactly:
M * B + (|zp - b| + 1) * 2^(31+rs-ls) + 2^(31-ls) <= 2^53, with B >= every |partial sum| of the accumulator
(max|x| * sum|w - w_zp| + |offset|). Also 0 <= M < 2^31, rs <= 31 and the C++ int32 accumulator times 2^ls does
not wrap. The near-dead channels of no-activation layers (right shifts >= 15 with b = -128 far from zp) fail it;
on the float32 GEMM's integer accumulators :func:`scaled_epilogue` proves them by the monotone proof below, and
so does :func:`fold_truncating_proven` on the folded float64 GEMM (and depthwise sums): there the GEMM computes the
value less zp - b, exact by the *late* bound M * B + 2^(31+rs-ls) + 2^(31-ls) <= 2^53 (so the GEMM's value is an
exact affine function of the accumulator whatever order BLAS adds in), or, on channels failing even that, the raw
integer accumulator, multiplied by its scale in the epilogue (:class:`RescaledTruncEpilogue`); the epilogue's
rounded additions are then monotone functions of the accumulator, which the proof checks.

Monotone proof. For one channel, the exact result f(acc) = clamp(MBQM(acc) + zp, lo, hi) is a monotone
non-decreasing function of the integer accumulator (MBQM with M >= 0 is monotone: SRDHM and RoundingDivideByPOT
are), and so is the float64 epilogue g(acc) (products by a positive scale, additions, the copysign term (a step up
of 2h at 0), clip and truncation are monotone in IEEE arithmetic, which rounds monotonically). Two monotone
functions on the integers [-B, B] are equal when they are equal at -B, at B and at both sides (T - 1, T) of every
step T of f: between two steps f is constant and g, squeezed between equal values, too. f has at most hi - lo
steps; prepare finds them by a bisection (bracketed by the step formula) with the exact integer requantization
(litert_py.quant.requantize, int64) and evaluates g at them with the invoke's own ufunc sequence (ScaledEpilogue's
copy and product, or its one mixed-type product up to ONE_PASS_MAX_VALUES: the same float64 values; TruncEpilogue's
copysign as np.copysign or as bits: the same bits; elementwise IEEE operations, the same bits at any array shape;
its int16 and float64 tails give the same integer for every v, so the probe's tail may be either, except for a
wrapped base of -256, whose values 256..383 only the int16 tail stores: the probe then takes the int16 form).

Forms chosen by measurement (per layer, 1 thread): the int16 clip from
WIDE_MIN_VALUES outputs on, the float64 clip below; above ONE_PASS_MAX_VALUES outputs the ties-away term as
copysign(h, v) computed bit for bit (v's sign bit OR h's bits, ``add_ties_away``: 16384 values in 6.2 us, against
9.7 us for np.copysign and 10.7 us for an arithmetic shift of the sign bit, a mask and a subtraction; np.copysign
below), then one add.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...quant import INT32_MAX, copysign_bits, copysign_bits_calls, requantize
from ..common import aligned_empty, clip_ufunc
from .requant import SMALL_EPILOGUE_VALUES, SmallFoldedEpilogue, epilogue_calls

FLOAT64_EXACT = 1 << 53

#: Outputs of at most this many values get per-channel constants of the output's shape (a broadcasting ufunc call
#: costs up to 1.4x a plain one); larger ones a (OW*O,) row broadcast over (N*OH, OW*O) rows (bounded memory:
#: the constants of a 112x112x64 layer would take 6 MB each).
FULL_CONSTANTS_MAX_VALUES = 1 << 16

#: |v| below this (with a margin for the constants' rounding-free additions) lets the truncation go through int16.
WIDE_MAX = 2**15 - 2
#: Outputs of at least this many values truncate through int16 where |v| < 2^15 (the ``wide`` form: a truncating
#: copy and an int16 clip into the uint8 view); smaller ones clip in float64 and truncate into the uint8 view
#: (measured, 1 thread, the epilogue alone: 1152 values 2.3 vs 2.9 us, 4608 3.6 vs 3.8, 8000 5.1 vs 4.5, 18432
#: 9.7 vs 7.6, 36864 16.3 vs 12.3 us).
WIDE_MIN_VALUES = 6144
#: int8 outputs of at least this many values take the wrapped base (_wrapped_base): the int16 form without the
#: final uint8 add (1-2 us less per layer of 9-16K values in sequence). Below, the int16 form stays slower than the
#: float64 clip even without the add (in sequence: VWW MobileNet 6x6x128 layers 36 -> 39 us, 3x3x256 24 -> 28 us).
WRAP_MIN_VALUES = WIDE_MIN_VALUES
#: Outputs of at most this many values (short streaming and temporal layers, where each numpy call costs about
#: half a microsecond more inside an invoke than alone) take one call where the forms above take two: the sign path's
#: np.copysign(half, v) instead of quant.copysign_bits' two integer passes (the same bits), and ScaledEpilogue's
#: one float32 x float64 product instead of the float64 copy and the product (float32 -> float64 is exact: the same
#: IEEE products). Measured alone (hot, 1 thread, numpy 2.x / 1.23): copysign at 336 values 0.58 -> 0.48 /
#: 1.09 -> 0.52 us, at 600 0.71 -> 0.65 / 1.25 -> 0.72 us (at 1200 numpy 2.x's is slower: 0.87 -> 1.01 us); the
#: product at 336 0.62 -> 0.60 / 1.00 -> 0.71 us, at 600 0.80 -> 0.79 / 1.06 -> 0.80 us (at 1200 1.00 -> 1.08 on 2.x).
ONE_PASS_MAX_VALUES = 1024


def _layout(out_shape) -> tuple:
    """The shape the epilogue's operands and scratch buffers (and the views of the values and output) take."""
    values = int(np.prod(out_shape))
    if values <= FULL_CONSTANTS_MAX_VALUES:
        return tuple(out_shape)
    row = out_shape[2] * out_shape[3]
    return (values // row, row)


def _constant(a, shape: tuple) -> np.ndarray:
    """Per-channel float64 values ``a`` (O,) laid out for the epilogue: ``shape`` (_layout), or its last row when
    that is 2-d (broadcast over the rows); on a cache line (ufunc loops up to 2x faster)."""
    b = aligned_empty(shape if len(shape) == 4 else shape[1:], np.float64)
    b.reshape(-1, np.size(a))[...] = a
    return b


def add_ties_away(v: np.ndarray, v_bits: np.ndarray, half_bits: np.ndarray, sign: np.ndarray, sign_bits) -> None:
    """``v += copysign(h, v)`` in place (h >= 0), the copysign by quant.copysign_bits. ``v_bits``, ``half_bits``,
    ``sign_bits``: v, h (v's shape) and the float64 scratch ``sign`` viewed as uint64 (made at prepare)."""
    copysign_bits(v_bits, half_bits, sign_bits)
    np.add(v, sign, out=v)


def ties_away_calls(v: np.ndarray, v_bits: np.ndarray, half_bits: np.ndarray, sign: np.ndarray, sign_bits) -> list:
    """add_ties_away's numpy calls as (function, args, kwargs) triples for a bound plan (quant.copysign_bits's two
    integer passes, then the add): the same calls on the same arrays without the two nested Python calls
    (resnet8's 32x32x16 sign-path layer inside invokes, 1 thread: 20.3 -> 16.8 us)."""
    return [*copysign_bits_calls(v_bits, half_bits, sign_bits), (np.add, (v, sign, v), {})]


@dataclass(frozen=True, eq=False)
class TruncEpilogue:
    """The shared truncating epilogue (module docstring): ``v`` (float64, overwritten; any shape of ``shape``'s
    values) holds the values less the base b; the sign path adds copysign(half, v) (np.copysign up to
    ONE_PASS_MAX_VALUES values, else quant.copysign_bits); ``const`` is added (the scalar zp - b + 1/2 on the sign
    path, per-channel constants for ScaledEpilogue's ReLU-like layers, None where the GEMM added it); then the clip
    to [lo, hi] = [lo - b, hi - b] within [0, 255] (within [128, 383] for a wrapped base b = -256, int16 form
    only: the cast keeps the low byte, the int8 value) and the truncation into the output's uint8 view (``wide``:
    through int16, clipped there), and ``add`` = b modulo 256 (None where 0)."""

    shape: tuple  # _layout of the output
    lo: np.ndarray  # 0-d float64 lo - b (>= 0)
    hi: np.ndarray  # 0-d float64 hi - b (<= 255)
    base: int  # b
    add: np.uint8 | None  # b modulo 256; None where 0
    half: np.ndarray | None = None  # sign path: h per value (layout); None: ReLU-like
    const: np.ndarray | None = None  # 0-d or per value (layout), added after the sign term
    sign: np.ndarray | None = None  # float64 scratch (sign path)
    wide: np.ndarray | None = None  # int16 scratch (|v| < 2^15 proven at prepare)
    lo16: np.int16 = np.int16(0)
    hi16: np.int16 = np.int16(255)
    half_bits: np.ndarray | None = None  # half viewed as uint64
    sign_bits: np.ndarray | None = None  # sign viewed as uint64

    def __call__(self, v: np.ndarray, out: np.ndarray) -> None:
        v = v.reshape(self.shape)
        if self.half is not None and v.size <= ONE_PASS_MAX_VALUES:
            np.copysign(self.half, v, out=self.sign)  # quant.copysign_bits' bits in one call
            np.add(v, self.sign, out=v)
        elif self.half is not None:
            add_ties_away(v, v.view(np.uint64), self.half_bits, self.sign, self.sign_bits)
        if self.const is not None:
            np.add(v, self.const, out=v)
        dest = out.view(np.uint8).reshape(self.shape)
        wide = self.wide
        if wide is not None:
            np.copyto(wide, v, casting="unsafe")  # trunc toward zero, exact: |v| < 2^15
            clip_ufunc(wide, self.lo16, self.hi16, out=dest, casting="unsafe")  # trunc(v) <= 0 clips as floor does
        else:
            clip_ufunc(v, self.lo, self.hi, out=v)
            np.copyto(dest, v, casting="unsafe")  # integers in [0, 255] after truncation: exact
        if self.add is not None:
            np.add(dest, self.add, out=dest)

    def calls(self, v: np.ndarray, out: np.ndarray) -> tuple:
        """__call__'s numpy calls on ``v`` and ``out`` (requant.epilogue_calls)."""
        v = v.reshape(self.shape)
        c = []
        if self.half is not None and v.size <= ONE_PASS_MAX_VALUES:
            c += [(np.copysign, (self.half, v, self.sign), {}), (np.add, (v, self.sign, v), {})]
        elif self.half is not None:
            c += ties_away_calls(v, v.view(np.uint64), self.half_bits, self.sign, self.sign_bits)
        if self.const is not None:
            c.append((np.add, (v, self.const, v), {}))
        return (*c, *self.store_calls(v, out.view(np.uint8).reshape(self.shape)))

    def store_calls(self, v: np.ndarray, dest: np.ndarray) -> list:
        """The clip, truncation and base calls of __call__ into ``dest`` (the output's uint8 view)."""
        wide = self.wide
        if wide is not None:
            c = [(np.copyto, (wide, v), {"casting": "unsafe"})]
            c.append((clip_ufunc, (wide, self.lo16, self.hi16, dest), {"casting": "unsafe"}))
        else:
            c = [(clip_ufunc, (v, self.lo, self.hi, v), {}), (np.copyto, (dest, v), {"casting": "unsafe"})]
        if self.add is not None:
            c.append((np.add, (dest, self.add, dest), {}))
        return c


@dataclass(frozen=True, eq=False)
class PlainTruncEpilogue(TruncEpilogue):
    """TruncEpilogue without the sign term and the constant (ReLU-like layers whose GEMM or tap sums added it),
    over outputs of at most FULL_CONSTANTS_MAX_VALUES values: ``v`` must have the output's shape (the callers
    pass it so), so no reshape is made (small layers pay per Python operation): the same numpy calls."""

    def __call__(self, v: np.ndarray, out: np.ndarray) -> None:
        dest = out.view(np.uint8)
        wide = self.wide
        if wide is not None:
            np.copyto(wide, v, casting="unsafe")  # trunc toward zero, exact: |v| < 2^15
            clip_ufunc(wide, self.lo16, self.hi16, out=dest, casting="unsafe")
        else:
            clip_ufunc(v, self.lo, self.hi, out=v)
            np.copyto(dest, v, casting="unsafe")
        if self.add is not None:
            np.add(dest, self.add, out=dest)

    def calls(self, v: np.ndarray, out: np.ndarray) -> tuple:
        """__call__'s numpy calls on ``v`` and ``out`` (requant.epilogue_calls)."""
        return tuple(self.store_calls(v, out.view(np.uint8)))


@dataclass(frozen=True, eq=False)
class TruncFolding:
    """What :func:`fold_truncating` folds, per output channel: ``scale`` M * 2^(ls-31-rs) (the weights or tap sums
    times it are exact) and ``const`` offset * scale (+ zp - b + 1/2 + h on ReLU-like layers), exact; the
    epilogue's parameters (base b, the sign path's h, the bound ``top`` of |v|)."""

    scale: np.ndarray  # (O,) float64
    const: np.ndarray  # (O,) float64
    base: int
    lo: int  # the output clamp
    hi: int
    zero_point: int
    half: np.ndarray | None  # (O,) float64 h (sign path); None: ReLU-like
    top: float  # |v| <= top

    def epilogue(self, out_shape, wide: bool = True, extra_const: np.ndarray | None = None) -> TruncEpilogue:
        """The TruncEpilogue over an output of ``out_shape``: through int16 when ``wide`` and |v| < 2^15;
        ``extra_const`` (O,): per-channel constants it adds itself (ScaledEpilogue, ReLU-like)."""
        shape = _layout(out_shape)
        lo, hi, b = self.lo - self.base, self.hi - self.base, self.base
        half = sign = None
        const = None if extra_const is None else _constant(extra_const, shape)
        if self.half is not None:
            half, sign = _constant(self.half, shape), aligned_empty(shape, np.float64)
            const = np.array(self.zero_point - b + 0.5)
        wide = wide and self.top < WIDE_MAX and int(np.prod(out_shape)) >= WIDE_MIN_VALUES
        if hi > 255:  # the wrapped base (fold_truncating's ``out_shape``): the int16 clip's modular cast only
            wide = True
            if not (lo >= 0 and self.top < WIDE_MAX and b % 256 == 0):  # fold_truncating only wraps then
                raise ValueError("a wrapped base needs the int16 form")
        plain = half is None and const is None and len(shape) == 4
        return (PlainTruncEpilogue if plain else TruncEpilogue)(
            shape, np.array(float(lo)), np.array(float(hi)), b, np.uint8(b % 256) if b % 256 else None, half, const,
            sign, aligned_empty(shape, np.int16) if wide else None, np.int16(lo), np.int16(hi),
            None if half is None else half.view(np.uint64), None if sign is None else sign.view(np.uint64),
        )  # fmt: skip


def _channels(multiplier, shift, acc_bound) -> tuple | None:
    """(m, s, ls, rs) int64 per channel, or None where some M < 0, |shift| > 31 or ls > 30, or the C++ int32
    accumulator times 2^ls could wrap (``acc_bound``: a scalar or per-channel bound of |acc|)."""
    m = np.asarray(multiplier, np.int64).reshape(-1)
    s = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), m.shape).copy()
    if (m < 0).any() or (np.abs(s) > 31).any():
        return None
    ls, rs = np.maximum(s, 0), np.maximum(-s, 0)
    if (ls > 30).any() or (np.asarray(acc_bound, np.float64) * np.ldexp(1.0, ls) > INT32_MAX).any():
        return None
    return m, s, ls, rs


def _fold(m, ls, rs, zero_point: int, lo: int, hi: int, offset, bounds, base: int) -> TruncFolding:
    unit = np.ldexp(1.0, ls - 31 - rs)
    scale = m * unit  # exact: M < 2^31
    const = (np.asarray(offset, np.int64) * m).astype(np.float64) * unit  # |offset * M| < 2^53: exact
    h = np.where(rs > 0, np.ldexp(1.0, -1 - rs), 0.0)
    relu_like = lo >= zero_point or not rs.any()
    if relu_like:
        const = const + (zero_point - base + 0.5 + h)
    top = float((bounds * scale).max()) + abs(zero_point - base) + 1.0
    return TruncFolding(scale, const, base, lo, hi, zero_point, None if relu_like else h, top)


def fold_truncating(
    multiplier, shift, zero_point: int, lo: int, hi: int, offset, bounds, acc_bound: float, out_dtype,
    base: int | None = None, out_shape=None,
) -> TruncFolding | None:  # fmt: skip
    """The TruncFolding of clamp(MBQM(acc, M[c], shift[c]) + zp, lo, hi) with acc = (sums of integer products) +
    offset[c], every partial sum of which is at most ``bounds[c]`` in magnitude (max|x| * sum|w - w_zp| +
    |offset|), the C++ accumulator at most ``acc_bound``; None unless the module docstring's bound holds on every
    channel and the output (``out_dtype``) is int8 / uint8. ``base``: b (default: 0 where lo >= 0 and that is
    exact, else min(zp, lo)); the depthwise's feeding form asks for b = 0 whatever lo (its values are floored into
    float64 rows, not truncated: its TruncEpilogue is then read for its constants only). ``out_shape`` (NHWC):
    int8 outputs of at least WRAP_MIN_VALUES values try the wrapped base first (_wrapped_base)."""
    channels = _channels(multiplier, shift, acc_bound)
    if channels is None or np.dtype(out_dtype) not in (np.int8, np.uint8):
        return None
    m, _, ls, rs = channels
    bounds = np.broadcast_to(np.asarray(bounds, np.int64).reshape(-1), m.shape)
    candidates = [base] if base is not None else [0, min(zero_point, lo)] if lo >= 0 else [min(zero_point, lo)]
    wrapped = _wrapped_base(candidates[0], out_dtype, out_shape)
    for b in ([] if wrapped is None else [wrapped]) + candidates:
        if _exact_by_bound(m, ls, rs, bounds, abs(zero_point - b)).all():
            folding = _fold(m, ls, rs, zero_point, lo, hi, offset, bounds, b)
            if b != wrapped or folding.top < WIDE_MAX:
                return folding
    return None


def _wrapped_base(b: int, out_dtype, out_shape) -> int | None:
    """The wrapped base of an int8 output of at least WRAP_MIN_VALUES values (None otherwise, or where ``b`` is a
    multiple of 256 already): b - (b mod 256) = -256, so b mod 256 = 0 and the final uint8 add is gone. The values
    less it lie in [lo + 256, hi + 256] within [128, 383]; the int16 clip's cast into the output's uint8 view
    keeps their low byte (a C integer conversion to an unsigned type: modulo 256), which is the int8 result's
    two's complement byte as y - b = y + 256. Needs the int16 (``wide``) form, |v| < WIDE_MAX, which the callers
    check on the folding's ``top``; the exactness bound is the module docstring's with this b (|zp - b| up to
    383)."""
    if out_shape is None or np.dtype(out_dtype) != np.int8 or b % 256 == 0:
        return None
    return b - b % 256 if int(np.prod(out_shape)) >= WRAP_MIN_VALUES else None


def _exact_by_bound(m, ls, rs, bound, zp_b: int) -> np.ndarray:
    """Per channel: the module docstring's bound, M * B + (|zp - b| + 1) * 2^(31+rs-ls) + 2^(31-ls) <= 2^53
    (ls <= 30), ``zp_b`` = |zp - b|."""
    return np.array(
        [
            lc <= 30 and bc * mc + ((zp_b + 1) << (31 + rc - lc)) + (1 << (31 - lc)) <= FLOAT64_EXACT
            for mc, lc, rc, bc in zip(m.tolist(), ls.tolist(), rs.tolist(), bound.tolist())
        ],
        bool,
    )


@dataclass(frozen=True, eq=False)
class ScaledEpilogue:
    """The requantization of exact integer accumulators (a float32 GEMM output whose ones column added the offset,
    the output's shape) into an int8 / uint8 output, proven exact at prepare by :func:`scaled_epilogue` (the bound
    or the monotone proof, module docstring): copied to float64 (a plain copy and a plain product cost less than
    one mixed-type product; up to ONE_PASS_MAX_VALUES values one mixed-type product, its loop float64 by
    ``dtype``: numpy 1.x would pick float32 for a 0-d scale), times the per-channel scale,
    then the shared TruncEpilogue (ReLU-like: it adds the per-channel constant zp - b + 1/2 + h; sign path:
    copysign(h, v), then zp - b + 1/2)."""

    scale: np.ndarray  # float64, the output's shape or one (OW*O,) row (_layout)
    v: np.ndarray  # float64 scratch, _layout of the output
    epilogue: TruncEpilogue

    def __call__(self, acc: np.ndarray, out: np.ndarray) -> None:
        v = self.v
        if v.size <= ONE_PASS_MAX_VALUES:  # one mixed-type product: the same float64 values
            np.multiply(acc.reshape(v.shape), self.scale, out=v, dtype=np.float64)
        else:
            np.copyto(v, acc.reshape(v.shape))
            np.multiply(v, self.scale, out=v)
        self.epilogue(v, out)

    def calls(self, acc: np.ndarray, out: np.ndarray) -> tuple:
        """__call__'s numpy calls on ``acc`` and ``out`` (requant.epilogue_calls)."""
        v = self.v
        if v.size <= ONE_PASS_MAX_VALUES:
            head = ((np.multiply, (acc.reshape(v.shape), self.scale, v), {"dtype": np.float64}),)  # float64 loop
        else:
            head = ((np.copyto, (v, acc.reshape(v.shape)), {}), (np.multiply, (v, self.scale, v), {}))
        return (*head, *epilogue_calls(self.epilogue, v, out))


def scaled_epilogue(
    multiplier, shift, zero_point: int, lo: int, hi: int, acc_bounds, out_shape, out_dtype
) -> ScaledEpilogue | None:
    """The ScaledEpilogue of clamp(MBQM(acc, M[c], shift[c]) + zp, lo, hi) for integer accumulators with
    |acc| <= acc_bounds[c] of an NHWC output of ``out_shape``, or None when the output is not int8 / uint8, the
    channels are not foldable (_channels) or the monotone proof fails on some channel the bound does not cover."""
    if np.dtype(out_dtype) not in (np.int8, np.uint8):
        return None
    bound = np.asarray(acc_bounds, np.int64).reshape(-1)
    channels = _channels(multiplier, shift, bound)
    if channels is None:
        return None
    m, s, ls, rs = channels
    bound = np.broadcast_to(bound, m.shape)
    b = min(zero_point, lo)
    check = ~_exact_by_bound(m, ls, rs, bound, abs(zero_point - b))
    wrapped = _wrapped_base(b, out_dtype, out_shape)
    if wrapped is not None:  # where it loses no channel to the proof and keeps |v| < WIDE_MAX
        zeros = np.zeros(m.size, np.int64)
        wrapped_check = ~_exact_by_bound(m, ls, rs, bound, abs(zero_point - wrapped))
        if (wrapped_check == check).all() and _fold(
            m, ls, rs, zero_point, lo, hi, zeros, bound, wrapped
        ).top < WIDE_MAX:
            b = wrapped
    folding = _fold(m, ls, rs, zero_point, lo, hi, np.zeros(m.size, np.int64), bound, b)  # acc holds the offset
    relu_like = folding.half is None
    extra = folding.const if relu_like else None  # (the sign path's constant is the scalar zp - b + 1/2)
    if check.any() and not _proven(m[check], s[check], zero_point, lo, hi, bound[check], folding, extra, check):
        return None
    shape = _layout(out_shape)
    return ScaledEpilogue(
        _constant(folding.scale, shape), aligned_empty(shape, np.float64), folding.epilogue(out_shape, True, extra)
    )


@dataclass(frozen=True, eq=False)
class RescaledTruncEpilogue:
    """:func:`fold_truncating_proven`'s epilogue where some channel's GEMM column holds the raw accumulator: ``v``
    times ``scale`` (the channel's M * 2^(ls-31-rs) there, 1 elsewhere: exact) in place, then the TruncEpilogue."""

    scale: np.ndarray  # float64, the epilogue's layout (_layout)
    epilogue: TruncEpilogue

    def __call__(self, v: np.ndarray, out: np.ndarray) -> None:
        v = v.reshape(self.epilogue.shape)
        np.multiply(v, self.scale, out=v)
        self.epilogue(v, out)

    def calls(self, v: np.ndarray, out: np.ndarray) -> tuple:
        """__call__'s numpy calls on ``v`` and ``out`` (requant.epilogue_calls)."""
        v = v.reshape(self.epilogue.shape)
        return ((np.multiply, (v, self.scale, v), {}), *epilogue_calls(self.epilogue, v, out))


@dataclass(frozen=True, eq=False)
class SmallRescaledEpilogue:
    """RescaledTruncEpilogue for outputs of at most requant.SMALL_EPILOGUE_VALUES values (streaming and one-pixel
    layers, which pay per numpy call): every operand has the output's shape, no base: ``v`` times ``scale``, on
    ReLU-like layers + ``const`` (the TruncEpilogue's constant plus b), then requant.SmallFoldedEpilogue (the sign
    path's copysign(half, v) and its constant zp + 1/2, the clip to [lo, hi], the floor, a plain assignment)."""

    scale: np.ndarray  # float64, the output's shape
    const: np.ndarray | None  # ReLU-like: float64, the output's shape; None: the sign path (in ``folded``)
    folded: SmallFoldedEpilogue

    def __call__(self, v: np.ndarray, out: np.ndarray) -> None:
        np.multiply(v, self.scale, out=v)
        if self.const is not None:
            np.add(v, self.const, out=v)
        self.folded(v, out)

    def calls(self, v: np.ndarray, out: np.ndarray) -> tuple:
        """__call__'s numpy calls on ``v`` and ``out`` (requant.epilogue_calls)."""
        c = [(np.multiply, (v, self.scale, v), {})]
        if self.const is not None:
            c.append((np.add, (v, self.const, v), {}))
        return (*c, *epilogue_calls(self.folded, v, out))


@dataclass(frozen=True, eq=False)
class ProvenFolding:
    """What :func:`fold_truncating_proven` folds into the GEMM, per output channel (``scale``, ``const``), and the
    epilogue that follows it."""

    scale: np.ndarray  # (O,) float64
    const: np.ndarray  # (O,) float64
    epilogue: TruncEpilogue | RescaledTruncEpilogue | SmallRescaledEpilogue


def fold_truncating_proven(
    multiplier, shift, zero_point: int, lo: int, hi: int, offset, bounds, acc_bound: float, out_shape, out_dtype
) -> ProvenFolding | None:
    """A truncating folding for the layers whose channels fail fold_truncating's bound (right shifts of about 15
    or more: the ``(|zp - b| + 1) * 2^(31+rs-ls)`` term), exact by the monotone proof (module docstring) instead:
    with b = min(zp, lo), the GEMM computes on each channel whose *late* bound M * B + 2^(31+rs-ls) + 2^(31-ls)
    <= 2^53 holds the value less zp - b exactly (u + offset * scale, + 1/2 + h on ReLU-like layers, where b = zp:
    every partial sum a multiple of the unit below 2^53 units, so the GEMM's value is that exact function of the
    accumulator acc); on the other channels the raw accumulator (scale 1, constant = offset: exact integers),
    multiplied by the channel's scale in the epilogue (RescaledTruncEpilogue). Then the TruncEpilogue (the sign
    path's copysign(h, v) and scalar zp - b + 1/2; ReLU-like: + zp - b + 1/2 + h on the raw channels), whose
    roundings are monotone: so the result g(acc) is a monotone function of acc, proven equal to the exact f on
    [-B, B] by the step check on every channel the full bound misses. ``out_shape``: NHWC; the other arguments as
    fold_truncating's. None when the output is not int8 / uint8, the channels are not foldable (_channels) or the
    proof fails on some channel."""
    channels = _channels(multiplier, shift, acc_bound)
    if channels is None or np.dtype(out_dtype) not in (np.int8, np.uint8):
        return None
    m, s, ls, rs = channels
    bounds = np.broadcast_to(np.asarray(bounds, np.int64).reshape(-1), m.shape)
    offset = np.asarray(offset, np.int64).reshape(-1)
    b = min(zero_point, lo)
    folding = _fold(m, ls, rs, zero_point, lo, hi, offset, bounds, b)
    relu_like = folding.half is None
    h = np.where(rs > 0, np.ldexp(1.0, -1 - rs), 0.0)
    # ReLU-like layers' GEMM adds k = zp - b + 1/2 + h (b = zp where some channel shifts right), the others' none
    k = zero_point - b + 0.5 + h if relu_like else np.zeros(m.size)
    raw = ~_exact_by_bound(m, ls, rs, bounds, abs(zero_point - b) if relu_like else 0)
    check = ~_exact_by_bound(m, ls, rs, bounds, abs(zero_point - b))
    extra = np.where(raw, k, 0.0) if relu_like and raw.any() else None  # added after the rescale
    small = raw.any() and int(np.prod(out_shape)) <= SMALL_EPILOGUE_VALUES
    if small:  # the value itself (no base): the TruncEpilogue's constant plus b
        small_const = np.full(m.size, zero_point + 0.5) if not relu_like else extra + b
    if check.any():
        points, pc, want = _step_points(m[check], s[check], zero_point, lo, hi, bounds[check])
        c = np.flatnonzero(check)[pc]
        sub = TruncFolding(
            folding.scale[c], folding.const[c], b, lo, hi, zero_point,
            None if relu_like else folding.half[c], folding.top,
        )  # fmt: skip
        shape = (1, 1, 1, points.size)
        v = np.where(raw[c], points.astype(np.float64), points * folding.scale[c] + k[c])  # the GEMM's values
        if small:
            probe = _small_rescaled(folding, raw, small_const, lo, hi, c.reshape(shape))
            got = np.empty(shape, np.int64)
        else:
            probe = sub.epilogue(shape, True, None if extra is None else extra[c])
            if raw.any():
                probe = RescaledTruncEpilogue(np.where(raw[c], folding.scale[c], 1.0).reshape(probe.shape), probe)
            got = np.empty(shape, np.uint8)
        probe(v.reshape(shape), got)
        got = got.reshape(-1).astype(np.int64)
        if lo < 0 and not small:  # int8: the bytes' two's complement
            got = np.where(got > 127, got - 256, got)
        if not (got == want).all():
            return None
    if small:
        channels = np.broadcast_to(np.arange(m.size), tuple(out_shape))
        epilogue = _small_rescaled(folding, raw, small_const, lo, hi, channels)
    else:
        epilogue = folding.epilogue(out_shape, True, extra)
    if raw.any() and not small:
        epilogue = RescaledTruncEpilogue(_constant(np.where(raw, folding.scale, 1.0), epilogue.shape), epilogue)
    scale = np.where(raw, 1.0, folding.scale)
    const = np.where(raw, offset.astype(np.float64), folding.const)
    return ProvenFolding(scale, const, epilogue)


def _small_rescaled(folding: TruncFolding, raw, const, lo: int, hi: int, c: np.ndarray) -> SmallRescaledEpilogue:
    """The SmallRescaledEpilogue of fold_truncating_proven's ``folding`` with one value per channel index of ``c``
    (the output's channels, or the proof's points): the rescale on the ``raw`` channels, its ``const`` (O,)."""
    const = np.ascontiguousarray(const[c])
    bounds = np.array(float(lo)), np.array(float(hi))
    if folding.half is None:
        folded = SmallFoldedEpilogue(*bounds, None, 0.0, None)
    else:
        folded = SmallFoldedEpilogue(*bounds, np.ascontiguousarray(folding.half[c]), const, np.empty(c.shape))
    scale = np.ascontiguousarray(np.where(raw, folding.scale, 1.0)[c])
    return SmallRescaledEpilogue(scale, const if folding.half is None else None, folded)


def _exact(acc: np.ndarray, c: np.ndarray, m, shift, zero_point: int, lo: int, hi: int) -> np.ndarray:
    """f(acc) for accumulators ``acc`` of channels ``c`` (int64 arrays): the exact integer requantization."""
    return requantize(acc, m[c], shift[c], zero_point, lo, hi, method="int64")


def _proven(m, s, zero_point, lo, hi, bound, folding: TruncFolding, extra, check) -> bool:
    """Whether g == f at -B, B and both sides of every step of f, on the channels ``check`` of ``folding``
    (``m``, ``s``, ``bound``: theirs; ``extra``: the per-channel constants ScaledEpilogue's epilogue adds, or None):
    g is ScaledEpilogue's sequence at those points, the epilogue built as the invoke's (module docstring)."""
    points, pc, want = _step_points(m, s, zero_point, lo, hi, bound)
    # the probe: one value per point, each with its channel's constants (elementwise: the invoke's bits)
    sub = TruncFolding(
        folding.scale[check][pc], folding.const[check][pc], folding.base, lo, hi, zero_point,
        None if folding.half is None else folding.half[check][pc], folding.top,
    )  # fmt: skip
    shape = (1, 1, 1, points.size)
    probe = sub.epilogue(shape, True, None if extra is None else extra[check][pc])
    v = points.astype(np.float64) * sub.scale
    got = np.empty(shape, np.uint8)
    probe(v, got)
    got = got.reshape(-1).astype(np.int64)
    if lo < 0:  # int8: the bytes' two's complement
        got = np.where(got > 127, got - 256, got)
    return bool((got == want).all())


def _step_points(m, s, zero_point: int, lo: int, hi: int, bound) -> tuple:
    """(points, pc, want) for the monotone proof (module docstring) on channels with multipliers ``m``, shifts
    ``s`` and accumulator bounds ``bound`` (int64 arrays): the accumulators -B, B and both sides of every step of
    f over [-B, B], the index of each one's channel and f there (the exact integer requantization)."""
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
    return points, pc, _exact(points, pc, m, s, zero_point, lo, hi)


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
