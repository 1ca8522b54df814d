"""Prepared requantization epilogues: ``clamp(MBQM(acc, M[c], shift[c]) + zp, lo, hi)`` into an output buffer,
with every constant made once at prepare.

:func:`litert_py.quant.requantize` gives the same numbers for any input, but builds its per-channel constants
on every call (~80-100 us of fixed cost, which dominated small layers). The kernels therefore prepare one of:

* :class:`Requantizer` for GEMM-style accumulators (CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV,
  BATCH_MATMUL): exact integers held in float64 (or int64), per-channel constants along the last axis;
* :func:`requantize_int64_inplace` for int64 accumulators of int32 values with one (M, shift) (the
  elementwise ops and the quantized reductions);
* :class:`PerChannelMBQM`, the per-channel int64 form with its constants made at prepare: the exact
  fallback of :class:`Requantizer` where the fused float64 form cannot be proven (7-77 us per layer instead of
  the library's 46-120 us).

MBQM is tflite/kernels/internal/common.cc MultiplyByQuantizedMultiplier (double rounding: SRDHM then
RoundingDivideByPOT with ties away from zero); the int64 overload is
:func:`litert_py.quant.multiply_by_quantized_multiplier_int64`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .fixedpoint import (
    INT32_MAX,
    mbqm_inplace,
    mbqm_rounding_constant,
    multiply_by_quantized_multiplier_int64,
    requantize,
    requantize_float64_ok,
    wrap32,
)

FLOAT64_EXACT = 1 << 53
#: Below this proven bound the fused form is not worth a max|acc| check per invoke (a 3x3x8 int8 conv
#: already needs more): the library path is used instead.
MIN_USEFUL_BOUND = 1 << 16


try:  # np.clip is a Python wrapper costing ~3 us a call; the ufunc under it costs < 1 us
    from numpy._core.umath import clip as clip_ufunc
except ImportError:  # numpy < 2: its clip turns -0.0 into +0.0 at a bound of 0 (2.x keeps x unless x < lo)
    from numpy.core.umath import clip as _clip_1x

    #: quiet NaNs of either sign, with a payload, and a signalling one: bits a clamp must pass through
    _NAN_BITS32 = np.array([0x7FC00000, 0xFFC00000, 0x7FC00001, 0x7F800001], np.uint32)
    _NAN_BITS64 = np.array([0x7FF8 << 48, 0xFFF8 << 48, (0x7FF8 << 48) | 1, (0x7FF0 << 48) | 1], np.uint64)

    def _bound_first_keeps_x() -> frozenset:
        """The float dtypes for which numpy's ``maximum(lo, x)`` / ``minimum(hi, x)`` keep x (its bits) on a tie
        and where x is NaN, on every loop a clamp reaches: a 0-d bound (the strided scalar loop), a bound of x's
        shape (the contiguous SIMD loop), a strided x; lengths in and past one SIMD body; into x and into a new
        array. numpy 1.23's x86 loops (loops_minmax.dispatch.c.src: SSE/AVX max / min return the second operand
        on a tie or NaN, then the first where it is NaN) do; its float16 / longdouble loops (``a >= b ? a : b``)
        and aarch64's FMAX (+0.0 above -0.0) do not, and keep the repairing clip below."""
        keep = []
        for dtype, nan_bits in ((np.float32, _NAN_BITS32), (np.float64, _NAN_BITS64)):
            specials = np.array([-0.0, 0.0, -np.inf, np.inf, -2.0, 0.5, 7.0], dtype)
            x_all = np.resize(np.concatenate([specials, np.array(nan_bits).view(dtype)]), 70)
            bits = nan_bits.dtype
            ok = True
            for lo, hi in ((0.0, 6.0), (-1.0, -0.0), (-0.0, 0.0)):
                lo, hi = np.array(lo, dtype), np.array(hi, dtype)
                for x in (x_all[:1], x_all[:3], x_all[:17], x_all, x_all[::3]):
                    want = np.where(x < lo, lo, np.where(x > hi, hi, x)).view(bits)
                    for lo_, hi_ in ((lo, hi), (np.full_like(x, lo), np.full_like(x, hi))):
                        y = x.copy()
                        np.minimum(hi_, np.maximum(lo_, y, out=y), out=y)
                        r = np.minimum(hi_, np.maximum(lo_, x))
                        ok = ok and np.array_equal(r.view(bits), want) and np.array_equal(y.view(bits), want)
            if ok:
                keep.append(np.dtype(dtype))
        return frozenset(keep)

    _BOUND_FIRST = _bound_first_keeps_x()

    def _has_zero(bound) -> bool:
        return bool(np.any(np.equal(bound, 0)))

    def clip_ufunc(x, lo, hi, out=None, **kwargs):
        """numpy 2's clip semantics on numpy 1.x: values not outside [lo, hi] (-0.0 and NaN included) stay x.

        1.x's float loop is min(max(x, lo), hi) with ``a > b ? a : b`` (NaN kept), which differs from that only
        where x equals a bound with other bits: a signed zero at a bound of zero. For float32 / float64 (where
        :func:`_bound_first_keeps_x` holds) it is ``minimum(hi, maximum(lo, x))``: the bound first, x kept on a
        tie, two ufunc passes, in place when ``out`` has x's dtype (~2 us for 64 values, where the repair below
        cost ~17-24 us); into an integer ``out`` (no signed zeros) 1.x's clip itself. Elsewhere, for a zero
        bound: 1.x's clip, then x copied back where the result equals it; in place (``out`` overlapping ``x``) into
        a new array first (x's zeros are gone once ``out`` is written). Other bounds and non-float x: 1.x's clip
        as it is. (numpy 2 keeps -0.0 only with 0-d bounds, as the
        float kernels have them: with array bounds its loop gives the bound's zero on a tie.)"""
        dtype = getattr(x, "dtype", None)
        if dtype in _BOUND_FIRST:
            if out is None:
                r = np.maximum(lo, x, **kwargs)
                return np.minimum(hi, r, out=r) if isinstance(r, np.ndarray) else np.minimum(hi, r)
            if out.dtype == dtype:
                np.maximum(lo, x, out=out, **kwargs)
                return np.minimum(hi, out, out=out, **kwargs)
            if out.dtype.kind != "f":  # an integer out has no signed zero: 1.x's clip (its loop in x's type) is exact
                return _clip_1x(x, lo, hi, out=out, **kwargs)
            r = np.maximum(lo, x)  # clamped in x's type, then cast as clip's out= casts
            np.copyto(out, np.minimum(hi, r, out=r), **kwargs)
            return out
        if dtype is None or dtype.kind != "f" or not (_has_zero(lo) or _has_zero(hi)):
            return _clip_1x(x, lo, hi, out=out, **kwargs)
        if out is not None and np.may_share_memory(out, x):
            np.copyto(out, clip_ufunc(x, lo, hi, **kwargs), casting="unsafe")
            return out
        r = _clip_1x(x, lo, hi, out=out, **kwargs)
        if isinstance(r, np.ndarray):
            np.copyto(r, x, where=(r == x), casting="unsafe")
        elif r == x:  # a 0-d x without out: a numpy scalar
            r = r.dtype.type(x)
        return r


#: the sign bit of float32 / float64 viewed as uint32 / uint64 (0-d: a Python int is converted on every call)
_SIGN_BITS = {np.dtype(np.uint32): np.array(1 << 31, np.uint32), np.dtype(np.uint64): np.array(1 << 63, np.uint64)}


def copysign_bits(x_bits: np.ndarray, magnitude_bits: np.ndarray, out_bits: np.ndarray) -> None:
    """``np.copysign(m, x)`` bit for bit, for a non-negative m, on float32 / float64 arrays viewed as uint32 /
    uint64: x's sign bit OR m's bits, two vectorized integer passes (numpy's copysign loop is not vectorized:
    1.6x slower at 16K float64 values, 3-6x at 64K float32 ones). ``magnitude_bits``: m's bits, 0-d or x's shape."""
    np.bitwise_and(x_bits, _SIGN_BITS[x_bits.dtype], out=out_bits)
    np.bitwise_or(out_bits, magnitude_bits, out=out_bits)


def copysign_bits_calls(x_bits: np.ndarray, magnitude_bits: np.ndarray, out_bits: np.ndarray) -> list:
    """:func:`copysign_bits`'s two passes as (function, args, kwargs) triples, for a bound plan
    (ops/bound_plan.py) that runs them without the nested call."""
    return [
        (np.bitwise_and, (x_bits, _SIGN_BITS[x_bits.dtype], out_bits), {}),
        (np.bitwise_or, (out_bits, magnitude_bits, out_bits), {}),
    ]


def fused_exact_bound(multiplier, shift, zero_point: int) -> int:
    """The largest |acc| for which :class:`Requantizer`'s fused float64 formula is exact on every channel (-1:
    none): requantize_float64_ok's conditions (acc << ls fits int32; acc*2^ls*|M| + 2^30 <= 2^53) and the
    fused one, acc*2^ls*|M| + (h + |zp|*2^rs + 1) * 2^31 <= 2^53 (all in units of 2^-(31+rs) after scaling)."""
    bound = INT32_MAX
    for m, sh in zip(
        np.abs(np.asarray(multiplier, np.int64)).reshape(-1).tolist(), np.asarray(shift).reshape(-1).tolist()
    ):
        ls, rs = max(sh, 0), max(-sh, 0)
        if ls > 31 or rs > 31:
            return -1
        half = (1 << (rs - 1)) if rs else 0
        room = FLOAT64_EXACT - ((half + (abs(zero_point) << rs) + 1) << 31)
        if room < 0:
            return -1
        bound = min(bound, INT32_MAX >> ls)
        if m:
            bound = min(bound, room // (m << ls))
    if bound > 0:
        assert requantize_float64_ok(multiplier, shift, bound)
    return bound


@dataclass(frozen=True, eq=False)
class PerChannelMBQM:
    """``out = clamp(MBQM(acc, M[c], shift[c]) + zp, lo, hi)`` for int32-range integer accumulators (int64, or
    float64 holding exact integers) with the per-channel values along the last axis, in int64 passes over a
    scratch buffer allocated at prepare: x << ls (wrapped to int32 only when ``acc_bound * 2^ls`` can leave
    it), * M, then SRDHM's nudge and RDBPOT's half folded into one per-channel constant, >> 31, the ties-away
    correction -[x*M < 0] (only on channels with rs > 0), >> rs, + zp, clamp: the fused integer form of
    :func:`litert_py.quant.fixedpoint._mbqm_core` (same derivation). Exact for every int32 accumulator
    with 0 <= M < 2^31 (the SRDHM saturation needs M = INT32_MIN) and shifts in [-31, 31]:
    |x*M| < 2^62, constants < 2^62."""

    ls: np.ndarray | None  # (C,) int64 left shifts; None when all 0
    wrap: bool  # x << ls may leave int32: wrap as C++ does
    multiplier: np.ndarray  # (C,) int64
    nudge: np.ndarray  # (C,) int64 2^30 + 2^(rs-1) * 2^31
    rs: np.ndarray | None  # (C,) int64 right shifts; None when all 0
    negative_mask: np.ndarray | None  # (C,) int64: -1 where rs > 0, 0 elsewhere; None when all rs > 0
    zero_point: int
    lo: int
    hi: int
    scratch: np.ndarray  # int64 of the accumulators' (rows, C) shape
    sign: np.ndarray | None  # int64 scratch for the ties-away correction

    @staticmethod
    def build(multiplier, shift, zero_point: int, lo: int, hi: int, acc_bound: float, acc_shape) -> PerChannelMBQM:
        """``multiplier``/``shift``: one per element of the last axis of ``acc_shape`` (0 <= M < 2^31)."""
        m = np.asarray(multiplier, np.int64).reshape(-1)
        s = np.asarray(shift, np.int64).reshape(-1)
        if (m < 0).any() or (np.abs(s) > 31).any():
            raise ValueError("PerChannelMBQM needs 0 <= M < 2^31 and shifts in [-31, 31]")
        ls, rs = np.maximum(s, 0), np.maximum(-s, 0)
        rows = (int(np.prod(acc_shape)) // max(m.size, 1), m.size)
        wrap = bool(ls.any()) and acc_bound * 2.0 ** int(ls.max()) > INT32_MAX
        nudge = mbqm_rounding_constant(rs)
        return PerChannelMBQM(
            ls if ls.any() else None,
            wrap,
            m,
            nudge,
            rs if rs.any() else None,
            None if (rs > 0).all() else np.where(rs > 0, -1, 0).astype(np.int64),
            zero_point,
            lo,
            hi,
            np.empty(rows, np.int64),
            np.empty(rows, np.int64) if rs.any() else None,
        )

    def __call__(self, acc: np.ndarray, out: np.ndarray) -> None:
        p = self.scratch
        np.copyto(p, acc.reshape(p.shape), casting="unsafe")
        if self.ls is not None:
            np.left_shift(p, self.ls, out=p)
            if self.wrap:
                wrap32(p, out=p)
        np.multiply(p, self.multiplier, out=p)
        sign = self.sign
        if sign is not None:
            np.right_shift(p, 63, out=sign)  # -1 where x*M < 0: RDBPOT's ties away from zero
            if self.negative_mask is not None:
                np.bitwise_and(sign, self.negative_mask, out=sign)
        p += self.nudge
        p >>= 31
        if sign is not None:
            p += sign
            np.right_shift(p, self.rs, out=p)
        if self.zero_point:
            p += self.zero_point
        clip_ufunc(p, self.lo, self.hi, out=out.reshape(p.shape), casting="unsafe")


@dataclass(frozen=True, eq=False)
class Requantizer:
    """``out = clamp(MBQM(acc, M[c], shift[c]) + zp, lo, hi)`` with the per-channel values along the last axis
    of ``acc`` (already tiled by the caller when a channel repeats, e.g. over the output width of NHWC). Build
    it with :meth:`build`; call it as ``requantizer(acc, out)`` (``acc`` is overwritten).

    ``kind``:

    * "fused": with t = acc * M * 2^(ls-31) (exact), SRDHM = floor(t + 1/2) and RDBPOT's halves away from
      zero, ``out = floor(t * 2^-rs + copysign(2^-(rs+1), t) + 1/2 + zp)`` (no copysign term when rs = 0):
      requantize's fused form floor((t + 1/2 + h - [t < 0]) * 2^-rs) + zp (h = 2^(rs-1); nested floors;
      keyed on t < 0 rather than SRDHM < 0: they differ only where SRDHM is 0 and then both give 0) with every
      term scaled by 2^-rs first and the comparison replaced by a copysign: 6 passes, no mask. Exact while
      every intermediate is a float64 multiple of 2^-(31+rs) below 2^53, i.e. for |acc| <= ``exact_bound``
      (:func:`fused_exact_bound`). When the static accumulator bound exceeds it, max|acc| is checked per call
      and the library path taken beyond it.
    * "library": the fused form cannot be proven for a useful bound: :class:`PerChannelMBQM` (prepared),
      or :func:`litert_py.quant.requantize` for multipliers it does not take (negative M).
    * "wrap32": the C++ int32 accumulator could overflow: the exact sum is wrapped to int32 as the C++ sum
      does, then requantize's int64 path.
    * "int64": int64 accumulators (int16 activations with int64 bias): the int64 MBQM overload, no zero point.

    Each kind is its own small prepared class (below), chosen once by :meth:`build`; ``kind`` names it.
    """

    multiplier: np.ndarray  # (C,) int64
    shift: np.ndarray  # (C,) int64
    zero_point: int
    lo: int
    hi: int
    kind: ClassVar[str] = ""

    @staticmethod
    def build(
        multiplier, shift, zero_point: int, lo: int, hi: int, acc_bound: float, acc_shape, *, int64_acc: bool = False
    ) -> Requantizer:
        """For accumulators of ``acc_shape`` with |acc| <= ``acc_bound``; ``multiplier``/``shift``: scalars
        or one per element of the last axis. ``int64_acc``: int64 accumulators and the int64 MBQM (the
        caller checks the shift with :func:`multiply_by_quantized_multiplier_int64_ok`)."""
        m = np.asarray(multiplier, np.int64).reshape(-1)
        s = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), m.shape).copy()
        if int64_acc:
            return Int64Requantizer(m, s, 0, lo, hi)
        if acc_bound > INT32_MAX:
            return Wrap32Requantizer(m, s, zero_point, lo, hi)
        exact = fused_exact_bound(m, s, zero_point)
        fallback = None
        if (m >= 0).all() and (np.abs(s) <= 31).all() and (exact < MIN_USEFUL_BOUND or acc_bound > exact):
            fallback = PerChannelMBQM.build(m, s, zero_point, lo, hi, acc_bound, acc_shape)
        if exact < MIN_USEFUL_BOUND:
            return LibraryRequantizer(m, s, zero_point, lo, hi, fallback)
        ls, rs = np.maximum(s, 0), np.maximum(-s, 0)
        return FusedRequantizer(
            m,
            s,
            zero_point,
            lo,
            hi,
            fallback,
            acc_bound > exact,
            scale=m * np.ldexp(1.0, ls - 31 - rs),
            half=np.where(rs > 0, np.ldexp(1.0, -rs - 1), 0.0),
            sign=np.empty(acc_shape),
            exact_bound=float(exact),
        )

    def __call__(self, acc: np.ndarray, out: np.ndarray) -> None:
        """``acc``: exact integer accumulators (float64 ones are overwritten; "int64" needs int64)."""
        rows = (-1, self.multiplier.size)
        self.apply(acc.reshape(rows), out.reshape(rows))

    def apply(self, acc: np.ndarray, out: np.ndarray) -> None:  # acc, out: (rows, C)
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class Int64Requantizer(Requantizer):
    """int64 accumulators: the int64 MBQM overload, no zero point."""

    kind: ClassVar[str] = "int64"

    def apply(self, acc: np.ndarray, out: np.ndarray) -> None:
        r = multiply_by_quantized_multiplier_int64(acc, self.multiplier, self.shift)
        np.clip(r, self.lo, self.hi, out=out, casting="unsafe")


@dataclass(frozen=True, eq=False)
class Wrap32Requantizer(Requantizer):
    """The C++ int32 accumulator could overflow: wrapped to int32 as the C++ sum does, then the int64 path."""

    kind: ClassVar[str] = "wrap32"

    def apply(self, acc: np.ndarray, out: np.ndarray) -> None:
        a = wrap32(acc.astype(np.int64))
        requantize(a, self.multiplier, self.shift, self.zero_point, self.lo, self.hi, out=out, method="int64")


@dataclass(frozen=True, eq=False)
class LibraryRequantizer(Requantizer):
    """:class:`PerChannelMBQM` (prepared), or :func:`requantize` for multipliers it does not take (M < 0)."""

    fallback: PerChannelMBQM | None = None
    check: bool = False  # FusedRequantizer: the static bound exceeds exact_bound, check max|acc| per call
    kind: ClassVar[str] = "library"

    def apply(self, acc: np.ndarray, out: np.ndarray) -> None:
        if self.fallback is not None:
            self.fallback(acc, out)
        else:
            requantize(acc, self.multiplier, self.shift, self.zero_point, self.lo, self.hi, out=out)


@dataclass(frozen=True, eq=False)
class FusedRequantizer(LibraryRequantizer):
    """The fused float64 form (see Requantizer); beyond ``exact_bound`` (checked per call when ``check``) the
    library path."""

    scale: np.ndarray | None = None  # (C,) float64 M * 2^(ls-31-rs)
    half: np.ndarray | None = None  # (C,) 2^-(rs+1), 0 where rs == 0
    sign: np.ndarray | None = None  # float64 scratch of the accumulator's shape
    exact_bound: float = 0.0  # exact for |acc| <= this
    kind: ClassVar[str] = "fused"

    def apply(self, acc: np.ndarray, out: np.ndarray) -> None:
        if self.check and max(-float(acc.min()), float(acc.max())) > self.exact_bound:
            LibraryRequantizer.apply(self, acc, out)
            return
        if acc.dtype != np.float64:  # float32 GEMM sums, or int64: the products below need float64
            acc = acc.astype(np.float64)
        sign = self.sign.reshape(acc.shape)
        np.multiply(acc, self.scale, out=acc)
        np.copysign(self.half, acc, out=sign)
        np.add(acc, sign, out=acc)
        np.add(acc, self.zero_point + 0.5, out=acc)
        clip_ufunc(acc, self.lo, self.hi, out=acc)  # floor(clip(v)) == clip(floor(v)) for integer bounds
        np.floor(acc, out=out, casting="unsafe")


def requantize_int64_inplace(
    acc: np.ndarray, multiplier: int, shift: int, zero_point: int, lo: int, hi: int, out: np.ndarray
) -> None:
    """``out = clamp(MBQM(acc, M, shift) + zero_point, lo, hi)`` for ``0 <= M < 2**31`` and
    ``-31 <= shift <= 31``, in place in the int64 ``acc`` (int32 values; destroyed). SRDHM and
    RoundingDivideByPOT are fused into a handful of int64 passes (derivation in
    litert_py.quant.fixedpoint._mbqm_core; the SRDHM saturation needs M = INT32_MIN, excluded)."""
    mbqm_inplace(acc, multiplier, shift)
    if zero_point:
        acc += zero_point
    clip_ufunc(acc, lo, hi, out=out, casting="unsafe")
