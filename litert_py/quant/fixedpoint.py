"""TFLite's integer fixed-point primitives, vectorized in numpy (int64 arithmetic throughout).

Everything here reproduces the *default* LiteRT build (``TFLITE_SINGLE_ROUNDING`` undefined, i.e. the
"double rounding" ``MultiplyByQuantizedMultiplier``); see docs/quantized-arithmetic.md sections 1-3.

Conventions:

* Inputs may be Python scalars or arrays of any integer dtype; they are converted to int64 and
  broadcast together (so per-channel multipliers/shifts broadcast along the channel axis).
* Results are int64 (numpy scalars for 0-d inputs); callers cast to the storage dtype.
* Values that the C++ code keeps in ``int32_t`` must be in int32 range on input; this is not
  re-checked on the hot paths (a check would cost a pass over the data).
* ``shift`` follows TFLite: a quantized multiplier ``(M, shift)`` means ``M * 2**(shift - 31)`` and a
  positive shift is a left shift.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "INT32_MIN",
    "INT32_MAX",
    "wrap32",
    "trunc_to_int32",
    "round_away",
    "quantize_multiplier",
    "quantize_multiplier_array",
    "saturating_rounding_doubling_high_mul",
    "rounding_divide_by_pot",
    "multiply_by_quantized_multiplier",
    "multiply_by_quantized_multiplier_int64",
    "mbqm_inplace",
    "downscale_int32_to_int16_multiplier",
    "requantize_float64_ok",
    "requantize",
]

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
_TWO31 = 2**31
_TWO53 = 2**53


def _i64(v) -> np.ndarray:
    return np.asarray(v, dtype=np.int64)


def _unwrap0d(a):
    """numpy ufuncs return scalars for 0-d inputs; make explicit 0-d arrays behave the same way."""
    return a[()] if isinstance(a, np.ndarray) and a.ndim == 0 else a


# ------------------------------------------------------------------------------------------------
# Casts and rounding
# ------------------------------------------------------------------------------------------------


def wrap32(v, out=None):
    """Reduce int64 values to int32 two's complement (what an overflowing ``int32_t`` does in practice).

    Semantics of the implicit int64 -> int32 truncation in tflite/kernels/internal/common.cc
    (``int32_t result = x >> total_shift``) and of the wrapping ``x * (1 << left_shift)`` there.
    """
    v = _i64(v)
    if out is None:
        return _unwrap0d(((v + _TWO31) & 0xFFFFFFFF) - _TWO31)
    np.add(v, _TWO31, out=out)
    np.bitwise_and(out, 0xFFFFFFFF, out=out)
    np.subtract(out, _TWO31, out=out)
    return out


def trunc_to_int32(x):
    """``static_cast<int32_t>(float_or_double)`` as compiled for x86-64 (``cvttss2si``/``cvttsd2si``).

    Truncates toward zero; NaN and values outside the int32 range give INT32_MIN (the x86 "integer
    indefinite" value; AArch64 saturates instead, see docs section 1.3). Used where TFLite casts
    floats to int32: tflite/kernels/internal/common.h (LUTPopulateInt8), reference/quantize.h
    (AffineQuantize), kernel_util.cc (Quantize helper). Returns int64.
    """
    x = np.asarray(x)
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    # float(INT32_MAX) rounds up to 2**31 in float32, so compare against 2**31 exactly.
    bad = ~((x >= -2147483648.0) & (x < 2147483648.0))  # also catches NaN
    t = np.trunc(np.where(bad, 0, x)).astype(np.int64)
    return _unwrap0d(np.where(bad, INT32_MIN, t))


def round_away(x, out=None):
    """``std::round`` / ``TfLiteRound``: round half away from zero, keeping float32/float64 dtype.

    Reproduces tflite/kernels/internal/cppmath.h (TfLiteRound -> std::round; for a ``float``
    argument that is ``roundf``, evaluated in float32). Exact for every finite value (the subtraction
    ``x - trunc(x)`` is exact in IEEE arithmetic), keeps the sign of zero (``round(-0.3) == -0.0``)
    and passes inf/NaN through. Integer inputs are converted to float64.
    """
    a = np.asarray(x)
    if a.dtype.kind != "f":
        a = a.astype(np.float64)
    t = np.trunc(a)
    frac = np.abs(a - t)
    adj = np.copysign((frac >= 0.5).astype(a.dtype), a)
    if out is None:
        return _unwrap0d(t + adj)
    return np.add(t, adj, out=out)


# ------------------------------------------------------------------------------------------------
# Prepare-time multipliers
# ------------------------------------------------------------------------------------------------


def quantize_multiplier(real: float) -> tuple[int, int]:
    """``QuantizeMultiplier(double) -> (M, shift)`` of tflite/kernels/internal/quantization_util.cc.

    ``frexp`` -> ``TfLiteRound(q * 2^31)`` (half away from zero) -> the ``2^31`` carry
    (``M = 2^30, shift += 1``) -> the ``shift < -31`` flush to ``(0, 0)``. ``real == 0`` gives
    ``(0, 0)``; a negative ``real`` gives a negative ``M`` (possibly ``INT32_MIN``). Non-finite
    input is undefined behaviour in C++ and raises ``ValueError`` here. The TFLITE_SINGLE_ROUNDING
    clamp (shift > 30) is not applied: the default build does not define that macro.
    """
    d = float(real)
    if not math.isfinite(d):
        raise ValueError(f"quantize_multiplier: non-finite multiplier {real!r}")
    if d == 0.0:
        return 0, 0
    q, shift = math.frexp(d)
    qf = q * 2147483648.0  # exact: scaling by a power of two
    # |qf| is in [2^30, 2^31): its ulp is <= 2^-22, so |qf| + 0.5 is exact and floor() rounds half up.
    m = int(math.floor(abs(qf) + 0.5))
    if qf < 0:
        m = -m
    if m == _TWO31:
        m //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return m, shift


def quantize_multiplier_array(reals) -> tuple[np.ndarray, np.ndarray]:
    """Vectorized ``QuantizeMultiplier`` (tflite/kernels/internal/quantization_util.cc,
    QuantizeMultiplier / QuantizeMultiplierArray); bit-identical to :func:`quantize_multiplier`.

    Returns ``(M, shift)`` as int64 arrays with the shape of ``reals`` (converted to float64 first).
    """
    d = np.asarray(reals, dtype=np.float64)
    if not np.all(np.isfinite(d)):
        raise ValueError("quantize_multiplier_array: non-finite multiplier")
    q, e = np.frexp(d)  # frexp(0) == (0, 0)
    m = round_away(q * 2147483648.0)
    m = np.asarray(m).astype(np.int64)
    e = np.asarray(e).astype(np.int64)
    carry = m == _TWO31
    m = np.where(carry, _TWO31 // 2, m)
    e = np.where(carry, e + 1, e)
    flush = e < -31
    return np.where(flush, 0, m), np.where(flush, 0, e)


def downscale_int32_to_int16_multiplier(m):
    """``DownScaleInt32ToInt16Multiplier`` of tflite/kernels/internal/common.h.

    ``32767`` if ``M >= INT32_MAX - 2^15`` else ``(M + 2^15) >> 16``. Returns int64.
    """
    m = _i64(m)
    return _unwrap0d(np.where(m >= INT32_MAX - (1 << 15), 32767, (m + (1 << 15)) >> 16))


# ------------------------------------------------------------------------------------------------
# Run-time primitives
# ------------------------------------------------------------------------------------------------


def saturating_rounding_doubling_high_mul(a, b):
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` (fixedpoint/fixedpoint.h), int32 version.

    ``a*b / 2^31`` rounded to nearest with ties toward +infinity (the nudge-and-truncate in the source
    is a floor); ``INT32_MIN * INT32_MIN`` saturates to ``INT32_MAX``. ``a`` and ``b`` must be in
    int32 range.
    """
    a = _i64(a)
    b = _i64(b)
    r = (a * b + (1 << 30)) >> 31
    return _unwrap0d(np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, r))


def rounding_divide_by_pot(x, exponent):
    """gemmlowp ``RoundingDivideByPOT`` (fixedpoint/fixedpoint.h): ``x / 2^exponent`` rounded to
    nearest, ties away from zero. ``0 <= exponent <= 31`` (checked: gemmlowp asserts it)."""
    x = _i64(x)
    e = _i64(exponent)
    if e.size and (e.min() < 0 or e.max() > 31):
        raise ValueError("rounding_divide_by_pot: exponent must be in [0, 31]")
    mask = (np.int64(1) << e) - 1
    thr = (mask >> 1) + (x < 0)
    return _unwrap0d((x >> e) + ((x & mask) > thr))


def mbqm_rounding_constant(rs: np.ndarray, extra=None):
    """Per-channel rounding constant of the fused double-rounding step (see _mbqm_core; also used by
    quant.requantizer.PerChannelMBQM)."""
    # 2^30 (SRDHM nudge) + 2^(rs-1) * 2^31 (RDBPOT half, expressed before the >> 31).
    k = np.where(rs > 0, np.left_shift(np.int64(1), np.maximum(rs, 1) + 30), 0) + (1 << 30)
    if extra is not None:
        k = k + (_i64(extra) << (31 + rs))
    return k


def _mbqm_core(x, m, rs, out=None, extra=None):
    """``RDBPOT(SRDHM(x, m), rs)`` (+ ``extra``) as one fused int64 computation.

    With ``p = x*m`` and ``y = (p + 2^30) >> 31`` (= SRDHM), RDBPOT is ``(y + h) >> rs`` for
    ``y >= 0`` and ``(y + h - 1) >> rs`` for ``y < 0`` (``h = 2^(rs-1)``; no ``-1`` when
    ``rs == 0``). Floors nest, so the result is ``(((p + 2^30 + h*2^31) >> 31) - [y<0]) >> rs``.
    The ``-1`` is keyed on ``p < 0`` rather than ``y < 0``: they differ only when
    ``-2^30 <= p < 0``, where ``y == 0`` and both forms give 0 (for ``rs >= 1``). No overflow:
    ``|p| <= 2^62 - 2^31`` after the saturation fix and ``h*2^31 <= 2^61``; callers keep
    ``|extra| * 2^(31+rs) < 2^60``. Only one full-size int64 buffer is used (``out`` if given).
    """
    p = np.asarray(np.multiply(x, m, out=out, dtype=np.int64))  # 0-d results stay arrays (in-place ops)
    if np.any(m == INT32_MIN):
        # SRDHM saturation: INT32_MIN * INT32_MIN -> INT32_MAX, i.e. take 2^31 off the product.
        sat = (x == INT32_MIN) & (m == INT32_MIN)
        p -= sat.astype(np.int64) << 31
    pos = rs > 0
    neg = p < 0
    if not np.all(pos):
        neg &= pos
    p += mbqm_rounding_constant(rs, extra)
    p >>= 31
    p -= neg
    if np.any(pos):
        p >>= rs
    return p


_SCALAR_INTS = (int, np.int32, np.int64)


def mbqm_inplace(acc: np.ndarray, m: int, shift: int) -> np.ndarray:
    """``MultiplyByQuantizedMultiplier`` with one Python-int ``(M, shift)`` (``M != INT32_MIN``,
    ``-31 <= shift <= 31``, not re-checked) in place in the int64 array ``acc`` holding int32 values: the passes of
    _mbqm_core with scalar constants (the array form's per-call constant building costs ~10 us, which dominates
    small tensors). The one fused scalar MBQM: multiply_by_quantized_multiplier and
    quant.requantizer.requantize_int64_inplace both run it. Returns ``acc``."""
    if shift > 0:
        acc <<= shift  # x * (1 << shift) in int32: wraps
        wrap32(acc, out=acc)
    np.multiply(acc, m, out=acc)
    rs = max(-shift, 0)
    if rs == 0:
        acc += 1 << 30
        acc >>= 31
        return acc
    negative = np.right_shift(acc, 63)  # -1 where the product is negative: RDBPOT's ties away from zero
    acc += (1 << 30) + (1 << (rs + 30))
    acc >>= 31
    acc += negative
    acc >>= rs
    return acc


def multiply_by_quantized_multiplier(x, m, shift, out=None):
    """``MultiplyByQuantizedMultiplier(int32 x, int32 M, int shift)``, double-rounding (default) build,
    of tflite/kernels/internal/common.cc: ``RDBPOT(SRDHM(wrap32(x << max(shift,0)), M), max(-shift,0))``.

    ``x``, ``M`` and ``shift`` broadcast (per-channel ``M``/``shift`` arrays are fine). ``x`` and
    ``M`` must be in int32 range, ``-31 <= shift <= 31``. ``out``: optional int64 array of the
    broadcast shape that receives the result (no extra temporaries beyond one int64 buffer).
    Also covers MultiplyByQuantizedMultiplierSmallerThanOneExp / GreaterThanOne of common.h.
    """
    if out is None and type(m) in _SCALAR_INTS and type(shift) in _SCALAR_INTS and m != INT32_MIN:
        if not -31 <= shift <= 31:
            raise ValueError("multiply_by_quantized_multiplier: shift must be in [-31, 31]")
        return _unwrap0d(mbqm_inplace(np.array(x, np.int64), int(m), int(shift)))
    x = _i64(x)
    m = _i64(m)
    s = _i64(shift)
    if s.size and (s.min() < -31 or s.max() > 31):
        raise ValueError("multiply_by_quantized_multiplier: shift must be in [-31, 31]")
    if np.any(s > 0):
        x = wrap32(np.left_shift(x, np.maximum(s, 0)))
    rs = np.maximum(-s, 0)
    return _unwrap0d(_mbqm_core(x, m, rs, out=out))


def multiply_by_quantized_multiplier_int64(x, m, shift):
    """The ``int64_t x`` overload of ``MultiplyByQuantizedMultiplier`` (tflite/kernels/internal/common.cc),
    identical in both build variants: a 16-bit reduced multiplier and one rounding, ties up::

        Mr = (M + 2^15) >> 16 if M < 0x7FFF0000 else 0x7FFF
        r  = (x*Mr + 2^(14-shift)) >> (15-shift),  truncated to int32 (wraps)

    ``-2^47 <= x < 2^47`` and ``-31 <= shift <= 14`` (checked): the source asserts shift < 8 only in debug
    builds; the release arithmetic is well defined while 15 - shift >= 1, and the wheels run it so.
    """
    x = _i64(x)
    m = _i64(m)
    s = _i64(shift)
    if s.size and (s.min() < -31 or s.max() > 14):
        raise ValueError("multiply_by_quantized_multiplier_int64: shift must be in [-31, 14]")
    mr = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)
    total = 15 - s
    r = (x * mr + (np.int64(1) << (total - 1))) >> total
    return wrap32(r)


def multiply_by_quantized_multiplier_int64_ok(shift, max_abs_acc: float) -> bool:
    """Every shift in the range of :func:`multiply_by_quantized_multiplier_int64` and no int64 overflow of
    ``x * Mr`` (``Mr < 2^15``) for ``|x| <= max_abs_acc``."""
    s = np.asarray(shift, dtype=np.int64)
    if s.size and (s.min() < -31 or s.max() > 14):
        return False
    return max_abs_acc * 2.0**15 < 2.0**62


# ------------------------------------------------------------------------------------------------
# Requantization (MBQM + zero point + clamp), int64 and provably exact float64 paths
# ------------------------------------------------------------------------------------------------
#
# Measured (numpy 2.4, x86-64 container, 2 vCPUs shared with other jobs; best of 30 runs) on 1e6
# accumulators of shape (15625, 64), per-channel M/shift over 64 channels, scalar zp, clamp to int8:
#   int64 path, int64 accumulators, out=int8 buffer:      ~3.0 ns/element  (int64 result: ~2.8)
#   float64 path (fused), float64 accumulators, out=int8: ~2.7 ns/element
#   float64 path (two-stage, some rs > 22), out=int8:     ~3.2 ns/element
#   "auto" on float64 accumulators (computes max|acc|):   ~2.9 ns/element
#   int64 path on float64 accumulators (astype first):    ~9.3 ns/element (the cast allocates)
#   multiply_by_quantized_multiplier alone (int64):       ~2.2 ns/element
# The float64 path is no faster than the int64 path on int64 data; it pays off when the accumulators
# already are float64 (float64 GEMM), where it avoids the cast.


def _shift_parts(shift):
    s = _i64(shift)
    return np.maximum(s, 0), np.maximum(-s, 0)


def requantize_float64_ok(m, shift, max_abs_acc) -> bool:
    """Prove that the float64 formulation used by :func:`requantize` equals the integer
    ``MultiplyByQuantizedMultiplier`` (tflite/kernels/internal/common.cc, double rounding) for every
    integer accumulator ``|acc| <= max_abs_acc`` and every ``(M, shift)`` channel given.

    Float64 formulation (``ls = max(shift, 0)``, ``rs = max(-shift, 0)``, ``h = 2^(rs-1)``)::

        t = acc * (M * 2^(ls-31))              # exact product, a multiple of 2^-31
        y = floor(t + 1/2)                     # = SRDHM(acc << ls, M)
        r = floor((y + h - [y < 0]) * 2^-rs)   # = RDBPOT(y, rs)   (r = y when rs == 0)

    Every step is exact in float64 when

    * ``A * 2^ls <= INT32_MAX`` (the left shift does not wrap, so SRDHM's saturation case
      ``INT32_MIN * INT32_MIN`` cannot occur either), and
    * ``A * 2^ls * |M| + 2^30 <= 2^53`` (``t`` and ``t + 1/2`` are multiples of ``2^-31`` whose
      numerators fit in 53 bits; then ``|y| < 2^22``, so ``y + h - 1`` is an exact integer, and the
      power-of-two scaling and ``floor`` are exact),
    * ``0 <= ls, rs <= 31``.

    When additionally ``A*2^ls*|M| + (h + 1 + |zp|*2^rs) * 2^31 <= 2^53`` (checked inside
    :func:`requantize`), both floors are fused into ``floor((t + h + 1/2 - [t < -1/2] + zp*2^rs) * 2^-rs)``
    (floors nest), which saves two passes.
    """
    a = float(max_abs_acc)
    if not math.isfinite(a) or a < 0:
        return False
    a_int = int(math.ceil(a))
    if a_int > INT32_MAX:
        return False
    ls, rs = _shift_parts(shift)
    m = _i64(m)
    if ls.size and (ls.max() > 31 or rs.max() > 31):
        return False
    al = np.int64(a_int) << ls
    if np.any(al > INT32_MAX):
        return False
    prod = al * np.abs(m)  # < 2^62, no overflow
    return bool(np.all(prod + (1 << 30) <= _TWO53))


def _requantize_int64(acc, m, shift, zp, qmin, qmax, out):
    x = _i64(acc)
    ls, rs = _shift_parts(shift)
    if np.any(ls > 0):
        x = wrap32(np.left_shift(x, ls))
    zp = _i64(zp)
    # Fold the zero point into the rounding constant when that cannot overflow int64:
    # |x*M| <= 2^62, h*2^31 <= 2^61, and |zp| * 2^(31+rs) < 2^60.
    fold = bool(np.all(rs <= 29) and np.all(np.abs(zp) < (np.int64(1) << (29 - np.minimum(rs, 29)))))
    p = _mbqm_core(x, _i64(m), rs, extra=zp if fold else None)
    if not fold:
        p += zp
    r = np.clip(p, qmin, qmax, out=p if out is None else out, casting="unsafe")
    return _unwrap0d(r) if out is None else r


def _requantize_float64(acc, m, shift, zp, qmin, qmax, out, max_abs_acc):
    """Float64 path; exact under requantize_float64_ok (see there for the derivation)."""
    ls, rs = _shift_parts(shift)
    m = _i64(m)
    zp = _i64(zp)
    pos = rs > 0
    mf = m.astype(np.float64) * np.ldexp(1.0, (ls - 31).astype(np.int32))
    half = np.where(pos, np.ldexp(1.0, (np.maximum(rs, 1) - 1).astype(np.int32)), 0.0)  # h
    inv = np.ldexp(1.0, (-rs).astype(np.int32))
    a = np.int64(math.ceil(max_abs_acc)) << ls  # <= INT32_MAX, proven by the caller
    zr = np.minimum(np.minimum(np.abs(zp), 1 << 23) << rs, 1 << 23)  # |zp|*2^rs, capped: no overflow
    h_int = np.where(pos, np.int64(1) << np.maximum(rs - 1, 0), 0)
    fused = bool(np.all(zr < (1 << 23)) and np.all(a * np.abs(m) + ((h_int + zr + 1) << 31) <= _TWO53))
    t = np.asarray(np.multiply(np.asarray(acc, dtype=np.float64), mf))
    if fused:
        c = half + 0.5 + zp.astype(np.float64) * np.ldexp(1.0, rs.astype(np.int32))
        neg = t < -0.5
    else:
        t += 0.5
        np.floor(t, out=t)  # y = SRDHM result, |y| < 2^22
        c = half
        neg = t < 0
    if not np.all(pos):
        neg &= pos
    t += c
    np.subtract(t, neg, out=t)
    t *= inv
    if not fused:
        np.floor(t, out=t)
        t += zp
    np.clip(t, qmin, qmax, out=t)  # floor(clip(v)) == clip(floor(v)) for integer bounds
    if out is None:
        return _unwrap0d(np.floor(t).astype(np.int64))
    np.floor(t, out=out, casting="unsafe")
    return out


def requantize(acc, m, shift, zp, qmin, qmax, out=None, *, method="auto", max_abs_acc=None):
    """``clamp(MultiplyByQuantizedMultiplier(acc, M, shift) + zp, qmin, qmax)``: the requantization
    step of the integer reference kernels (e.g. tflite/kernels/internal/reference/integer_ops/conv.h,
    reference/requantize.h), with MBQM from tflite/kernels/internal/common.cc (double rounding).

    ``acc`` must hold int32-range integers (int dtype, or float64 holding exact integers, as produced
    by a float64 GEMM). ``M``/``shift``/``zp`` broadcast against ``acc`` (per-channel arrays along the
    last axis need shape ``(C,)``; other axes need an explicit reshape).

    ``method``:

    * ``"auto"`` (default): int64 path, except that float64 accumulators use the float64 path when
      :func:`requantize_float64_ok` proves it exact for ``max_abs_acc`` (computed from ``acc`` when
      not given);
    * ``"int64"``: always the exact integer path (float accumulators are cast to int64 first);
    * ``"float64"``: the float64 path; raises ``ValueError`` unless it is proven exact.

    ``out``: optional integer array (any integer dtype, e.g. the int8 output buffer) receiving the
    clamped result; otherwise an int64 array is returned. Both paths give identical results whenever
    the float64 path is allowed.
    """
    if method not in ("auto", "int64", "float64"):
        raise ValueError(f"requantize: unknown method {method!r}")
    acc = np.asarray(acc)
    use_float = False
    if method != "int64" and (acc.dtype.kind == "f" or method == "float64"):
        if max_abs_acc is None:
            max_abs_acc = max(abs(float(acc.max())), abs(float(acc.min()))) if acc.size else 0.0
        use_float = requantize_float64_ok(m, shift, max_abs_acc)
        if method == "float64" and not use_float:
            raise ValueError("requantize: float64 path not provably exact for these multipliers/bound")
    if use_float:
        return _requantize_float64(acc, m, shift, zp, qmin, qmax, out, max_abs_acc)
    if acc.dtype.kind == "f":
        acc = acc.astype(np.int64)
    return _requantize_int64(acc, m, shift, zp, qmin, qmax, out)
