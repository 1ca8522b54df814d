"""Bit-exact numpy emulations of Eigen's float32 ``tanh`` and ``logistic`` as LiteRT's x86-64 wheel runs them.

Where LiteRT uses them: ``optimized_ops::Tanh`` / ``optimized_ops::Logistic`` for float32 (the TANH and LOGISTIC
ops under the BUILTIN and BUILTIN_WITHOUT_DEFAULT_DELEGATES resolvers; BUILTIN_REF uses reference/tanh.h,
logistic.h instead, and AUTO hands the op to XNNPACK, both different again), and the LSTM / RNN kernels'
``tensor_utils::ApplyTanhToVector`` / ``ApplySigmoidToVector`` (tflite/kernels/internal/tensor_utils.h:
``Eigen::Map<Eigen::Vector<float, Dynamic>>(...).array().tanh()`` / ``.logistic()``), and float GELU
(reference/gelu.h: the approximate form's tanh; its erfc is in eigen_erfc.py).

Eigen sources matched (gitlab.com/libeigen/eigen, after commit 32d95bb0 of Aug 2024 "Add vectorized
implementation of tanh<double>" and 74dcfbbd "Use ppolevl ..."; the algorithms are unchanged up to 2026):

- tanh: ``ptanh_float`` under EIGEN_FAST_MATH (Eigen/src/Core/arch/Default/GenericPacketMathTrig.h, formerly
  GenericPacketMathFunctions.h): clamp to +-7.90738964080810547 (the non-FMA constant), then the rminimax 9/8
  rational ``(x^3 * P(x^2) + x) / Q(x^2)`` with Horner steps ``pmadd(acc, x2, c)``. The scalar path (tails)
  is the same function on scalars, so every element follows the packet formula.
- logistic: ``scalar_logistic_op<float>`` (Eigen/src/Core/functors/UnaryFunctors.h). The packet path halves x
  (clamped above at 16.6355324), computes exp(x/2) by Cephes range reduction, a degree 5 polynomial and
  ``pldexp_fast``, squares it and returns ``e / (1 + e)`` (0 below -104). The scalar path, used for the
  elements Eigen's LinearVectorizedTraversal leaves outside whole packets, is
  ``e = std::exp(min(x, 16.6355324f)); e / (1 + e)``, i.e. the C library's ``expf``.

Every ``pmadd`` is a separate multiply and add (the wheel is built without FMA: the tanh clamp at which the
output first reaches exactly 1, 7.9073896, is the non-FMA constant, and the unfused emulation matches while a
fused one does not). Packets are 4 floats wide (SSE); a buffer aligned to 16 bytes (TFLite's arena aligns
tensors to 64) is processed in whole packets and its last ``n % 4`` elements by the scalar path. A buffer
starting ``offset`` floats past a 16-byte boundary first runs ``(4 - offset % 4) % 4`` elements through the
scalar path (``internal::first_aligned``). LSTM gate buffers are such: lstm_eval.cc's gate scratch buffers start
k * n_cell * n_batch floats into the scratch tensor (k = 0..3 for input, cell, forget, output gates; CIFG:
cell, forget, output at 0, 1, 2), so pass ``offset=k * n_cell * n_batch``.

Evidence: equal bit for bit to ai-edge-litert 2.3.0 (x86-64 Linux wheel, BUILTIN_WITHOUT_DEFAULT_DELEGATES
resolver) on all 2^32 float32 bit patterns, for both functions (NaN payloads included; logistic in whole
packets), on every tensor length 1..40 with values whose packet and scalar logistic differ, and through
UNIDIRECTIONAL_SEQUENCE_LSTM's output gate (ApplySigmoidToVector) at every offset mod 4, plain and CIFG, under
BUILTIN_REF and BUILTIN_WITHOUT_DEFAULT_DELEGATES (tests/ops/test_eigen_math.py). The scalar tail of
logistic calls the machine's libm ``expf`` through ctypes, as the wheel does (numpy's float32 exp differs from
glibc's in the last bit for some inputs); without a C library numpy's float32 exp is used.

Speed: on the small arrays of recurrent kernels (64-256 values) a numpy call costs ~0.3 us whatever its length,
so the packet formulas run as the scratch classes ``_Tanh`` (15 calls instead of 21) and ``_LogisticPacket``
(24 instead of 28), each exact by the argument in its docstring (checked equal to the plain transcription on
all 2^32 inputs); kernels hold one per buffer length through ``tanh_work`` / ``logistic_work``. For bound plans
(ops/bound_plan.py) ``tanh_listing(n).calls`` lists the tanh's calls, and ``LogisticTanhWork`` lists an LSTM
step's gate sigmoids and cell-gate tanh as one sequence of 33 calls (instead of 24 + 15; its docstring).
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from ..libm import libm_float
from ..quant.requantizer import clip_ufunc

__all__ = ["eigen_logistic", "eigen_tanh", "PACKET_SIZE"]

F32 = np.float32
PACKET_SIZE = 4
_CHUNK = 8192  # elements per vectorized pass over big arrays

# ptanh_float (EIGEN_FAST_MATH, no EIGEN_VECTORIZE_FMA): clamp and rminimax [9/8] coefficients, highest first.
_TANH_CLAMP = np.array(7.90738964080810547, F32)  # 0-d arrays: a numpy scalar operand costs ~0.5 us a ufunc call
_TANH_NEG_CLAMP = -_TANH_CLAMP
_TANH_ALPHA = tuple(np.array(v, F32) for v in (1.394553628e-8, 2.102733560e-5, 3.520756727e-3, 1.340216100e-1))
_TANH_BETA = tuple(np.array(v, F32) for v in (8.015776984e-7, 3.326951409e-4, 2.597254514e-2, 4.673548340e-1, 1.0))

# scalar_logistic_op<float>::packetOp constants.
_LOG_EXP_HI = np.array(16.6355324, F32)
_LOG_EXP_LO = np.array(-104.0, F32)
_HALF = np.array(0.5, F32)
_ONE = np.array(1.0, F32)
_LOG2EF = np.array(1.44269504088896341, F32)
_EXP_C1 = np.array(-0.693359375, F32)
_EXP_C2 = np.array(2.12194440e-4, F32)
_EXP_P2 = np.array(0.49999141693115234375, F32)
_EXP_P3 = np.array(0.16666877269744873046875, F32)
_EXP_P4 = np.array(4.1898667812347412109375e-2, F32)
_BIAS_127, _ZERO = np.array(127.0, F32), np.array(0.0, F32)
_EXP_P5 = np.array(8.33471305668354034423828125e-3, F32)


def check_out(x: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    if out is None:
        return np.empty(x.shape, F32)
    if out.dtype != F32 or out.shape != x.shape or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float32 array of shape {x.shape}")
    return out


def eigen_tanh(x, out: np.ndarray | None = None) -> np.ndarray:
    """Eigen ``ptanh_float`` of float32 ``x`` elementwise (every element, packet or tail, takes this path).

    ``out`` (C-contiguous float32, x's shape) receives the result when given; it may be ``x`` itself.
    """
    x = np.asarray(x, F32)
    out = check_out(x, out)
    with np.errstate(invalid="ignore"):  # signalling NaN inputs raise "invalid"
        if x.size <= _CHUNK:
            _tanh(x, out)
        else:  # cache-sized pieces: the ~20 passes below then stay in L2
            xf, of = x.reshape(-1), out.reshape(-1)
            for i in range(0, xf.size, _CHUNK):
                _tanh(xf[i : i + _CHUNK], of[i : i + _CHUNK])
    return out


def _tanh(x: np.ndarray, out: np.ndarray) -> None:
    """``ptanh_float`` of float32 ``x`` (C-contiguous, at most ``_CHUNK`` elements) into ``out`` (may be ``x``)."""
    if x.ndim != 1:
        x, out = x.reshape(-1), out.reshape(-1)
    _work(_Tanh, x.size)(x, out)


def tanh_work(n: int):
    """A ``(x, out)`` function: Eigen's tanh of a 1-D C-contiguous float32 array of length ``n`` into ``out``
    (may be ``x``), with its own scratch (for a kernel's per-step loop; call it inside np.errstate)."""
    return _Tanh(n) if 0 < n <= _CHUNK else lambda x, out: eigen_tanh(x, out=out)


def logistic_work(n: int):
    """A ``(x, out)`` function: ``logistic_into`` of a 1-D C-contiguous float32 array of length ``n`` (a
    16-byte-aligned buffer) into ``out`` (may be ``x``), with its own scratch when n is whole packets."""
    if 0 < n <= _CHUNK and n % PACKET_SIZE == 0:
        return _LogisticPacket(n)
    return lambda x, out: eigen_logistic(x, out=out)


def tanh_listing(n: int) -> _Tanh:
    """Eigen's tanh of 1-D float32 arrays of length ``n`` (any n > 0) with prepared scratch, offering ``calls(x,
    out)``: its numpy calls for a bound plan. Elementwise, so the values of ``eigen_tanh`` at every length."""
    return _Tanh(n)


def _logistic_packet(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``scalar_logistic_op<float>::packetOp`` elementwise (into ``out``, a new float32 array by default).
    Overflow / underflow / invalid warnings are the caller's to silence (the kernels run inside np.errstate)."""
    x = np.ascontiguousarray(x, F32)
    if out is None:
        out = np.empty(x.shape, F32)
    xf, of = x.reshape(-1), out.reshape(-1)
    for i in range(0, xf.size, _CHUNK):
        _work(_LogisticPacket, min(_CHUNK, xf.size - i))(xf[i : i + _CHUNK], of[i : i + _CHUNK])
    return out


_WORK = threading.local()  # per thread: (class, n) -> scratch (a call uses its scratch only while it runs)


def _work(cls, n: int):
    """The thread's scratch ``cls(n)`` (made on first use; at most 64 sizes kept)."""
    cache = getattr(_WORK, "cache", None)
    if cache is None:
        cache = _WORK.cache = {}
    w = cache.get((cls, n))
    if w is None:
        if len(cache) >= 64:
            cache.clear()
        w = cache[cls, n] = cls(n)
    return w


@functools.lru_cache(maxsize=256)
def _halves(a: float, b: float, n: int) -> np.ndarray:
    """A read-only float32 array of n copies of a, then n of b (the scratch classes' per-half coefficients)."""
    v = np.repeat(np.array([a, b], F32), n)
    v.flags.writeable = False
    return v


class _Tanh:
    """``ptanh_float`` on 1-D float32 arrays of length ``n`` with prepared scratch: 15 numpy calls of ~0.3 us
    (on small arrays a call's overhead dominates, not its length), each float32 operation the packet code's,
    rounded as it rounds, where the plain transcription takes 21 calls and 4 allocations:

    - the clamp is one ``clip`` (NaN x stays x's NaN, as minps/maxps with Eigen's operand order keep it; the
      bounds are symmetric, so min-then-max and clip agree on every other value, -0.0 included);
    - P and Q run as one Horner recurrence over a length-2n buffer ``[P | Q]`` against ``[x2 | x2]`` with
      per-half coefficient arrays (same-shape operands: a broadcast one costs a call ~0.4 us more). Q is
      ``(((b0 x2 + b1) x2 + b2) x2 + b3) x2 + 1``; P, one degree lower, gets a leading zero coefficient:
      ``0 * x2 + a0`` is exactly ``a0`` (x2 is finite and >= 0 after the clamp, or NaN, which stays x's NaN),
      so P's half computes ``((a0 x2 + a1) x2 + a2) x2 + a3`` with the same roundings as a separate loop.
    """

    __slots__ = ("cc", "c", "c2", "xx", "x3", "pq", "p", "q", "k")

    def __init__(self, n: int):
        self.cc, self.xx, self.pq = (np.empty(2 * n, F32) for _ in range(3))
        self.c, self.c2, self.x3 = self.cc[:n], self.cc[n:], self.xx[:n]
        self.p, self.q = self.pq[:n], self.pq[n:]
        a, b = (_ZERO,) + _TANH_ALPHA, _TANH_BETA
        self.k = tuple(_halves(float(a[i]), float(b[i]), n) for i in range(5))

    def __call__(self, x: np.ndarray, out: np.ndarray) -> None:
        c, cc, xx, pq, p, k, mul, add = self.c, self.cc, self.xx, self.pq, self.p, self.k, _MUL, _ADD
        clip_ufunc(x, _TANH_NEG_CLAMP, _TANH_CLAMP, c)
        _COPYTO(self.c2, c)
        mul(cc, cc, xx)  # [x2 | x2]
        mul(xx, k[0], pq)
        add(pq, k[1], pq)
        mul(pq, xx, pq)
        add(pq, k[2], pq)
        mul(pq, xx, pq)
        add(pq, k[3], pq)
        mul(pq, xx, pq)
        add(pq, k[4], pq)
        x3 = self.x3
        mul(x3, c, x3)  # x3 = x2 * x
        mul(p, x3, p)  # p = pmadd(x3, p, x)
        add(p, c, p)
        _DIV(p, self.q, out)

    def calls(self, x: np.ndarray, out: np.ndarray) -> list:
        """``__call__``'s numpy calls on ``x`` and ``out`` as (function, args, kwargs) triples, in order, for a
        kernel's bound plan (ops/bound_plan.bound_plan; tests/ops/test_eigen_math.py checks both equal)."""
        c, cc, xx, pq, p, k, mul, add = self.c, self.cc, self.xx, self.pq, self.p, self.k, _MUL, _ADD
        horner = [(f, tuple(args), {}) for f, *args in horner_steps(pq, xx, k[1:5])[:-1]]  # ends with + k[4]
        return [
            (clip_ufunc, (x, _TANH_NEG_CLAMP, _TANH_CLAMP, c), {}),
            (_COPYTO, (self.c2, c), {}),
            (mul, (cc, cc, xx), {}),
            (mul, (xx, k[0], pq), {}),
            *horner,
            (mul, (self.x3, c, self.x3), {}),
            (mul, (p, self.x3, p), {}),
            (add, (p, c, p), {}),
            (_DIV, (p, self.q, out), {}),
        ]


def horner_steps(acc: np.ndarray, x: np.ndarray, coeffs) -> list:
    """The (function, acc, operand, acc) steps of Horner's ``acc = acc * x + c`` for the middle coefficients
    ``coeffs`` after a first ``acc = x * c0`` (the caller's): ``acc + c``, then ``* x``, each a float32 operation
    rounded as Eigen's ``ppolevl`` (without FMA) rounds; the caller adds the last coefficient."""
    return [s for c in coeffs for s in ((np.add, acc, c, acc), (np.multiply, acc, x, acc))]


# the ufuncs of the per-step emulations, bound once (output arrays are passed positionally: ~0.05 us a call less)
_MUL, _ADD, _SUB, _DIV, _COPYTO = np.multiply, np.add, np.subtract, np.divide, np.copyto


_LOG_CLIP_LO = np.nextafter(_LOG_EXP_LO, np.array(-np.inf, F32))  # the largest float32 below -104
_MAGIC = np.array(2.0**23 + 127.0, F32)  # m + 127 + 2^23: the float32 whose low mantissa bits are m + 127
_S23 = np.array(23, np.uint32)


class _LogisticPacket:
    """``scalar_logistic_op<float>::packetOp`` on 1-D float32 arrays of length ``n`` with prepared scratch: 24
    numpy calls where the plain transcription takes 28 and a dozen allocations; each float32 operation the
    packet code's, rounded as it rounds:

    - Eigen returns 0 below -104 (``pselect(x < -104, 0, ...)``). Here x is clamped from below to the largest
      float32 under -104, which the formula maps to +0 exactly (m = -75, exp(x/2) ~ 2^-75, whose square is
      below half the smallest subnormal; tests/ops/test_eigen_math.py checks it), so one ``clip`` replaces
      compare, min and select. Values from -104 up are untouched by that bound; NaN stays x's NaN.
    - The even and odd polynomials run as one length-2n step over ``[r2 | r2]`` with per-half coefficients
      ``[P4 | P5]``, ``[P2 | P3]`` (same operations, same roundings).
    - pldexp_fast's 2^m: m is an integer in [-75, 12] after the clamps, so m + (2^23 + 127) is exact and is the
      float32 in [2^23, 2^24) whose mantissa field holds the biased exponent m + 127 in [52, 139]; its bits
      shifted left by 23 as uint32 (the exponent field 0x96 shifts out) are those of 2^m, Eigen's
      ``(m + 127) << 23`` (its clamp to [0, 255] never acts). In NaN lanes po is already x's NaN.
    """

    __slots__ = ("v", "m", "mi", "r", "t", "rr", "r2a", "r2", "pp", "pe", "po", "den", "k")

    def __init__(self, n: int):
        self.v, self.m, self.r, self.t, self.den = (np.empty(n, F32) for _ in range(5))
        self.mi = self.m.view(np.uint32)
        self.rr, self.pp = np.empty(2 * n, F32), np.empty(2 * n, F32)
        self.r2a, self.r2, self.pe, self.po = self.rr[:n], self.rr[n:], self.pp[:n], self.pp[n:]
        self.k = tuple(_halves(float(a), float(b), n) for a, b in ((_EXP_P4, _EXP_P5), (_EXP_P2, _EXP_P3)))

    def __call__(self, x: np.ndarray, out: np.ndarray) -> None:
        v, m, r, t, r2, pp, po, mul, add = self.v, self.m, self.r, self.t, self.r2, self.pp, self.po, _MUL, _ADD
        clip_ufunc(x, _LOG_CLIP_LO, _LOG_EXP_HI, v)
        mul(v, _HALF, v)
        mul(v, _LOG2EF, m)
        add(m, _HALF, m)
        np.floor(m, m)
        mul(m, _EXP_C1, r)
        add(r, v, r)
        mul(m, _EXP_C2, t)
        add(r, t, r)
        mul(r, r, self.r2a)
        mul(r, r, r2)  # [r2 | r2]
        mul(self.rr, self.k[0], pp)
        add(pp, self.k[1], pp)  # [p_even | p_odd]
        mul(po, r, po)
        add(po, self.pe, po)  # p = pmadd(r, p_odd, p_even)
        mul(po, r2, po)
        add(r, _ONE, r)
        add(po, r, po)  # p = pmadd(r2, p, r + 1)
        add(m, _MAGIC, m)
        np.left_shift(self.mi, _S23, self.mi)  # m's bits are now 2^m's
        mul(po, m, po)
        mul(po, po, po)  # exp(x) = exp(x / 2)^2
        add(po, _ONE, self.den)
        _DIV(po, self.den, out)


def _exp_reduction(v: np.ndarray, m: np.ndarray, r: np.ndarray, t: np.ndarray) -> tuple:
    """The packet logistic's first steps after its clamp, as (function, *args) tuples: ``v`` (the clamped x) halved
    in place, then ``exp_range_reduction`` of it."""
    return ((_MUL, v, _HALF, v), *exp_range_reduction(v, m, r, t))


def exp_range_reduction(v: np.ndarray, m: np.ndarray, r: np.ndarray, t: np.ndarray, negated: bool = False) -> tuple:
    """Cephes' range reduction of exp(v) in Eigen's float exp (the logistic's and ``pexp_float``'s), as (function,
    *args) tuples: ``m = floor(v log2e + 1/2)``, ``r = (m C1 + v) + m C2`` (``t`` scratch). ``negated``: of
    exp(-v), computed as ``1/2 - v log2e`` and ``m C1 - v`` (the same IEEE operations: negation is exact)."""
    add = _SUB if negated else _ADD
    return (
        (_MUL, v, _LOG2EF, m),
        (_SUB, _HALF, m, m) if negated else (_ADD, m, _HALF, m),
        (np.floor, m, m),
        (_MUL, m, _EXP_C1, r),
        (add, r, v, r),
        (_MUL, m, _EXP_C2, t),
        (_ADD, r, t, r),
    )


class LogisticTanhWork:
    """Eigen's packet logistic of a 1-D float32 buffer of ``n`` values, ``rows`` rows of ``n / rows``, and Eigen's
    tanh of the lanes ``[lo, hi)`` of each row in one listing of 33 numpy calls (``calls``) where
    ``_LogisticPacket`` and ``_Tanh`` take 24 + 15: an LSTM step's gate sigmoids and the tanh of its cell gate (gates
    i, f, c, o of each row), independent of each other. Every lane goes through the same float32 operations,
    operands in the same order (a NaN's payload follows the first operand), as in those two classes; the calls are
    shared where the operation is the same:

    - one ``clip`` with per-lane bounds (the tanh clamp on the tanh lanes, the logistic clamp elsewhere; the tanh
      lanes' logistic then runs on their tanh-clamped values and is not used), one copy of the tanh lanes, twice
      (row after row), into a buffer of their own;
    - the tanh's clamped ``[c | c]``, the logistic's ``r`` and its exponent ``m`` share one buffer
      ``[c | c | r | m]``: one product squares ``[c | c | r]`` and one sum makes ``r + 1`` and ``m + 2^23 + 127``
      (per-lane addends ``[1 | 2^23 + 127]``);
    - the logistic's even / odd polynomial step on ``[r2 | r2]`` is the first step of the tanh's P / Q Horner
      recurrence on ``[x2 | x2]``: one buffer ``[x2 | x2 | r2 | r2]`` and per-lane coefficients
      ``[Q | P | even | odd]`` (the tanh's other steps run on its part alone);
    - one division ``[e | p] / [1 + e | q]`` writes ``out``: the logistic of the n lanes, then the tanh of the
      ``rows * (hi - lo)`` tanh lanes, row after row (the last Horner step and the two final sums write their
      results where that division reads them).
    tests/ops/test_eigen_math.py checks the values equal _LogisticPacket's and _Tanh's on special and random
    inputs."""

    __slots__ = ("n", "m", "rows", "seg", "lo_b", "hi_b", "a", "crm", "s", "mi", "t", "h", "k", "k_rm", "num", "den")

    def __init__(self, n: int, lo: int, hi: int, rows: int = 1):
        m = (hi - lo) * rows
        self.n, self.m, self.rows, self.seg = n, m, rows, slice(lo, hi)
        self.lo_b, self.hi_b = np.full(n, _LOG_CLIP_LO, F32), np.full(n, _LOG_EXP_HI, F32)
        self.lo_b.reshape(rows, -1)[:, lo:hi], self.hi_b.reshape(rows, -1)[:, lo:hi] = _TANH_NEG_CLAMP, _TANH_CLAMP
        self.a, self.t = np.empty(n, F32), np.empty(n, F32)
        self.crm = np.empty(2 * m + 2 * n, F32)  # [c | c | r | m]
        self.mi = self.crm[2 * m + n :].view(np.uint32)
        self.k_rm = np.repeat(np.array([_ONE, _MAGIC], F32), n)
        self.s, self.h = np.empty(2 * m + 2 * n, F32), np.empty(2 * m + 2 * n, F32)
        self.num, self.den = np.empty(n + m, F32), np.empty(n + 2 * m, F32)
        a, b = (_ZERO,) + _TANH_ALPHA, _TANH_BETA  # P (one degree lower: a leading zero) and Q, as _Tanh
        tanh_k = [np.repeat(np.array([b[i], a[i]], F32), m) for i in range(5)]  # [Q | P]
        tanh_k[0] = np.concatenate([tanh_k[0], np.repeat(np.array([_EXP_P4, _EXP_P5], F32), n)])
        tanh_k[1] = np.concatenate([tanh_k[1], np.repeat(np.array([_EXP_P2, _EXP_P3], F32), n)])
        for v in (self.lo_b, self.hi_b, self.k_rm, *tanh_k):
            v.flags.writeable = False
        self.k = tuple(tanh_k)

    def calls(self, x: np.ndarray, out: np.ndarray) -> list:
        """The calls writing ``[logistic(x) | tanh(x[lo:hi])]`` (n + hi - lo values) into ``out`` from ``x`` (n
        values), as (function, args, kwargs) triples in order (ops/bound_plan.bound_plan)."""
        n, m, k, mul, add = self.n, self.m, self.k, _MUL, _ADD
        a, crm, s, t, h, num, den = self.a, self.crm, self.s, self.t, self.h, self.num, self.den
        cc, r, mm, rm = crm[: 2 * m], crm[2 * m : 2 * m + n], crm[2 * m + n :], crm[2 * m :]
        c, x2, x3, hq = cc[:m], s[: 2 * m], s[:m], h[: 2 * m]  # tanh: [c | c], [x2 | x2], x2 * c, [Q | P]
        r2, pe, po, p = s[2 * m + n :], h[2 * m : 2 * m + n], h[2 * m + n :], den[n + m :]
        steps = (
            (clip_ufunc, x, self.lo_b, self.hi_b, a),
            (_COPYTO, cc.reshape(2, self.rows, -1), a.reshape(self.rows, -1)[:, self.seg]),
            *_exp_reduction(a, mm, r, t),
            (mul, crm[: 2 * m + n], crm[: 2 * m + n], s[: 2 * m + n]),  # [x2 | x2 | r2]
            (mul, r, r, r2),
            (mul, s, k[0], h),  # [x2 | x2 | r2 | r2] * [Q | P | P4 | P5]
            (add, h, k[1], h),
            (mul, hq, x2, hq),
            (add, hq, k[2], hq),
            (mul, hq, x2, hq),
            (add, hq, k[3], hq),
            (mul, hq, x2, hq),
            (add, hq, k[4], den[n:]),  # [Q | P] into the division's place
            (mul, po, r, po),
            (add, po, pe, po),
            (mul, po, r2, po),
            (add, rm, self.k_rm, rm),  # r + 1, m + 2^23 + 127
            (add, po, r, po),
            (np.left_shift, self.mi, _S23, self.mi),
            (mul, po, mm, po),
            (mul, po, po, num[:n]),  # e
            (add, num[:n], _ONE, den[:n]),
            (mul, x3, c, x3),
            (mul, p, x3, p),
            (add, p, c, num[n:]),
            (_DIV, num, den[: n + m], out),
        )
        return [(f, args, {}) for f, *args in steps]


_EXPF = libm_float("expf")


def _logistic_scalar(x: np.ndarray) -> np.ndarray:
    """``scalar_logistic_op<float>::operator()``: ``e = expf(min(x, hi)); e / (1 + e)`` (a few elements)."""
    x = np.asarray(x, F32)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        e = _EXPF(np.where(x > _LOG_EXP_HI, _LOG_EXP_HI, x))  # std::min(x, hi) keeps a NaN x
        return e / (e + F32(1.0))  # float32 arithmetic, elementwise as the scalar code


def eigen_logistic(x, out: np.ndarray | None = None, offset: int = 0) -> np.ndarray:
    """Eigen ``array().logistic()`` of float32 ``x`` as one contiguous buffer (C order).

    The elements in whole 4-float packets take the packet path; the ``(4 - offset % 4) % 4`` leading ones
    (``offset``: floats from the previous 16-byte boundary to the buffer start; 0 for TFLite tensors) and the
    trailing remainder take the scalar ``expf`` path. ``out`` (C-contiguous float32, x's shape) may be ``x``.
    """
    x = np.asarray(x, F32)
    out = check_out(x, out)
    xf, of = x.reshape(-1), out.reshape(-1)
    n = xf.size
    start = min((PACKET_SIZE - offset % PACKET_SIZE) % PACKET_SIZE, n)
    end = start + (n - start) // PACKET_SIZE * PACKET_SIZE
    head, tail = xf[:start].copy(), xf[end:].copy()  # copies: out may alias x
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        for i in range(start, end, _CHUNK):
            j = min(i + _CHUNK, end)
            _logistic_packet(xf[i:j], of[i:j])
    if start:
        of[:start] = _logistic_scalar(head)
    if end < n:
        of[end:] = _logistic_scalar(tail)
    return out


def tanh_inplace(v: np.ndarray) -> None:
    """``eigen_tanh`` written back into the float32 array or view ``v`` (strided views go through a copy), for
    kernels: they run inside the invoke's np.errstate, so small arrays skip eigen_tanh's own checks."""
    if v.flags.c_contiguous and v.ndim and v.size <= _CHUNK and v.dtype == F32:
        _tanh(v, v)
    elif v.flags.c_contiguous:
        eigen_tanh(v, out=v)
    else:
        v[...] = eigen_tanh(np.ascontiguousarray(v))


def logistic_into(v: np.ndarray, out: np.ndarray) -> None:
    """``eigen_logistic`` of ``v`` into ``out`` (may be ``v``; strided views go through a copy). The buffer is
    taken as 16-byte aligned: which trailing elements take the scalar path can differ from LiteRT's per-gate
    buffers by their offset, which changes a result only where the packet and scalar paths differ (an ulp)."""
    n = v.size
    if out.flags.c_contiguous and v.flags.c_contiguous and v.ndim and 0 < n <= _CHUNK and n % PACKET_SIZE == 0:
        _logistic_packet(v.reshape(-1), out.reshape(-1))  # whole packets only: no scalar tail
    elif out.flags.c_contiguous and v.flags.c_contiguous:
        eigen_logistic(v, out=out)
    else:
        out[...] = eigen_logistic(np.ascontiguousarray(v))
