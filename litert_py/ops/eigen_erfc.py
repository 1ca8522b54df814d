"""Bit-exact numpy emulation of Eigen's float32 ``erfc`` as LiteRT's x86-64 wheel runs it (GELU, not approximate).

Where LiteRT uses it: reference/gelu.h ``Gelu<float>`` (the GELU kernel of the BUILTIN_REF and BUILTIN resolvers)
evaluates ``0.5 * x * (x * -M_SQRT1_2).erfc()`` as an Eigen array expression over a ``VectorX<float>::Map`` of the
tensor: ``scalar_erfc_op<float>``, i.e. ``generic_fast_erfc<float>::run`` (unsupported/Eigen/src/SpecialFunctions/
SpecialFunctionsImpl.h, since Eigen commit 0d366f65 of Nov 2024 "Vectorize erfc(x) for double and improve erfc(x)
for float"; unchanged in its float arithmetic up to 2026) on SSE packets of 4 floats, and on scalars for the
``n % 4`` trailing elements (eigen_math's module docstring: the wheel's packet traversal, no FMA).

``generic_fast_erfc<float>``, per element (clamp first, then both branches, then a select):

- ``x = min(max(a, -11), 11)``, ``x2 = x * x``; small branch ``1 + x * S(x2)``, S the degree-5 polynomial in
  Horner steps (``ppolevl``: ``acc * x2 + c``);
- large branch (taken where ``1 < x2``; the packet computes it when any lane needs it, the select makes the value
  lane-wise): ``x2_lo = twoprod_low(x, x, x2)`` (Dekker's product without FMA: Veltkamp splits by 4097, four
  products summed), ``e = pexp(-x2)``, ``z = e - e * x2_lo``, ``q2 = 1 / x2``, ``r = P(q2) / (x * Q(q2))`` (degrees
  3 and 4, Horner), ``z * r + (x < 0 ? 2 : 0)``;
- ``pexp`` is ``pexp_float`` (Eigen/src/Core/arch/Default/GenericPacketMathFunctions.h, the version of commit
  8ee6f847 / e7c799b7 of Nov 2024 "Speed up exp(x)"): ``m = floor(v log2e + 1/2)``, ``r = (m C1 + v) + m C2``
  (Cephes' two-part ln 2), a degree-6 polynomial ``(r + 1) + r2 ((r2 (r2 p6 + p4) + p2) + r (r2 p5 + p3))``, then
  ``y * 2^m`` (``pldexp_fast`` or, when a lane of the packet has |v| > 87, ``pldexp``: both the correctly rounded
  ``y * 2^m`` here) and 0 below -104. The scalar path (the tail) is the same function with ``std::exp``, i.e. the
  C library's ``expf`` (litert_py.libm), for ``pexp``.

Evidence (ai-edge-litert 2.3.0, x86-64 Linux wheel, GELU approximate=False): GELU through this emulation
(elu_gelu.GeluFloat) equal bit for bit, NaN payloads included, on all 2^32 float32 bit patterns (tensors of 2^22
values, whole packets, BUILTIN_REF), on 2^20 random values of magnitudes 1e-8..3e2 with the special values (NaN,
+-inf, +-0, subnormals, +-3e38) under BUILTIN_REF and BUILTIN_WITHOUT_DEFAULT_DELEGATES, and on every tensor length
1..40 (values whose ``expf`` and ``pexp`` results differ at the tail: the trailing ``n % 4`` take ``expf``; a
packet ``pexp`` there differs). tests/ops/test_gelu_float.py keeps the lengths, the special values and shapes.

Speed: one numpy call per float32 operation of the branches above, a few merged (``ErfcWork``'s docstring), on
buffers made at prepare: 74 calls (75 with a tail). GELU of (1, 32, 128) inside transformer_float's invokes:
~47 us, where the float64 Numerical Recipes erfc it replaces (30 calls, not bit-exact) took ~42-43 us (one-op
model, invoke alone: ~44 us, was ~39-41). Calls with a 0-d coefficient cost about half of those with two arrays at
this size, so the Horner steps keep 0-d coefficients.
"""

from __future__ import annotations

import numpy as np

from ..libm import libm_float
from ..quant.requantizer import clip_ufunc
from .eigen_math import PACKET_SIZE, check_out, exp_range_reduction, horner_steps

__all__ = ["ErfcWork", "eigen_erfc"]

F32 = np.float32


def _c(v: float) -> np.ndarray:
    return np.array(v, F32)  # 0-d arrays: a numpy scalar operand costs more per ufunc call


_CLAMP, _NEG_CLAMP, _ZERO, _ONE, _HALF, _TWO = _c(11.0), _c(-11.0), _c(0.0), _c(1.0), _c(0.5), _c(2.0)
# generic_fast_erfc<float>: S (small branch, in x2), P and Q (large branch, in 1/x2), highest degree first.
_S = tuple(
    _c(v)
    for v in (
        5.61802298761904239654541015625e-04,
        -4.91381669417023658752441406250e-03,
        2.67075151205062866210937500000e-02,
        -1.12800106406211853027343750000e-01,
        3.76122951507568359375000000000e-01,
        -1.12837910652160644531250000000e00,
    )
)
_P = tuple(
    _c(v)
    for v in (
        1.0208116471767425537109375e-01,
        4.2920666933059692382812500e-01,
        3.2379078865051269531250000e-01,
        5.3971976041793823242187500e-02,
    )
)
_Q = tuple(
    _c(v)
    for v in (
        1.7251677811145782470703125e-02,
        3.9137163758277893066406250e-01,
        1.0,
        6.2173241376876831054687500e-01,
        9.5662862062454223632812500e-02,
    )
)
_SPLIT = _c(4097.0)  # veltkamp_splitting: 2^12 + 1 for float's 24-bit significand
# pexp_float's polynomial (not the logistic's own; its range reduction: eigen_math.exp_range_reduction)
_EXP_P2 = _c(0.49999988079071044921875)
_EXP_P3 = _c(0.16666518151760101318359375)
_EXP_P4 = _c(4.166965186595916748046875e-2)
_EXP_P5 = _c(8.36894474923610687255859375e-3)
_EXP_P6 = _c(1.37449637986719608306884765625e-3)
#: x2's upper clamp for pexp: the smallest float32 above 104, where pexp's -x2 < -104 gives 0 (the formula maps it to
#: +0; so would 104 itself: any value from there on gives +0, this one keeps the clamp outside pexp's range)
_X2_ZERO = np.nextafter(_c(104.0), _c(np.inf))
_MAGIC64 = _c(2.0**23 + 127.0 + 64.0)  # m + this: the float32 whose low mantissa bits are m + 64 + 127
_TWO_M64 = _c(2.0**-64)
_S23 = np.array(23, np.uint32)
_EXPF = libm_float("expf")

_MUL, _ADD, _SUB, _DIV = np.multiply, np.add, np.subtract, np.divide


def _scalar_exp(x2: np.ndarray, e: np.ndarray) -> None:
    """The scalar path's ``pexp``: ``e = expf(-x2)`` (the C library's; the tail's at most 3 elements)."""
    e[...] = _EXPF(-x2)


class ErfcWork:
    """``generic_fast_erfc<float>`` of a 1-D float32 buffer of ``n`` values (16-byte aligned: whole packets, then
    the ``n % 4`` trailing values on the scalar path), with scratch made here; ``calls(a, out)`` lists its numpy
    calls (ops/bound_plan.bound_plan). Each float32 operation is Eigen's, rounded as it rounds; the calls differ
    from a transcription only where the result is the same bit for bit:

    - ``twoprod_low``: ``lo * hi`` equals ``hi * lo``, so that product is made once and added twice (the same two
      roundings); ``hh + (-x2)`` is computed as ``hh - x2`` (the same IEEE operation);
    - ``pexp(-x2)``: ``(-x2) log2e + 1/2`` as ``1/2 - x2 log2e`` and ``m C1 + (-x2)`` as ``m C1 - x2`` (negation is
      exact); the zero below -104 by clamping x2 to the smallest float32 above 104, which the formula maps to +0
      (m = -150, y < 1: ``y 2^-150`` is below half the smallest subnormal; tests/ops/test_gelu_float.py checks
      it); ``y * 2^m`` as ``(y * 2^(m + 64)) * 2^-64``: m is an integer in [-150, 0] there, ``2^(m + 64)`` is
      built from m's bits (as eigen_math._LogisticPacket builds 2^m), ``y 2^(m + 64)`` is exact and the last
      product rounds once, as pldexp's does where the result is not zero (its four factors keep the partial
      products normal for m >= -168); pexp's clamp above (88.7) and its ``max(., v)`` never act (v <= 0, a NaN
      lane is the small branch's);
    - ``x < 0 ? 2 : 0`` as the product of the boolean ``x < 0`` and 2, the select as ``np.putmask`` of the large
      branch into the small one where ``1 < x2`` (NaN lanes: the small branch, x's NaN, as Eigen's select gives).
    """

    __slots__ = ("n", "x", "x2", "t", "g", "hi", "lo", "m", "r", "r2", "pe", "po", "mi", "mask", "neg")

    def __init__(self, n: int):
        self.n = n
        for name in self.__slots__[1:-3]:
            setattr(self, name, np.empty(n, F32))
        self.mi = self.m.view(np.uint32)
        self.mask, self.neg = np.empty(n, bool), np.empty(n, bool)

    def calls(self, a: np.ndarray, out: np.ndarray) -> list:
        """The calls writing ``erfc(a)`` into ``out`` (1-D float32, n values each; ``out`` may be ``a``) as
        (function, args, kwargs) triples, in order."""
        x, x2, g, hi, lo, m, r, t = self.x, self.x2, self.g, self.hi, self.lo, self.m, self.r, self.t
        r2, pe, po, mul, add, sub = self.r2, self.pe, self.po, _MUL, _ADD, _SUB
        # buffers reused once free (fewer arrays in the caches): pexp's x2 clamp in lo, the large branch's q2, P
        # and x Q in r2, pe and r
        w, q, num, den = lo, r2, pe, r
        steps = [
            (clip_ufunc, a, _NEG_CLAMP, _CLAMP, x),
            (mul, x, x, x2),
            # small branch: 1 + x S(x2) into lo (free until twoprod_low), out at the end
            (mul, x2, _S[0], t),
            *horner_steps(t, x2, _S[1:-1]),
            (add, t, _S[-1], t),
            (mul, x, t, t),
            (np.greater, x2, _ONE, self.mask),  # 1 < x2: the large branch's lanes
            # twoprod_low(x, x, x2) into g
            (mul, x, _SPLIT, g),
            (sub, x, g, hi),
            (add, hi, g, hi),
            (sub, x, hi, lo),
            (mul, hi, hi, g),
            (sub, g, x2, g),
            (mul, hi, lo, hi),
            (add, hi, g, g),
            (add, hi, g, g),
            (mul, lo, lo, lo),
            (add, lo, g, g),
            # pexp(-x2) into po
            (clip_ufunc, x2, _ZERO, _X2_ZERO, w),  # x2 >= 0 (or NaN, kept)
            *exp_range_reduction(w, m, r, hi, negated=True),
            (mul, r, r, r2),
            (mul, r2, _EXP_P6, pe),
            (add, pe, _EXP_P4, pe),
            (mul, r2, _EXP_P5, po),
            (add, po, _EXP_P3, po),
            (mul, r2, pe, pe),
            (add, pe, _EXP_P2, pe),
            (mul, r, po, po),
            (add, po, pe, po),
            (add, r, _ONE, r),
            (mul, r2, po, po),
            (add, po, r, po),
            (add, m, _MAGIC64, m),
            (np.left_shift, self.mi, _S23, self.mi),  # m's bits are now 2^(m + 64)'s
            (mul, po, m, po),
            (mul, po, _TWO_M64, po),
        ]
        tail = self.n % PACKET_SIZE
        if tail:
            steps.append((_scalar_exp, x2[-tail:], po[-tail:]))
        steps += [
            # z = e - e x2_lo
            (mul, po, g, g),
            (sub, po, g, po),
            # r = P(q2) / (x Q(q2)), q2 = 1 / x2
            (_DIV, _ONE, x2, q),
            (mul, q, _P[0], num),
            *horner_steps(num, q, _P[1:-1]),
            (add, num, _P[-1], num),
            (mul, q, _Q[0], den),
            *horner_steps(den, q, _Q[1:-1]),
            (add, den, _Q[-1], den),
            (mul, x, den, den),
            (_DIV, num, den, num),
            # z r + (x < 0 ? 2 : 0)
            (mul, po, num, po),
            (np.less, x, _ZERO, self.neg),
            (mul, self.neg, _TWO, hi),
            (add, po, hi, po),
            (add, t, _ONE, out),  # the small branch (t's lanes: x S(x2))
            (np.putmask, out, self.mask, po),
        ]
        return [(f, tuple(args), {}) for f, *args in steps]


def eigen_erfc(a, out: np.ndarray | None = None) -> np.ndarray:
    """Eigen's float32 ``erfc`` of ``a`` as one 16-byte-aligned buffer (C order): whole packets, then the
    ``size % 4`` trailing values on the scalar path (``expf``). A new float32 array unless ``out`` (C-contiguous
    float32 of a's shape; ValueError otherwise) is given."""
    a = np.ascontiguousarray(a, F32)
    out = check_out(a, out)
    if a.size:
        with np.errstate(all="ignore"):
            for f, args, kwargs in ErfcWork(a.size).calls(a.reshape(-1), out.reshape(-1)):
                f(*args, **kwargs)
    return out
