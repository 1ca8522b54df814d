"""Exact pure-Python references for the quant tests.

Integer primitives are literal transcriptions of the C++ (gemmlowp fixedpoint.h, TFLite common.cc /
quantization_util.cc) on Python ints, with C truncating division where the source divides. Float
arithmetic is emulated exactly with ``fractions.Fraction`` plus correct rounding to binary32 /
binary64 (``to_f32`` / ``to_f64``), independent of numpy's float kernels.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


# ---------------------------------------------------------------------------------------------- ints
def c_tdiv(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def wrap(v: int, bits: int) -> int:
    half = 1 << (bits - 1)
    return ((v + half) % (1 << bits)) - half


def wrap32(v: int) -> int:
    return wrap(v, 32)


def srdhm(a: int, b: int) -> int:
    """gemmlowp SaturatingRoundingDoublingHighMul(int32, int32), literally."""
    overflow = a == b == INT32_MIN
    ab_64 = a * b
    nudge = (1 << 30) if ab_64 >= 0 else (1 - (1 << 30))
    ab_x2_high32 = wrap32(c_tdiv(ab_64 + nudge, 1 << 31))
    return INT32_MAX if overflow else ab_x2_high32


def rdbpot(x: int, exponent: int) -> int:
    """gemmlowp RoundingDivideByPOT(int32, int), literally (Python & and >> act on two's complement)."""
    assert 0 <= exponent <= 31
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def mbqm(x: int, m: int, shift: int) -> int:
    """TFLite common.cc MultiplyByQuantizedMultiplier(int32, int32, int), double-rounding build."""
    left_shift = shift if shift > 0 else 0
    right_shift = 0 if shift > 0 else -shift
    return rdbpot(srdhm(wrap32(x * (1 << left_shift)), m), right_shift)


def mbqm64(x: int, m: int, shift: int) -> int:
    """TFLite common.cc MultiplyByQuantizedMultiplier(int64, int32, int)."""
    reduced = ((m + (1 << 15)) >> 16) if m < 0x7FFF0000 else 0x7FFF
    total_shift = 15 - shift
    r = (x * reduced + (1 << (total_shift - 1))) >> total_shift
    return wrap32(r)


def downscale16(m: int) -> int:
    if m >= INT32_MAX - (1 << 15):
        return 32767
    return (m + (1 << 15)) >> 16


# ----------------------------------------------------------------------------------------- rationals
def round_half_away(fr: Fraction) -> int:
    a = abs(fr)
    n = math.floor(a)
    if a - n >= Fraction(1, 2):
        n += 1
    return n if fr >= 0 else -n


def round_half_up(fr: Fraction) -> int:
    return math.floor(fr + Fraction(1, 2))


def _to_binary(fr: Fraction, mant_bits: int, emin: int, emax: int) -> Fraction:
    """Round a rational to the nearest binary float (ties to even); returns the rounded rational.
    Overflow returns +-inf as a float."""
    if fr == 0:
        return Fraction(0)
    sign = -1 if fr < 0 else 1
    a = abs(fr)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    assert Fraction(2) ** e <= a < Fraction(2) ** (e + 1)
    e = max(e, emin)  # subnormals share the minimum exponent
    scale = Fraction(2) ** (mant_bits - e)
    m = a * scale
    n = math.floor(m)
    rem = m - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    r = n / scale
    if r >= Fraction(2) ** (emax + 1):
        return sign * math.inf  # type: ignore[return-value]
    return sign * r


def to_f32(fr) -> np.float32:
    """Correctly rounded binary32 value of an exact rational (or float)."""
    fr = Fraction(fr)
    r = _to_binary(fr, 23, -126, 127)
    if isinstance(r, float):
        return np.float32(r)
    return np.float32(float(r))  # exact: r is representable in binary32


def to_f64(fr) -> float:
    return float(Fraction(fr))  # Fraction -> float is correctly rounded


def c_round_f(x) -> Fraction:
    """std::round / roundf on an exact float value, as an exact rational (keeps the dtype's value)."""
    return Fraction(round_half_away(Fraction(float(x))))


def trunc_to_int32_x86(x: float) -> int:
    if math.isnan(x) or not (-(2.0**31) <= x < 2.0**31):
        return INT32_MIN
    return int(x)  # int() truncates toward zero
