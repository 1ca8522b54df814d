"""The quirks of LiteRT's hybrid (dynamic-range) kernels as the x86-64 wheels run them: per-row int8
quantization of float activations (``BatchQuantizeFloats``, NEON code compiled through NEON_2_SSE), the SSE
row sums and the -128 quirk of the SSE int8 dot product. Shared by FULLY_CONNECTED, CONV_2D, BATCH_MATMUL,
the RNN/LSTM/SVDF hybrid paths.

Sources: tflite/kernels/internal/optimized/neon_tensor_utils.cc (NeonSymmetricQuantizeFloats,
NeonAsymmetricQuantizeFloats), tflite/kernels/internal/optimized/sse_tensor_utils.cc (SseReductionSumVector,
DotProdInt8x4x4), tflite/kernels/internal/reference/portable_tensor_utils.cc (the portable versions).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np

from .fixedpoint import round_away
from .requantizer import clip_ufunc, copysign_bits_calls

#: The largest double / float below 0.5. ``trunc(t + copysign(h, t))`` is round-half-away-from-zero for every
#: finite t of that precision: a tie n + 0.5 becomes n + 1 - 2^-54 (resp. 2^-25), which rounds up to n + 1 when
#: n >= 1 (the spacing there is at least 2^-52) and, for n = 0, is the midpoint between 1 - 2^-53 and 1, which
#: rounds to the even 1.0; every non-tie t lands strictly on its side of n + 1 (|t| < 0.5 keeps t + h < 1 since
#: t <= 0.5 - 2^-54 there). So it equals TfLiteRound (std::round) with 3 array passes instead of 6.
HALF_DOWN = {np.dtype(np.float64): np.float64(0.49999999999999994), np.dtype(np.float32): np.float32(0.49999997)}


HALF_DOWN_F64 = HALF_DOWN[np.dtype(np.float64)]


def round_half_away_inplace(t: np.ndarray) -> np.ndarray:
    """``std::round`` (ties away from zero) in place on a float32 or float64 array (see HALF_DOWN)."""
    t += np.copysign(HALF_DOWN[t.dtype], t)
    return np.trunc(t, out=t)


def neon_round_inplace(t: np.ndarray, k_vec: int) -> np.ndarray:
    """RoundToNearest of neon_tensor_utils.cc as the x86 wheels run it (NEON_2_SSE, no vcvta): the first
    ``k_vec`` columns (the 8-wide vector loop) get ``trunc(f32(v + (v < 0 ? -0.5 : 0.5)))``, the tail columns
    ``TfLiteRound`` (roundf). They differ only at v = +-0.49999997, where v + 0.5 rounds up to 1."""
    if k_vec < t.shape[1]:
        tail = t[:, k_vec:]
        tail += np.copysign(HALF_DOWN[t.dtype], tail)
        head = t[:, :k_vec]
        head += np.copysign(np.float32(0.5), head)
    else:
        t += np.copysign(np.float32(0.5), t)
    return np.trunc(t, out=t)


def batch_quantize_floats(x2: np.ndarray, asymmetric: bool):
    """``BatchQuantizeFloats`` (tflite/kernels/internal/portable_tensor_utils.h): quantize each row of the
    float32 matrix ``x2`` to int8 on its own, as the x86-64 wheels do it, i.e. with
    ``NeonSymmetricQuantizeFloats`` / ``NeonAsymmetricQuantizeFloats`` of
    tflite/kernels/internal/optimized/neon_tensor_utils.cc compiled through NEON_2_SSE (SSE4.1).

    Returns ``(q, scaling_factors, zero_points)``: ``q`` float32 holding the int8 values, one float32 scale
    and one zero point (float32 holding an int; None when symmetric) per row.

    Symmetric: ``R = max(|min|, |max|)``; ``R == 0`` gives q = 0, scale 1; else ``scale = f32(R / 127)``,
    ``q = clamp(round(f32(x * f32(127 / R))), -127, 127)``.
    Asymmetric: ``rmin = min(0, min)``, ``rmax = max(0, max)`` (float32; NeonMinMax caps at zero); equal ->
    q = 0, scale 1, zp 0; else ``scale = f64(f32(rmax - rmin)) / 255``, the zero point from the bound with
    the smaller error (double), clamped to [-128, 127] or ``round``ed, ``sf = f32(scale)``,
    ``inv = f32(1.0 / f64(sf))``, ``q = clamp(round(f32(x * inv)) + zp, -128, 127)``: the zero point is
    added to the rounded integer (the portable C++ adds it in float before rounding, a different result).
    ``round`` is :func:`neon_round_inplace`. Where a row's range is non-finite or denormal (``127 / R`` or
    ``1 / sf`` inf, ``x * inv`` NaN), the int32 conversion and clamp are :func:`neon_to_int8`'s instead.
    """
    f32 = np.float32
    b, k = x2.shape
    if k == 0 or b == 0:
        return x2.astype(f32), np.ones(b, f32), (np.zeros(b, f32) if asymmetric else None)
    mn = x2.min(axis=1)
    mx = x2.max(axis=1)
    k_vec = k & ~7
    if not asymmetric:
        r = np.maximum(np.negative(mn), mx)  # max(|min|, |max|) as min <= max
        zero = None if r.all() else r == 0
        if zero is not None:  # all-zero rows: q = 0, scale 1
            r[zero] = 1
        sf = r / f32(127)
        if zero is not None:
            sf[zero] = 1
        inv = np.divide(f32(127), r)  # inf for a denormal range (invoke runs with fp errors ignored)
        q = np.multiply(x2, inv[:, None], dtype=f32)
        neon_round_inplace(q, k_vec)
        if not math.isfinite(np.dot(r, inv)):  # r * inv = 127 unless r or inv is NaN / inf; else |q| <= 127.5
            return neon_to_int8(q, k_vec, None), sf, None
        return clip_ufunc(q, f32(-127), f32(127), out=q), sf, None
    rmin32 = np.minimum(mn, f32(0))
    rmax32 = np.maximum(mx, f32(0))
    same = rmin32 == rmax32
    if same.any():
        rmax32[same] = 1
    rmin = rmin32.astype(np.float64)
    rmax = rmax32.astype(np.float64)
    scale = np.subtract(rmax32, rmin32).astype(np.float64) / 255.0
    zmin = rmin / scale
    zmax = rmax / scale
    zd = np.where(128.0 + np.abs(zmin) < 127.0 + np.abs(zmax), -128.0 - zmin, 127.0 - zmax)
    zp = round_away(clip_ufunc(zd, -128.0, 127.0, out=zd)).astype(f32)  # the nudge: clamp, else round
    sf = scale.astype(f32)
    with np.errstate(divide="ignore"):
        inv = (1.0 / sf.astype(np.float64)).astype(f32)
    if not sf.all():  # a scale that underflows float32: scaling_factor_inv = 0
        inv[sf == 0] = 0
    if same.any():
        zp[same], sf[same], inv[same] = 0, 1, 1
    q = np.multiply(x2, inv[:, None], dtype=f32)
    neon_round_inplace(q, k_vec)
    # sf * inv ~ 1 (0 where sf underflows) unless a range is inf / NaN or inv inf; else |x * inv| <= 255.5
    if not math.isfinite(np.dot(sf, inv)):
        zp[np.isnan(zp)] = 0  # static_cast<int8>(round(NaN)) on x86: the low byte of INT_MIN
        return neon_to_int8(q, k_vec, zp), sf, zp
    q += zp[:, None]
    return clip_ufunc(q, f32(-128), f32(127), out=q), sf, zp


def neon_to_int8(q: np.ndarray, k_vec: int, zp: np.ndarray | None) -> np.ndarray:
    """The int32 steps of NeonSymmetricQuantizeFloats / NeonAsymmetricQuantizeFloats (neon_tensor_utils.cc) as the
    x86 wheels run them, for rounded values ``q`` that may be non-finite (a denormal float32 scale makes ``inv``
    inf; an infinite input makes ``x * 0`` NaN): in place, returns ``q`` holding the int8 values. Measured
    against BUILTIN_REF (tests/ops/test_hybrid_fc_edges.py):

    - the 8-wide part (NEON_2_SSE ``vcvtq_s32_f32``): NaN and -inf give INT_MIN, +inf INT_MAX; then ``+ zp`` in
      int32 (``vaddq_s32`` wraps: INT_MIN + a negative zero point is a large positive number), the clamp;
    - the symmetric tail (``static_cast<int32>``, cvttss2si): every non-finite value gives INT_MIN, then -127;
    - the asymmetric tail (``static_cast<int32>(offset + round(v))``, the offset added in float): NaN gives 0,
      +-inf the clamp's bound.

    Symmetric (zp None): clamp to [-127, 127], else [-128, 127]."""
    big = 2.0**31
    v = q.astype(np.float64)
    tail = v[:, k_vec:]
    if zp is None:
        tail[~np.isfinite(tail)] = -big
    else:
        tail[...] = np.where(np.isnan(tail), -zp.astype(np.float64)[:, None], tail)  # NaN -> 0 after + zp
    qi = np.clip(np.nan_to_num(v, nan=-big, posinf=big - 1, neginf=-big), -big, big - 1).astype(np.int64)
    lo = -127
    if zp is not None:
        lo = -128
        qi += zp.astype(np.int64)[:, None]
        qi[:, :k_vec] = (qi[:, :k_vec] + 2**31) % 2**32 - 2**31  # int32 wrap of vaddq_s32
    q[...] = np.clip(qi, lo, 127)
    return q


def sse_reduction_sum_vector(w: np.ndarray) -> np.ndarray:
    """Row sums of an int8 matrix as ``SseReductionSumVector`` (tflite/kernels/internal/optimized/
    sse_tensor_utils.cc) computes them on x86: blocks of 16 are added pairwise into eight int16 lanes that
    wrap (so a row of more than ~2000 large weights sums wrongly), an 8-wide postamble adds into the same
    lanes, the lanes are widened and added, then the tail is added in int32. Returns int64 (rows,)."""
    n, k = w.shape
    k16 = k & ~15
    lanes = w[:, :k16].reshape(n, k16 // 16, 8, 2).sum(axis=(1, 3), dtype=np.int64)
    col = k16
    if k - col >= 8:
        lanes += w[:, col : col + 8]
        col += 8
    lanes = ((lanes + 2**15) & 0xFFFF) - 2**15  # int16 wrap of every lane
    return lanes.sum(axis=1) + w[:, col:].sum(axis=1, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class SseMinus128Fix:
    """``DotProdInt8x4x4`` (sse_tensor_utils.cc) moves the input's sign onto the weight with
    ``_mm_sign_epi8``, which leaves -128 at -128: in the 16-wide blocks (columns below depth & ~15) a weight of
    -128 times a negative input adds ``+128 * q`` instead of ``-128 * q``. Its dot products are therefore ours
    plus ``256 * sum over those (k, c) of min(q_k, 0)``. ``cols``: the affected input columns;
    ``mask_t``: (len(cols), units), 1 where w[c, k] == -128."""

    cols: np.ndarray
    mask_t: np.ndarray

    @staticmethod
    def build(wi: np.ndarray, dtype) -> SseMinus128Fix | None:
        k16 = wi.shape[1] & ~15
        hit = wi[:, :k16] == -128
        cols = np.flatnonzero(hit.any(axis=0))
        if cols.size == 0:
            return None
        return SseMinus128Fix(cols, np.ascontiguousarray(hit[:, cols].T, dtype=dtype))

    def apply(self, q: np.ndarray, dot: np.ndarray) -> None:
        neg = np.minimum(q[:, self.cols], 0).astype(self.mask_t.dtype)
        dot += 256 * (neg @ self.mask_t)


FLT_MAX = float(np.finfo(np.float32).max)
_SF_MIN = 1.0 / FLT_MAX


def asymmetric_row_params(mn: float, mx: float, f32_0d: np.ndarray) -> tuple[float, float, float] | None:
    """``batch_quantize_floats``'s asymmetric parameters of one row from its float32 min and max, in Python
    doubles: ``(sf, inv, zp)`` (float32 values, zp an integer), or None where that function takes a special
    branch or a float32 overflows (min == max == 0, a non-finite bound, a range or ``1 / sf`` past FLT_MAX, a
    scale that underflows to 0): the caller then runs batch_quantize_floats itself.

    The float32 roundings go through ``f32_0d`` (a 0-d float32 buffer): ``f32(rmax - rmin)`` is the double
    difference of two floats rounded to float32, the float32 difference (double rounding is innocuous for +, -,
    *, / as 53 >= 2 * 24 + 2); ``scale``, the zero point's nudge and ``1.0 / f64(sf)`` are double arithmetic as
    in NeonAsymmetricQuantizeFloats; zp is rounded half away from zero (std::round) after the clamp."""
    if not (-FLT_MAX <= mn and mx <= FLT_MAX):  # inf or NaN
        return None
    # min(mn, 0), max(mx, 0) up to the sign of a zero bound, which changes nothing below (Python branches: about
    # half the cost of the builtins' calls)
    rmin = mn if mn < 0.0 else 0.0
    rmax = mx if mx > 0.0 else 0.0
    if rmin == rmax or rmax - rmin > FLT_MAX:
        return None
    f32_0d[()] = rmax - rmin
    scale = f32_0d.item() / 255.0
    zmin, zmax = rmin / scale, rmax / scale
    # 128 + |zmin| < 127 + |zmax| with zmin <= 0 <= zmax: the same doubles as 128 - zmin, 127 + zmax
    zd = -128.0 - zmin if 128.0 - zmin < 127.0 + zmax else 127.0 - zmax
    if zd < -128.0:
        zd = -128.0
    elif zd > 127.0:
        zd = 127.0
    zp = float(int(zd))  # trunc; then half away from zero (zd - trunc(zd) is exact)
    if abs(zd - zp) >= 0.5:
        zp += 1.0 if zd > 0 else -1.0
    f32_0d[()] = scale
    sf = f32_0d.item()
    if not sf >= _SF_MIN:  # 0, or 1 / sf past FLT_MAX
        return None
    f32_0d[()] = 1.0 / sf
    return sf, f32_0d.item(), zp


def nonneg_row_params(mx: float, f32_0d: np.ndarray) -> tuple[float, float] | None:
    """asymmetric_row_params ``(sf, inv)`` of a row with ``min >= 0`` (+0.0 or -0.0) and max ``mx``, whose zero point
    is -128: ``rmin = +-0``, so ``f32(rmax - rmin) = rmax`` (a float32), ``scale = rmax / 255``, ``zmin = +-0`` and
    ``128 + |zmin| < 127 + |zmax| ~ 382``: ``zd = -128 - zmin = -128``. None where asymmetric_row_params declines
    (``mx`` 0, past FLT_MAX or NaN; a scale below 1 / FLT_MAX)."""
    if not 0.0 < mx <= FLT_MAX:
        return None
    f32_0d[()] = mx / 255.0
    sf = f32_0d.item()
    if not sf >= _SF_MIN:
        return None
    f32_0d[()] = 1.0 / sf
    return sf, f32_0d.item()


def _nonneg_max_min() -> float:
    """The smallest float32 max nonneg_row_params takes (its conditions are monotone in ``mx``: ``mx > 0`` and
    ``f32(mx / 255) >= 1 / FLT_MAX``), found by stepping float32 neighbours from ``255 / FLT_MAX``."""
    f = np.zeros((), np.float32)
    m = np.float32(255.0 * _SF_MIN)
    while nonneg_row_params(float(np.nextafter(m, np.float32(0))), f) is not None:
        m = np.nextafter(m, np.float32(0))
    while nonneg_row_params(float(m), f) is None:
        m = np.nextafter(m, np.float32(np.inf))
    return float(m)


#: nonneg_row_params takes ``mx`` (a float32 value) exactly when ``NONNEG_MAX_MIN <= mx <= FLT_MAX`` (NaN fails):
#: one comparison chain for a caller that already knows the row's min is >= 0.
NONNEG_MAX_MIN = _nonneg_max_min()


_NEG_POS_255 = np.array([[-255.0], [255.0]])  # rng / this: (-scale, scale), float64
_255_F32, _1_F32 = np.array(255, np.float32), np.array(1, np.float32)
_M128_F32, _127_F32 = np.array(-128, np.float32), np.array(127, np.float32)


def half_bits(rows: int, depth: int) -> np.ndarray:
    """The bits of neon_round_inplace's half of a (rows, depth) float32 matrix as uint32: 0.5 on the 8-wide columns,
    HALF_DOWN on the tail (``copysign(half, v)`` is ``half_bits | (bits(v) & 0x80000000)``)."""
    half = np.full((rows, depth), HALF_DOWN[np.dtype(np.float32)], np.float32)
    half[:, : depth & ~7] = 0.5
    return half.view(np.uint32)


@dataclass(frozen=True, eq=False)
class AsymmetricRowsQuantizer:
    """``batch_quantize_floats(x2, True)`` for a (rows, depth) float32 matrix, into buffers made once (21 numpy
    calls, half as many as batch_quantize_floats, no temporaries): q into ``q`` (a (rows, depth) float32 or float64
    view, e.g. the left columns of an augmented product operand), the zero points into ``zp`` (a (rows, 1) view of
    q's dtype, e.g. that operand's last column), the float32 scaling factors into ``sf``. The same arithmetic,
    value for value:

    - ``rmin``, ``rmax`` float32 as min / max reductions with ``initial=0`` (NeonMinMax capped at zero);
      ``rng = f32(rmax - rmin)``; ``scale = f64(rng) / 255``, computed with its negation as ``rng / (-255, 255)``
      (one call; IEEE division is symmetric in sign, so ``-scale`` is exact); ``w = (rmin, rmax) / (-scale,
      scale) = (-zmin, zmax) = (|zmin|, |zmax|)`` (zmin <= 0 <= zmax) written into the diagonal of ``m``, a (2, 2,
      rows) float64 array holding 127 and 128 off it: ``m[0] + m[1] = (128 + |zmin|, 127 + |zmax|)``, the errors
      of the two zero points, and ``m[0] - m[1] = (-zmin - 128, 127 - zmax)``, the zero points ``-128 - zmin`` and
      ``127 - zmax`` (the same real numbers, so the same double roundings);
    - the zero point of the smaller error (``128 + |zmin| < 127 + |zmax|``), rounded half away from zero as
      ``trunc(t + copysign(HALF_DOWN, t))`` (exact for doubles, see HALF_DOWN). batch_quantize_floats clamps it to
      [-128, 127] first, which never binds within the bound below: there ``rng`` is a normal float32 (``sf >=
      1 / FLT_MAX`` needs ``rng >= 255 / FLT_MAX``, above FLT_MIN), within a factor ``1 +- 2^-24`` of ``rmax -
      rmin``, so ``|zmin| + |zmax| = 255 (1 +- 2^-23)``; the min's candidate ``-128 + |zmin| >= -128`` is taken
      where ``|zmin| < |zmax| - 1`` (up to roundings of 2^-44), i.e. ``|zmin| < 127.01``: below 127; the max's
      ``127 - |zmax| <= 127`` where ``|zmax| <= |zmin| + 1``, i.e. ``|zmax| < 128.01``: above -128;
    - ``sf = f32(scale)`` as the float32 quotient ``rng / 255``, ``inv = f32(1.0 / f64(sf))`` as the float32
      quotient ``1 / sf``: the double quotient of two floats rounded once to float32 is the float32 quotient (53 >=
      2 * 24 + 2: double rounding is innocuous for +, -, *, /);
    - q: ``neon_round_inplace`` of ``f32(x * inv)`` (``trunc(v + copysign(half, v))``, ``copysign`` as two bit
      operations on the uint32 views (requantizer.copysign_bits_calls: the same bits as np.copysign in less than
      half its time on a matrix); ``half`` 0.5 on the 8-wide columns, HALF_DOWN on the tail), ``+ zp``,
      clamp to [-128, 127].

    Every array operand of the (rows, depth) calls is either full-sized or a prepared (rows, 1) column: a
    broadcast row vector or a view made per call costs numpy several times the arithmetic at these sizes.

    The bound: ``finite()``, ``sf * inv`` summed over the rows finite, batch_quantize_floats' own test of its
    general branch (those values are its ``sf`` and ``inv`` wherever it is finite). It fails exactly where a
    range is 0 (all-zero rows: ``sf = 0``, ``inv = inf``; batch_quantize_floats' special branch), so small
    that ``1 / sf`` overflows float32 or ``sf`` underflows to 0 (a range below NONNEG_MAX_MIN), past FLT_MAX,
    inf or NaN: the caller then runs batch_quantize_floats (the calls wrote garbage only into the buffers)."""

    q: np.ndarray  # (rows, depth) float32 / float64 output view
    zp: np.ndarray  # (rows, 1) output view, q's dtype
    sf: np.ndarray  # (rows,) float32 output
    half: np.ndarray  # (rows, depth) uint32: half_bits (full: no broadcast)
    # scratch
    r: np.ndarray  # (2, rows) float32: rmin, rmax
    rng: np.ndarray  # (rows,) float32
    s2: np.ndarray  # (2, rows) float64: -scale, scale
    m: np.ndarray  # (2, 2, rows) float64: [[|zmin|, 127], [128, |zmax|]]
    err: np.ndarray  # (2, rows) float64
    nearer_min: np.ndarray  # (rows,) bool
    zd: np.ndarray  # (2, rows) float64
    inv: np.ndarray  # (rows, 1) float32
    a: np.ndarray  # (rows, depth) float32: f32(x * inv), rounded, + zp
    h: np.ndarray  # (rows, depth) float32: copysign(half, .)

    @staticmethod
    def build(q: np.ndarray, zp: np.ndarray) -> AsymmetricRowsQuantizer:
        rows, depth = q.shape
        f32, f64 = np.float32, np.float64
        m = np.empty((2, 2, rows), f64)
        m[0, 1], m[1, 0] = 127.0, 128.0
        return AsymmetricRowsQuantizer(
            q,
            zp,
            np.empty(rows, f32),
            half_bits(rows, depth),
            np.empty((2, rows), f32),
            np.empty(rows, f32),
            np.empty((2, rows), f64),
            m,
            np.empty((2, rows), f64),
            np.empty(rows, bool),
            np.empty((2, rows), f64),
            np.empty((rows, 1), f32),
            np.empty((rows, depth), f32),
            np.empty((rows, depth), f32),
        )

    def calls(self, x2: np.ndarray) -> list:
        """The quantization of ``x2`` as (function, args, kwargs) calls (ops/bound_plan's form, to be bound once to
        a fixed input); its results are batch_quantize_floats' where ``finite()`` holds after them."""
        r, m, zd, a = self.r, self.m, self.zd, self.a
        t, u = zd[1], zd[0]
        o = "out"
        hu = self.h.view(np.uint32)
        return [
            (np.minimum.reduce, (x2, 1, None, r[0]), {"initial": 0.0}),
            (np.maximum.reduce, (x2, 1, None, r[1]), {"initial": 0.0}),
            (np.subtract, (r[1], r[0]), {o: self.rng}),
            (np.divide, (self.rng, _NEG_POS_255), {o: self.s2}),
            (np.divide, (r, self.s2), {o: m.reshape(4, -1)[::3]}),  # the diagonal: |zmin|, |zmax|
            (np.add, (m[0], m[1]), {o: self.err}),
            (np.less, (self.err[0], self.err[1]), {o: self.nearer_min}),
            (np.subtract, (m[0], m[1]), {o: zd}),
            (np.copyto, (t, u), {"where": self.nearer_min}),  # within [-128, 127] (the class)
            (np.copysign, (HALF_DOWN_F64, t), {o: u}),
            (np.add, (t, u), {o: u}),
            (np.trunc, (u,), {o: self.zp[:, 0]}),  # an integer: exact in either dtype
            (np.divide, (self.rng, _255_F32), {o: self.sf}),
            (np.divide, (_1_F32, self.sf), {o: self.inv[:, 0]}),
            (np.multiply, (x2, self.inv), {o: a}),
            *copysign_bits_calls(a.view(np.uint32), self.half, hu),
            (np.add, (a, self.h), {o: a}),
            (np.trunc, (a,), {o: a}),
            (np.add, (a, self.zp), {o: a, "casting": "same_kind"}),
            (clip_ufunc, (a, _M128_F32, _127_F32), {o: self.q}),
        ]

    def __call__(self, x2: np.ndarray) -> bool:
        """Quantize ``x2`` (calls made anew: the tests' entry; the FC op binds them once); False: not usable."""
        with np.errstate(all="ignore"):  # as an invoke runs
            for f, args, kw in self.calls(x2):
                f(*args, **kw)
            return self.finite()

    def finite(self) -> bool:
        """``sum(sf * inv)`` finite: every row's scalars are batch_quantize_floats' (see the class)."""
        return math.isfinite(np.dot(self.sf, self.inv[:, 0]))


#: The smallest symmetric range ``R = max|x|`` RowScalars takes: ``127 / R`` stays finite in float32.
SYM_R_MIN = 1e-36
_HALF_F32 = np.array(0.5, np.float32)
_ZERO_F32 = np.array(0.0, np.float32)
_MIN, _MAX = np.minimum.reduce, np.maximum.reduce


@dataclass(frozen=True, eq=False)
class RowScalars:
    """batch_quantize_floats' scalars of one row (a whole array, any shape, C-contiguous float32), in Python doubles
    and 0-d float32 buffers: the one routine of ops/hybrid_fc.FullyConnectedHybridRow and BatchRowQuantizer (the
    one-batch hybrid conv plans). ``bind(x)`` returns a callable computing them for ``x`` at each call: it writes
    ``sf`` and ``inv`` (asymmetric rows with a negative min also ``lo = -128 - zp`` and ``hi = 127 - zp``, integers)
    and returns ``(sf, zp, nonneg)`` (Python floats; zp 0.0 symmetric), or None for a row the caller's general path
    takes. ``nonneg``: ``v = f32(x * inv)`` is never negative (nor -0.0 where the sign shows), so ``q`` (symmetric)
    or ``q - zp`` (asymmetric, zp = -128) is ``trunc(f32(v + half))`` without a sign or a clamp (BatchRowQuantizer).

    The row's extremes: one max reduction of its bits as uint32 (``top``). A float32 with its sign bit clear orders
    as its bits do, and every one with its sign bit set (-0.0 and negative NaN too) is above them, ordered by
    magnitude (a negative NaN above -inf). So:

    - ``top`` without a sign bit is the row's max (a positive NaN above inf) and the row has no sign bit at all:
      where ``NONNEG_MAX_MIN <= top <= FLT_MAX`` (asymmetric) the scalars of nonneg_row_params inline
      (``sf = f32(top / 255)``, ``inv = f32(1 / sf)``, zp -128); where ``SYM_R_MIN <= top <= FLT_MAX``
      (symmetric) ``R = top``; nonneg either way (no element is -0.0);
    - a negative ``top`` (not NaN) is the row's min; otherwise (-0.0, NaN, inf, zero or tiny rows) a float min
      reduction; then a float max reduction (NaN propagates);
    - symmetric: ``R = max(-min, max)`` within ``SYM_R_MIN <= R <= FLT_MAX`` (else None), ``sf = f32(R / 127)``,
      ``inv = f32(127 / R)`` (a double quotient of two floats rounded once to float32 is the float32 quotient:
      double rounding is innocuous for +, -, *, / as 53 >= 2 * 24 + 2); not nonneg (a -0.0 element keeps its
      sign in q);
    - asymmetric: a min >= 0 (+-0.0 among positives): nonneg_row_params, nonneg; else asymmetric_row_params."""

    asymmetric: bool
    top: np.ndarray  # () float32, written through its uint32 view
    f32_0d: np.ndarray  # () float32 scratch: rounds a Python float to float32
    sf: np.ndarray  # () float32: the row's scaling factor
    inv: np.ndarray  # () float32
    lo: np.ndarray  # () float32: -128 - zp
    hi: np.ndarray  # () float32: 127 - zp

    @staticmethod
    def build(asymmetric: bool) -> RowScalars:
        z = np.zeros((), np.float32)
        return RowScalars(asymmetric, z, z.copy(), z.copy(), z.copy(), z.copy(), z.copy())

    def bind(self, x: np.ndarray):
        """The scalars of ``x`` (C-contiguous float32; its reductions bound once) as a callable."""
        top = partial(_MAX, x.view(np.uint32), None, None, self.top.view(np.uint32))
        return partial(RowScalars._asymmetric if self.asymmetric else RowScalars._symmetric, self, x, top)

    def __call__(self, x: np.ndarray) -> tuple[float, float, bool] | None:
        """The scalars of ``x`` (bound anew: the tests' entry)."""
        return self.bind(x)()

    def _symmetric(self, x: np.ndarray, top) -> tuple[float, float, bool] | None:
        top()
        r = self.top.item()
        nonneg = SYM_R_MIN <= r <= FLT_MAX
        if not nonneg:
            mn = r if r < 0.0 else float(_MIN(x, None))
            mx = float(_MAX(x, None))
            if not (-FLT_MAX <= mn and mx <= FLT_MAX):  # inf or NaN
                return None
            r = max(-mn, mx)
            if not r >= SYM_R_MIN:
                return None
        s = self.sf
        s[()] = r / 127.0
        self.inv[()] = 127.0 / r
        return s.item(), 0.0, nonneg

    def _asymmetric(self, x: np.ndarray, top) -> tuple[float, float, bool] | None:
        top()
        v = self.top.item()
        s = self.sf
        if NONNEG_MAX_MIN <= v <= FLT_MAX:  # no sign bit: min >= 0, max v, nonneg_row_params inline
            s[()] = v / 255.0
            sf = s.item()
            self.inv[()] = 1.0 / sf
            return sf, -128.0, True
        mn = v if v < 0.0 else float(_MIN(x, None))  # a negative top is the row's min
        mx = float(_MAX(x, None))
        if mn >= 0.0:  # -0.0 among nonnegative values
            p = nonneg_row_params(mx, self.f32_0d)
            if p is None:
                return None
            s[()], self.inv[()] = p
            return p[0], -128.0, True
        p = asymmetric_row_params(mn, mx, self.f32_0d)
        if p is None:
            return None
        sf, self.inv[()], zp = p
        s[()] = sf
        self.lo[()] = -128.0 - zp
        self.hi[()] = 127.0 - zp
        return sf, zp, False


#: From this many elements BatchRowQuantizer's ``copysign(half, v)`` runs as two bit operations (measured: the same
#: time near 1000, 128 elements 0.6 vs 0.8 us, 100k elements 54 vs 15 us).
SIGN_BITS_MIN = 1024


@dataclass(frozen=True, eq=False)
class BatchRowQuantizer:
    """``batch_quantize_floats`` of one batch row (the whole input of a one-batch hybrid CONV_2D or
    DEPTHWISE_CONV_2D, flattened), written into a destination of the input's shape as ``q`` (symmetric) or
    ``q - zp`` (asymmetric, what the conv kernels multiply), in 4 (symmetric) or 5-6 (asymmetric: 5 without
    ``plus_zero``) numpy calls, one more from SIGN_BITS_MIN values (copysign as two bit operations),
    bound once (``calls``), or 3 (``nonneg_calls``) for a row RowScalars calls nonneg, after the row's scalars
    (``scalars``, RowScalars). The one routine of the one-batch hybrid conv plans and ops/hybrid_fc's one-row
    FULLY_CONNECTED. The same values as batch_quantize_floats followed by ``q - zp`` (conv/common.quantize_batches),
    bit for bit:

    - ``v = f32(x * inv)``; ``trunc(v + copysign(half, v))`` with ``half`` 0.5 on the 8-wide columns and HALF_DOWN
      (roundf) on the tail (neon_round_inplace; a 0-d 0.5 when the row has no tail); from SIGN_BITS_MIN elements
      ``copysign`` as two bit operations on the uint32 views (np.copysign is not vectorized: 100k elements 54 ->
      15 us);
    - symmetric: no clamp (``|x| <= R`` gives ``|v| <= f32(127 (1 + 2^-24)) < 127.5``); -0.0 stays as there;
    - asymmetric: ``clip(round(v) + zp, -128, 127) - zp`` is ``clip(round(v), -128 - zp, 127 - zp)`` (integers),
      then ``+ 0.0``: the reference's ``(q + zp) - zp`` never leaves -0.0 (a zero is ``x - x`` or ``-0.0 + 0.0``);
      without it (``plus_zero`` False: the caller's bias has no -0.0 element) a -0.0 there only turns zero
      products and a sum of zeros to -0.0, which the scaling keeps a zero and ``+ bias`` makes the bias (or +0.0);
    - a nonneg row (RowScalars: asymmetric, min >= 0, zp = -128; symmetric, no sign bit in the row):
      ``trunc(v + half)`` in 3 calls (``nonneg_calls``): ``v >= 0`` (or -0.0, asymmetric only, where both give
      +0.0 after the ``+ zp``), so the sign is the half's; symmetric: ``v < 127.5`` as above; asymmetric:
      ``f32(rmax - 0) = rmax``, so ``v <= f32(rmax * inv)``: 255 (1 + 2^-24)^3 for a normal scale, up to
      ~255.00007 where the float32 scale is denormal (its rounding error reaches ~2^-22 there), always < 255.5,
      and ``0 <= round(v) <= 255``: the clamp to ``[-128 - zp, 127 - zp] = [0, 255]`` never binds, and a sum
      with ``+0.5`` is never -0.0."""

    asymmetric: bool
    half: np.ndarray  # () 0.5, or the input's shape: 0.5 on the 8-wide columns of the flat row, HALF_DOWN on the tail
    scalars: RowScalars
    h: np.ndarray  # the input's shape, float32: copysign(half, v)
    plus_zero: bool  # asymmetric: + 0.0 after the clamp (a -0.0 of q - zp could show in the output)

    @staticmethod
    def build(shape: tuple, asymmetric: bool, plus_zero: bool = True) -> BatchRowQuantizer:
        k = int(np.prod(shape))
        if k % 8:
            half = np.full(k, HALF_DOWN[np.dtype(np.float32)], np.float32)
            half[: k & ~7] = 0.5
            half = half.reshape(shape)
        else:
            half = _HALF_F32
        scalars = RowScalars.build(asymmetric)
        return BatchRowQuantizer(asymmetric, half, scalars, np.empty(shape, np.float32), plus_zero)

    def calls(self, x: np.ndarray, dest: np.ndarray, q: np.ndarray | None = None) -> list:
        """The quantized row into ``dest`` (``x``'s shape, float32, any layout) as (function, args, kwargs)
        triples (ops/bound_plan's form), once ``scalars`` ran for ``x``. ``q``: where the rounded values go
        (``dest`` by default; ops/hybrid_fc.FullyConnectedHybridRow's product operand, float32 or float64: the
        rounding itself runs in ``dest``, float32, as the tie rule needs), the clamp and ``+ 0.0`` there too."""
        o, s = "out", self.scalars
        q = dest if q is None else q
        if self.h.size >= SIGN_BITS_MIN:  # copysign(half, v) as (bits(v) & 0x80000000) | bits(half): the same bits
            sign = copysign_bits_calls(dest.view(np.uint32), self.half.view(np.uint32), self.h.view(np.uint32))
        else:
            sign = [(np.copysign, (self.half, dest), {o: self.h})]
        calls = [
            (np.multiply, (x, s.inv), {o: dest}),
            *sign,
            (np.add, (dest, self.h), {o: dest}),
            (np.trunc, (dest,), {o: q}),  # float32 calls: a cast to uint8 costs more than a trunc
        ]
        if self.asymmetric:
            calls.append((clip_ufunc, (q, s.lo, s.hi), {o: q}))
            if self.plus_zero:
                calls.append((np.add, (q, _ZERO_F32), {o: q}))
        return calls

    def nonneg_calls(self, x: np.ndarray, dest: np.ndarray, q: np.ndarray | None = None) -> list:
        """``calls`` for a row ``scalars`` called nonneg: ``trunc(v + half)`` (into ``q``, by default ``dest``)."""
        o = "out"
        return [
            (np.multiply, (x, self.scalars.inv), {o: dest}),
            (np.add, (dest, self.half), {o: dest}),
            (np.trunc, (dest,), {o: dest if q is None else q}),
        ]
