"""LSTM (full kernel), UNIDIRECTIONAL_SEQUENCE_LSTM (float32, hybrid, integer 8x8_16) and
BIDIRECTIONAL_SEQUENCE_LSTM (float32, hybrid).

Inputs of the full kernel (20 or 24): 0 input; 1-4 input-to-{input, forget, cell, output} weights; 5-8
recurrent-to-gate weights; 9-11 cell-to-{input, forget, output} (peephole) weights; 12-15 gate biases;
16 projection weights; 17 projection bias; 18 output_state and 19 cell_state (variable tensors, updated in
place); 20-23 layer-norm coefficients. Optional inputs are -1. CIFG: no input gate (1-4, 5, 9, 12 absent),
``i = 1 - f``. Layer norm is on when the forget-gate coefficients are given (24 inputs).

One step (``LstmStepFloat`` / ``LstmStepHybrid`` of lstm_eval.cc), gates in the order i, f, c, (cell
update), o::

    gate = bias (layer norm: 0) + W_x x [+ W_aux aux] + W_h h [+ w_peep * c]
    layer norm: gate = MeanStddevNormalization(gate) * ln + bias
    i, f, o = sigmoid(gate);  g = act(gate)               # act: the fused activation (TANH usually)
    c = f * c + g * i  (CIFG: i = 1 - f);  clip to +-cell_clip when > 0
    o uses the *updated* c in its peephole
    h = o * act(c), then projection: h = proj_bias + W_p h, clipped to +-proj_clip when > 0
    output[t] = h

Hybrid (int8 weights, float activations): x, aux and h are quantized per batch row every step
(``batch_quantize_floats``, symmetric or asymmetric) and each product is ``f32(dot) * f32(sf * s_w)``,
FULLY_CONNECTED's hybrid arithmetic (``FullyConnectedHybrid`` is reused, x86 SSE quirks included); peephole
weights are dequantized (``w * s``), the projection input ``o * act(c)`` is quantized the same way. An input
that is all zeros skips its product (identical up to the sign of zero).

Sequence ops walk the time axis (``time_major``: (T, B, I), else (B, T, I)). Rows are independent, so the
whole batch is stepped at once (LiteRT's batch-major loop runs one row at a time: same numbers).

Speed (``LstmCell.run`` / ``LstmIntegerCell.run``; the results are those of the one-step code kept as ``step``):
the input-to-gate products do not depend on the recurrence, so ``0 + W_x x`` (all gates stacked) is computed for
every time step before the loop (hybrid: one product over the T*B rows, quantized and multiplied row by row
exactly as per step; float32: one BLAS call per step with the step's own (B, I) operand, since a GEMM over all
rows may sum in another order; integer: ``sat16(mbqm(W_x x + eff_x))`` for all steps), then ``bias +`` that and
``+ W_aux aux``; a step whose whole input (B rows) is zero skips its product as before. Each step then does one
recurrent product for all gates (integer: with per-column MBQM constants, in place), the gate nonlinearities
over stacked views, 0-d constants instead of numpy scalars (a scalar operand costs a ufunc call ~0.5 us), and
the hybrid recurrent / projection products through ``recurrent_common.StepHybridProduct``. The sparse hybrid
kernel keeps the one-step code (its products share the scaling-factor scratch). numpy 2.4's in-place float32
``np.negative`` is wrong on a strided (B, 1) view, so the sigmoid negates with ``* -1``.
BIDIRECTIONAL_SEQUENCE_LSTM (48 inputs: forward cell 1-17, backward cell 18-34, fw states 35-36, bw states
37-38, aux input 39, fw aux weights 40-43, bw aux weights 44-47) runs a forward and a backward cell; without
aux weights an aux input is the backward cell's input; ``merge_outputs`` concatenates both directions.

LiteRT's batch-major bidirectional pass with ``merge_outputs`` addresses row b's state at
``b * output_batch_leading_dim`` (lstm_eval.cc EvalFloat/EvalHybrid), past the state buffer for b >= 1: undefined
behaviour that is not reproduced (litert_py keeps one state row per batch entry; identical for one row).

Integer 8x8_16 (int8 input, weights and output_state, int16 cell state with scale 2^cs, int32 biases, int16
peephole and layer-norm weights, 5 intermediates: docs/quantized-arithmetic.md section 7), bit-exact with the
reference: per gate ``G = sat16(mbqm(W_x x + eff_x) + sat16(mbqm(W_h h + eff_h)))``, the peephole product with
LiteRT's ``v_size = n_output`` (and, in its 16-wide blocks, NEON MultiplyByQuantizedMultiplier4Rows, whose final
shift rounds ties up), integer layer norm, gemmlowp int16 ``logistic`` / ``tanh`` (tabulated over all 65536
inputs), the cell update with RoundingDivideByPOT, and the hidden / projection requantization. Without layer norm
the gate scales are 2^-12; the effective scales are float32 products as in Prepare.

Sources matched: LiteRT tflite/kernels/lstm.cc and unidirectional_sequence_lstm.cc (Prepare,
CheckInputTensorDimensions, Eval dispatch), bidirectional_sequence_lstm.cc, tflite/kernels/lstm_eval.cc
(CalculateLstmGateFloat, UpdateLstmCellFloat, CalculateLstmOutputFloat, CalculateLstmGateHybrid,
CalculateLstmOutputHybrid, CalculateLstmGateInteger8x8_16, UpdateLstmCellInteger,
CalculateLstmOutputInteger8x8_16, LstmStepFloat, LstmStepHybrid, LstmStepInteger8x8_16, EvalFloat, EvalHybrid,
EvalInteger8x8_16), unidirectional_sequence_lstm.cc (PopulateQuantizedLstmParams8x8_16,
PopulatePrecomputedZPTimesWeightsWithBias), tflite/kernels/internal/optimized/sse_tensor_utils.h (which
tensor_utils run on x86: portable ones except the NEON VectorBatchVectorCwiseProductAccumulate),
neon_tensor_utils.cc, gemmlowp fixedpoint/fixedpoint.h (int16 logistic, tanh, constants),
tflite/kernels/internal/reference/portable_tensor_utils.cc (MeanStddevNormalization, CwiseClipping).

Sparse hybrid LSTM (lstm.cc make_ledger/copy_ledger; lstm_eval.cc with ledgers; sse_tensor_utils.cc
SseSparseMatrixBatchVectorMultiplyAccumulate): weight matrices in 1x16 block-sparse form are densified at load
and multiplied as LiteRT's sparse product does (SparseHybridProduct: no zero-point correction, the recurrent
product scaled by the input's factors). LiteRT crashes on a sparse LSTM without projection weights; we refuse it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..quant import (
    SseMinus128Fix,
    batch_quantize_floats,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    saturating_rounding_doubling_high_mul,
    wrap32,
)
from ..schema.model import ActivationFunctionType as Act
from ..schema.model import BuiltinOperator
from .common import clip_ufunc
from .fully_connected import apply_activation_to_vector
from .recurrent_common import StepHybridProduct
from .registry import OpContext, TensorInfo, register
from .rnn import bidirectional_views, hybrid_matvec
from .unary import get_inv_sqrt_quantized_multiplier_exp

F32 = np.float32
GATES = ("i", "f", "c", "o")
# full-kernel input indices per gate
IN_W = {"i": 1, "f": 2, "c": 3, "o": 4}
REC_W = {"i": 5, "f": 6, "c": 7, "o": 8}
PEEP_W = {"i": 9, "f": 10, "o": 11}
BIAS = {"i": 12, "f": 13, "c": 14, "o": 15}
PROJ_W, PROJ_B, OUT_STATE, CELL_STATE = 16, 17, 18, 19
LN = {"i": 20, "f": 21, "c": 22, "o": 23}


# 0-d constants for the per-step loops (a numpy scalar operand costs a ufunc call ~0.5 us more)
ZERO, ONE, MINUS_ONE, EPS_LN = (np.array(v, F32) for v in (0, 1, -1, 1e-8))
P14, P30, P31, S31, M32 = (np.array(v, np.int64) for v in (1 << 14, 1 << 30, 1 << 31, 31, 0xFFFFFFFF))
I16_LO, I16_HI, I16_OFF, I8_LO, I8_HI = (np.array(v, np.int64) for v in (-32768, 32767, 32768, -128, 127))
Z64, S10, S15, S20, K512, K1024 = (np.array(v, np.int64) for v in (0, 10, 15, 20, 512, 1024))


def _sigmoid(v: np.ndarray) -> None:
    # v * -1, not np.negative: numpy 2.4's in-place float32 negative is wrong on a strided (B, 1) view
    np.multiply(v, MINUS_ONE, out=v)
    np.exp(v, out=v)
    v += ONE
    np.reciprocal(v, out=v)


def _sigmoid_to(v: np.ndarray, out: np.ndarray) -> None:
    """``_sigmoid`` of ``v`` written to ``out`` (same operations)."""
    np.multiply(v, MINUS_ONE, out=out)
    np.exp(out, out=out)
    out += ONE
    np.reciprocal(out, out=out)


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


def _check_block_sparse_16(ctx: OpContext, t: TensorInfo) -> None:
    """LiteRT's sparse hybrid LSTM reads dim_metadata[1] as a ledger of 16-wide column blocks."""
    sp = t.sparsity
    ok = (sp is not None and tuple(sp.traversal_order) == (0, 1, 2) and tuple(sp.block_map) == (1,)
          and len(sp.dim_metadata) == 3 and [d.format for d in sp.dim_metadata] == [0, 1, 0]
          and sp.dim_metadata[2].dense_size == 16 and t.shape[1] % 16 == 0)
    ctx.check(ok, f"{t.name}: a sparse hybrid LSTM needs every weight matrix in 1x16 block-sparse form "
                  "(traversal order 0,1,2, block map 1, DENSE/SPARSE_CSR/DENSE, block size 16)")
    counts = np.diff(sp.dim_metadata[1].array_segments)
    ctx.check(counts.size == 0 or (counts.max() <= 255 and max(sp.dim_metadata[1].array_indices, default=0) <= 255),
              f"{t.name}: more than 255 blocks in a row do not fit LiteRT's uint8 ledger")


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
            return {g: acc[:, k * n:(k + 1) * n] for k, g in enumerate(self.gates)}
        out = {}
        for g in self.gates:
            out[g] = np.zeros((v.shape[0], n), F32)
            self.per_gate[g].add_to(out[g], v)
        return out


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
        fast = all(gp is None or (gp.combined is None or not isinstance(gp.combined.fc, SparseHybridProduct))
                   for gp in (self.x, self.aux, self.h)) and self.x.combined is not None and \
            (self.aux is None or self.aux.combined is not None) and \
            (self.proj is None or not isinstance(self.proj.fc, SparseHybridProduct)) and \
            (self.h.combined is not None or all(p.diag is not None for p in self.h.per_gate.values()))
        k = len(gates) - 2  # the sigmoid gates before the cell gate: (i,) f
        ln = bool(self.ln)
        base = np.zeros(n * len(gates), F32) if ln else np.concatenate([self.bias[g] for g in gates])
        d = {"fast": fast, "k": k, "base": base,
             "peep_if": np.stack([self.peep[g] for g in gates[:k]]) if self.peep else None,
             "ln_ifc": np.stack([self.ln[g] for g in gates[:-1]]) if ln else None,
             "bias_ifc": np.stack([self.bias[g] for g in gates[:-1]]) if ln else None,
             "diag": None if self.h.combined is not None else
             np.stack([self.h.per_gate[g].diag for g in gates])}
        if fast:
            hp, pp = self.h.combined, self.proj
            d["h_fc"] = StepHybridProduct.of(hp.fc) if hp is not None and hp.fc is not None else None
            d["proj_fc"] = StepHybridProduct.of(pp.fc) if pp is not None and pp.fc is not None else None
        object.__setattr__(self, "_seq", d)

    def _gate(self, g, xs, auxs, hs, c, act):
        ln = self.ln.get(g)
        acc = np.zeros((hs[g].shape[0], self.n_cell), F32) if ln is not None else \
            np.repeat(self.bias[g][None, :], hs[g].shape[0], axis=0)
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
        if act is _sigmoid:
            _sigmoid(acc)
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
        hs = self.h.compute(h) if (h.any() or not self.h.hybrid) else \
            {g: np.zeros((h.shape[0], self.n_cell), F32) for g in self.h.gates}
        ig = None if cifg else self._gate("i", xs, auxs, hs, c, _sigmoid)
        fg = self._gate("f", xs, auxs, hs, c, _sigmoid)
        cg = self._gate("c", xs, auxs, hs, None, self.act)
        c *= fg
        if cifg:
            np.subtract(F32(1), fg, out=fg)
            ig = fg
        cg *= ig
        c += cg
        if self.cell_clip > 0:
            clip_ufunc(c, -self.cell_clip, self.cell_clip, out=c)
        og = self._gate("o", xs, auxs, hs, c, _sigmoid)
        t = c.copy()
        if self.act is not None:
            self.act(t)
        t *= og
        if self.proj is not None:
            r = np.zeros((t.shape[0], self.n_output), F32) if self.proj_bias is None else \
                np.repeat(self.proj_bias[None, :], t.shape[0], axis=0)
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

    def run(self, x3, aux3, h, c, out3, reverse: bool = False) -> None:
        """The whole sequence: x3 (T, B, I) and aux3 (T, B, A) or None time-major (views allowed), h / c the
        states (updated), out3 (T, B, n_output) written. Per step exactly ``step``'s arithmetic, with the input
        products of every step computed up front and the gates stacked (i, f, c, o) along the last axis."""
        d = self._seq
        n_steps = x3.shape[0]
        order = range(n_steps - 1, -1, -1) if reverse else range(n_steps)
        use_aux = aux3 is not None and self.aux is not None
        if not d["fast"]:
            for t in order:
                self.step(x3[t], aux3[t] if use_aux else None, h, c, out3[t])
            return
        n, k = self.n_cell, d["k"]
        n_g = len(self.x.gates)
        n_batch = x3.shape[1]
        # gate = bias (layer norm: 0) + (0 + W_x x) [+ (0 + W_aux aux)], skipped for all-zero inputs
        pre, nz = self._input_products(self.x, x3)
        pre += d["base"]
        if not nz.all():
            pre[~nz] = d["base"]
        if use_aux:
            pa, nza = self._input_products(self.aux, aux3)
            if nza.all():
                pre += pa
            else:
                pre[nza] += pa[nza]
        acc = np.empty((n_batch, n_g * n), F32)
        acc3 = acc.reshape(n_batch, n_g, n)
        hs = np.empty_like(acc)
        hp = self.h.combined
        hybrid_h = hp is not None and hp.fc is not None
        h_fc, proj_fc = d["h_fc"], d["proj_fc"]
        wt = hp.wt if hp is not None and hp.fc is None else None
        mm_h = _float_dot(wt)
        mm_p = _float_dot(self.proj.wt if self.proj is not None and self.proj.fc is None else None)
        diag = d["diag"]
        peep_if, peep_o = d["peep_if"], self.peep.get("o")
        ln_ifc, bias_ifc = d["ln_ifc"], d["bias_ifc"]
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
                v = acc3[:, :k + 1]
                _mean_stddev_normalization3(v)
                v *= ln_ifc
                v += bias_ifc
            if sg is not None:
                _sigmoid_to(acc, sg)
            else:
                _sigmoid(ifg)
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
                _sigmoid(og)
            if tanh_act:
                np.tanh(c, out=tbuf)
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


def _f32(t: TensorInfo | None):
    return None if t is None else t.data.astype(F32).reshape(-1)


def build_cell(ctx: OpContext, ins: list, asymmetric: bool, cell_clip: float, proj_clip: float,
               activation: int, use_layer_norm: bool, aux_w: list | None = None,
               allow_diagonal: bool = False) -> LstmCell:
    """``ins``: the 24 full-kernel inputs (TensorInfo or None), ``aux_w``: 4 aux weights (i, f, c, o) or None.
    Checks CheckInputTensorDimensions' rules for float and hybrid."""
    x = ins[0]
    n_input = x.shape[-1]
    w_o = ins[IN_W["o"]]
    ctx.check(w_o is not None and len(w_o.shape) == 2 and w_o.shape[1] == n_input,
              "input_to_output_weights->dims->data[1] != n_input")
    n_cell = w_o.shape[0]
    r_o = ins[REC_W["o"]]
    ctx.check(r_o is not None and r_o.shape[0] == n_cell, "recurrent_to_output_weights->dims->data[0] != n_cell")
    n_output = r_o.shape[1] if len(r_o.shape) == 2 else r_o.shape[0]
    ctx.check(cell_clip >= 0, "params->cell_clip >= 0 was not true.")
    ctx.check(proj_clip >= 0, "params->proj_clip >= 0 was not true.")
    wtype = w_o.dtype
    hybrid = wtype in (np.int8, np.uint8)
    ctx.check(wtype == np.float32 or hybrid, f"Type {w_o.type_name} is not currently supported.")
    cifg = ins[IN_W["i"]] is None
    ctx.check(cifg == (ins[REC_W["i"]] is None), "cifg_weights_all_or_none == true was not true.")
    for t in ins[1:18] + ins[20:24] + list(aux_w or []):
        if t is not None:
            ctx.check(t.is_constant, f"litert_py's LSTM kernels need constant weights ({t.name})")
    # lstm.cc: a sparse input_to_output weight makes the hybrid kernel read every matrix through a ledger
    sparse = hybrid and ctx.builtin_code == BuiltinOperator.LSTM and w_o.sparsity is not None
    matrices = [t for t in ins[1:9] + [ins[PROJ_W]] if t is not None]
    if sparse:
        ctx.check(ins[PROJ_W] is not None, "litert_py: a sparse hybrid LSTM without projection weights is "
                  "refused (LiteRT reads the missing projection's sparsity and crashes)")
        for t in matrices:
            if t.sparsity is not None:
                _check_block_sparse_16(ctx, t)
            else:  # read densely, but with the row sums that a sparse op never computes
                ctx.check(not asymmetric, f"litert_py: {t.name} is dense in a sparse hybrid LSTM with "
                          "asymmetric_quantize_inputs (LiteRT then uses row sums it never computed)")
    for t in ins[1:24] + list(aux_w or []):
        ctx.check(t is None or t.sparsity is None or (sparse and any(t is m for m in matrices)),
                  f"{t and t.name}: sparse weights are only read by LSTM's hybrid kernel (LiteRT reads them as "
                  "dense elsewhere)")
    input_sf = np.zeros(x.shape[0] if len(x.shape) == 2 else 0, F32) if sparse else None

    def sparse_product(w: np.ndarray, scales, role: str) -> Product:
        return Product(fc=SparseHybridProduct(np.ascontiguousarray(w.T, dtype=np.float64),
                                              SseMinus128Fix.build(w, np.float64),
                                              np.broadcast_to(np.asarray(scales, F32), (w.shape[0],)).copy(),
                                              asymmetric, input_sf if role in ("x", "proj") else None,
                                              input_sf if role == "h" else None))

    def product(t: TensorInfo, k: int, role: str) -> Product:
        if len(t.shape) == 1:  # diagonal recurrent weights (UNIDIRECTIONAL_SEQUENCE_LSTM)
            ctx.check(allow_diagonal, f"{t.name}: recurrent weights must be 2-D")
            ctx.check(t.shape[0] == n_cell, f"{t.name}: diagonal weights must have n_cell entries")
            # LiteRT's hybrid kernel reads 1-D int8 recurrent weights as float (garbage, NaN): not reproduced
            ctx.check(t.dtype == np.float32, "litert_py: hybrid LSTM with diagonal recurrent weights is unsupported")
            d = t.data.astype(F32) if t.dtype == np.float32 else \
                np.multiply(t.data.view(np.int8), F32(t.scale), dtype=F32)
            return Product(diag=d)
        ctx.check(t.shape == (n_cell, k) or (t is ins[PROJ_W] and t.shape == (n_output, n_cell)),
                  f"{t.name}: dims {t.shape} != ({n_cell}, {k})")
        ctx.check(t.dtype == wtype, f"{t.name}: type {t.type_name} != {w_o.type_name}")
        if hybrid:
            ctx.check(bool(t.quantization.scale), f"{t.name}: hybrid weights need a scale")
            if t.sparsity is not None:
                return sparse_product(t.data.view(np.int8), t.scale, role)
            return Product(fc=hybrid_matvec(t.data, t.scale, asymmetric))
        return Product(wt=np.ascontiguousarray(t.data.T, dtype=F32))

    gates = GATES[1:] if cifg else GATES

    def group(ts: list, k: int, role: str) -> GateProducts:
        per_gate = {g: product(t, k, role) for g, t in zip(gates, ts)}  # checks shapes and types
        if any(p.diag is not None for p in per_gate.values()) or len({t.sparsity is None for t in ts}) > 1:
            return GateProducts(None, per_gate, gates, n_cell)
        stacked = np.concatenate([t.data for t in ts], axis=0)
        if not hybrid:
            return GateProducts(Product(wt=np.ascontiguousarray(stacked.T, dtype=F32)), None, gates, n_cell)
        scales = np.repeat(np.array([t.scale for t in ts], F32), n_cell)
        if ts[0].sparsity is not None:
            return GateProducts(sparse_product(stacked.view(np.int8), scales, role), None, gates, n_cell)
        return GateProducts(Product(fc=hybrid_matvec(stacked, scales, asymmetric)), None, gates, n_cell)

    xp = group([ins[IN_W[g]] for g in gates], n_input, "x")
    hp = group([ins[REC_W[g]] for g in gates], n_output, "h")
    aux = None
    if aux_w is not None:
        aux = group([aux_w[GATES.index(g)] for g in gates], aux_w[1].shape[1], "aux")
    peep = {}
    c_i, c_f, c_o = (ins[PEEP_W[g]] is not None for g in ("i", "f", "o"))
    ctx.check(((c_i or cifg) and c_f and c_o) or not (c_i or c_f or c_o),
              "peephole_weights_all_or_none == true was not true.")
    for g in ("i", "f", "o"):
        t = ins[PEEP_W[g]]
        if t is None or (g == "i" and cifg):
            continue
        ctx.check(len(t.shape) == 1 and t.shape[0] == n_cell, f"{t.name}: peephole weights must be (n_cell,)")
        peep[g] = t.data.astype(F32) if t.dtype == np.float32 else \
            np.multiply(t.data.view(np.int8), F32(t.scale), dtype=F32)
    bias = {}
    for g in gates:
        t = ins[BIAS[g]]
        ctx.check(t is not None and t.shape == (n_cell,) and t.dtype == np.float32,
                  f"{g} gate bias must be FLOAT32 (n_cell,)")
        bias[g] = _f32(t)
    if cifg:
        ctx.check(ins[BIAS["i"]] is None, "input_gate_bias == nullptr was not true.")
    ln = {}
    if use_layer_norm:
        for g in gates:
            t = ins[LN[g]]
            ctx.check(t is not None and t.shape == (n_cell,) and t.dtype == np.float32,
                      f"{g} layer norm coefficients must be FLOAT32 (n_cell,)")
            ln[g] = _f32(t)
    pw, pb = ins[PROJ_W], ins[PROJ_B]
    ctx.check(pw is not None or pb is None, "projecton_tensors_consistent == true was not true.")
    proj = None
    if pw is not None:
        ctx.check(len(pw.shape) == 2 and pw.shape == (n_output, n_cell),
                  "projection_weights must be (n_output, n_cell)")
        proj = product(pw, n_cell, "proj")
    else:
        ctx.check(n_output == n_cell, "without projection n_output must equal n_cell")
    if pb is not None:
        ctx.check(pb.shape == (n_output,) and pb.dtype == np.float32, "projection_bias must be FLOAT32 (n_output,)")
    return LstmCell(xp, aux, hp, peep, ln, bias, proj, _f32(pb), apply_activation_to_vector(activation),
                    float(cell_clip), float(proj_clip), n_cell, n_output, activation == Act.TANH)


def _check_states(ctx: OpContext, h: TensorInfo, c: TensorInfo, n_batch: int, cell: LstmCell):
    ctx.check(h is not None and h.is_variable and c is not None and c.is_variable,
              "output_state and cell_state must be variable tensors")
    ctx.check(h.size == n_batch * cell.n_output, "NumElements(output_state) != n_batch * n_output")
    ctx.check(c.size == n_batch * cell.n_cell, "NumElements(cell_state) != n_batch * n_cell")
    ctx.check(h.dtype == np.float32 and c.dtype == np.float32, "float LSTM states must be FLOAT32")


def _check_state_sizes(ctx: OpContext, ins: list, n_batch: int, cell) -> None:
    ctx.check(ins[OUT_STATE].size == n_batch * cell.n_output, "NumElements(output_state) != n_batch * n_output")
    ctx.check(ins[CELL_STATE].size == n_batch * cell.n_cell, "NumElements(cell_state) != n_batch * n_cell")


def _full_inputs(ctx: OpContext) -> tuple[list, bool]:
    n = len(ctx.inputs)
    ctx.check(n in (20, 24), f"The LSTM Full kernel expects 20 or 24 inputs. Got {n} inputs")
    ctx.check(len(ctx.outputs) == 1, "node->outputs->size != 1")
    ins = list(ctx.inputs) + [None] * (24 - n)
    return ins, ins[LN["f"]] is not None


# -------------------------------------------------------------------------------------------------------------
# Integer 8x8_16: gemmlowp int16 fixed point (tables over all 65536 inputs)
# -------------------------------------------------------------------------------------------------------------


def _w16(x):
    return ((x + 32768) & 0xFFFF) - 32768


def _srdhm16(a, b):
    r = (a * b + (1 << 14)) >> 15
    return np.where((a == -32768) & (b == -32768), 32767, r)


def _rdbpot(x, e: int):
    if e == 0:
        return x
    mask = (1 << e) - 1
    return (x >> e) + ((x & mask) > (mask >> 1) + (x < 0))


def _satpot16(x, e: int):
    if e > 0:
        return clip_ufunc(x << e, -32768, 32767)
    return _rdbpot(x, -e)


def _c16(c32: int) -> int:
    """A gemmlowp Q0.31-style int32 constant as the int16 FixedPoint constant: RDBPOT(c, 16)."""
    return int(_rdbpot(np.int64(c32), 16))


def _exp_on_interval(a):
    c, third = _c16(1895147668), _c16(715827883)
    x = _w16(a + (1 << 12))
    x2 = _srdhm16(x, x)
    x3 = _srdhm16(x2, x)
    x4 = _srdhm16(x2, x2)
    inner = _w16(_srdhm16(_w16(_satpot16(x4, -2) + x3), third) + x2)
    return clip_ufunc(c + _srdhm16(c, _w16(x + _satpot16(inner, -1))), -32768, 32767)


def _exp_on_negative_values(a, ib: int):
    fb = 15 - ib
    q = 1 << (fb - 2)
    r = _w16((a & (q - 1)) - q)
    res = _exp_on_interval(_satpot16(r, ib))
    rem = _w16(r - a)
    for k, ck in ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
                  (3, 720401), (4, 242)):
        if ib > k:
            res = np.where((rem & (1 << (fb + k))) != 0, _srdhm16(res, _c16(ck)), res)
    if ib > 5:
        res = np.where(a < _c16(-(1 << (36 - ib))), 0, res)
    return np.where(a == 0, 32767, res)


def _newton_x(a):
    hd = a + 32767
    hd = np.where(hd >= 0, (hd + 1) // 2, -((1 - hd) // 2))  # RoundingHalfSum(a, One): (s + sign) / 2, truncated
    x = _w16(_c16(1515870810) + _srdhm16(hd, _c16(-1010580540)))
    for _ in range(3):
        x = _w16(x + _satpot16(_srdhm16(x, _w16((1 << 13) - _srdhm16(hd, x))), 2))
    return x


@functools.cache
def sigmoid16_table(ib: int) -> np.ndarray:
    """gemmlowp ``logistic`` of FixedPoint<int16, ib> for every raw input (index raw + 32768), Q0.15 out."""
    a = np.arange(-32768, 32768, dtype=np.int64)
    pos = a > 0
    e = _exp_on_negative_values(_w16(-np.where(pos, a, _w16(-a))), ib)
    rp = _satpot16(_newton_x(e), 1)
    return np.where(a == 0, 16384, np.where(pos, rp, _w16(32767 - rp))).astype(np.int64)


@functools.cache
def tanh16_table(ib: int) -> np.ndarray:
    """gemmlowp ``tanh`` of FixedPoint<int16, ib> for every raw input (index raw + 32768), Q0.15 out."""
    a = np.arange(-32768, 32768, dtype=np.int64)
    neg = a < 0
    t = _satpot16(_w16(_newton_x(_exp_on_negative_values(np.where(neg, a, _w16(-a)), ib + 1)) - (1 << 13)), 2)
    return np.where(a == 0, 0, np.where(neg, _w16(-t), t)).astype(np.int64)


def _tdiv(a: int, b: int) -> int:
    """C++ integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _tdiv_arr(a: np.ndarray, b: int) -> np.ndarray:
    """C++ integer division (truncates toward zero) of an int64 array by a positive int."""
    q = np.abs(a) // b
    return np.where(a < 0, -q, q)


def _rdbpot_arr(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """``_rdbpot`` with an int64 exponent array (broadcast; 0 allowed)."""
    mask = (np.int64(1) << e) - 1
    return (x >> e) + ((x & mask) > (mask >> 1) + (x < 0))


@functools.lru_cache(maxsize=65536)
def _inv_sqrt_cached(x: int) -> tuple:
    return get_inv_sqrt_quantized_multiplier_exp(x, -1)


def _mbqm(x, m: int, e: int):
    """``MultiplyByQuantizedMultiplier(int32 x, M >= 0, e)`` (double rounding) for an int64 array ``x`` that is
    wrapped to int32 first; the scalar-multiplier fast path of litert_py.quant's version (same results)."""
    x = ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
    if m < 0 or not -31 <= e <= 31:
        return multiply_by_quantized_multiplier(x, m, e)
    if e > 0:
        x = (((x << e) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
    y = (x * m + (1 << 30)) >> 31
    return _rdbpot(y, -e) if e < 0 else y


def _mbqm_small(x, m: int, e: int):
    """``_mbqm`` in place for an int64 array whose values already fit int32 (no wrap)."""
    if m < 0 or not -31 <= e <= 31:
        return _mbqm(x, m, e)
    if e > 0:
        x = (((x << e) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
    x *= m
    x += P30
    x >>= S31
    if e < 0:
        neg = x < 0
        x += 1 << (-e - 1)
        x -= neg
        x >>= -e
    return x


def _signed_index_table(table: np.ndarray) -> np.ndarray:
    """``table`` (indexed by raw + 32768) rolled so that indexing with the raw int16 value (negative indices
    wrap around) gives the same entry."""
    return np.ascontiguousarray(np.concatenate([table[32768:], table[:32768]]))


def _mbqm_neon(x, m: int, e: int):
    """MultiplyByQuantizedMultiplier4Rows (common.h, double rounding, NEON via NEON_2_SSE): vqrdmulh, then a
    rounding right shift that rounds ties up (vrshl) instead of away from zero."""
    left, right = max(e, 0), -min(e, 0)
    y = saturating_rounding_doubling_high_mul(wrap32(np.left_shift(x, left)), m)
    return (y + (1 << (right - 1))) >> right if right else y


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
        inverse square root per row, then the rescale of every element; vectorized over the rows."""
        n = v.shape[1]
        rows = v.shape[0]
        s = v.sum(axis=1)
        mean = wrap32(_tdiv_arr(s * 1024, n))
        var = (v * v).sum(axis=1) * ((1 << 20) // n) - mean * mean
        var2 = wrap32(_tdiv_arr(var, 1 << 20))
        var2[var2 < 1] = g.guard
        ms = np.empty(rows, np.int64)
        es = np.empty(rows, np.int64)
        for b, x in enumerate(var2.tolist()):
            ms[b], es[b] = _inv_sqrt_cached(x)
        if not ((ms >= 0).all() and (np.abs(es) <= 31).all()):
            return self._layer_norm_rows(g, v)
        # _mbqm with one (M, e) per row: wrap32 of the input, of the left shift, then SRDHM and RDBPOT
        x = wrap32(1024 * v - mean[:, None])
        left = np.maximum(es, 0)[:, None]
        if (left > 0).any():
            x = wrap32(x << left)
        x *= ms[:, None]
        x += P30
        x >>= S31
        right = np.maximum(-es, 0)[:, None]
        x = _rdbpot_arr(x, right)
        t = x * g.ln + g.ln_bias
        u = np.where(t > 0, (t + 512) // 1024, -((-(t - 512)) // 1024))
        return clip_ufunc(_mbqm(wrap32(u), g.m_ln[0], g.m_ln[1] + 12), -32768, 32767)

    def _layer_norm_rows(self, g: IntGate, v):
        n = v.shape[1]
        out = np.empty_like(v)
        for b in range(v.shape[0]):
            row = v[b]
            s = int(row.sum())
            mean = int(wrap32(_tdiv(s * 1024, n)))
            var = int((row * row).sum()) * ((1 << 20) // n) - mean * mean
            var2 = int(wrap32(_tdiv(var, 1 << 20)))
            if var2 < 1:
                var2 = g.guard
            inv_m, inv_e = get_inv_sqrt_quantized_multiplier_exp(int(var2), -1)
            r = _mbqm(1024 * row - mean, inv_m, inv_e)
            t = r * g.ln + g.ln_bias
            u = np.where(t > 0, (t + 512) // 1024, -((-(t - 512)) // 1024))
            out[b] = clip_ufunc(_mbqm(wrap32(u), g.m_ln[0], g.m_ln[1] + 12), -32768, 32767)
        return out

    def _peephole(self, g: IntGate, gate, c):
        """VectorBatchVectorCwiseProductAccumulate with v_size = n_output over the flat (rows, n_cell) buffers."""
        n_out = self.n_output
        rows = gate.shape[0]
        k16 = n_out & ~15
        if self.rowwise_peephole or n_out == self.n_cell:
            gv, cv = gate[:, :n_out], c[:, :n_out]
            prod = g.peep[None, :] * cv
            r = np.empty_like(prod)
            r[:, :k16] = _mbqm_neon(prod[:, :k16], *g.m_p)
            r[:, k16:] = _mbqm(prod[:, k16:], *g.m_p)
            gate[:, :n_out] = clip_ufunc(gv + r, -32768, 32767)
            return
        gf, cf = gate.reshape(-1), c.reshape(-1)
        prod = (np.tile(g.peep, rows) * cf[:rows * n_out]).reshape(rows, n_out)
        r = np.empty_like(prod)
        r[:, :k16] = _mbqm_neon(prod[:, :k16], *g.m_p)
        r[:, k16:] = _mbqm(prod[:, k16:], *g.m_p)
        gf[:rows * n_out] = clip_ufunc(gf[:rows * n_out] + r.reshape(-1), -32768, 32767)

    def _gate(self, name, x, h, c, table):
        g: IntGate = self.gates[name]
        gate = clip_ufunc(_mbqm(x @ g.w_x + g.eff_x, *g.m_x), -32768, 32767)
        gate = clip_ufunc(_mbqm(h @ g.w_h + g.eff_h, *g.m_h) + gate, -32768, 32767)
        if g.peep is not None:
            self._peephole(g, gate, c)
        if g.ln is not None:
            gate = self._layer_norm(g, gate)
        return table[gate + 32768]

    def __post_init__(self):
        """Stacked constants of ``run``: every gate's input and recurrent weights side by side (float64 holding
        the int8 values: exact products), per-column MBQM constants, and whether the int16 wraps can be skipped."""
        names = [g for g in GATES if g in self.gates]
        gs = [self.gates[g] for g in names]
        qs = [g.m_x for g in gs] + [g.m_h for g in gs]
        d = {"fast": all(0 <= m < 2**31 and -31 <= e <= 31 for m, e in qs)}
        if d["fast"]:
            n = self.n_cell
            d["names"] = names
            d["w_x"] = np.concatenate([g.w_x for g in gs], axis=1).astype(np.float64)
            w_h = np.concatenate([g.w_h for g in gs], axis=1)
            # float32 products are exact when every partial sum stays below 2^24 (|h| <= 128)
            d["w_h"] = w_h.astype(F32 if 128 * np.abs(w_h).sum(axis=0).max(initial=0) < 2**24 else np.float64)
            d["eff_h"] = np.concatenate([g.eff_h for g in gs])
            m = np.repeat(np.array([g.m_h[0] for g in gs], np.int64), n)
            e = np.repeat(np.array([g.m_h[1] for g in gs], np.int64), n)
            right = np.maximum(-e, 0)
            d["q_h"] = (m, np.maximum(e, 0) if (e > 0).any() else None, right,
                        np.where(right > 0, np.left_shift(1, np.maximum(right - 1, 0)), 0),
                        None if (right > 0).all() else (right > 0).astype(np.int64))
            # |h @ W_h + eff_h| < 2^31 for every int8 h: the int32 wrap of MBQM's input is the identity
            bound = 128 * np.abs(w_h).sum(axis=0) + np.abs(d["eff_h"])
            d["wrap_h"] = bool(bound.size and bound.max() >= 2**31)
            d["proj"] = None if self.proj is None else self.proj.astype(np.float64)
            d["plain"] = [g.peep is None and g.ln is None for g in gs]
            ifc, o = self._ln_consts(names[:-1]), self._ln_consts(names[-1:])
            d["ln_stack"] = (ifc, o) if ifc is not None and o is not None else (None, None)
            # tables indexed by the raw int16 value itself (negative indices wrap to the first half)
            d["tables"] = tuple(_signed_index_table(tb) for tb in (sigmoid16_table(3), tanh16_table(3),
                                                                     tanh16_table(15 + self.cs)))
        object.__setattr__(self, "_seq", d)

    def run(self, x3, aux3, h_state, c_state, out3, reverse: bool = False):
        """The whole sequence (x3 (T, B, I) time-major, out3 (T, B, n_output)): ``step``'s arithmetic, with the
        input-to-gate terms ``sat16(mbqm(W_x x + eff_x))`` of every step computed up front (they do not depend
        on the recurrence) and the recurrent products of all gates in one matrix product per step."""
        d = self._seq
        if not d["fast"]:
            for t in range(x3.shape[0]):
                self.step(x3[t], None, h_state, c_state, out3[t])
            return
        n_steps, n_batch = x3.shape[:2]
        n, names = self.n_cell, d["names"]
        n_g = len(names)
        k = n_g - 2  # sigmoid gates before the cell gate
        gx = (x3.reshape(n_steps * n_batch, -1).astype(np.float64) @ d["w_x"]).astype(np.int64)
        for j, name in enumerate(names):
            g = self.gates[name]
            blk = gx[:, j * n:(j + 1) * n]
            blk[...] = _mbqm(blk + g.eff_x, *g.m_x)
        clip_ufunc(gx, -32768, 32767, out=gx)
        gx = gx.reshape(n_steps, n_batch, n_g * n)
        h64 = h_state.astype(d["w_h"].dtype)
        c = c_state.astype(np.int64)
        w_h, eff_h, wrap_h = d["w_h"], d["eff_h"], d["wrap_h"]
        acc_f = np.empty((n_batch, n_g * n), w_h.dtype)
        neg_a = np.empty((n_batch, n_g * n), bool)
        neg_c = np.empty((n_batch, n), bool)
        acc = np.empty((n_batch, n_g * n), np.int64)
        m, left, right, off, rpos = d["q_h"]
        sig, tanh3, tanh_c = d["tables"]
        plain = d["plain"]
        ln_ifc, ln_o = d["ln_stack"]
        cifg = k == 1
        shift_ic = np.array(30 + self.cs, np.int64)
        half_ic = np.array(1 << (29 + self.cs), np.int64)
        cell_clip, proj_clip = self.cell_clip, self.proj_clip
        m_hid, e_hid = self.m_hidden
        z_hid = np.array(self.z_hidden, np.int64)
        proj = d["proj"]
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
                        acc[:, j * n:(j + 1) * n] = self._gate_post(names[j], acc[:, j * n:(j + 1) * n], c, ln=False)
                v = acc[:, :(k + 1) * n]
                v[...] = self._layer_norm_stack(ln_ifc, v.reshape(n_batch, k + 1, n)).reshape(n_batch, -1)
            else:
                for j in range(n_g - 1):
                    if not plain[j]:
                        acc[:, j * n:(j + 1) * n] = self._gate_post(names[j], acc[:, j * n:(j + 1) * n], c)
            ifg = sig[acc[:, :k * n]]
            cg = tanh3[acc[:, k * n:(k + 1) * n]]
            fg = ifg[:, (k - 1) * n:]
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
            og = acc[:, (k + 1) * n:]
            if ln_o is not None:
                og = self._gate_post(names[-1], og.copy(), c, ln=False)
                og = self._layer_norm_stack(ln_o, og[:, None, :])[:, 0]
            elif not plain[-1]:
                og = self._gate_post(names[-1], og.copy(), c)
            og = sig[og]
            og *= tanh_c[c]
            og = _mbqm_small(og, m_hid, e_hid)
            if proj is None:
                og += z_hid
                hn = clip_ufunc(og, I8_LO, I8_HI, out=og)
            else:
                og -= z_hid
                clip_ufunc(og, I8_LO, I8_HI, out=og)
                hn = clip_ufunc(_mbqm((og @ proj).astype(np.int64) + self.proj_eff, *self.m_proj) +
                                self.z_out_state, -128, 127)
                if proj_clip > 0:
                    clip_ufunc(hn, -proj_clip, proj_clip, out=hn)
            np.copyto(h64, hn)
            out3[t] = hn
        c_state[...] = c
        if hn is not None:
            h_state[...] = hn

    def _layer_norm_stack(self, consts: tuple, v):
        """``_layer_norm`` of several gates at once: ``v`` (B, G, n) int64, ``consts`` from ``_ln_consts``. The
        int32 wraps of the mean, the variance and ``1024 v - mean`` are no-ops (|v| <= 2^15: all below 2^31)."""
        ln, ln_bias, guard, m_g, left_g, right_g, half_g, rpos_g, gates = consts
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
            m, e = _inv_sqrt_cached(x if x >= 1 else guard[j % n_g])
            if m < 0 or not -31 <= e <= 31:
                return np.stack([self._layer_norm_rows(self.gates[g], v[:, j]) for j, g in enumerate(gates)],
                                axis=1)
            r = max(-e, 0)
            rows.append((m, max(e, 0), r, (1 << r) >> 1, int(r > 0)))
        me = np.array(rows, np.int64).reshape(var2.shape + (5,))
        # _mbqm with one (M, e) per row and gate: SRDHM and RDBPOT (a left shift wraps)
        x = v * K1024
        x -= mean[..., None]
        if me[..., 1].any():
            x = wrap32(x << me[..., 1:2])
        x *= me[..., 0:1]
        x += P30
        x >>= S31
        x -= np.less(x, Z64) * me[..., 4:5]  # RDBPOT: (x + 2^(e-1) - (x < 0)) >> e, nothing for e = 0
        x += me[..., 3:4]
        x >>= me[..., 2:3]
        t = x * ln
        t += ln_bias
        # t > 0: (t + 512) // 1024, else -((512 - t) // 1024): both |t| + 512 shifted, with t's sign
        u = np.abs(t)
        u += K512
        u >>= S10
        u *= np.sign(t)
        # _mbqm(wrap32(u), m_ln, e_ln + 12) per gate
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
        return (np.stack([g.ln for g in gs]), np.stack([g.ln_bias for g in gs]), [g.guard for g in gs],
                np.array([g.m_ln[0] for g in gs], np.int64)[:, None],
                np.maximum(e, 0) if (e > 0).any() else None, right, (1 << right) >> 1, (right > 0).astype(np.int64),
                list(names))

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
        """``_peephole``'s row-aligned case in place: ``_mbqm_neon`` on the columns below n_output & ~15 and
        ``_mbqm`` on the rest share everything but the final rounding (the NEON one rounds ties up; wrapping
        before the left shift changes nothing mod 2^32)."""
        n_out = self.n_output
        k16 = n_out & ~15
        m, e = g.m_p
        prod = c[:, :n_out] * g.peep
        if e > 0 or (m < 0 or not -31 <= e <= 31):
            prod = np.concatenate([_mbqm_neon(prod[:, :k16], m, e), _mbqm(prod[:, k16:], m, e)], axis=1)
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
        c = _w16(_rdbpot(fg * c, 15))
        scratch = _w16(_rdbpot(((32767 - fg) if cifg else ig) * cg, 30 + self.cs))
        c = clip_ufunc(c + scratch, -32768, 32767)
        if self.cell_clip > 0:
            c = clip_ufunc(c, -self.cell_clip, self.cell_clip)
        og = self._gate("o", x, h, c, sig)
        t = tanh16_table(15 + self.cs)[c + 32768]
        if self.proj is None:
            hn = clip_ufunc(_mbqm(og * t, *self.m_hidden) + self.z_hidden, -128, 127)
        else:
            hh = clip_ufunc(_mbqm(og * t, *self.m_hidden) - self.z_hidden, -128, 127)
            hn = clip_ufunc(_mbqm(hh @ self.proj + self.proj_eff, *self.m_proj) + self.z_out_state, -128, 127)
            if self.proj_clip > 0:
                hn = clip_ufunc(hn, -self.proj_clip, self.proj_clip)
        c_state[...] = c
        h_state[...] = hn
        out[...] = hn


def _scale(t: TensorInfo | None) -> np.float32:
    return F32(t.scale) if t is not None else F32(1)


def build_integer_cell(ctx: OpContext, ins: list, opts, use_ln: bool, out: TensorInfo,
                       rowwise: bool) -> LstmIntegerCell:
    """PopulateQuantizedLstmParams8x8_16 and PopulatePrecomputedZPTimesWeightsWithBias (unidirectional_sequence_
    lstm.cc / lstm.cc) for int8 input, int8 weights, int16 cell state, 5 intermediates."""
    ctx.check(len(ctx.intermediates) == 5, "num_intermediate_tensors == 5 was not true.")
    x, h_state, c_state = ins[0], ins[OUT_STATE], ins[CELL_STATE]
    n_input = x.shape[-1]
    w_o = ins[IN_W["o"]]
    ctx.check(w_o is not None and len(w_o.shape) == 2 and w_o.shape[1] == n_input,
              "input_to_output_weights->dims->data[1] != n_input")
    n_cell = w_o.shape[0]
    r_o = ins[REC_W["o"]]
    ctx.check(r_o is not None and len(r_o.shape) == 2 and r_o.shape[0] == n_cell,
              "recurrent_to_output_weights->dims->data[0] != n_cell")
    n_output = r_o.shape[1]
    cifg = ins[IN_W["i"]] is None
    ctx.check(cifg == (ins[REC_W["i"]] is None), "cifg_weights_all_or_none == true was not true.")
    ctx.check(opts.cell_clip >= 0, "params->cell_clip >= 0 was not true.")
    ctx.check(opts.proj_clip >= 0, "params->proj_clip >= 0 was not true.")
    gates = GATES[1:] if cifg else GATES
    for t in [ins[IN_W[g]] for g in gates] + [ins[REC_W[g]] for g in gates] + [ins[PROJ_W]]:
        if t is not None:
            ctx.check(t.dtype == np.int8 and t.is_constant and bool(t.quantization.scale),
                      f"{t.name}: integer LSTM weights must be constant quantized INT8")
    for g in gates:
        ctx.check(ins[IN_W[g]].shape == (n_cell, n_input) and ins[REC_W[g]].shape == (n_cell, n_output),
                  f"{g} gate weights must be (n_cell, n_input) and (n_cell, n_output)")
        b = ins[BIAS[g]]
        ctx.check(b is not None and b.dtype == np.int32 and b.is_constant and b.shape == (n_cell,),
                  f"{g} gate bias must be a constant INT32 (n_cell,)")
    c_i, c_f, c_o = (ins[PEEP_W[g]] is not None for g in ("i", "f", "o"))
    ctx.check(((c_i or cifg) and c_f and c_o) or not (c_i or c_f or c_o),
              "peephole_weights_all_or_none == true was not true.")
    peephole = c_o
    for t in ins[9:12] + ins[20:24]:
        if t is not None:
            ctx.check(t.dtype == np.int16 and t.is_constant and t.shape == (n_cell,),
                      f"{t.name}: peephole / layer-norm weights must be constant INT16 (n_cell,)")
    if peephole:
        ctx.check(n_output <= n_cell, "litert_py: integer peephole LSTM needs n_output <= n_cell")
    pw, pb = ins[PROJ_W], ins[PROJ_B]
    ctx.check(pw is not None or pb is None, "projecton_tensors_consistent == true was not true.")
    if pw is not None:
        ctx.check(pw.shape == (n_output, n_cell), "projection_weights must be (n_output, n_cell)")
        ctx.check(pb is None or (pb.dtype == np.int32 and pb.is_constant and pb.shape == (n_output,)),
                  "projection_bias must be a constant INT32 (n_output,)")
    else:
        ctx.check(n_output == n_cell, "without projection n_output must equal n_cell")
    ctx.check(h_state is not None and h_state.is_variable and c_state is not None and c_state.is_variable,
              "output_state and cell_state must be variable tensors")
    ctx.check(h_state.dtype == np.int8 and c_state.dtype == np.int16 and out.dtype == np.int8,
              "integer LSTM needs an INT8 output_state and output and an INT16 cell_state")
    for t in (x, h_state, c_state, out):
        ctx.check(bool(t.quantization.scale), f"{t.name}: quantization.type != kTfLiteNoQuantization")
    cs_f = float(F32(c_state.scale))
    cs = int(round(np.log2(cs_f)))
    ctx.check(cs_f > 0 and 2.0**cs == cs_f, "CheckedLog2(cell_state->params.scale, &cell_scale) was not true.")
    ctx.check(0 <= 15 + cs <= 6, "litert_py: the cell state scale must be 2^-15 .. 2^-9")
    inter = ctx.intermediates
    for t in inter[:4] if use_ln else inter[4:]:
        ctx.check(bool(t.quantization.scale), "intermediate->quantization.type != kTfLiteNoQuantization")
    ctx.check(bool(inter[4].quantization.scale), "hidden->quantization.type != kTfLiteNoQuantization")
    s_int = [_scale(inter[k]) if use_ln else F32(2.0**-12) for k in range(4)]
    s_h, z_h = F32(inter[4].scale), inter[4].zero_point
    s_in, s_os = _scale(x), _scale(h_state)
    zi, zos = x.zero_point, h_state.zero_point

    def qm(v) -> tuple:
        return quantize_multiplier(float(F32(v)))

    def rowsum(t):
        return t.data.astype(np.int64).sum(axis=1)

    gate_objs = {}
    for k, g in enumerate(GATES):
        if g not in gates:
            continue
        wx, wh = ins[IN_W[g]], ins[REC_W[g]]
        bias = ins[BIAS[g]].data.astype(np.int64)
        eff_x = (0 if use_ln else bias) + (-zi) * rowsum(wx)
        eff_h = (-zos) * rowsum(wh)
        pw_g = ins[PEEP_W[g]] if peephole and g != "c" else None
        m_p = (0, 0)
        if pw_g is not None:
            m_p = quantize_multiplier(float(F32(2.0**cs * float(_scale(pw_g)) / float(s_int[k]))))
        ln = ins[LN[g]] if use_ln else None
        m_ln = quantize_multiplier(float(_scale(ln))) if ln is not None else (0, 0)
        guard = max(1, int(np.trunc(np.float32(10000) * _scale(ln)))) if ln is not None else 1
        gate_objs[g] = IntGate(
            np.ascontiguousarray(wx.data.astype(np.int64).T), eff_x.astype(np.int64),
            qm(F32(_scale(wx) * s_in) / s_int[k]),
            np.ascontiguousarray(wh.data.astype(np.int64).T), eff_h.astype(np.int64),
            qm(F32(_scale(wh) * s_os) / s_int[k]),
            None if pw_g is None else pw_g.data.astype(np.int64)[:n_output], m_p,
            None if ln is None else ln.data.astype(np.int64),
            None if ln is None else bias, m_ln, guard)
    m_hidden = quantize_multiplier(float(F32(2.0**-15 / float(s_h) * 2.0**-15)))
    proj = proj_eff = None
    m_proj = (0, 0)
    if pw is not None:
        proj = np.ascontiguousarray(pw.data.astype(np.int64).T)
        proj_eff = (pb.data.astype(np.int64) if pb is not None else 0) + z_h * rowsum(pw)
        proj_eff = np.broadcast_to(np.asarray(proj_eff, np.int64), (n_output,)).copy()
        m_proj = qm(F32(_scale(pw) * s_h) / s_os)
    cell_clip = int(np.trunc(min(max(F32(opts.cell_clip) / F32(c_state.scale), F32(-32768)), F32(32767)))) \
        if opts.cell_clip > 0 else 0
    proj_clip = int(np.trunc(min(max(F32(opts.proj_clip) / _scale(out), F32(-128)), F32(127)))) \
        if opts.proj_clip > 0 else 0
    return LstmIntegerCell(gate_objs, cs, cell_clip, proj_clip, m_hidden, z_h, proj, proj_eff, m_proj, zos,
                           n_cell, n_output, rowwise)


# -------------------------------------------------------------------------------------------------------------
# Prepared ops
# -------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LstmSequence:
    cell: LstmCell
    time_major: bool

    def __call__(self, inputs, outputs):
        x, out = inputs[0], outputs[0]
        cell = self.cell
        n_batch = x.shape[1] if self.time_major and x.ndim == 3 else x.shape[0]
        h = inputs[OUT_STATE].reshape(n_batch, cell.n_output)
        c = inputs[CELL_STATE].reshape(n_batch, cell.n_cell)
        if x.ndim == 2:  # LSTM: one step
            cell.run(x[None], None, h, c, out[None])
            return
        if not self.time_major:
            x, out = x.transpose(1, 0, 2), out.transpose(1, 0, 2)
        cell.run(x, None, h, c, out)


def _float_or_hybrid(ctx: OpContext, ins: list, use_ln: bool, opts, n_batch: int) -> LstmCell:
    x = ins[0]
    ctx.check(x.dtype == np.float32, f"Type {x.type_name} is not currently supported.")
    cell = build_cell(ctx, ins, bool(opts.asymmetric_quantize_inputs), opts.cell_clip, opts.proj_clip,
                      opts.fused_activation_function, use_ln,
                      allow_diagonal=ctx.builtin_code == BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM)
    _check_states(ctx, ins[OUT_STATE], ins[CELL_STATE], n_batch, cell)
    return cell


@register(BuiltinOperator.LSTM, stateful=True)
def prepare_lstm(ctx: OpContext):
    opts = ctx.options
    if opts.kernel_type == 1:  # BASIC: 5 inputs, 4 outputs, its own kernel
        from .lstm_basic import prepare_basic_lstm

        return prepare_basic_lstm(ctx)
    ins, use_ln = _full_inputs(ctx)
    x = ins[0]
    ctx.check(len(x.shape) > 1, "input->dims->size > 1 was not true.")
    ctx.check(len(x.shape) == 2, "litert_py: LSTM input must be 2-D (batch, input)")
    n_batch = x.shape[0]
    if x.dtype == np.int8 and len(ctx.intermediates) == 12:  # the 8x8_8 integer kernel
        from .lstm_integer8 import prepare_lstm_8x8_8

        return prepare_lstm_8x8_8(ctx, ins, use_ln)
    if x.dtype == np.int8:
        cell = build_integer_cell(ctx, ins, opts, use_ln, ctx.outputs[0], False)
        _check_state_sizes(ctx, ins, n_batch, cell)
    else:
        cell = _float_or_hybrid(ctx, ins, use_ln, opts, n_batch)
    ctx.set_output_shape(0, (n_batch, cell.n_output))
    return LstmSequence(cell, True)


@register(BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, stateful=True)
def prepare_unidirectional_sequence_lstm(ctx: OpContext):
    opts = ctx.options
    ins, use_ln = _full_inputs(ctx)
    x = ins[0]
    ctx.check(len(x.shape) > 1, "input->dims->size > 1 was not true.")
    ctx.check(len(x.shape) == 3, "litert_py: UNIDIRECTIONAL_SEQUENCE_LSTM input must be 3-D")
    tm = bool(opts.time_major)
    n_batch = x.shape[1] if tm else x.shape[0]
    if x.dtype == np.int8:
        cell = build_integer_cell(ctx, ins, opts, use_ln, ctx.outputs[0], not tm)
        _check_state_sizes(ctx, ins, n_batch, cell)
    else:
        cell = _float_or_hybrid(ctx, ins, use_ln, opts, n_batch)
    ctx.set_output_shape(0, x.shape[:-1] + (cell.n_output,))
    return LstmSequence(cell, tm)


# -------------------------------------------------------------------------------------------------------------
# BIDIRECTIONAL_SEQUENCE_LSTM
# -------------------------------------------------------------------------------------------------------------

BIDI_FW_STATES, BIDI_BW_STATES, BIDI_AUX = (35, 36), (37, 38), 39


@dataclass(frozen=True, eq=False)
class BidirectionalSequenceLstm:
    fw: LstmCell
    bw: LstmCell
    time_major: bool
    merge: bool
    bw_reads_aux: bool  # non-stacking mode: the aux input is the backward cell's input
    use_aux: bool

    def __call__(self, inputs, outputs):
        x, bw_x, real_aux, fw_out, bw_out = bidirectional_views(
            inputs[0], inputs[BIDI_AUX], outputs, self.fw.n_output, self.merge, self.bw_reads_aux, self.use_aux,
            self.time_major)
        n_batch = x.shape[1]
        for cell, xs, out, (hi, ci), reverse in ((self.fw, x, fw_out, BIDI_FW_STATES, False),
                                                 (self.bw, bw_x, bw_out, BIDI_BW_STATES, True)):
            h = inputs[hi].reshape(n_batch, cell.n_output)
            c = inputs[ci].reshape(n_batch, cell.n_cell)
            cell.run(xs, real_aux, h, c, out, reverse)


@register(BuiltinOperator.BIDIRECTIONAL_SEQUENCE_LSTM, stateful=True)
def prepare_bidirectional_sequence_lstm(ctx: OpContext):
    opts = ctx.options
    merge = bool(opts.merge_outputs)
    ctx.check(len(ctx.inputs) == 48, f"node->inputs->size != 48 (got {len(ctx.inputs)})")
    ctx.check(len(ctx.outputs) == (1 if merge else 2), "node->outputs->size != (merge_outputs ? 1 : 2)")
    x = ctx.input(0)
    ctx.check(x.dtype == np.float32, f"Type {x.type_name} is not currently supported.")
    ctx.check(len(x.shape) == 3, "input->dims->size != 3")
    tm = bool(opts.time_major)
    n_batch = x.shape[1] if tm else x.shape[0]
    aux = ctx.optional_input(BIDI_AUX)
    fw_aux_w = [ctx.optional_input(k) for k in range(40, 44)]
    bw_aux_w = [ctx.optional_input(k) for k in range(44, 48)]
    use_aux = fw_aux_w[1] is not None
    if aux is not None:
        ctx.check(aux.dtype == np.float32 and len(aux.shape) == 3 and aux.shape[:2] == x.shape[:2],
                  "aux_input must be FLOAT32 with the input's first two dimensions")
    if use_aux:
        ctx.check(aux is not None, "aux weights need an aux input")
    bw_reads_aux = aux is not None and not use_aux
    bw_x = aux if bw_reads_aux else x
    asym = bool(opts.asymmetric_quantize_inputs)
    cells = []
    for lo, states, aux_w, xin in ((1, BIDI_FW_STATES, fw_aux_w, x), (18, BIDI_BW_STATES, bw_aux_w, bw_x)):
        ins = [xin] + [ctx.optional_input(k) for k in range(lo, lo + 17)] + \
              [ctx.optional_input(states[0]), ctx.optional_input(states[1])] + [None] * 4
        cell = build_cell(ctx, ins, asym, opts.cell_clip, opts.proj_clip, opts.fused_activation_function, False,
                          aux_w if use_aux else None)
        _check_states(ctx, ins[OUT_STATE], ins[CELL_STATE], n_batch, cell)
        cells.append(cell)
    fw, bw = cells
    lead = x.shape[:2]
    if merge:
        ctx.set_output_shape(0, lead + (fw.n_output + bw.n_output,))
    else:
        ctx.set_output_shape(0, lead + (fw.n_output,))
        ctx.set_output_shape(1, lead + (bw.n_output,))
    return BidirectionalSequenceLstm(fw, bw, tm, merge, bw_reads_aux, use_aux)
