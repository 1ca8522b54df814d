"""The 8x8_16 integer LSTM cell (lstm_eval.cc LstmStepInteger8x8_16): IntGate and LstmIntegerCell. Building it
(PopulateQuantizedLstmParams8x8_16 and PopulatePrecomputedZPTimesWeightsWithBias) is in lstm_integer_build.py;
the ops and the sources in lstm.py. ``run`` steps through lstm_integer_plain.py's float64 formulation (18 numpy
calls a step, 25 with a projection, 12 more with peepholes, 29 more with layer norm, 58 with both) when its
bounds hold."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...quant import (
    wrap32,
)
from ...quant.gemmlowp import inv_sqrt_int32 as inv_sqrt
from ...quant.gemmlowp import logistic16_table as sigmoid16_table
from ...quant.gemmlowp import tanh16_table
from ...quant.gemmlowp import wrap16 as w16
from ..common import clip_ufunc
from .lstm_common import (
    F32,
    GATES,
    I8_HI,
    I8_LO,
    I16_HI,
    I16_LO,
    K512,
    K1024,
    M32,
    P14,
    P30,
    P31,
    S10,
    S15,
    S20,
    S31,
    Z64,
    mbqm,
    mbqm_neon,
    mbqm_small,
    rdbpot,
    rdbpot_arr,
    signed_index_table,
    tdiv_arr,
)
from .lstm_integer_plain import input_terms, ordered_terms, plain_plan, run_plain


@dataclass(frozen=True, eq=False)
class IntGate:
    w_x: np.ndarray  # (n_input, n_cell) int64
    eff_x: np.ndarray  # int64 (n_cell,)
    m_x: tuple
    w_h: np.ndarray  # (n_output, n_cell) int64
    eff_h: np.ndarray
    m_h: tuple
    peep: np.ndarray | None  # int64 (n_output,) (the first n_output cell-to-gate weights: LiteRT's v_size)
    m_p: tuple
    ln: np.ndarray | None  # int64 (n_cell,)
    ln_bias: np.ndarray | None  # int64 (n_cell,)
    m_ln: tuple
    guard: int


@dataclass(frozen=True, eq=False)
class IntegerSequencePlan:
    """The stacked constants of ``LstmIntegerCell.run``: every gate's input and recurrent weights side by side
    (float64 / float32 holding the int8 values: exact products), per-column MBQM constants of the recurrent
    product, whether its int32 wraps can be skipped, the layer-norm constants and the activation tables."""

    names: list  # the gates, in the order (i,) f, c, o
    w_x: np.ndarray  # (n_input, G*n_cell) float64
    w_h: np.ndarray  # (n_output, G*n_cell) float32 or float64
    eff_h: np.ndarray  # (G*n_cell,) int64
    q_h: tuple  # per column: multiplier, left shift (or None), right shift, rounding offset, right > 0 (or None)
    wrap_h: bool  # the int32 wrap of MBQM's input can change a value
    proj: np.ndarray | None  # (n_cell, n_output) float64
    plain: list  # per gate: neither peephole nor layer norm
    ln_stack: tuple  # (ln constants of (i,) f, c; of o) from _ln_consts, or (None, None)
    tables: tuple  # sigmoid, tanh (input scale 2^-12), tanh of the cell state, indexed by the raw int16


@dataclass(frozen=True, eq=False)
class LstmIntegerCell:
    gates: dict
    cs: int  # log2 of the cell scale
    cell_clip: int
    proj_clip: int
    m_hidden: tuple
    z_hidden: int
    proj: np.ndarray | None  # (n_cell, n_output) int64
    proj_eff: np.ndarray | None
    m_proj: tuple
    z_out_state: int
    n_cell: int
    n_output: int
    rowwise_peephole: bool  # batch-major: LiteRT steps one row at a time (matters for the peephole quirk)

    def _layer_norm(self, g: IntGate, v):
        """LayerNorm (integer): per row mean and variance in 64-bit integers (C division truncates), the
        inverse square root per row (``inv_sqrt``: 0 < M < 2^31, e <= 0, proven in lstm_integer_ln.py),
        then the rescale of every element; vectorized over the rows."""
        n = v.shape[1]
        rows = v.shape[0]
        s = v.sum(axis=1)
        mean = wrap32(tdiv_arr(s * 1024, n))
        var = (v * v).sum(axis=1) * ((1 << 20) // n) - mean * mean
        var2 = wrap32(tdiv_arr(var, 1 << 20))
        var2[var2 < 1] = g.guard
        ms = np.empty(rows, np.int64)
        es = np.empty(rows, np.int64)
        for b, x in enumerate(var2.tolist()):
            ms[b], es[b] = inv_sqrt(x)
        # mbqm with one (M, e <= 0) per row: wrap32 of the input, then SRDHM and RDBPOT
        x = wrap32(1024 * v - mean[:, None])
        x *= ms[:, None]
        x += P30
        x >>= S31
        x = rdbpot_arr(x, -es[:, None])
        t = x * g.ln + g.ln_bias
        u = np.where(t > 0, (t + 512) // 1024, -((-(t - 512)) // 1024))
        return clip_ufunc(mbqm(wrap32(u), g.m_ln[0], g.m_ln[1] + 12), -32768, 32767)

    def _peephole(self, g: IntGate, gate, c):
        """VectorBatchVectorCwiseProductAccumulate with v_size = n_output over the flat (rows, n_cell) buffers."""
        n_out = self.n_output
        rows = gate.shape[0]
        k16 = n_out & ~15
        if self.rowwise_peephole or n_out == self.n_cell:
            gv, cv = gate[:, :n_out], c[:, :n_out]
            prod = g.peep[None, :] * cv
            r = np.empty_like(prod)
            r[:, :k16] = mbqm_neon(prod[:, :k16], *g.m_p)
            r[:, k16:] = mbqm(prod[:, k16:], *g.m_p)
            gate[:, :n_out] = clip_ufunc(gv + r, -32768, 32767)
            return
        gf, cf = gate.reshape(-1), c.reshape(-1)
        prod = (np.tile(g.peep, rows) * cf[: rows * n_out]).reshape(rows, n_out)
        r = np.empty_like(prod)
        r[:, :k16] = mbqm_neon(prod[:, :k16], *g.m_p)
        r[:, k16:] = mbqm(prod[:, k16:], *g.m_p)
        gf[: rows * n_out] = clip_ufunc(gf[: rows * n_out] + r.reshape(-1), -32768, 32767)

    def _gate(self, name, x, h, c, table):
        g: IntGate = self.gates[name]
        gate = clip_ufunc(mbqm(x @ g.w_x + g.eff_x, *g.m_x), -32768, 32767)
        gate = clip_ufunc(mbqm(h @ g.w_h + g.eff_h, *g.m_h) + gate, -32768, 32767)
        if g.peep is not None:
            self._peephole(g, gate, c)
        if g.ln is not None:
            gate = self._layer_norm(g, gate)
        return table[gate + 32768]

    def __post_init__(self):
        """The IntegerSequencePlan of ``run`` (None when a multiplier is outside its fast arithmetic: ``run``
        then steps with ``step``)."""
        names = [g for g in GATES if g in self.gates]
        gs = [self.gates[g] for g in names]
        qs = [g.m_x for g in gs] + [g.m_h for g in gs]
        plan = None
        if all(0 <= m < 2**31 and -31 <= e <= 31 for m, e in qs):
            n = self.n_cell
            w_h = np.concatenate([g.w_h for g in gs], axis=1)
            eff_h = np.concatenate([g.eff_h for g in gs])
            m = np.repeat(np.array([g.m_h[0] for g in gs], np.int64), n)
            e = np.repeat(np.array([g.m_h[1] for g in gs], np.int64), n)
            right = np.maximum(-e, 0)
            # |h @ W_h + eff_h| < 2^31 for every int8 h: the int32 wrap of MBQM's input is the identity
            bound = 128 * np.abs(w_h).sum(axis=0) + np.abs(eff_h)
            ifc, o = self._ln_consts(names[:-1]), self._ln_consts(names[-1:])
            plan = IntegerSequencePlan(
                names=names,
                w_x=np.concatenate([g.w_x for g in gs], axis=1).astype(np.float64),
                # float32 products are exact when every partial sum stays below 2^24 (|h| <= 128)
                w_h=w_h.astype(F32 if 128 * np.abs(w_h).sum(axis=0).max(initial=0) < 2**24 else np.float64),
                eff_h=eff_h,
                q_h=(
                    m,
                    np.maximum(e, 0) if (e > 0).any() else None,
                    right,
                    np.where(right > 0, np.left_shift(1, np.maximum(right - 1, 0)), 0),
                    None if (right > 0).all() else (right > 0).astype(np.int64),
                ),
                wrap_h=bool(bound.size and bound.max() >= 2**31),
                proj=None if self.proj is None else self.proj.astype(np.float64),
                plain=[g.peep is None and g.ln is None for g in gs],
                ln_stack=(ifc, o) if ifc is not None and o is not None else (None, None),
                # tables indexed by the raw int16 value itself (negative indices wrap to the first half)
                tables=tuple(
                    signed_index_table(tb) for tb in (sigmoid16_table(3), tanh16_table(3), tanh16_table(15 + self.cs))
                ),
            )
        object.__setattr__(self, "_seq", plan)
        object.__setattr__(self, "_plain", None if plan is None else plain_plan(self))

    def run(self, x3, aux3, h_state, c_state, out3, reverse: bool = False):
        """The whole sequence (x3 (T, B, I) time-major, out3 (T, B, n_output)): ``step``'s arithmetic, with the
        input-to-gate terms ``sat16(mbqm(W_x x + eff_x))`` of every step computed up front (they do not depend
        on the recurrence) and the recurrent products of all gates in one matrix product per step; a plain cell
        (``_plain``, lstm_integer_plain.py) steps with ``run_plain``."""
        d = self._seq
        if x3.shape[0] == 0 or x3.shape[1] == 0:  # no time step or no sequence: the states stay as they are
            return
        if d is None:
            for t in range(x3.shape[0]):
                self.step(x3[t], None, h_state, c_state, out3[t])
            return
        p = self._plain
        if p is not None and p.clips_state and not p.c_lo <= int(c_state.min()) <= int(c_state.max()) <= p.c_hi:
            p = None  # its table clips every state it reads: a state set past the cell clip takes the int64 step
        if p is not None and p.peep_rows_only and x3.shape[1] > 1:
            p = None  # LiteRT's peephole strides the flat cell state by n_output across the rows
        if p is not None:  # lstm_integer_plain's step (peepholes, layer norm and projection included)
            gx = input_terms(p, x3) if p.wx is not None else ordered_terms(p, self._input_terms(x3))
            run_plain(p, gx, h_state, c_state, out3)
            return
        n_steps, n_batch = x3.shape[:2]
        n, names = self.n_cell, d.names
        n_g = len(names)
        k = n_g - 2  # sigmoid gates before the cell gate
        gx = self._input_terms(x3)
        h64 = h_state.astype(d.w_h.dtype)
        c = c_state.astype(np.int64)
        w_h, eff_h, wrap_h = d.w_h, d.eff_h, d.wrap_h
        acc_f = np.empty((n_batch, n_g * n), w_h.dtype)
        neg_a = np.empty((n_batch, n_g * n), bool)
        neg_c = np.empty((n_batch, n), bool)
        acc = np.empty((n_batch, n_g * n), np.int64)
        m, left, right, off, rpos = d.q_h
        sig, tanh3, tanh_c = d.tables
        plain = d.plain
        ln_ifc, ln_o = d.ln_stack
        cifg = k == 1
        shift_ic = np.array(30 + self.cs, np.int64)
        half_ic = np.array(1 << (29 + self.cs), np.int64)
        cell_clip, proj_clip = self.cell_clip, self.proj_clip
        m_hid, e_hid = self.m_hidden
        z_hid = np.array(self.z_hidden, np.int64)
        proj = d.proj
        hn = None
        for t in range(n_steps):
            # G = sat16(mbqm(W_h h + eff_h) + sat16(mbqm(W_x x + eff_x))), all gates at once
            np.dot(h64, w_h, out=acc_f)
            np.copyto(acc, acc_f, casting="unsafe")
            acc += eff_h
            if wrap_h:
                acc += P31
                acc &= M32
                acc -= P31
            if left is not None:
                acc <<= left
                acc += P31
                acc &= M32
                acc -= P31
            acc *= m
            acc += P30
            acc >>= S31
            neg = np.less(acc, Z64, out=neg_a)
            if rpos is not None:
                neg = neg * rpos
            acc += off
            acc -= neg
            acc >>= right
            acc += gx[t]
            clip_ufunc(acc, I16_LO, I16_HI, out=acc)
            if ln_ifc is not None:  # peepholes, then the layer norm of (i,) f, c at once
                for j in range(k):
                    if self.gates[names[j]].peep is not None:
                        acc[:, j * n : (j + 1) * n] = self._gate_post(
                            names[j], acc[:, j * n : (j + 1) * n], c, ln=False
                        )
                v = acc[:, : (k + 1) * n]
                v[...] = self._layer_norm_stack(ln_ifc, v.reshape(n_batch, k + 1, n)).reshape(n_batch, -1)
            else:
                for j in range(n_g - 1):
                    if not plain[j]:
                        acc[:, j * n : (j + 1) * n] = self._gate_post(names[j], acc[:, j * n : (j + 1) * n], c)
            ifg = sig[acc[:, : k * n]]
            cg = tanh3[acc[:, k * n : (k + 1) * n]]
            fg = ifg[:, (k - 1) * n :]
            # c = sat16(rdbpot(f c, 15) + rdbpot(i g, 30 + cs)) (the int16 wraps are no-ops: |results| < 2^15)
            c *= fg
            neg = np.less(c, Z64, out=neg_c)
            c += P14
            c -= neg
            c >>= S15
            if cifg:
                np.subtract(I16_HI, fg, out=fg)
                cg *= fg
            else:
                cg *= ifg[:, :n]
            neg = np.less(cg, Z64, out=neg_c)
            cg += half_ic
            cg -= neg
            cg >>= shift_ic
            c += cg
            clip_ufunc(c, I16_LO, I16_HI, out=c)
            if cell_clip > 0:
                clip_ufunc(c, -cell_clip, cell_clip, out=c)
            og = acc[:, (k + 1) * n :]
            if ln_o is not None:
                og = self._gate_post(names[-1], og.copy(), c, ln=False)
                og = self._layer_norm_stack(ln_o, og[:, None, :])[:, 0]
            elif not plain[-1]:
                og = self._gate_post(names[-1], og.copy(), c)
            og = sig[og]
            og *= tanh_c[c]
            og = mbqm_small(og, m_hid, e_hid)
            if proj is None:
                og += z_hid
                hn = clip_ufunc(og, I8_LO, I8_HI, out=og)
            else:
                og -= z_hid
                clip_ufunc(og, I8_LO, I8_HI, out=og)
                hn = clip_ufunc(
                    mbqm((og @ proj).astype(np.int64) + self.proj_eff, *self.m_proj) + self.z_out_state, -128, 127
                )
                if proj_clip > 0:
                    clip_ufunc(hn, -proj_clip, proj_clip, out=hn)
            np.copyto(h64, hn)
            out3[t] = hn
        c_state[...] = c
        if hn is not None:
            h_state[...] = hn

    def _input_terms(self, x3):
        """``sat16(mbqm(W_x x + eff_x))`` of every step, (T, B, G n) int64 with the gates in (i,) f, c, o order."""
        d = self._seq
        n_steps, n_batch = x3.shape[:2]
        n = self.n_cell
        gx = (x3.reshape(n_steps * n_batch, -1).astype(np.float64) @ d.w_x).astype(np.int64)
        for j, name in enumerate(d.names):
            g = self.gates[name]
            blk = gx[:, j * n : (j + 1) * n]
            blk[...] = mbqm(blk + g.eff_x, *g.m_x)
        clip_ufunc(gx, -32768, 32767, out=gx)
        return gx.reshape(n_steps, n_batch, -1)

    def _layer_norm_stack(self, consts: tuple, v):
        """``_layer_norm`` of several gates at once: ``v`` (B, G, n) int64, ``consts`` from ``_ln_consts``. The
        int32 wraps of the mean, the variance and ``1024 v - mean`` are no-ops (|v| <= 2^15: all below 2^31)."""
        ln, ln_bias, guard, m_g, left_g, right_g, half_g, rpos_g = consts
        n = v.shape[2]
        s = np.add.reduce(v, axis=2)
        s *= K1024
        mean = np.abs(s)
        mean //= np.array(n, np.int64)
        mean *= np.sign(s)  # C division (truncation)
        var = np.add.reduce(v * v, axis=2)
        var *= np.array((1 << 20) // n, np.int64)
        var -= mean * mean
        var2 = np.abs(var)
        var2 >>= S20
        var2 *= np.sign(var)
        n_g = len(guard)
        rows = []
        for j, x in enumerate(var2.reshape(-1).tolist()):
            m, e = inv_sqrt(x if x >= 1 else guard[j % n_g])  # 0 < m < 2^31, e <= 0 (lstm_integer_ln.py)
            r = -e
            rows.append((m, r, (1 << r) >> 1, int(r > 0)))
        me = np.array(rows, np.int64).reshape(var2.shape + (4,))
        # mbqm with one (M, e <= 0) per row and gate: SRDHM and RDBPOT
        x = v * K1024
        x -= mean[..., None]
        x *= me[..., 0:1]
        x += P30
        x >>= S31
        x -= np.less(x, Z64) * me[..., 3:4]  # RDBPOT: (x + 2^(e-1) - (x < 0)) >> e, nothing for e = 0
        x += me[..., 2:3]
        x >>= me[..., 1:2]
        t = x * ln
        t += ln_bias
        # t > 0: (t + 512) // 1024, else -((512 - t) // 1024): both |t| + 512 shifted, with t's sign
        u = np.abs(t)
        u += K512
        u >>= S10
        u *= np.sign(t)
        # mbqm(wrap32(u), m_ln, e_ln + 12) per gate
        u += P31
        u &= M32
        u -= P31
        if left_g is not None:
            u = wrap32(u << left_g)
        u *= m_g
        u += P30
        u >>= S31
        u -= np.less(u, Z64) * rpos_g
        u += half_g
        u >>= right_g
        return clip_ufunc(u, I16_LO, I16_HI, out=u)

    def _ln_consts(self, names: list):
        """Stacked layer-norm constants of the gates ``names`` (None when one has no layer norm or a final
        multiplier outside the fast path's range)."""
        gs = [self.gates[g] for g in names]
        if not all(g.ln is not None and 0 <= g.m_ln[0] < 2**31 and -31 <= g.m_ln[1] + 12 <= 31 for g in gs):
            return None
        e = np.array([g.m_ln[1] + 12 for g in gs], np.int64)[:, None]
        right = np.maximum(-e, 0)
        return (
            np.stack([g.ln for g in gs]),
            np.stack([g.ln_bias for g in gs]),
            [g.guard for g in gs],
            np.array([g.m_ln[0] for g in gs], np.int64)[:, None],
            np.maximum(e, 0) if (e > 0).any() else None,
            right,
            (1 << right) >> 1,
            (right > 0).astype(np.int64),
        )

    def _gate_post(self, name, gate, c, ln: bool = True):
        """The peephole term and layer norm of one gate ((B, n_cell) int64 view; the result is returned)."""
        g: IntGate = self.gates[name]
        if g.peep is not None:
            if self.rowwise_peephole or self.n_output == self.n_cell:
                self._peephole_rows(g, gate, c)
            else:
                gate = np.ascontiguousarray(gate)
                self._peephole(g, gate, c)
        if ln and g.ln is not None:
            gate = self._layer_norm(g, gate)
        return gate

    def _peephole_rows(self, g: IntGate, gate, c):
        """``_peephole``'s row-aligned case in place: ``mbqm_neon`` on the columns below n_output & ~15 and
        ``mbqm`` on the rest share everything but the final rounding (the NEON one rounds ties up; wrapping
        before the left shift changes nothing mod 2^32)."""
        n_out = self.n_output
        k16 = n_out & ~15
        m, e = g.m_p
        prod = c[:, :n_out] * g.peep
        if e > 0 or (m < 0 or not -31 <= e <= 31):
            prod = np.concatenate([mbqm_neon(prod[:, :k16], m, e), mbqm(prod[:, k16:], m, e)], axis=1)
        else:  # |peep * c| <= 2^30: no wrap
            prod *= m
            prod += P30
            prod >>= S31
            if e < 0:
                tail = prod[:, k16:]
                tail -= np.less(tail, Z64)
                prod += np.array(1 << (-e - 1), np.int64)
                prod >>= np.array(-e, np.int64)
        gv = gate[:, :n_out]
        gv += prod
        clip_ufunc(gv, I16_LO, I16_HI, out=gv)

    def step(self, x, aux, h_state, c_state, out):
        x = x.astype(np.int64)
        h = h_state.astype(np.int64)
        c = c_state.astype(np.int64)
        sig, tanh3 = sigmoid16_table(3), tanh16_table(3)
        cifg = "i" not in self.gates
        ig = None if cifg else self._gate("i", x, h, c, sig)
        fg = self._gate("f", x, h, c, sig)
        cg = self._gate("c", x, h, None, tanh3)
        c = w16(rdbpot(fg * c, 15))
        scratch = w16(rdbpot(((32767 - fg) if cifg else ig) * cg, 30 + self.cs))
        c = clip_ufunc(c + scratch, -32768, 32767)
        if self.cell_clip > 0:
            c = clip_ufunc(c, -self.cell_clip, self.cell_clip)
        og = self._gate("o", x, h, c, sig)
        t = tanh16_table(15 + self.cs)[c + 32768]
        if self.proj is None:
            hn = clip_ufunc(mbqm(og * t, *self.m_hidden) + self.z_hidden, -128, 127)
        else:
            hh = clip_ufunc(mbqm(og * t, *self.m_hidden) - self.z_hidden, -128, 127)
            hn = clip_ufunc(mbqm(hh @ self.proj + self.proj_eff, *self.m_proj) + self.z_out_state, -128, 127)
            if self.proj_clip > 0:
                hn = clip_ufunc(hn, -self.proj_clip, self.proj_clip)
        c_state[...] = c
        h_state[...] = hn
        out[...] = hn
