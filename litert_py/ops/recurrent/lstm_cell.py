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
from ..bound_plan import bound_plan, run_calls
from ..common import clip_ufunc
from ..eigen_math import logistic_into, logistic_work, tanh_inplace, tanh_work
from .common import StepHybridProduct
from .lstm_common import (
    EPS_LN,
    F32,
    ONE,
    ZERO,
    float_dot,
)
from .lstm_plan import run_planned, step_activation


def sigmoid(v: np.ndarray) -> None:
    """ApplySigmoidToVector (tensor_utils.h): Eigen's logistic, in place (litert_py.ops.eigen_math). numpy's
    1 / (1 + exp(-x)) differs from it in the last ulp now and then, enough to flip an int8 value that a hybrid
    kernel re-quantizes (tests/ops/recurrent/test_lstm_activation_flips.py)."""
    logistic_into(v, v)


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
    recurrent weights, one Product per gate. ``compute(v)`` -> (B, G*n_cell): ``0 + W v``, gates stacked."""

    combined: Product | None
    per_gate: dict | None
    gates: tuple
    n_cell: int

    @property
    def hybrid(self) -> bool:
        p = self.combined if self.combined is not None else next(iter(self.per_gate.values()))
        return p.fc is not None

    def compute(self, v) -> np.ndarray:
        n = self.n_cell
        acc = np.zeros((v.shape[0], n * len(self.gates)), F32)
        if self.combined is not None:
            self.combined.add_to(acc, v)
        else:
            for k, g in enumerate(self.gates):
                self.per_gate[g].add_to(acc[:, k * n : (k + 1) * n], v)
        return acc


@dataclass(frozen=True, eq=False)
class SequencePlan:
    """The constants of ``LstmCell``'s per-step function, gates stacked in the order (i,) f, c, o; built once
    with the cell. ``fast``: every step's input products are computed before the loop, the recurrent product and
    the projection take the lean paths (``h_wt`` / ``h_fc`` / ``diag``, ``proj_wt`` / ``proj_fc``); otherwise
    (a sparse hybrid product: its products share scaling-factor scratch, so their order per step matters)
    each step computes its own input products and ``GateProducts`` / ``Product`` do the rest."""

    fast: bool
    k: int  # the sigmoid gates before the cell gate: (i,) f
    base: np.ndarray  # (G*n,) float32: the stacked biases (layer norm: 0)
    peep_if: np.ndarray | None  # (k, n) peephole weights of (i,) f
    peep_o: np.ndarray | None  # (n,) peephole weights of o
    ln_ifc: np.ndarray | None  # (k+1, n) layer-norm weights of (i,) f, c
    bias_ifc: np.ndarray | None  # (k+1, n) biases of (i,) f, c (with layer norm)
    ln_o: np.ndarray | None  # (n,) layer-norm weights of o
    bias_o: np.ndarray  # (n,) bias of o
    h_wt: np.ndarray | None  # (n_output, G*n) float32 recurrent weights (fast path)
    diag: np.ndarray | None  # (G, n) diagonal recurrent weights (fast path)
    h_fc: StepHybridProduct | None  # hybrid recurrent product (fast path)
    proj_wt: np.ndarray | None  # (n_cell, n_output) float32 projection weights (fast path)
    proj_fc: StepHybridProduct | None  # hybrid projection (fast path)
    # 0-d clip bounds (a numpy scalar operand costs a ufunc call ~0.5 us more)
    cell_lo: np.ndarray
    cell_hi: np.ndarray
    proj_lo: np.ndarray
    proj_hi: np.ndarray

    @property
    def early_o(self) -> bool:
        """Fast path without peephole and layer norm: the output gate does not wait for the new cell state, one
        sigmoid pass over all gates (the cell gate's sigmoid is computed and unused)."""
        return self.fast and self.peep_o is None and self.ln_o is None


class _StepBuffers:
    """The scratch of one ``LstmCell.run`` (batch ``B``): the stacked gate accumulator and its per-gate views."""

    __slots__ = tuple("acc acc3 hs sg ifg cg fg ig og tbuf r sig_all tanh_cg tanh_c flat".split())

    def __init__(self, cell: LstmCell, n_batch: int, c: np.ndarray):
        d = cell._seq
        n, k, n_g = cell.n_cell, d.k, len(cell.x.gates)
        self.acc = np.empty((n_batch, n_g * n), F32)
        self.acc3 = self.acc.reshape(n_batch, n_g, n)
        self.hs = np.empty_like(self.acc)
        self.sg = np.empty_like(self.acc) if d.early_o else None  # all gates' sigmoids
        gsrc = self.acc3 if self.sg is None else self.sg.reshape(n_batch, n_g, n)
        self.ifg, self.cg, self.fg = gsrc[:, :k], self.acc3[:, k], gsrc[:, k - 1]
        self.ig = None if k == 1 else gsrc[:, 0]
        self.og = gsrc[:, k + 1]
        self.tbuf = np.empty((n_batch, n), F32)
        self.r = np.empty((n_batch, cell.n_output), F32) if cell.proj is not None else None
        # Eigen's sigmoid / tanh with prepared scratch on flat views (the same arithmetic as logistic_into /
        # tanh_inplace, fewer numpy calls): all gates' sigmoids, tanh of the cell gate (contiguous for one
        # batch row), tanh of the new cell state written straight to tbuf (no copy of c first).
        self.sig_all = logistic_work(self.acc.size) if self.sg is not None else None
        tanh = cell.act is tanh_inplace
        self.tanh_cg = tanh_work(self.cg.size) if tanh and self.cg.flags.c_contiguous else None
        self.tanh_c = tanh_work(c.size) if tanh and c.flags.c_contiguous and c.dtype == F32 else None
        flat = (self.acc, self.sg, self.cg, c, self.tbuf)  # 1-D views of those (made once, not per step)
        self.flat = tuple(v.reshape(-1) if v is not None and v.flags.c_contiguous else None for v in flat)


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

    def __post_init__(self):
        """The SequencePlan of the per-step function (``_advance``)."""
        gates = self.x.gates
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
        hp, pp = self.h.combined, self.proj
        plan = SequencePlan(
            fast=fast,
            k=k,
            base=np.zeros(self.n_cell * len(gates), F32) if ln else np.concatenate([self.bias[g] for g in gates]),
            peep_if=np.stack([self.peep[g] for g in gates[:k]]) if self.peep else None,
            peep_o=self.peep.get("o"),
            ln_ifc=np.stack([self.ln[g] for g in gates[:-1]]) if ln else None,
            bias_ifc=np.stack([self.bias[g] for g in gates[:-1]]) if ln else None,
            ln_o=self.ln.get("o"),
            bias_o=self.bias["o"],
            h_wt=hp.wt if fast and hp is not None and hp.fc is None else None,
            diag=np.stack([self.h.per_gate[g].diag for g in gates]) if fast and hp is None else None,
            h_fc=StepHybridProduct.of(hp.fc) if fast and hp is not None and hp.fc is not None else None,
            proj_wt=pp.wt if fast and pp is not None and pp.fc is None else None,
            proj_fc=StepHybridProduct.of(pp.fc) if fast and pp is not None and pp.fc is not None else None,
            cell_lo=np.array(-self.cell_clip, F32),
            cell_hi=np.array(self.cell_clip, F32),
            proj_lo=np.array(-self.proj_clip, F32),
            proj_hi=np.array(self.proj_clip, F32),
        )
        object.__setattr__(self, "_seq", plan)

    @property
    def plain(self) -> bool:
        """The fast path without peephole, layer norm, projection or CIFG, TANH activation and a dense (float or
        hybrid) recurrent product: its steps run in ``_plain_run``."""
        d = self._seq
        return (
            d.early_o
            and self.act is tanh_inplace
            and d.k == 2
            and self.proj is None
            and d.peep_if is None
            and d.ln_ifc is None
            and (d.h_wt is not None or d.h_fc is not None)
        )

    def step(self, x, aux, h, c, out) -> None:
        """One step: x (B, I), aux (B, A) or None, h (B, n_output) and c (B, n_cell) states (updated), out
        (B, n_output) written (``run`` over a sequence of one)."""
        self.run(x[None], None if aux is None else aux[None], h, c, out[None])

    def run(self, x3, aux3, h, c, out3, reverse: bool = False) -> None:
        """The whole sequence: x3 (T, B, I) and aux3 (T, B, A) or None time-major (views allowed), h / c the
        states (updated), out3 (T, B, n_output) written. Each step is ``_advance``; on the fast path the input
        products of every step are computed up front (``_sequence_inputs``), else per step (``_step_inputs``)."""
        n_steps = x3.shape[0]
        if n_steps == 0 or x3.shape[1] == 0:  # no time step or no sequence: the states stay as they are
            return
        aux3 = aux3 if aux3 is not None and self.aux is not None else None
        if run_planned(self, x3, aux3, h, c, out3, reverse):  # a plain float32 cell: one bound plan
            return
        pre = self._sequence_inputs(x3, aux3) if self._seq.fast else None
        order = range(n_steps - 1, -1, -1) if reverse else range(n_steps)
        if pre is not None and self.plain:
            _plain_run((self,), (pre,), (h,), (c,), (out3,), (order,))
            return
        buf = _StepBuffers(self, x3.shape[1], c)
        h_prev = h
        for t in order:
            if pre is not None:
                pre_t = pre[t]
            else:
                pre_t = self._step_inputs(x3[t], None if aux3 is None else aux3[t])
            self._advance(pre_t, h_prev, c, out3[t], buf)
            h_prev = out3[t]
        h[...] = h_prev

    def _step_inputs(self, x, aux) -> np.ndarray:
        """One step's gate inputs before the recurrent product ((B, G*n) float32): bias (layer norm: 0) +
        (0 + W_x x) [+ (0 + W_aux aux)]; an all-zero input (IsZeroVector over the batch) skips its product."""
        base = self._seq.base
        pre = self.x.compute(x) + base if x.any() else np.repeat(base[None, :], x.shape[0], axis=0)
        if aux is not None and aux.any():
            pre += self.aux.compute(aux)
        return pre

    def _input_products(self, gp: GateProducts, x3: np.ndarray, out: np.ndarray | None = None) -> tuple:
        """``0 + W v`` for every step ((T, B, G*n) float32) and the steps whose input is not all zeros (IsZeroVector
        over the step's batch: those skip the product). Hybrid: all T*B rows at once (each row is quantized and
        multiplied on its own, exactly: the same numbers as per step); float32: one (B, I) product per step,
        the same BLAS call as the one-step code (one GEMM over all rows can round differently). ``out``: the
        (T, B, G*n) float32 array to write them into (a new one by default)."""
        t_, b_ = x3.shape[:2]
        p = gp.combined
        prod = np.empty((t_, b_, self.n_cell * len(gp.gates)), F32) if out is None else out
        if p.fc is not None:
            p.fc([x3.reshape(t_ * b_, x3.shape[2])], [prod])
        else:  # float32: one product per step, as a larger GEMM may sum in another order (BLAS kernels)
            mm = float_dot(p.wt)
            for t in range(t_):
                mm(x3[t], p.wt, out=prod[t])
        prod += ZERO  # the products are added to a zero accumulator first (-0 -> +0)
        return prod, x3.reshape(t_, -1).any(axis=1)

    def _sequence_inputs(self, x3, aux3, out: np.ndarray | None = None) -> np.ndarray:
        """``_step_inputs`` of every step at once ((T, B, G*n) float32; into ``out`` when given)."""
        base = self._seq.base
        pre, nz = self._input_products(self.x, x3, out)
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

    def _advance(self, pre_t, h_prev, c, dst, buf: _StepBuffers) -> None:
        """One time step (lstm_eval.cc LstmStepFloat / LstmStepHybrid) on stacked gates: ``pre_t`` the step's gate
        inputs (``_step_inputs``), ``h_prev`` the output state, ``c`` the cell state (updated), ``dst`` the
        new output state written."""
        d = self._seq
        k, acc3 = d.k, buf.acc3
        self._add_recurrent(pre_t, h_prev, buf)
        if d.peep_if is not None:
            acc3[:, :k] += d.peep_if * c[:, None, :]
        if d.ln_ifc is not None:
            v = acc3[:, : k + 1]
            _mean_stddev_normalization3(v)
            v *= d.ln_ifc
            v += d.bias_ifc
        if buf.sig_all is not None:
            buf.sig_all(buf.flat[0], buf.flat[1])
        elif d.fast:
            sigmoid(buf.ifg)
        else:  # gate by gate, as LiteRT (Eigen's packet / scalar split depends on the buffer's length)
            for j in range(k):
                sigmoid(acc3[:, j])
        act, cg, fg = self.act, buf.cg, buf.fg
        if buf.tanh_cg is not None:
            buf.tanh_cg(buf.flat[2], buf.flat[2])
        elif act is not None:
            act(cg)
        else:  # NONE: LiteRT's CalculateLstmOutput* leave their scratch, the cell gate, unwritten: h = o * g
            np.copyto(buf.tbuf, cg)
        c *= fg
        if buf.ig is None:  # CIFG: i = 1 - f
            np.subtract(ONE, fg, out=fg)
            cg *= fg
        else:
            cg *= buf.ig
        c += cg
        if self.cell_clip > 0:
            clip_ufunc(c, d.cell_lo, d.cell_hi, out=c)
        og = buf.og
        if buf.sg is None:
            if d.peep_o is not None:
                og += d.peep_o * c
            if d.ln_o is not None:
                _mean_stddev_normalization(og)
                og *= d.ln_o
                og += d.bias_o
            sigmoid(og)
        t = buf.tbuf
        if buf.tanh_c is not None:
            buf.tanh_c(buf.flat[3], buf.flat[4])
        elif act is not None:
            np.copyto(t, c)
            act(t)
        if self.proj is None:
            np.multiply(t, og, out=dst)
        else:
            t *= og
            self._project(t, dst, buf.r)

    def _add_recurrent(self, pre_t, h_prev, buf: _StepBuffers) -> None:
        """``buf.acc = pre_t + W_h h_prev`` (hybrid: the product skipped when h is all zeros; the zero accumulator
        still turns -0 into +0)."""
        d, acc, hs = self._seq, buf.acc, buf.hs
        if d.h_wt is not None:
            float_dot(d.h_wt)(h_prev, d.h_wt, out=hs)
            np.add(pre_t, hs, out=acc)
        elif d.h_fc is not None:
            if d.h_fc(h_prev, hs):  # False: h is all zeros, nothing computed
                np.add(pre_t, hs, out=acc)
            else:
                np.add(pre_t, ZERO, out=acc)
        elif d.diag is not None:
            hd = d.diag * h_prev[:, None, :]
            hd += F32(0)
            np.add(pre_t, hd.reshape(acc.shape), out=acc)
        elif h_prev.any() or not self.h.hybrid:
            np.add(pre_t, self.h.compute(h_prev), out=acc)
        else:
            np.add(pre_t, ZERO, out=acc)

    def _project(self, t, dst, r) -> None:
        """``dst = clip(proj_bias + W_p t)`` (hybrid: the product skipped when t is all zeros)."""
        d, pb = self._seq, self.proj_bias
        if d.proj_wt is not None:
            float_dot(d.proj_wt)(t, d.proj_wt, out=r)
            if pb is not None:
                r += pb
        elif d.proj_fc is not None:
            if d.proj_fc(t, r):  # False: all zeros, skipped
                if pb is not None:
                    r += pb
            else:
                r[...] = F32(0) if pb is None else pb
        else:
            r[...] = F32(0) if pb is None else pb
            if t.any() or self.proj.fc is None:
                self.proj.add_to(r, t)
        if self.proj_clip > 0:
            clip_ufunc(r, d.proj_lo, d.proj_hi, out=r)
        dst[...] = r


def run_pair(fw: LstmCell, bw: LstmCell, x_fw, x_bw, aux3, states, out_fw, out_bw) -> None:
    """BIDIRECTIONAL_SEQUENCE_LSTM's two passes: ``fw.run`` forward and ``bw.run`` backward (``states``: the
    (h, c) of each). When both cells are plain (``LstmCell.plain``) with the same sizes and cell clip, the
    passes step together in ``_plain_run``, the forward cell's step t with the backward cell's step T-1-t."""
    (h_fw, c_fw), (h_bw, c_bw) = states
    n_steps, n_batch = x_fw.shape[:2]
    if not (_pairable(fw, bw) and n_steps and n_batch):
        fw.run(x_fw, aux3, h_fw, c_fw, out_fw)
        bw.run(x_bw, aux3, h_bw, c_bw, out_bw, reverse=True)
        return
    aux3 = aux3 if aux3 is not None and fw.aux is not None else None
    pre = (fw._sequence_inputs(x_fw, aux3), bw._sequence_inputs(x_bw, aux3))
    orders = (range(n_steps), range(n_steps - 1, -1, -1))
    _plain_run((fw, bw), pre, (h_fw, h_bw), (c_fw, c_bw), (out_fw, out_bw), orders)


def _plain_run(cells, pres, hs, cs, outs, orders) -> None:
    """The steps of plain cells (``LstmCell.plain``; one, or a bidirectional pair with equal sizes and cell
    clip) that lstm_plan.run_planned does not run (hybrid, or longer than its plan): per step each cell's
    recurrent product into its gate rows, then lstm_plan.step_activation's calls (bound once: the same buffers
    at every step) and each cell's ``o * tanh(c)`` into its output. Per cell j: ``pres[j]`` its gate inputs
    (``_sequence_inputs``), ``hs[j]`` / ``cs[j]`` its states (updated), ``outs[j]`` its output (T, B,
    n_output), ``orders[j]`` its time indices in step order. Two cells share no state and every gate
    nonlinearity and cell update is elementwise, so evaluating both cells' values in one call over stacked
    (2, B, ...) buffers gives each the numbers of its own pass, in about half the numpy calls (each keeps its
    own recurrent product)."""
    cell, n_d, n_batch = cells[0], len(cells), pres[0].shape[1]
    n, mul, add = cell.n_cell, np.multiply, np.add
    acc = np.empty((n_d, n_batch, 4 * n), F32)
    rs = np.empty_like(acc)
    stacked = not (n_d == 1 and cs[0].flags.c_contiguous)
    c = np.stack(cs) if stacked else cs[0][None]
    first, step, last, og, t = step_activation(cell, acc.reshape(-1, 4 * n), c.reshape(-1, n))
    og, t = og.reshape(n_d, n_batch, n), t.reshape(n_d, n_batch, n)
    act = bound_plan(step)
    rec = [(p._seq.h_wt, float_dot(p._seq.h_wt), p._seq.h_fc) for p in cells]
    h_prev = list(hs)
    run_calls(first)
    for ts_all in zip(*orders):
        for j, ts in enumerate(ts_all):
            wt, mm, h_fc = rec[j]
            if wt is not None:
                mm(h_prev[j], wt, rs[j])
                add(pres[j][ts], rs[j], acc[j])
            elif h_fc(h_prev[j], rs[j]):  # False: h is all zeros, nothing computed
                add(pres[j][ts], rs[j], acc[j])
            else:
                add(pres[j][ts], ZERO, acc[j])
        for call in act:
            call()
        for j, ts in enumerate(ts_all):
            dst = outs[j][ts]
            mul(t[j], og[j], dst)
            h_prev[j] = dst
    run_calls(last)
    for j in range(n_d):
        hs[j][...] = h_prev[j]
        if stacked:
            cs[j][...] = c[j]


def _pairable(fw: LstmCell, bw: LstmCell) -> bool:
    """Both cells plain (``LstmCell.plain``) with equal sizes and cell clip."""
    return (
        fw.n_cell == bw.n_cell
        and fw.n_output == bw.n_output
        and fw.cell_clip == bw.cell_clip
        and (fw.aux is None) == (bw.aux is None)
        and fw.plain
        and bw.plain
    )
