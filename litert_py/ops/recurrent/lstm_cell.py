"""The float32 and hybrid LSTM cell (lstm_eval.cc LstmStepFloat / LstmStepHybrid, including the sparse hybrid
product): LstmCell and its products. build_cell and the state checks are in lstm_build.py; the ops, their checks
and the sources in lstm.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...quant import (
    SseMinus128Fix,
    batch_quantize_floats,
)
from ..common import clip_ufunc
from ..eigen_math import logistic_into, tanh_inplace
from .common import StepHybridProduct
from .lstm_common import (
    EPS_LN,
    F32,
    ONE,
    ZERO,
)


def sigmoid(v: np.ndarray) -> None:
    """ApplySigmoidToVector (tensor_utils.h): Eigen's logistic, in place (litert_py.ops.eigen_math). numpy's
    1 / (1 + exp(-x)) differs from it in the last ulp now and then, enough to flip an int8 value that a hybrid
    kernel re-quantizes (tests/ops/test_lstm_known_gaps.py history)."""
    logistic_into(v, v)


def _sigmoid_to(v: np.ndarray, out: np.ndarray) -> None:
    """``sigmoid`` of ``v`` written to ``out``."""
    logistic_into(v, out)


def _float_dot(wt: np.ndarray | None):
    """``np.dot`` (~0.4 us less overhead than np.matmul for small operands; bit-identical results, checked over
    row counts 1-8, depths 1-512, 2-1024 columns, contiguous and strided rows) except for a single output column,
    where the two take different BLAS paths: np.matmul then, as the one-step code."""
    return np.dot if wt is not None and wt.shape[1] > 1 else np.matmul


def _mean_stddev_normalization(v: np.ndarray) -> None:
    """``MeanStddevNormalization`` in float32, per row, in place: ``(v - mean) / sqrt(var + 1e-8)``."""
    _mean_stddev_normalization3(v[:, None, :])


def _mean_stddev_normalization3(v: np.ndarray) -> None:
    """``_mean_stddev_normalization`` of every (row, gate) of a (B, G, n) view, in place (np.add.reduce is
    np.sum's reduction: the same pairwise sums)."""
    n = np.array(v.shape[2], F32)
    mean = np.add.reduce(v, axis=2, dtype=F32)
    mean /= n
    v -= mean[:, :, None]
    var = np.add.reduce(v * v, axis=2, dtype=F32)
    var /= n
    var += EPS_LN
    np.sqrt(var, out=var)
    np.divide(ONE, var, out=var)
    v *= var[:, :, None]


@dataclass(frozen=True, eq=False)
class Product:
    """``v -> W v`` for one weight matrix: float (``wt``: (k, n) transposed weights), hybrid (``fc``), or a
    diagonal (``diag``: elementwise, for 1-D recurrent weights)."""

    wt: np.ndarray | None = None
    fc: object = None
    diag: np.ndarray | None = None

    def add_to(self, acc: np.ndarray, v: np.ndarray, v_float: np.ndarray | None = None) -> None:
        if self.diag is not None:
            acc += self.diag * (v if v_float is None else v_float)
        elif self.fc is not None:
            t = np.empty_like(acc)
            self.fc([v], [t])
            acc += t
        else:
            acc += v @ self.wt


@dataclass(frozen=True, eq=False)
class SparseHybridProduct:
    """The hybrid product with 1x16-block-sparse weights (lstm_eval.cc CalculateLstmGateHybrid and
    CalculateLstmOutputHybrid with a ledger; sse_tensor_utils.cc SseSparseMatrixBatchVectorMultiplyAccumulate):
    ``out = f32(dot(q(v), w)) * f32(sf * w_scale)``. Unlike the dense kernel it never subtracts the zero point
    of asymmetrically quantized inputs, and LiteRT scales the recurrent product with the INPUT's scaling
    factors (``input_sf``, not the output state's): ``own_sf`` records them on the input product, the
    recurrent product reads them as ``input_sf``. The projection writes its own factors into that same scratch
    (CalculateLstmOutputHybrid's scratch2 is LstmStepHybrid's input_sf), and an all-zero input skips its
    quantization, so after an all-zero input the recurrent product is scaled by the previous step's
    projection factors, as in LiteRT. The dot product over the stored blocks
    equals the dense one (zero blocks add nothing), including DotProdInt8x4x4's -128 quirk."""

    wt: np.ndarray  # (k, n) float64 holding the int8 weights, zero blocks included
    fix: SseMinus128Fix | None
    w_scale: np.ndarray  # float32 (n,): each row's weight scale
    asymmetric: bool
    own_sf: np.ndarray | None = None  # float32 (B,): written with this product's scaling factors
    input_sf: np.ndarray | None = None  # float32 (B,): the factors to scale with instead of this product's

    def __call__(self, inputs, outputs) -> None:
        q, sf, _ = batch_quantize_floats(inputs[0], self.asymmetric)
        dot = np.matmul(q.astype(np.float64), self.wt)
        if self.fix is not None:
            self.fix.apply(q, dot)
        if self.own_sf is not None:
            self.own_sf[...] = sf
        s = sf if self.input_sf is None else self.input_sf
        np.multiply(dot.astype(F32), np.multiply(s[:, None], self.w_scale, dtype=F32), out=outputs[0])


@dataclass(frozen=True, eq=False)
class GateProducts:
    """The products of one input (x, aux or h) with the weights of every gate: one combined matrix (all gates'
    rows stacked; hybrid: per-row weight scales, the same f32(sf * s_w) as per gate) or, with diagonal
    recurrent weights, one Product per gate. ``compute(v)`` -> {gate: (B, n_cell)}."""

    combined: Product | None
    per_gate: dict | None
    gates: tuple
    n_cell: int

    @property
    def hybrid(self) -> bool:
        p = self.combined if self.combined is not None else next(iter(self.per_gate.values()))
        return p.fc is not None

    def compute(self, v) -> dict:
        n = self.n_cell
        if self.combined is not None:
            acc = np.zeros((v.shape[0], n * len(self.gates)), F32)
            self.combined.add_to(acc, v)
            return {g: acc[:, k * n : (k + 1) * n] for k, g in enumerate(self.gates)}
        out = {}
        for g in self.gates:
            out[g] = np.zeros((v.shape[0], n), F32)
            self.per_gate[g].add_to(out[g], v)
        return out


@dataclass(frozen=True, eq=False)
class SequencePlan:
    """The stacked constants of ``LstmCell.run`` (gates in the order (i,) f, c, o), built once with the cell."""

    fast: bool  # the stacked sequence path applies (no sparse hybrid product; else step by step)
    k: int  # the sigmoid gates before the cell gate: (i,) f
    base: np.ndarray  # (G*n,) float32: the stacked biases (layer norm: 0)
    peep_if: np.ndarray | None  # (k, n) peephole weights of (i,) f
    ln_ifc: np.ndarray | None  # (k+1, n) layer-norm weights of (i,) f, c
    bias_ifc: np.ndarray | None  # (k+1, n) biases of (i,) f, c (with layer norm)
    diag: np.ndarray | None  # (G, n) diagonal recurrent weights
    h_fc: StepHybridProduct | None  # hybrid recurrent product (fast path)
    proj_fc: StepHybridProduct | None  # hybrid projection (fast path)


@dataclass(frozen=True, eq=False)
class LstmCell:
    x: GateProducts
    aux: GateProducts | None
    h: GateProducts
    peep: dict  # gate -> float32 (n_cell,) (dequantized for hybrid)
    ln: dict  # gate -> float32 (n_cell,)
    bias: dict  # gate -> float32 (n_cell,)
    proj: Product | None
    proj_bias: np.ndarray | None
    act: object
    cell_clip: float
    proj_clip: float
    n_cell: int
    n_output: int
    tanh_act: bool = False  # the activation is TANH (applied out of place on the cell state)

    def __post_init__(self):
        """Stacked constants of the sequence path (``run``): gates in the order (i,) f, c, o."""
        gates = self.x.gates
        n = self.n_cell
        fast = (
            all(
                gp is None or (gp.combined is None or not isinstance(gp.combined.fc, SparseHybridProduct))
                for gp in (self.x, self.aux, self.h)
            )
            and self.x.combined is not None
            and (self.aux is None or self.aux.combined is not None)
            and (self.proj is None or not isinstance(self.proj.fc, SparseHybridProduct))
            and (self.h.combined is not None or all(p.diag is not None for p in self.h.per_gate.values()))
        )
        k = len(gates) - 2  # the sigmoid gates before the cell gate: (i,) f
        ln = bool(self.ln)
        base = np.zeros(n * len(gates), F32) if ln else np.concatenate([self.bias[g] for g in gates])
        hp, pp = self.h.combined, self.proj
        plan = SequencePlan(
            fast=fast,
            k=k,
            base=base,
            peep_if=np.stack([self.peep[g] for g in gates[:k]]) if self.peep else None,
            ln_ifc=np.stack([self.ln[g] for g in gates[:-1]]) if ln else None,
            bias_ifc=np.stack([self.bias[g] for g in gates[:-1]]) if ln else None,
            diag=None if self.h.combined is not None else np.stack([self.h.per_gate[g].diag for g in gates]),
            h_fc=StepHybridProduct.of(hp.fc) if fast and hp is not None and hp.fc is not None else None,
            proj_fc=StepHybridProduct.of(pp.fc) if fast and pp is not None and pp.fc is not None else None,
        )
        object.__setattr__(self, "_seq", plan)

    def _gate(self, g, xs, auxs, hs, c, act):
        ln = self.ln.get(g)
        acc = (
            np.zeros((hs[g].shape[0], self.n_cell), F32)
            if ln is not None
            else np.repeat(self.bias[g][None, :], hs[g].shape[0], axis=0)
        )
        if xs is not None:
            acc += xs[g]
        if auxs is not None:
            acc += auxs[g]
        acc += hs[g]
        peep = self.peep.get(g)
        if peep is not None:
            acc += peep * c
        if ln is not None:
            _mean_stddev_normalization(acc)
            acc *= ln
            acc += self.bias[g]
        if act is sigmoid:
            sigmoid(acc)
        elif act is not None:
            act(acc)
        return acc

    def step(self, x, aux, h, c, out):
        """x (B, I), aux (B, A) or None, h (B, n_output) and c (B, n_cell) states (updated), out (B, n_output).
        One step at a time: the sparse hybrid kernel (its products share scaling-factor scratch)."""
        cifg = "i" not in self.x.gates
        # IsZeroVector: an all-zero input skips its products (hybrid: also an all-zero output_state)
        xs = self.x.compute(x) if x.any() else None
        auxs = self.aux.compute(aux) if aux is not None and self.aux is not None and aux.any() else None
        hs = (
            self.h.compute(h)
            if (h.any() or not self.h.hybrid)
            else {g: np.zeros((h.shape[0], self.n_cell), F32) for g in self.h.gates}
        )
        ig = None if cifg else self._gate("i", xs, auxs, hs, c, sigmoid)
        fg = self._gate("f", xs, auxs, hs, c, sigmoid)
        cg = self._gate("c", xs, auxs, hs, None, self.act)
        c *= fg
        if cifg:
            np.subtract(F32(1), fg, out=fg)
            ig = fg
        cg *= ig
        c += cg
        if self.cell_clip > 0:
            clip_ufunc(c, -self.cell_clip, self.cell_clip, out=c)
        og = self._gate("o", xs, auxs, hs, c, sigmoid)
        t = c.copy()
        if self.act is not None:
            self.act(t)
        t *= og
        if self.proj is not None:
            r = (
                np.zeros((t.shape[0], self.n_output), F32)
                if self.proj_bias is None
                else np.repeat(self.proj_bias[None, :], t.shape[0], axis=0)
            )
            if t.any() or self.proj.fc is None:
                self.proj.add_to(r, t)
            if self.proj_clip > 0:
                clip_ufunc(r, -self.proj_clip, self.proj_clip, out=r)
            t = r
        h[...] = t
        out[...] = t

    def _input_products(self, gp: GateProducts, x3: np.ndarray) -> tuple:
        """``0 + W v`` for every step ((T, B, G*n) float32) and the steps whose input is not all zeros (IsZeroVector
        over the step's batch: those skip the product). Hybrid: all T*B rows at once (each row is quantized and
        multiplied on its own, exactly: the same numbers as per step); float32: one (B, I) product per step,
        the same BLAS call as the one-step code (one GEMM over all rows can round differently)."""
        t_, b_ = x3.shape[:2]
        p = gp.combined
        prod = np.empty((t_, b_, self.n_cell * len(gp.gates)), F32)
        if p.fc is not None:
            p.fc([x3.reshape(t_ * b_, x3.shape[2])], [prod])
        else:  # float32: one product per step, as a larger GEMM may sum in another order (BLAS kernels)
            mm = _float_dot(p.wt)
            for t in range(t_):
                mm(x3[t], p.wt, out=prod[t])
        prod += ZERO  # the products are added to a zero accumulator first (-0 -> +0)
        return prod, x3.reshape(t_, -1).any(axis=1)

    def _sequence_inputs(self, x3, aux3, base) -> np.ndarray:
        """Every step's gate inputs before the recurrent product ((T, B, G*n) float32): bias (layer norm: 0) +
        (0 + W_x x) [+ (0 + W_aux aux)], each product skipped for a step whose input is all zeros."""
        pre, nz = self._input_products(self.x, x3)
        pre += base
        if not nz.all():
            pre[~nz] = base
        if aux3 is not None:
            pa, nza = self._input_products(self.aux, aux3)
            if nza.all():
                pre += pa
            else:
                pre[nza] += pa[nza]
        return pre

    def run(self, x3, aux3, h, c, out3, reverse: bool = False) -> None:
        """The whole sequence: x3 (T, B, I) and aux3 (T, B, A) or None time-major (views allowed), h / c the
        states (updated), out3 (T, B, n_output) written. Per step exactly ``step``'s arithmetic, with the input
        products of every step computed up front and the gates stacked (i, f, c, o) along the last axis."""
        n_steps = x3.shape[0]
        if n_steps == 0 or x3.shape[1] == 0:  # no time step or no sequence: the states stay as they are
            return
        order = range(n_steps - 1, -1, -1) if reverse else range(n_steps)
        aux3 = aux3 if aux3 is not None and self.aux is not None else None
        if not self._seq.fast:
            for t in order:
                self.step(x3[t], None if aux3 is None else aux3[t], h, c, out3[t])
            return
        self._run_stacked(x3, aux3, h, c, out3, order)

    def _run_stacked(self, x3, aux3, h, c, out3, order) -> None:
        """``run``'s fast path: the gates stacked (i, f, c, o) along the last axis, buffers made once."""
        d = self._seq
        n, k = self.n_cell, d.k
        n_g = len(self.x.gates)
        n_batch = x3.shape[1]
        pre = self._sequence_inputs(x3, aux3, d.base)
        acc = np.empty((n_batch, n_g * n), F32)
        acc3 = acc.reshape(n_batch, n_g, n)
        hs = np.empty_like(acc)
        hp = self.h.combined
        hybrid_h = hp is not None and hp.fc is not None
        h_fc, proj_fc = d.h_fc, d.proj_fc
        wt = hp.wt if hp is not None and hp.fc is None else None
        mm_h = _float_dot(wt)
        mm_p = _float_dot(self.proj.wt if self.proj is not None and self.proj.fc is None else None)
        diag = d.diag
        peep_if, peep_o = d.peep_if, self.peep.get("o")
        ln_ifc, bias_ifc = d.ln_ifc, d.bias_ifc
        ln_o, bias_o = self.ln.get("o"), self.bias["o"]
        act, cifg, tanh_act = self.act, k == 1, self.tanh_act
        # without peephole and layer norm the output gate does not wait for the new cell state: one sigmoid
        # pass over all gates (the cell gate's sigmoid is computed and unused)
        early_o = peep_o is None and ln_o is None
        sg = np.empty_like(acc) if early_o else None
        sg3 = None if sg is None else sg.reshape(n_batch, n_g, n)
        gsrc = acc3 if sg3 is None else sg3
        ifg, cg = gsrc[:, :k], acc3[:, k]
        fg = gsrc[:, k - 1]
        ig = None if cifg else gsrc[:, 0]
        og = gsrc[:, k + 1]
        cell_clip, proj_clip = self.cell_clip, self.proj_clip
        cc_lo, cc_hi, pc_lo, pc_hi = (np.array(v, F32) for v in (-cell_clip, cell_clip, -proj_clip, proj_clip))
        tbuf = np.empty((n_batch, n), F32)
        proj = self.proj
        pb = self.proj_bias
        r = np.empty((n_batch, self.n_output), F32) if proj is not None else None
        h_prev = h
        t = -1
        for t in order:
            # + W_h h (hybrid: skipped when h is all zeros; the zero accumulator still turns -0 into +0)
            if wt is not None:
                mm_h(h_prev, wt, out=hs)
                np.add(pre[t], hs, out=acc)
            elif hybrid_h:
                if h_fc(h_prev, hs):  # False: h is all zeros, nothing computed
                    np.add(pre[t], hs, out=acc)
                else:
                    np.add(pre[t], ZERO, out=acc)
            else:  # diagonal recurrent weights
                hd = diag * h_prev[:, None, :]
                hd += F32(0)
                np.add(pre[t], hd.reshape(n_batch, -1), out=acc)
            if peep_if is not None:
                acc3[:, :k] += peep_if * c[:, None, :]
            if ln_ifc is not None:
                v = acc3[:, : k + 1]
                _mean_stddev_normalization3(v)
                v *= ln_ifc
                v += bias_ifc
            if sg is not None:
                _sigmoid_to(acc, sg)
            else:
                sigmoid(ifg)
            if act is not None:
                act(cg)
            c *= fg
            if cifg:
                np.subtract(ONE, fg, out=fg)
                cg *= fg
            else:
                cg *= ig
            c += cg
            if cell_clip > 0:
                clip_ufunc(c, cc_lo, cc_hi, out=c)
            if sg is None:
                if peep_o is not None:
                    og += peep_o * c
                if ln_o is not None:
                    _mean_stddev_normalization(og)
                    og *= ln_o
                    og += bias_o
                sigmoid(og)
            if tanh_act:
                np.copyto(tbuf, c)
                tanh_inplace(tbuf)
            else:
                np.copyto(tbuf, c)
                if act is not None:
                    act(tbuf)
            dst = out3[t]
            if proj is None:
                np.multiply(tbuf, og, out=dst)
            else:
                tbuf *= og
                if proj.fc is None:
                    mm_p(tbuf, proj.wt, out=r)
                    if pb is not None:
                        r += pb
                elif proj_fc(tbuf, r):  # False: all zeros, skipped
                    if pb is not None:
                        r += pb
                else:
                    r[...] = F32(0) if pb is None else pb
                if proj_clip > 0:
                    clip_ufunc(r, pc_lo, pc_hi, out=r)
                dst[...] = r
            h_prev = dst
        if t >= 0:
            h[...] = h_prev
