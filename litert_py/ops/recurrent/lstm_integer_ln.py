"""The integer layer norm of the 8x8_16 LSTM's gates (lstm_eval.cc CalculateLstmGateInteger8x8_16 ->
portable_tensor_utils.cc PortableApplyLayerNorm) for lstm_integer_plain's fast step: several gates and batch rows
at once on its transposed (G, n, B) int64 buffers holding each gate's values plus its table segment's centre, in 24
numpy calls a block (3 more where u may pass int32, 4 more with a left shift of the final multiplier, 1 more where
the centres do not fold) into prepared buffers, plus one Python pass over the G B rows for their scalars.

Per gate and batch row (``v`` the n int16 pre-activations, all arithmetic exact in int64: ``|v| <= 2^15``)::

    mean  = wrap32(trunc(1024 sum(v) / n))             |1024 sum v / n| <= 2^25: no wrap in fact
    var2  = wrap32(trunc((sum(v^2) (2^20 // n) - mean^2) / 2^20)),  the variance guard where < 1
    M, e  = GetInvSqrtQuantizedMultiplierExp(var2, -1)  (``inv_sqrt``: quant.gemmlowp.inv_sqrt_int32)
    x     = MBQM(1024 v - mean, M, e)                  |1024 v - mean| < 2^26, e <= 0: |(1024 v - mean) M| < 2^57
    u     = round_half_away(x w + b, 1024) = (x w + b + 512 - [x w + b <= 0]) >> 10    w, b the layer-norm weights
    out   = sat16(MBQM(wrap32(u), m_ln, e_ln + 12))

The second line's operand is at most 2^30 (``|var| / 2^20``): LiteRT's int32 casts of the mean and the variance
are identities. ``u`` (|x w + b| < 2^47) is wrapped to int32 as LiteRT's cast does, where it can pass int32.

The centres ``seg`` (``ln_plan``; v = g - seg) are taken off inside the row scalars (``sum v = sum g - n seg``,
``sum v^2 = sum g^2 - (2 sum g - n seg) seg``, Python ints from int64 sums: ``0 <= seg < 2^20``, n < 2^22; the
first product as ``g 1024 M + (... - seg 1024 M)``, |g 1024 M| < 2^62, exact modulo 2^64 with an in-range result)
and put back in the final rounding: ``(u m + 2^30 + (2^(r-1) + seg 2^r) 2^31) >> 31 = y + 2^(r-1) + seg 2^r``,
negative y where below ``2^(r-1) + seg 2^r``, so the shift by r gives MBQM + seg and the clip is to the int16
bounds + seg. No int64 overflow where ``|u m| < 2^62`` (int32 u, m < 2^31) and ``(seg << r) + 2^(r-1) + 1 <
2^31``, checked per block by ``ln_plan`` (else seg is added after the clip). The wrap of u is left out where
``ln_plan`` proves u in int32: ``|x| <= |1024 v - mean| <= 1024 (2^16 - 1) = 2^26 - 1024`` (SRDHM by M < 2^31
and the rounding shift do not grow it), so ``(2^26 - 1024) max|w| + max|b + 512| + 1 <= 2^41 - 1`` keeps ``x w +
b + 512 - [.]`` in [-2^41, 2^41) and u in [-2^31, 2^31).

The range of (M, e), so that every row takes the same int64 form (``0 < M < 2^31``, ``-12 <= e <= 0``), for every
int32 argument (var2 in [1, 2^30], the guard in [1, 2^31), checked by ``ln_plan``), from gemmlowp's algorithm
(common.h GetInvSqrtQuantizedMultiplierExp): x <= 1 gives (2^31 - 1, 0). Else ``shift`` starts at 11; x >= 2^29
is divided by 4 at most once (x < 2^31), shift 12; then x is shifted left by ``pairs = (CLZ(x) - 1) // 2 - 1``
bit pairs (0 .. 13) to 2^27 <= x < 2^29 and shift -= pairs: shift is in [-2, 12] (12 only with pairs = 0). The
result is ``e = -max(shift, 0)`` in [-12, 0]. The Newton-Raphson iteration ``y <- 3/2 y - a/2 y^3`` (Q3.28,
``half`` = RDBPOT(x >> 1, 1) in [2^25, 2^27], a = half 2^-27 in [1/4, 1]) from y = 1 increases monotonically
towards 1/sqrt(a) in [1, 2] (f(y) = 3/2 y - a/2 y^3 is increasing below 1/sqrt(a) and fixes it). Swept over all
3 2^25 + 1 values of ``half`` with gemmlowp's saturating arithmetic: every iterate y is in [2^28, 2^29), every
difference ``t`` below 2^26 in magnitude, no saturation fires (test_lstm_integer_ln.py repeats the sweep at both
ends of the range), and y (sqrt 2) / 2 (SRDHM with 1518500250) is in [189812531, 379624593], times 2^-shift <= 4
where shift < 0: below 2^31, no wrap. So 0 < M < 2^31.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...quant.gemmlowp import inv_sqrt_int32 as inv_sqrt
from ..common import clip_ufunc
from .lstm_common import I16_HI, I16_LO, K512, M32, P31, S10, S31

#: per exponent e in [-12, 0] (indexed by e: negative indices from the end): SRDHM's and RDBPOT's nudge
#: 2^30 + 2^(-e-1) 2^31, and the threshold below which SRDHM's result is negative (-2^62: none where e = 0)
_ROUNDING = [((1 << 30) + ((1 << r >> 1) << 31), (1 << r >> 1) if r else -(1 << 62)) for r in (0, *range(12, 0, -1))]


@dataclass(frozen=True, eq=False)
class LayerNormPlan:
    """One block of G gates' layer-norm constants, each (G, n, 1) int64 (per gate ones repeated: a ufunc on
    same-shaped operands is about twice as fast as one broadcasting over n) for (G, n, B) buffers holding the gate
    values plus their segment centres (``seg``: taken off and put back inside the arithmetic, not by calls)."""

    w: np.ndarray  # (G, n, 1) the layer-norm weights
    b: np.ndarray  # (G, n, 1) the bias + 512
    guard: list  # per gate: the variance guard
    seg: list  # per gate: the segment centre of the values (0: none)
    m: np.ndarray  # (G, n, 1) the final multiplier
    left: np.ndarray | None  # (G, n, 1) its left shift (None: none)
    right: np.ndarray  # (G, n, 1) its right shift
    k: np.ndarray  # (G, n, 1) 2^30 + (2^(right - 1) + seg 2^right) 2^31 (seg 0 where not ``fold``)
    thr: np.ndarray  # (G, n, 1) 2^(right - 1) + seg 2^right where right > 0 (below: SRDHM negative), else -2^62
    lo: np.ndarray  # (G, n, 1) the int16 clip's bounds (plus seg where ``fold``)
    hi: np.ndarray
    seg_add: np.ndarray | None  # (G, n, 1) the segment centres added after the clip (None: folded into k)
    wrap: bool  # u may pass int32: wrapped as LiteRT's cast does


def ln_plan(gates: list, segs: list | None = None) -> LayerNormPlan | None:
    """The constants of ``gates`` (IntGate objects in block order; None when one has no layer norm, a variance
    guard past int32 (LiteRT's int cast) or a final multiplier outside the int64 form), for values offset by the
    per-gate ``segs`` (default 0). Two bounds checked here (the module docstring): ``wrap`` where u can pass int32,
    and the centres folded into the final rounding's constant where ``(seg << right) + 2^(right-1) + 1 < 2^31``
    on every gate of the block (with ``|u m| < 2^62``: no int64 overflow)."""
    if not all(
        g.ln is not None and 1 <= g.guard < 2**31 and 0 <= g.m_ln[0] < 2**31 and -31 <= g.m_ln[1] + 12 <= 31
        for g in gates
    ):
        return None
    n = int(gates[0].ln.shape[0])
    segs = [int(s) for s in (segs or [0] * len(gates))]
    if n >= 1 << 22 or not all(0 <= s < 1 << 20 for s in segs):  # sum g^2 < 2^22 (2^20 + 2^15)^2 < 2^63
        return None
    es = [g.m_ln[1] + 12 for g in gates]
    rights = [max(-e, 0) for e in es]
    fold = all(((s << r) + ((1 << r) >> 1) + 1) < (1 << 31) for s, r in zip(segs, rights))
    fs = segs if fold else [0] * len(gates)

    def col(vals):
        return np.repeat(np.array(vals, np.int64), n).reshape(-1, n, 1)

    e, right, seg = col(es), col(rights), col(fs)
    h = (1 << right) >> 1
    w = np.stack([g.ln for g in gates]).astype(np.int64)
    b = np.stack([g.ln_bias for g in gates]).astype(np.int64) + 512
    # |x| <= 2^26 - 1024 (|1024 v - mean| <= 2^26 - 1024, M 2^e < 1): u = (x w + b + 512 - [.]) >> 10 in int32
    wrap = (2**26 - 1024) * int(np.abs(w).max(initial=0)) + int(np.abs(b).max(initial=0)) + 1 >= 2**41
    return LayerNormPlan(
        w=w[:, :, None],
        b=b[:, :, None],
        guard=[int(g.guard) for g in gates],
        seg=segs,
        m=col([g.m_ln[0] for g in gates]),
        left=np.maximum(e, 0) if (e > 0).any() else None,
        right=right,
        k=(1 << 30) + ((h + (seg << right)) << 31),
        thr=np.where(right > 0, h + (seg << right), -(1 << 62)),
        lo=I16_LO + seg,
        hi=I16_HI + seg,
        seg_add=None if fold else col(segs),
        wrap=bool(wrap or (e > 0).any()),
    )


class LayerNormBuffers:
    """The scratch of ``layer_norm`` for a (G, n, B) block of ``p`` (made once per sequence): the row sums go out
    through ``sums`` (2, G, B) in one list, the per-row scalars through ``vals`` (a Python list, 4 G B) into
    ``rows1`` (4, G, 1, B), repeated over n into ``rows``; ``consts`` per row (gate-major): the guard, the centre
    times 1024, the centre and n times it; the plan's constants as (G, n, B) arrays (``w``, ``b``, ...)."""

    def __init__(self, p: LayerNormPlan, shape: tuple):
        g, n, b = shape
        self.x = np.empty(shape, np.int64)
        self.neg = np.empty(shape, bool)
        self.sums = np.empty((2, g, b), np.int64)
        self.flat_sums = self.sums.reshape(2, -1)
        self.vals = [0] * (4 * g * b)
        self.rows1 = np.empty((4, g, 1, b), np.int64)
        self.flat1 = self.rows1.reshape(-1)
        self.rows = np.empty((4, g, n, b), np.int64)
        self.consts = [(guard, seg << 10, seg, n * seg) for guard, seg in zip(p.guard, p.seg) for _ in range(b)]
        # the plan's (G, n, 1) constants repeated over the B rows (an in-place ufunc with a broadcast operand makes a
        # block-sized temporary at every call: 11 % of the layer norm at B = 4)
        names = ("w", "b", "m", "k", "thr", "right", "lo", "hi", "left", "seg_add")
        for name in names:
            a = getattr(p, name)
            setattr(self, name, a if a is None or b == 1 else np.ascontiguousarray(np.broadcast_to(a, shape)))


def layer_norm(p: LayerNormPlan, v: np.ndarray, out: np.ndarray, buf: LayerNormBuffers) -> None:
    """``out`` (G, n, B) int64 = the layer norm of ``v`` (G, n, B) int64 holding int16 values plus the gates'
    ``p.seg``, plus ``p.seg`` (see the module docstring); ``out`` may be ``v``."""
    n = v.shape[1]
    x, neg, vals, sums = buf.x, buf.neg, buf.vals, buf.sums
    np.add.reduce(v, axis=1, out=sums[0])
    np.multiply(v, v, out=x)
    np.add.reduce(x, axis=1, out=sums[1])
    k20 = (1 << 20) // n
    # per row: MBQM(1024 v - mean, M, -r) = (Y - [Y < thr]) >> r, Y = (v 1024 M + 2^30 + 2^(r-1) 2^31 - mean M) >> 31
    # with v = g - seg: sum v = sum g - n seg, sum v^2 = sum g^2 - (2 sum g - n seg) seg, v 1024 M = g 1024 M - ...
    rows = len(buf.consts)
    s_all, q_all = buf.flat_sums.tolist()
    for i, (s, q, (guard, seg10, seg, nseg)) in enumerate(zip(s_all, q_all, buf.consts)):
        q -= (2 * s - nseg) * seg
        a = (s - nseg) << 10
        mean = a // n if a >= 0 else -(-a // n)
        var = q * k20 - mean * mean
        var2 = var >> 20 if var >= 0 else -(-var >> 20)
        m, e = inv_sqrt(var2 if var2 >= 1 else guard)  # 0 < m < 2^31, -12 <= e <= 0 (the module docstring)
        k, thr = _ROUNDING[e]
        vals[i] = m << 10
        vals[i + rows] = k - (mean + seg10) * m
        vals[i + 2 * rows] = thr
        vals[i + 3 * rows] = -e
    buf.flat1[:] = vals
    rows = buf.rows
    np.copyto(rows, buf.rows1)
    np.multiply(v, rows[0], out=x)
    x += rows[1]
    x >>= S31
    np.less(x, rows[2], out=neg)
    x -= neg
    x >>= rows[3]
    x *= buf.w
    x += buf.b
    np.less_equal(x, K512, out=neg)
    x -= neg
    x >>= S10
    if p.wrap:
        x += P31  # wrap32 of u
        x &= M32
        x -= P31
        if buf.left is not None:
            x <<= buf.left
            x += P31
            x &= M32
            x -= P31
    x *= buf.m
    x += buf.k
    x >>= S31
    np.less(x, buf.thr, out=neg)
    x -= neg
    x >>= buf.right
    clip_ufunc(x, buf.lo, buf.hi, out=out)
    if buf.seg_add is not None:
        out += buf.seg_add
