"""gemmlowp's ``FixedPoint`` helpers and TFLite's fixed-point math built on them (int32 and int16 forms).

The transcendental building blocks of LiteRT's integer kernels (SOFTMAX, LOG_SOFTMAX, LOGISTIC/TANH int16, DIV,
HARD_SWISH, RSQRT, L2_NORMALIZATION, the integer LSTMs), written once here and imported by the kernels.

Conventions as :mod:`litert_py.quant.fixedpoint`: int64 arrays holding int32 (or int16) raw values; a "Qm"
value has ``m`` integer bits. The ``*_int`` forms take and return Python ints (per-scalar prepare loops, where a
numpy call costs more than the arithmetic).

Sources matched: gemmlowp fixedpoint/fixedpoint.h (SaturatingRoundingMultiplyByPOT, exp_on_negative_values,
exp_on_interval_between_negative_one_quarter_and_0_excl, one_over_one_plus_x_for_x_in_0_1, logistic, tanh,
the int16 overloads), tflite/kernels/internal/common.h (GetReciprocal, CountLeadingZeros,
CountLeadingSignBits, GetInvSqrtQuantizedMultiplierExp), reference/hard_swish.h (SaturatingLeftShift,
SaturatingDoublingHighMul), quantization_util.cc (CheckedLog2).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..libm import libm_float
from .fixedpoint import INT32_MAX, INT32_MIN, round_away, trunc_to_int32, wrap32
from .fixedpoint import rounding_divide_by_pot as rdbpot
from .fixedpoint import saturating_rounding_doubling_high_mul as srdhm

__all__ = [
    "checked_log2",
    "clz32",
    "count_leading_sign_bits",
    "sat_pot",
    "sat_shl_param",
    "exp_on_negative_values",
    "one_over_one_plus_x_for_x_in_0_1",
    "get_reciprocal",
    "softmax_reciprocal",
    "SoftmaxRowReciprocals",
    "rounding_divide_by_pot_x86",
    "srdhm_int",
    "rdbpot_int",
    "sat_pot_int",
    "wrap32_int",
    "get_inv_sqrt_quantized_multiplier_exp",
    "inv_sqrt_int32",
    "inv_sqrt_multiplier_exp",
    "wrap16",
    "srdhm16",
    "sdhm16",
    "rdbpot16",
    "sat_shl16",
    "sat_pot16",
    "exp_on_negative_values16",
    "logistic16_table",
    "tanh16_table",
]

_F32 = np.float32
_logf = libm_float("logf")


def checked_log2(x: float) -> tuple[bool, int]:
    """quantization_util.cc ``CheckedLog2`` in float32 with the C library's ``logf`` (``std::log(float)``):
    ``(|frac(log2 x)| < 1e-3, static_cast<int>(round(log2 x)))``. ``x <= 0`` or non-finite: ``(False, ...)``.

    numpy's float32 ``log`` differs from glibc's by an ulp now and then, which can move ``frac`` across 1e-3;
    this is the one copy, with libm (tests/quant/test_gemmlowp.py checks it against the definition)."""
    with np.errstate(all="ignore"):
        lg = _F32(_logf(_F32(x)) * (_F32(1) / _logf(_F32(2))))
        r = round_away(lg)
        frac = _F32(lg - r)
    return bool(abs(frac) < _F32(1e-3)), int(trunc_to_int32(r))


# ------------------------------------------------------------------------------------------------
# int32 (int64 arrays holding int32 values)
# ------------------------------------------------------------------------------------------------


def clz32(v):
    """CountLeadingZeros of uint32 values (32 for 0): 32 minus the bit length (exact through float64)."""
    return 32 - np.frexp(np.asarray(v).astype(np.float64))[1].astype(np.int64)


def count_leading_sign_bits(x):
    """CountLeadingSignBits(int32): 31 for 0 and -1, 0 for INT32_MIN."""
    return clz32(x ^ (x >> 31)) - 1


def sat_pot(x, e: int):
    """gemmlowp ``SaturatingRoundingMultiplyByPOT<e>`` on int32 raw values (any sign of ``e``)."""
    if e > 0:
        thr = (1 << (31 - e)) - 1
        return np.where(x > thr, INT32_MAX, np.where(x < -thr, INT32_MIN, np.left_shift(x, e)))
    return rdbpot(x, -e) if e < 0 else x


def sat_shl_param(x, e):
    """``SaturatingRoundingMultiplyByPOTParam`` for per-element exponents ``e >= 0``."""
    thr = np.right_shift(INT32_MAX, e)
    return np.where(x > thr, INT32_MAX, np.where(x < -thr, INT32_MIN, np.left_shift(x, e)))


_EXP_BARREL = (
    (-2, 1672461947),
    (-1, 1302514674),
    (0, 790015084),
    (1, 290630308),
    (2, 39332535),
    (3, 720401),
    (4, 242),
)  # exp(-2^k) in Q0.31


def exp_on_negative_values(a, integer_bits: int):
    """gemmlowp ``exp_on_negative_values`` (int32, Q``integer_bits`` in, Q0.31 out) for ``a <= 0``."""
    fb = 31 - integer_bits
    quarter = 1 << (fb - 2)
    a_mod = wrap32((a & (quarter - 1)) - quarter)  # a mod 1/4, minus 1/4: in [-1/4, 0)
    # exp_on_interval_between_negative_one_quarter_and_0_excl(Rescale<0>(a_mod)): Taylor around -1/8
    x = wrap32(sat_pot(a_mod, integer_bits) + (1 << 28))
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    t = rdbpot(wrap32(srdhm(wrap32(rdbpot(x4, 2) + x3), 715827883) + x2), 1)
    result = wrap32(1895147668 + srdhm(1895147668, wrap32(x + t)))
    remainder = wrap32(a_mod - a)
    for k, c in _EXP_BARREL:
        if integer_bits > k:
            result = np.where(remainder & (1 << (fb + k)), srdhm(result, c), result)
    if integer_bits > 5:
        result = np.where(a < -(1 << (36 - integer_bits)), 0, result)
    return np.where(a == 0, INT32_MAX, result)


def one_over_one_plus_x_for_x_in_0_1(a):
    """gemmlowp ``one_over_one_plus_x_for_x_in_0_1`` (int32, Q0.31 in and out; Newton-Raphson, 3 steps) for
    ``0 <= a < 2^31``, the range GetReciprocal gives it. There ``RoundingHalfSum(a, 1)`` is ``(a + 2^31) >> 1``,
    no SRDHM operand is INT32_MIN and the Newton corrections stay below 2^25 (the error starts under 1/17 and
    squares), so only the final Rescale<0> can saturate (at ``a == 0``). Works on Python ints and int64 arrays
    (tests/quant/test_gemmlowp.py checks it against the step-by-step saturating form)."""
    x = _newton_reciprocal((a + (1 << 31)) >> 1)
    return min(x, INT32_MAX) if isinstance(x, int) else np.minimum(x, INT32_MAX)


def _newton_reciprocal(d):
    """one_over_one_plus_x_for_x_in_0_1's Newton-Raphson on its half denominator ``d`` (Q0.31, in [2^30, 2^31)):
    the Q2.29 estimate ``48/17 - 32/17 * d`` refined three times (each ``x += 4 * SRDHM(x, 2^29 - SRDHM(d, x))``),
    then doubled (ExactMulByPot<-1> then Rescale<0>), before Rescale's saturation, which the callers apply."""
    x = 1515870810 + ((d * -1010580540 + (1 << 30)) >> 31)
    for _ in range(3):
        x = x + (((x * ((1 << 29) - ((d * x + (1 << 30)) >> 31)) + (1 << 30)) >> 31) << 2)
    return x << 1


def get_reciprocal(x, x_integer_digits: int):
    """common.h ``GetReciprocal``: ``(1 / x as a Q0.31 scale, num_bits_over_unit)`` for int32 ``x > 0`` (a Python
    int or an int64 array)."""
    u = x & 0xFFFFFFFF
    if isinstance(u, int):
        headroom_plus_one = 32 - u.bit_length()  # CountLeadingZeros(uint32)
    else:
        headroom_plus_one = clz32(u)
    shifted_minus_one = ((u << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31)  # in [0, 2^31): bit 31 was set
    return one_over_one_plus_x_for_x_in_0_1(shifted_minus_one), x_integer_digits - headroom_plus_one


def softmax_reciprocal(total, out_bits: int):
    """SOFTMAX's (8-bit input) reciprocal of a row's int32 ``total > 0`` (the sum of its Q12.19 terms) with its output
    rounding, on a Python int or an int64 array of totals (the one definition; SoftmaxRowReciprocals is its
    prepared-buffer plan): ``(scale, addend, shift)`` such that every output of a term ``e >= 0`` is ``(e * scale
    + addend) >> shift``, reference/softmax.h's ``RDBPOT(SRDHM(e, scale), exponent)`` (``scale, bits_over_unit =
    GetReciprocal(total, 12)``, ``exponent = bits_over_unit + 31 - out_bits``, out_bits 8 or 16), both roundings
    fused into one shift (exact for these non-negative values).

    GetReciprocal unrolled: with ``u = total & 0xFFFFFFFF`` of bit length b (CountLeadingZeros ``32 - b``), the half
    denominator of ``one_over_one_plus_x_for_x_in_0_1(shifted_minus_one)``, ``(shifted_minus_one + 2^31) >> 1``,
    is ``(u << (32 - b)) >> 1`` (``u << (32 - b)`` has bit 31 set and no higher one: the mask is a no-op), whose
    Newton steps are ``_newton_reciprocal``'s, as there. The exponent ``b + 11 - out_bits`` is clamped
    to [1, 32]: LiteRT CHECKs 0 <= exponent <= 31 (a row summing to 512 or more maximal values aborts); up to 32
    the fused shift still gives the rounded quotient (tests/quant/test_gemmlowp.py checks both against
    ``get_reciprocal`` and the unfused roundings). Python ints: no numpy call (one-row softmaxes; inside an
    invoke each call of cold code costs about a microsecond)."""
    u = total & 0xFFFFFFFF
    one = type(u) is int
    bits = u.bit_length() if one else 32 - clz32(u)
    r = _newton_reciprocal((u << (32 - bits)) >> 1)  # the half denominator (bits is 32 for a wrapped total)
    exponent = bits + 11 - out_bits  # 12 - CountLeadingZeros + 31 - out_bits
    if one:  # no min / max calls: ~0.7 us inside an invoke
        exponent = 1 if exponent < 1 else 32 if exponent > 32 else exponent
        return (r if r < INT32_MAX else INT32_MAX), (1 << 30) + (1 << (exponent + 30)), exponent + 31
    exponent = np.minimum(np.maximum(exponent, 1), 32)
    return np.minimum(r, INT32_MAX), (1 << 30) + np.left_shift(np.int64(1), exponent + 30), exponent + 31


def _i64(v: int) -> np.ndarray:
    """A 0-d int64 array: a bound plan's constant operand (about 0.25 us less per call than a Python int)."""
    return np.array(v, np.int64)


@dataclass(frozen=True, eq=False)
class SoftmaxRowReciprocals:
    """softmax_reciprocal of ``m`` row totals as numpy calls into buffers made once (``calls``: a bound plan's
    part, ops/bound_plan.py; ``__call__`` runs them): ``scale``, ``addend`` and ``shift`` (m,) such that every
    output of a term ``e >= 0`` of row ``i`` is ``(e * scale[i] + addend[i]) >> shift[i]``.

    Bound (checked by the caller at prepare): ``2^18 <= total <= TOTAL_MAX``, which every total of a row of 1 ..
    ROW_MAX terms meets (softmax.ROW_MAX: its int32 sum never wraps; its maximum's term is exactly 2^19). Then
    the total's bit length b is ``19 + bit_length(total >> 19)`` (19 for k = 0), so the per-row values that depend
    on b alone are read from tables indexed by ``k = total >> 19`` (0 .. 4095): ``2^(31 - b)`` (the half
    denominator ``d = total * 2^(31 - b)``), the shift ``exponent + 31`` (exponent clamped as softmax_reciprocal's)
    and the addend ``2^30 + 2^(shift - 1)``. The rest is softmax_reciprocal's arithmetic on the same integers, in
    34 calls without temporaries: the initial ``1515870810 + ((d * c + 2^30) >> 31)`` is one shift of ``d * c +
    2^30 + 1515870810 * 2^31``; each Newton step's ``2^29 - ((d * r + 2^30) >> 31)`` is ``(2^60 + 2^30 - 1 - d *
    r) >> 31`` (``-floor(y / N) = floor((N - 1 - y) / N)``); constants are 0-d int64 arrays. int64 throughout:
    the totals, d and r fit int32, but the products ``d * r`` and ``r * t`` reach 2^61 (and the caller's ``e *
    scale`` 2^62), and a call mixing int32 with int64 casts (slower than int64 alone at these sizes); no value
    reaches 2^63. tests/quant/test_gemmlowp.py checks every table entry's totals against softmax_reciprocal."""

    TOTAL_MAX = (1 << 31) - 1

    out_bits: int
    total: np.ndarray  # int64 (m,): the totals the calls read
    k: np.ndarray  # intp (m,): total >> 19
    d: np.ndarray  # int64 (m,): half denominators, Q0.31
    scale: np.ndarray  # int64 (m,): the reciprocal, Q2.29, then the Q0.31 scale
    t: np.ndarray  # int64 (m,): the Newton corrections
    addend: np.ndarray  # int64 (m,)
    shift: np.ndarray  # int64 (m,)

    @staticmethod
    def build(total: np.ndarray, out_bits: int) -> SoftmaxRowReciprocals:
        """The reciprocals of the int64 (m,) array ``total`` (read by each call: the caller writes it)."""
        if out_bits not in (8, 16):
            raise ValueError(f"out_bits must be 8 or 16, got {out_bits}")
        m = total.shape[0]
        return SoftmaxRowReciprocals(out_bits, total, np.empty(m, np.intp), *(np.empty(m, np.int64) for _ in range(5)))

    def calls(self) -> list:
        """The (function, args, kwargs) triples (ops/bound_plan.bound_plan's input) computing scale, addend and
        shift from ``total``."""
        d, r, t, k = self.d, self.scale, self.t, self.k
        pow2, addends, shifts = _reciprocal_tables(self.out_bits)
        calls = [
            (np.right_shift, (self.total, _i64(19)), {"out": k}),
            (np.take, (pow2, k), {"out": d, "mode": "clip"}),  # k is in 0 .. 4095: no clip acts
            (np.multiply, (d, self.total), {"out": d}),  # (u << headroom_plus_one) >> 1
            (np.take, (shifts, k), {"out": self.shift, "mode": "clip"}),
            (np.take, (addends, k), {"out": self.addend, "mode": "clip"}),
            (np.multiply, (d, _i64(-1010580540)), {"out": r}),
            (np.add, (r, _i64((1 << 30) + (1515870810 << 31))), {"out": r}),
            (np.right_shift, (r, _i64(31)), {"out": r}),  # 48/17 - 32/17 * d, Q2.29
        ]
        c60, c30, c31, c2 = _i64((1 << 60) + (1 << 30) - 1), _i64(1 << 30), _i64(31), _i64(2)
        for _ in range(3):
            calls += [
                (np.multiply, (d, r), {"out": t}),
                (np.subtract, (c60, t), {"out": t}),
                (np.right_shift, (t, c31), {"out": t}),  # one_minus = 2^29 - SRDHM(d, r)
                (np.multiply, (t, r), {"out": t}),
                (np.add, (t, c30), {"out": t}),
                (np.right_shift, (t, c31), {"out": t}),
                (np.left_shift, (t, c2), {"out": t}),
                (np.add, (r, t), {"out": r}),
            ]
        # np.fmin, not np.minimum: the same on integers, and its out may be passed by position (bound_plan)
        calls += [(np.left_shift, (r, _i64(1)), {"out": r}), (np.fmin, (r, _i64(INT32_MAX)), {"out": r})]
        return calls

    def __call__(self) -> tuple:
        """Runs the calls on the current ``total``: ``(scale, addend, shift)`` (the buffers)."""
        for f, a, kw in self.calls():
            f(*a, **kw)
        return self.scale, self.addend, self.shift


@functools.lru_cache(maxsize=2)
def _reciprocal_tables(out_bits: int) -> tuple:
    """SoftmaxRowReciprocals' tables by ``k = total >> 19`` (0 .. 4095): ``2^(31 - b)``, the addend and the shift,
    for the totals' bit length ``b = 19 + bit_length(k)`` (totals of at least 2^18)."""
    k = np.arange(1 << 12)
    bits = 19 + np.array([v.bit_length() for v in k.tolist()])
    exponent = np.minimum(np.maximum(bits + 11 - out_bits, 1), 32)
    pow2 = np.left_shift(1, np.maximum(31 - bits, 0)).astype(np.int64)
    tables = pow2, (1 << 30) + np.left_shift(np.int64(1), exponent + 30), (exponent + 31).astype(np.int64)
    for a in tables:
        a.flags.writeable = False
    return tables


def rounding_divide_by_pot_x86(x, e):
    """gemmlowp RoundingDivideByPOT(int32 x, e) as the x86-64 build computes it for *any* int e.

    DIV reaches exponents outside [0, 31] (gemmlowp only asserts the range, and asserts are off): then
    ``mask = int32((1ll << e) - 1)`` keeps the low 32 bits of a 64-bit shift by ``e & 63`` and ``x >> e`` shifts
    by ``e & 31`` (x86 masks shift counts). For 0 <= e <= 31 this is the ordinary rounding shift.
    """
    with np.errstate(over="ignore"):  # 1 << 63 wraps to INT64_MIN, minus 1 to INT64_MAX: low 32 bits all ones
        mask = wrap32((np.int64(1) << (e & 63)) - 1)
    threshold = (mask >> 1) + (x < 0)
    return (x >> (e & 31)) + ((x & mask) > threshold)


# Python-int forms (prepare-time loops over a few scalars)


def srdhm_int(a: int, b: int) -> int:
    """SaturatingRoundingDoublingHighMul on Python ints."""
    return INT32_MAX if a == b == INT32_MIN else (a * b + (1 << 30)) >> 31


def rdbpot_int(x: int, e: int) -> int:
    """RoundingDivideByPOT on Python ints (0 <= e <= 31)."""
    mask = (1 << e) - 1
    return (x >> e) + ((x & mask) > (mask >> 1) + (x < 0))


def sat_pot_int(x: int, e: int) -> int:
    """SaturatingRoundingMultiplyByPOT<e> for e > 0 on a Python int."""
    thr = (1 << (31 - e)) - 1
    return INT32_MAX if x > thr else INT32_MIN if x < -thr else x << e


def wrap32_int(v: int) -> int:
    """int32 two's-complement wrap of a Python int (numpy's wrap32 costs ~1.5 us a scalar call)."""
    return ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def get_inv_sqrt_quantized_multiplier_exp(x: int, reverse_shift: int = -1) -> tuple[int, int]:
    """``GetInvSqrtQuantizedMultiplierExp`` of tflite/kernels/internal/common.h: 1/sqrt(x) as (M, shift) by a
    fixed-point Newton-Raphson iteration in Q3.28 (5 steps from 1.0)."""
    if x <= 1:
        return INT32_MAX, 0
    shift = 11
    while x >= 1 << 29:
        x //= 4
        shift += 1
    pairs = (32 - x.bit_length() - 1) // 2 - 1  # CountLeadingZeros(x) - 1, in bit pairs, minus one
    shift -= pairs
    x <<= 2 * pairs
    half_input = rdbpot_int(x >> 1, 1)
    three_halves = (1 << 28) + (1 << 27)
    y = 1 << 28  # F3 one
    for _ in range(5):
        y3 = sat_pot_int(srdhm_int(srdhm_int(y, y), y), 6)
        y = sat_pot_int(wrap32_int(srdhm_int(three_halves, y) - srdhm_int(half_input, y3)), 3)
    y = srdhm_int(y, 1518500250)  # times sqrt(2)/2
    if shift < 0:
        y = wrap32_int(y << -shift)
        shift = 0
    return y, shift * reverse_shift


_HALF31 = 1 << 30


def inv_sqrt_int32(x: int) -> tuple:
    """``get_inv_sqrt_quantized_multiplier_exp(x, -1)`` for 0 <= x < 2^31 with its helpers inlined and unrolled
    (the integer LSTM's layer norm, ops/recurrent/lstm_integer_ln.py, whose module docstring proves its range:
    0 < M < 2^31, -12 <= e <= 0; tests/ops/recurrent/test_lstm_integer_ln.py compares the two): every LSTM step
    computes new variances, and the per-row inverse square root must cost less than the numpy calls around it (not
    cached: a new sequence's variances rarely repeat, and a cache miss costs more than the call).
    Over every normalized input (that docstring) none of the iteration's saturations and wraps fires, so
    they are left out: SRDHM is ``(a b + 2^30) >> 31``, the multiplications by 2^6 and 2^3 are shifts. The first
    iteration (y = 2^28, y^3 = 2^28) in closed form: ``(3/2 2^28 2^28 + 2^30) >> 31 = 50331648``,
    ``(half 2^28 + 2^30) >> 31 = (half + 4) >> 3``; in the others the constants' powers of two taken out of the
    shifts: ``(3 2^27 y + 2^30) >> 31 = (3 y + 8) >> 4``, ``(half z 2^6 + 2^30) >> 31 = (half z + 2^24) >> 25``."""
    if x <= 1:
        return INT32_MAX, 0
    shift = 11
    b = x.bit_length()
    if b >= 30:  # while x >= 2^29: x /= 4
        q = (b - 28) >> 1
        x >>= 2 * q
        shift += q
    pairs = (31 - x.bit_length()) // 2 - 1
    shift -= pairs
    x <<= 2 * pairs
    h = x >> 1
    half = (h >> 1) + (h & 1)  # RoundingDivideByPOT(h, 1), h >= 0
    y = (50331648 - ((half + 4) >> 3)) << 3
    y = (((3 * y + 8) >> 4) - ((half * ((((y * y + _HALF31) >> 31) * y + _HALF31) >> 31) + 16777216) >> 25)) << 3
    y = (((3 * y + 8) >> 4) - ((half * ((((y * y + _HALF31) >> 31) * y + _HALF31) >> 31) + 16777216) >> 25)) << 3
    y = (((3 * y + 8) >> 4) - ((half * ((((y * y + _HALF31) >> 31) * y + _HALF31) >> 31) + 16777216) >> 25)) << 3
    y = (((3 * y + 8) >> 4) - ((half * ((((y * y + _HALF31) >> 31) * y + _HALF31) >> 31) + 16777216) >> 25)) << 3
    y = (y * 1518500250 + _HALF31) >> 31
    if shift < 0:
        return y << -shift, 0  # y < 2^29 / sqrt 2, -shift <= 2: no wrap
    return y, -shift


def inv_sqrt_multiplier_exp(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``GetInvSqrtQuantizedMultiplierExp(x, kReverseShift = -1)`` over an int64 array of non-negative int32
    values: ``(M, left_shift)`` arrays (``get_inv_sqrt_quantized_multiplier_exp`` vectorized)."""
    x = np.asarray(x, np.int64)
    small = x <= 1
    x = np.where(small, 2, x)
    bits = np.frexp(x.astype(np.float64))[1].astype(np.int64)  # bit length
    quarters = np.maximum(0, (bits - 28) // 2)  # while x >= 2^29: x /= 4
    x = x >> (2 * quarters)
    shift = 11 + quarters
    bits = np.frexp(x.astype(np.float64))[1].astype(np.int64)
    pairs = (32 - bits - 1) // 2 - 1
    shift = shift - pairs
    x = x << (2 * pairs)
    half_input = rdbpot(x >> 1, 1)
    y = np.full(x.shape, 1 << 28, np.int64)
    for _ in range(5):
        y3 = sat_pot(srdhm(srdhm(y, y), y), 6)
        y = sat_pot(wrap32(srdhm((1 << 28) + (1 << 27), y) - srdhm(half_input, y3)), 3)
    y = srdhm(y, 1518500250)
    neg = shift < 0
    y = np.where(neg, wrap32(y << np.where(neg, -shift, 0)), y)
    shift = np.where(neg, 0, shift)
    return np.where(small, INT32_MAX, y), np.where(small, 0, -shift)


# ------------------------------------------------------------------------------------------------
# int16 (int64 arrays holding int16 values)
# ------------------------------------------------------------------------------------------------


def wrap16(v):
    """int16 two's-complement wrap."""
    return ((v + 32768) & 0xFFFF) - 32768


def srdhm16(a, b):
    """gemmlowp SaturatingRoundingDoublingHighMul<int16>: ``(a*b + 2^14) >> 15``, ties up; (-2^15)^2 -> 2^15-1."""
    return np.where((a == -32768) & (b == -32768), 32767, (a * b + (1 << 14)) >> 15)


def sdhm16(a, b):
    """reference/hard_swish.h SaturatingDoublingHighMul: ``a*b / 2^15`` truncated toward zero."""
    p = a * b
    return np.where((a == -32768) & (b == -32768), 32767, wrap16(np.where(p >= 0, p >> 15, -((-p) >> 15))))


def rdbpot16(x, e: int):
    """gemmlowp RoundingDivideByPOT<int16_t>(x, e), 0 <= e <= 31. For ``e >= 16`` the int16 ``mask``
    ``(1 << e) - 1`` wraps to -1, which turns the result into 1 for ``x >= 0`` and -1 for ``x < 0`` (reproduced,
    not fixed)."""
    if e >= 16:
        return np.where(x >= 0, 1, -1)
    return rdbpot(x, e)


def sat_shl16(x, amount: int):
    """reference/hard_swish.h SaturatingLeftShift: ``x * 2^amount`` clamped to int16."""
    return np.clip(np.left_shift(x, min(amount, 17)), -32768, 32767)  # beyond 17 every nonzero x saturates


def sat_pot16(x, e: int):
    """gemmlowp SaturatingRoundingMultiplyByPOT<e> on int16 raw values (any sign of ``e``)."""
    if e > 0:
        return np.clip(x << e, -32768, 32767)
    return x if e == 0 else rdbpot(x, -e)


def _c16(c32: int) -> int:
    """A gemmlowp Q0.31-style int32 constant as the int16 FixedPoint constant: RDBPOT(c, 16)."""
    return int(rdbpot(np.int64(c32), 16))


def _exp_on_interval16(a):
    c, third = _c16(1895147668), _c16(715827883)
    x = wrap16(a + (1 << 12))
    x2 = srdhm16(x, x)
    x3 = srdhm16(x2, x)
    x4 = srdhm16(x2, x2)
    inner = wrap16(srdhm16(wrap16(sat_pot16(x4, -2) + x3), third) + x2)
    return np.clip(c + srdhm16(c, wrap16(x + sat_pot16(inner, -1))), -32768, 32767)


def exp_on_negative_values16(a, integer_bits: int):
    """gemmlowp ``exp_on_negative_values`` of ``FixedPoint<int16, integer_bits>`` (Q0.15 out) for ``a <= 0``."""
    fb = 15 - integer_bits
    q = 1 << (fb - 2)
    r = wrap16((a & (q - 1)) - q)
    res = _exp_on_interval16(sat_pot16(r, integer_bits))
    rem = wrap16(r - a)
    for k, ck in _EXP_BARREL:
        if integer_bits > k:
            res = np.where((rem & (1 << (fb + k))) != 0, srdhm16(res, _c16(ck)), res)
    if integer_bits > 5:
        res = np.where(a < _c16(-(1 << (36 - integer_bits))), 0, res)
    return np.where(a == 0, 32767, res)


def _one_over_one_plus_x16(a):
    """gemmlowp ``one_over_one_plus_x_for_x_in_0_1`` of int16 FixedPoint (Q2.13 Newton-Raphson, 3 steps)."""
    hd = a + 32767
    hd = np.where(hd >= 0, (hd + 1) // 2, -((1 - hd) // 2))  # RoundingHalfSum(a, One): (s + sign) / 2, truncated
    x = wrap16(_c16(1515870810) + srdhm16(hd, _c16(-1010580540)))
    for _ in range(3):
        x = wrap16(x + sat_pot16(srdhm16(x, wrap16((1 << 13) - srdhm16(hd, x))), 2))
    return x


@functools.cache
def logistic16_table(integer_bits: int) -> np.ndarray:
    """gemmlowp ``logistic`` of FixedPoint<int16, integer_bits> for every raw input (index raw + 32768), Q0.15."""
    a = np.arange(-32768, 32768, dtype=np.int64)
    pos = a > 0
    e = exp_on_negative_values16(wrap16(-np.where(pos, a, wrap16(-a))), integer_bits)
    rp = sat_pot16(_one_over_one_plus_x16(e), 1)
    return np.where(a == 0, 16384, np.where(pos, rp, wrap16(32767 - rp))).astype(np.int64)


@functools.cache
def tanh16_table(integer_bits: int) -> np.ndarray:
    """gemmlowp ``tanh`` of FixedPoint<int16, integer_bits> for every raw input (index raw + 32768), Q0.15 out."""
    a = np.arange(-32768, 32768, dtype=np.int64)
    neg = a < 0
    e = exp_on_negative_values16(np.where(neg, a, wrap16(-a)), integer_bits + 1)
    t = sat_pot16(wrap16(_one_over_one_plus_x16(e) - (1 << 13)), 2)
    return np.where(a == 0, 0, np.where(neg, wrap16(-t), t)).astype(np.int64)
