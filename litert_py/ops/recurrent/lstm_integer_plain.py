"""The 8x8_16 integer LSTM time step in few numpy calls, with or without peepholes, layer norm and projection
(``LstmIntegerCell.run``'s fast path). The arithmetic is lstm_integer.py's (LiteRT lstm_eval.cc
LstmStepInteger8x8_16, CalculateLstmGateInteger8x8_16, UpdateLstmCellInteger, CalculateLstmOutputInteger8x8_16;
common.h MultiplyByQuantizedMultiplier; gemmlowp fixedpoint.h), reformulated; every step of it is proven exact at
prepare (``plain_plan``: None where a bound fails, and ``run`` keeps its int64 steps).

One step, the four gates side by side (columns o, i, f, g; CIFG: the i column repeats f's weights), h stored as
h + 128 in float64 (with a 1 for the constant row), 18 numpy calls (25 with a projection)::

    a  = [h + 128, 1] @ W'                        W' = W_h M 2^ls 2^-31, constant row (eff_h - 128 colsum) ... (1)
    Y  = int(a);  Y -= Y < thr;  Y >>= rs         = MBQM(W_h h + eff_h) + P                               (2)
    G  = Y + gx[t]                                gx: sat16(MBQM(W_x x + eff_x)) + segment - P, all steps  (3)
    Z  = TABLE[[G, c]]                            o, i 2^-(30+cs), f 2^-15, g; and c itself (one take)     (4)
    c  = int([i g, f c] + copysign(1/2, [g, c])) summed       RDBPOT(i g, 30 + cs) + RDBPOT(f c, 15)       (5)
    h' = floor(clip(o T[c] + K[c], 0, 255))       sat8(MBQM(o tanh(c), M_hidden) + z_hidden) + 128         (6)
    projection: h = clip(MBQM([h' , 1] @ W_p') + P, ...) + z + 128 - P   as (1)-(2), one clip for int8 and
    proj_clip (z_hidden enters (6) negated there, as in CalculateLstmOutputInteger8x8_16)

(1)-(2) MBQM(acc, M, e) (``ls = max(e, 0)``, ``rs = max(-e, 0)``, ``ab = acc M 2^ls``, no int32 wrap: ``|acc|
    2^ls < 2^31``) is ``RDBPOT(y, rs)``, ``y = floor((ab + 2^30) / 2^31)`` (SRDHM rounds half up), RDBPOT is
    ``(y + 2^(rs-1) - [y < 0]) >> rs``. ``a = (ab + 2^30) 2^-31 + 2^(rs-1) + P 2^rs`` with ``P 2^rs`` above
    ``max|ab| 2^-31`` is positive, so the cast is the floor: ``Y = y + 2^(rs-1) + P 2^rs``, ``y < 0`` where
    ``Y < thr = 2^(rs-1) + P 2^rs`` (0 where rs = 0: nothing to correct). ``a`` is exact in float64 when
    ``255 sum|W_h| M 2^ls + |constant| < 2^53`` and rs <= 21 (``_gate_constants``): every partial sum of the
    product is a multiple of 2^-31 with a numerator below 2^53, whatever the summation order (or FMA). The same
    derivation as litert_py.quant.fixedpoint.requantize_float64_ok, here with the constants in the weights.
(3) The input terms do not depend on the recurrence: ``input_terms`` computes them for every step at once the
    same way (x + 128, one product, then clipped to int16 + P), or lstm_integer.py's int64 form where their bound
    fails. The table's gate segments are ``2^15 + max|MBQM(W_h h + eff_h)|`` wide on each side, holding the
    activation of the saturated value: no clip per step (wider terms, past 2^15, keep a clip of G to int16).
(4) The activation tables are gemmlowp's int16 logistic / tanh (tabulated over all inputs), scaled by powers of
    two: ``i g`` and ``f c`` are below 2^30 and exact in float64. c's own segment maps ``R_ig + R_fc`` (|.| <
    2^16, the sum before saturation) to sat16 and the cell clip, so it needs no clip either; c indexes raw
    (negative indices wrap to the table's end).
(5) ``trunc(x + copysign(1/2, x))`` is rounding half away from zero, RDBPOT's; ``i g`` has the sign of g and
    ``f c`` that of c (i, f >= 0; a zero product rounds to 0 either way).
(6) ``MBQM(x, M, -rs)`` of ``x = o tanh(c)`` (``|x| < 2^30``) is ``floor((x M + K(x)) / 2^(31+rs))``, ``K = 2^30 +
    2^(30+rs) - 2^31 [x < 0]``; ``T[c] = tanh(c) M 2^-(31+rs)`` is exact, ``o T`` and ``+ K`` round once each,
    by at most the spacing of the largest |o T + K|. ``_hidden_table`` proves that every threshold of the
    clipped result (bisection with the integer MBQM, ``_hidden_thresholds``) and the product before it, and x
    = -1, 0, are more than twice that away from a multiple of 2^(31+rs); in between, consecutive products step by
    M > that slack, so no rounding crosses an integer.
(7) Peepholes (CalculateLstmGateInteger8x8_16's VectorBatchVectorCwiseProductAccumulate, 12 more calls): G is
    clipped to int16 (LiteRT saturates before the term), then ``R = MBQM(peep c, m, -rs)`` is added, i's and f's
    from the previous step's c, o's from the new one (its sigmoid taken again). In int64, exact: ``|peep c| <=
    2^30`` (no int32 wrap), ``|peep M c| < 2^61``; ``R = ((peep M c + 2^30 + 2^(rs-1) 2^31) >> 31 - [y < 0]) >>
    rs`` as (2), where the columns below n_output & ~15 (MultiplyByQuantizedMultiplier4Rows: vqrdmulh, then a
    rounding shift with ties up) skip the correction. Refused: a left shift (e > 0, ``_peephole_constants``), and
    (``peep_rows_only``, at run) LiteRT's flat peephole striding the cell state by n_output (time-major, n_output
    < n_cell) with more than one batch row. The segments are widened by R's bound ``max|peep| 2^15 M 2^-(31+rs)
    + 2`` up to 2^15 (sat16(G) + R indexes inside them); past it G is clipped again after R (``peep_clip``).
(8) Layer norm (lstm_integer_ln.py, 24 calls a block, two blocks with peepholes; int64, exact): G clipped to
    int16 (and, with peepholes, clipped again after R), the gates normalized in place, the segment centres taken
    off and put back inside the layer norm's arithmetic. Without peepholes all four gates at once before the cell
    update; with them i, f, g there and o after its term from the new c.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ...quant.gemmlowp import logistic16_table, tanh16_table
from ..common import clip_ufunc
from .lstm_common import mbqm
from .lstm_integer_ln import LayerNormBuffers, layer_norm, ln_plan

_TWO53 = 1 << 53
_MAX_REACH = 1 << 15  # wider gate terms keep the int16 clip (the table would pass 5.2 MB)
_HW_STEP = 1 << 12  # segment half-widths rounded up to this: cells of one model share their tables
_X_LO, _X_HI = -32767 * 32768, 32767 * 32767  # o tanh(c): o in [0, 32767], tanh(c) in [-32768, 32767]
HALF, F0, F255, S31 = np.array(0.5), np.array(0.0), np.array(255.0), np.array(31, np.int64)


@dataclass(frozen=True, eq=False)
class PlainIntegerPlan:
    w: np.ndarray  # (4 n, n_output + 1) float64: W' transposed (the last column: the effective bias and K, scaled)
    thr: np.ndarray  # (4 n, 1) int64: Y < thr where SRDHM's result is negative (never where rs = 0)
    rs: np.ndarray  # (4 n, 1) int64: the right shifts
    order: np.ndarray  # (4 n,) int64: the columns of the (i,) f, c, o stacked input terms in o, i, f, g order
    x_seg: np.ndarray  # (4 n,) int64: added to the saturated input terms: the segment centre - P (of W_h)
    wx: np.ndarray | None  # (n_input + 1, 4 n) float64: the input terms' W' (None: lstm_integer.py makes them)
    x_consts: tuple  # (Y's threshold, rs, clip low, clip high (None: no clip), x_seg - P), each (4 n,) int64
    lo: np.ndarray | None  # (4 n, 1) int64: the segment centre - 32768 (None: no clip, the segments are wider)
    hi: np.ndarray | None  # (4 n, 1) int64: the segment centre + 32767
    table: np.ndarray  # float64: c itself at 0 .. 32767 and at the end (negative c), between them o, i, f, g
    c_lo: int  # the cell state's bounds (int16 and the cell clip)
    c_hi: int
    clips_state: bool  # a cell clip narrower than int16: a state read past it is not what the table holds
    hidden: np.ndarray  # float64 (2, 131072): _hidden_table, transposed
    proj: tuple | None  # projection: (W' transposed (n_output, n_cell + 1), Y's threshold, rs, clip low, clip high,
    #                     offset)
    peep: tuple | None  # peepholes: (3, n, 1) int64 each, rows o, i, f: (peep M, K, Y's threshold, rs)
    peep_clip: bool  # the peephole terms pass the segments: G + term clipped to int16 again
    peep_rows_only: bool  # LiteRT's flat peephole strides the cell state by n_output < n_cell: batch 1 only
    ln: tuple | None  # layer norm: (LayerNormPlan of o, i, f, g, None), with peepholes (of i, f, g; of o)
    n_cell: int
    n_output: int


def _gate_constants(m: int, e: int, w: np.ndarray, eff: np.ndarray):
    """One gate's columns: (W' rows (n_output + 1, n), P, Y's threshold, rs, a bound of |MBQM|) or None when
    outside the exact range (see the module docstring). ``w`` (n_output, n) int64, ``eff`` (n,) int64."""
    if not (0 <= m < 2**31 and -31 <= e <= 31):
        return None
    ls, rs = max(e, 0), max(-e, 0)
    mult = m << ls
    bound = int((128 * np.abs(w).sum(axis=0) + np.abs(eff)).max(initial=0))
    if (bound << ls) >= 2**31:
        return None
    bm = bound * mult
    if bm >= _TWO53 or rs > 21:  # the constant row alone would reach 2^53 (and int64 could overflow below)
        return None
    p = ((bm >> 31) + 2 + (1 << rs) - 1) >> rs  # P 2^rs > bm 2^-31: a' > 0
    half = (1 << (rs - 1)) if rs else 0
    # the stored hidden value is h + 128: W_h h = W_h (h + 128) - 128 colsum(W_h)
    const = (eff - 128 * w.sum(axis=0)) * mult + (1 << 30) + ((half + p * (1 << rs)) << 31)
    if int((255 * np.abs(w).sum(axis=0) * mult + np.abs(const)).max(initial=0)) >= _TWO53:
        return None
    rows = np.vstack([w * float(mult), const[None, :].astype(np.float64)]) * 2.0**-31
    return rows, p, (half + p * (1 << rs)) if rs else 0, rs, (bm >> (31 + rs)) + 2


def _hidden_thresholds(m: int, e: int, z: int) -> np.ndarray:
    """The least x in [_X_LO, _X_HI] with ``clip(mbqm(x, m, e) + z, -128, 127) >= v`` for v = -127 .. 127
    (_X_HI + 1 where none): bisection over all v at once with the integer mbqm (exact)."""
    v = np.arange(-127, 128, dtype=np.int64)
    lo = np.full(v.shape, _X_LO, np.int64)
    hi = np.full(v.shape, _X_HI + 1, np.int64)
    while (lo < hi).any():
        mid = (lo + hi) >> 1
        ok = np.clip(mbqm(mid, m, e) + z, -128, 127) >= v
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid + 1)
    return lo


def _hidden_table(m: int, e: int, z: int, tanh_c: np.ndarray) -> np.ndarray | None:
    """(65536, 2) float64 indexed by the raw cell state (negative wraps): ``tanh(c) M 2^-(31+rs)`` and
    ``z + 128 + (2^(30+rs) +- 2^30) 2^-(31+rs)`` (the sign of tanh(c)), so that ``floor(clip(o T + K, 0, 255))
    = clip(mbqm(o tanh(c), M, e) + z, -128, 127) + 128`` (two float64 roundings, checked here: None where
    not proven, see the module docstring)."""
    if not (1 << 30 < m < 1 << 31 and -31 <= e < 0):
        return None
    rs = -e
    d = 1 << (31 + rs)
    t = tanh_c.astype(np.int64)
    t1 = t * m * 2.0 ** -(31 + rs)  # exact: |t m| < 2^46
    k = (z + 128) + np.where(t >= 0, (1 << (30 + rs)) + (1 << 30), (1 << (30 + rs)) - (1 << 30)) / d
    big = float(np.abs(t1).max() * 32767 + np.abs(k).max())
    slack = 2 * np.spacing(big) * d  # both roundings, in units of 2^-(31+rs), doubled
    if m <= slack:
        return None
    thr = _hidden_thresholds(m, e, z)
    xs = {-1, 0} | {int(x) for x in thr if _X_LO < x <= _X_HI} | {int(x) - 1 for x in thr if _X_LO < x <= _X_HI}
    for x in xs:
        num = x * m + (1 << 30) + (1 << (30 + rs)) - ((1 << 31) if x * m < -(1 << 30) else 0)
        res = num % d
        if not slack < res < d - slack:
            return None
    return np.ascontiguousarray(np.stack([t1, k], axis=1))


def _cell_values(c_lo: int, c_hi: int) -> np.ndarray:
    """The cell state R_ig + R_fc (|.| < 2^16) as a raw index (a negative one wraps to the end) -> c itself,
    saturated and clipped, as float64."""
    c_raw = np.concatenate([np.arange(0, 1 << 16), np.arange(-(1 << 16), 0)])
    return np.clip(c_raw, c_lo, c_hi).astype(np.float64)


@functools.lru_cache(maxsize=8)
def _gate_table(hw: int, cifg: bool, cs: int, c_lo: int, c_hi: int) -> np.ndarray:
    """The read-only table ``run_plain`` takes the gates and the cell state from: c, then segments of half-width
    ``hw`` of o's sigmoid, i's (CIFG: 1 - f's) scaled by 2^-(30 + cs), f's scaled by 2^-15, g's tanh, then the
    negative c (shared by the cells of a model with the same parameters: 2.6-5.2 MB each)."""
    c_vals = _cell_values(c_lo, c_hi)
    raw = np.clip(np.arange(-hw, hw), -32768, 32767) + 32768
    sig = logistic16_table(3).astype(np.float64)[raw]
    i_tab = (32767 - sig) if cifg else sig
    table = np.concatenate(
        [
            c_vals[: 1 << 16],
            sig,
            i_tab * 2.0 ** -(30 + cs),
            sig * 2.0**-15,
            tanh16_table(3).astype(np.float64)[raw],
            c_vals[1 << 16 :],
        ]
    )
    table.flags.writeable = False
    return table


@functools.lru_cache(maxsize=8)
def _hidden_table_of(m: int, e: int, z: int, cs: int, c_lo: int, c_hi: int) -> np.ndarray | None:
    """``_hidden_table`` over the raw cell state (clipped as ``_gate_table``'s c), transposed, read-only; None
    where it is not proven."""
    c_vals = _cell_values(c_lo, c_hi)
    hidden = _hidden_table(m, e, z, tanh16_table(15 + cs)[c_vals.astype(np.int64) + 32768])
    if hidden is None:
        return None
    hidden = np.ascontiguousarray(hidden.T)
    hidden.flags.writeable = False
    return hidden


def _peephole_constants(cell, cols: list) -> tuple | None:
    """The peephole terms' constants, rows o, i, f (CIFG: i repeats f's), each (3, n, 1) int64: ``peep M``, ``K``,
    Y's threshold and rs, and a bound of their |MBQM| (see (7) in the module docstring); None for a left shift."""
    n, n_out = cell.n_cell, cell.n_output
    k16 = n_out & ~15  # MultiplyByQuantizedMultiplier4Rows's columns: ties up, no correction
    pm, k, thr, rs = (np.zeros((3, n), np.int64) for _ in range(4))
    reach = 0
    for j, name in enumerate(cols[:3]):
        g = cell.gates[name]
        m, e = g.m_p
        if not (0 <= m < 2**31 and -31 <= e <= 0):
            return None
        r = -e
        half = (1 << (r - 1)) if r else 0
        pm[j, :n_out] = g.peep * m
        k[j] = (1 << 30) + (half << 31)
        rs[j] = r
        thr[j] = -(1 << 62)
        if r:
            thr[j, k16:n_out] = half
        reach = max(reach, ((int(np.abs(g.peep).max(initial=0)) * 32768 * m) >> (31 + r)) + 2)
    return tuple(a[:, :, None] for a in (pm, k, thr, rs)), reach


def plain_plan(cell) -> PlainIntegerPlan | None:
    """The fast step's constants for an ``LstmIntegerCell`` (None when a bound of the module docstring does not
    hold)."""
    gates = cell.gates
    cifg = "i" not in gates
    n = cell.n_cell
    names = [g for g in ("i", "f", "c", "o") if g in gates]
    pos = {g: j for j, g in enumerate(names)}
    cols = ["o", "f" if cifg else "i", "f", "c"]  # o, i, f, g
    w_rows, consts = [], []
    for g in cols:
        gt = gates[g]
        q = _gate_constants(gt.m_h[0], gt.m_h[1], gt.w_h, gt.eff_h)
        if q is None:
            return None
        w_rows.append(q[0])
        consts.append(q[1:])
    cc = cell.cell_clip
    c_lo, c_hi = (max(-32768, -cc), min(32767, cc)) if cc > 0 else (-32768, 32767)
    # segments of half-width 2^15 + max|MBQM(W_h h + eff_h)| hold sat16 of every possible index: no clip
    reach = max(c[3] for c in consts)
    clip = reach > _MAX_REACH
    peep = None
    if gates["o"].peep is not None:  # G clipped to int16, then the peephole terms added: the segments hold them
        q = _peephole_constants(cell, cols)
        if q is None:
            return None
        peep, reach, clip = q[0], q[1], True  # wider peephole terms: G clipped again after them (peep_clip)
    ln = any(g.ln is not None for g in gates.values())
    if ln:  # (8): G, with the peephole terms, clipped to int16 first
        clip, reach = True, _MAX_REACH + 1
    hw = 32768 + (-(-reach // _HW_STEP) * _HW_STEP if reach <= _MAX_REACH else 0)
    centres = [(1 << 16) + hw + 2 * hw * j for j in range(4)]
    seg = np.repeat(np.array(centres, np.int64), n)  # the segments' centres
    if ln:  # normalized in place, the centres taken off and put back inside the layer norm's arithmetic
        blocks = [gates[g] for g in cols]
        if peep is None:
            ln = (ln_plan(blocks, centres), None)
        else:
            ln = (ln_plan(blocks[1:], centres[1:]), ln_plan(blocks[:1], centres[:1]))
        if ln[0] is None or (peep is not None and ln[1] is None):
            return None
    else:
        ln = None
    table = _gate_table(hw, cifg, cell.cs, c_lo, c_hi)
    z_h = cell.z_hidden if cell.proj is None else -cell.z_hidden
    hidden = _hidden_table_of(*cell.m_hidden, z_h, cell.cs, c_lo, c_hi)
    if hidden is None:
        return None
    proj = None
    if cell.proj is not None:  # sat8(MBQM(W_p h' + eff_p) + z) with the projection clip, as the gates' products
        q = _gate_constants(*cell.m_proj, cell.proj, cell.proj_eff)
        if q is None:
            return None
        pc = cell.proj_clip
        lo8, hi8 = (max(-128, -pc), min(127, pc)) if pc > 0 else (-128, 127)
        z = cell.z_out_state
        proj = (np.ascontiguousarray(q[0].T), np.array(q[2], np.int64), np.array(q[3], np.int64))
        proj += tuple(np.array(v, np.int64) for v in (lo8 - z + q[1], hi8 - z + q[1], z + 128 - q[1]))
    x_seg = seg - np.repeat(np.array([c[0] for c in consts], np.int64), n)
    wx, x_consts = None, ()
    qx = [_gate_constants(gates[g].m_x[0], gates[g].m_x[1], gates[g].w_x, gates[g].eff_x) for g in cols]
    if all(q is not None for q in qx):  # sat16(MBQM(W_x x + eff_x)) of every step the same way, x + 128 stored
        wx = np.ascontiguousarray(np.hstack([q[0] for q in qx]))
        px = np.repeat(np.array([q[1] for q in qx], np.int64), n)
        sat = max(q[4] for q in qx) > 32767  # else |MBQM| <= 32767: no saturation to do
        x_consts = (
            np.repeat(np.array([q[2] for q in qx], np.int64), n),
            np.repeat(np.array([q[3] for q in qx], np.int64), n),
            px - 32768 if sat else None,
            px + 32767 if sat else None,
            x_seg - px,
        )
    return PlainIntegerPlan(
        w=np.ascontiguousarray(np.hstack(w_rows).T),
        thr=np.repeat(np.array([c[1] for c in consts], np.int64), n)[:, None],
        rs=np.repeat(np.array([c[2] for c in consts], np.int64), n)[:, None],
        order=np.concatenate([np.arange(pos[g] * n, (pos[g] + 1) * n) for g in cols]),
        x_seg=x_seg,
        lo=(seg - 32768)[:, None] if clip else None,
        hi=(seg + 32767)[:, None] if clip else None,
        wx=wx,
        x_consts=x_consts,
        table=table,
        c_lo=c_lo,
        c_hi=c_hi,
        clips_state=c_lo > -32768 or c_hi < 32767,
        hidden=hidden,
        proj=proj,
        peep=peep,
        peep_clip=peep is not None and reach > _MAX_REACH,
        peep_rows_only=peep is not None and not (cell.rowwise_peephole or cell.n_output == n),
        ln=ln,
        n_cell=n,
        n_output=cell.n_output,
    )


def input_terms(p: PlainIntegerPlan, x3: np.ndarray) -> np.ndarray:
    """``sat16(mbqm(W_x x + eff_x))`` of every step (x3 (T, B, n_input) int8) plus each column's segment offset,
    (T, 4 n, B) for ``run_plain`` (``p.wx`` must be set): the gate arithmetic once over all T B rows."""
    n_steps, n_batch, n_in = x3.shape
    thr, rs, lo, hi, off = p.x_consts
    xa = np.empty((n_steps * n_batch, n_in + 1))
    xa[:, n_in] = 1.0
    np.add(x3.reshape(n_steps * n_batch, n_in), 128.0, out=xa[:, :n_in])
    y = np.dot(xa, p.wx).astype(np.int64)
    y -= y < thr
    y >>= rs
    if lo is not None:
        clip_ufunc(y, lo, hi, out=y)
    out = np.empty((n_steps, y.shape[1], n_batch), np.int64)
    np.add(y.reshape(n_steps, n_batch, -1).transpose(0, 2, 1), off[:, None], out=out)
    return out


def ordered_terms(p: PlainIntegerPlan, gx: np.ndarray) -> np.ndarray:
    """``input_terms``'s result from lstm_integer.py's (T, B, G n) input terms in (i,) f, c, o order."""
    return np.ascontiguousarray((gx[:, :, p.order] + p.x_seg).transpose(0, 2, 1))


def _peephole_terms(cc, pm, pk, p_thr, p_rs, rp, rp3, rp_neg) -> None:
    """``rp`` (3 n, B) = the peephole terms MBQM(peep c) of rows o, i, f from the clipped cell state ``cc`` (n, B):
    ``pm`` (3, n, 1) and ``pk``, ``p_thr``, ``p_rs`` (3 n, 1) from ``PlainIntegerPlan.peep``, ``rp3`` = ``rp`` as
    (3, n, B) (see (7) in the module docstring)."""
    np.multiply(cc, pm, out=rp3)
    rp += pk
    rp >>= S31
    np.less(rp, p_thr, out=rp_neg)
    rp -= rp_neg
    rp >>= p_rs


def run_plain(p: PlainIntegerPlan, gx: np.ndarray, h_state, c_state, out3) -> None:
    """The sequence: ``gx`` (T, 4 n, B) int64 the saturated input terms of every step in the step's column order
    plus each column's segment offset (``input_terms``). The step works on transposed (features, B) buffers:
    every gate block is contiguous whatever the batch."""
    n_steps, _, n_batch = gx.shape
    n, n_out = p.n_cell, p.n_output
    hs = np.empty((n_steps + 1, n_out + 1, n_batch))  # h + 128, and 1
    hs[:, n_out] = 1.0
    np.add(h_state.T, 128.0, out=hs[0, :n_out])
    idx = np.empty((5 * n, n_batch), np.int64)
    g4, c = idx[: 4 * n], idx[4 * n :]
    c[...] = c_state.T
    acc = np.empty((4 * n, n_batch))
    neg = np.empty((4 * n, n_batch), bool)
    z = np.empty((5 * n, n_batch))
    zo, fi, gc = z[:n], z[n : 3 * n], z[3 * n :]
    half = np.empty((2 * n, n_batch))
    prod = np.empty((2 * n, n_batch))
    r = np.empty((2 * n, n_batch), np.int64)
    r_ig, r_fc = r[:n], r[n:]
    tk = np.empty((2, n, n_batch))
    tc, kc = tk
    v = np.empty((n, n_batch))
    plain = p.proj is None
    if not plain:
        wp, p_thr, p_rs, p_lo, p_hi, p_off = p.proj
        hp = np.empty((n + 1, n_batch))  # h' + 128 and 1: the projection's input
        hp[n] = 1.0
        h_mid = hp[:n]
        pa = np.empty((n_out, n_batch))
        py = np.empty((n_out, n_batch), np.int64)
        p_neg = np.empty((n_out, n_batch), bool)
    if p.peep is not None:  # rows o, i, f of the peephole terms: i and f of the next step from this step's c
        pm, pk, e_thr, e_rs = p.peep
        cc = np.clip(c_state.T, p.c_lo, p.c_hi).astype(np.int64)
        rp = np.empty((3 * n, n_batch), np.int64)
        rp3 = rp.reshape(3, n, n_batch)
        rp_neg = np.empty((3 * n, n_batch), bool)
        r_o, r_if, g_o, g_if = rp[:n], rp[n:], g4[:n], g4[n : 3 * n]
        pk, e_thr, e_rs = (a.reshape(-1, 1) for a in (pk, e_thr, e_rs))
        _peephole_terms(cc, pm, pk, e_thr, e_rs, rp, rp3, rp_neg)
        c_lo, c_hi = np.array(p.c_lo, np.int64), np.array(p.c_hi, np.int64)
    if p.ln is not None:  # the rows normalized before the cell update (all, or i, f, g with peepholes)
        ln_a, ln_o = p.ln
        g_ln = g4[(0 if ln_o is None else n) :].reshape(-1, n, n_batch)
        buf_a = LayerNormBuffers(ln_a, g_ln.shape)
        if ln_o is not None:
            g_o3 = g4[:n].reshape(1, n, n_batch)
            buf_o = LayerNormBuffers(ln_o, g_o3.shape)
    w, thr, rs, lo, hi, table = p.w, p.thr, p.rs, p.lo, p.hi, p.table
    use_ln, ln_o = p.ln is not None, p.ln is not None and p.ln[1] is not None
    peep, peep_clip = p.peep is not None, p.peep_clip
    if peep_clip:
        lo_o, lo_if, hi_o, hi_if = lo[:n], lo[n : 3 * n], hi[:n], hi[n : 3 * n]
    dot, less, subtract, copyto, add, copysign, multiply, right_shift, floor = (
        np.dot,
        np.less,
        np.subtract,
        np.copyto,
        np.add,
        np.copysign,
        np.multiply,
        np.right_shift,
        np.floor,
    )
    take, take_h = table.take, p.hidden.take
    h_new = [hs[t, :n_out] for t in range(1, n_steps + 1)]
    for t in range(n_steps):
        dot(w, hs[t], out=acc)
        copyto(g4, acc, casting="unsafe")
        less(g4, thr, out=neg)
        subtract(g4, neg, out=g4)
        right_shift(g4, rs, out=g4)
        add(g4, gx[t], out=g4)
        if lo is not None:
            clip_ufunc(g4, lo, hi, out=g4)
        if peep:
            add(g_if, r_if, out=g_if)
            if peep_clip:
                clip_ufunc(g_if, lo_if, hi_if, out=g_if)
        if use_ln:
            layer_norm(ln_a, g_ln, g_ln, buf_a)
        take(idx, None, z, "wrap")
        copysign(HALF, gc, out=half)
        multiply(fi, gc, out=prod)
        add(prod, half, out=prod)
        copyto(r, prod, casting="unsafe")
        add(r_ig, r_fc, out=c)
        if peep:  # o's term from the new c (its sigmoid taken again), i's and f's of the next step
            clip_ufunc(c, c_lo, c_hi, out=cc)
            _peephole_terms(cc, pm, pk, e_thr, e_rs, rp, rp3, rp_neg)
            add(g_o, r_o, out=g_o)
            if peep_clip:
                clip_ufunc(g_o, lo_o, hi_o, out=g_o)
            if ln_o:
                layer_norm(p.ln[1], g_o3, g_o3, buf_o)
            take(g_o, None, zo, "wrap")
        take_h(c, 1, tk, "wrap")
        multiply(zo, tc, out=v)
        add(v, kc, out=v)
        clip_ufunc(v, F0, F255, out=v)
        if plain:
            floor(v, out=h_new[t])
            continue
        floor(v, out=h_mid)
        dot(wp, hp, out=pa)
        copyto(py, pa, casting="unsafe")
        less(py, p_thr, out=p_neg)
        subtract(py, p_neg, out=py)
        right_shift(py, p_rs, out=py)
        clip_ufunc(py, p_lo, p_hi, out=py)
        add(py, p_off, out=h_new[t])
    np.subtract(hs[1:, :n_out].transpose(0, 2, 1), 128.0, out=out3, casting="unsafe")
    np.subtract(hs[n_steps, :n_out].T, 128.0, out=h_state, casting="unsafe")
    np.clip(c.T, p.c_lo, p.c_hi, out=c_state, casting="unsafe")
