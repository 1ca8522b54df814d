"""LSTM (full kernel), UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM: float32 and hybrid.

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
BIDIRECTIONAL_SEQUENCE_LSTM (48 inputs: forward cell 1-17, backward cell 18-34, fw states 35-36, bw states
37-38, aux input 39, fw aux weights 40-43, bw aux weights 44-47) runs a forward and a backward cell; without
aux weights an aux input is the backward cell's input; ``merge_outputs`` concatenates both directions.

Sources matched: LiteRT tflite/kernels/lstm.cc and unidirectional_sequence_lstm.cc (Prepare,
CheckInputTensorDimensions, Eval dispatch), bidirectional_sequence_lstm.cc, tflite/kernels/lstm_eval.cc
(CalculateLstmGateFloat, UpdateLstmCellFloat, CalculateLstmOutputFloat, CalculateLstmGateHybrid,
CalculateLstmOutputHybrid, LstmStepFloat, LstmStepHybrid, EvalFloat, EvalHybrid),
tflite/kernels/internal/reference/portable_tensor_utils.cc (MeanStddevNormalization, CwiseClipping).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schema.model import BuiltinOperator
from .fully_connected import apply_activation_to_vector
from .registry import OpContext, TensorInfo, register
from .rnn import hybrid_matvec

F32 = np.float32
GATES = ("i", "f", "c", "o")
# full-kernel input indices per gate
IN_W = {"i": 1, "f": 2, "c": 3, "o": 4}
REC_W = {"i": 5, "f": 6, "c": 7, "o": 8}
PEEP_W = {"i": 9, "f": 10, "o": 11}
BIAS = {"i": 12, "f": 13, "c": 14, "o": 15}
PROJ_W, PROJ_B, OUT_STATE, CELL_STATE = 16, 17, 18, 19
LN = {"i": 20, "f": 21, "c": 22, "o": 23}


def _sigmoid(v: np.ndarray) -> None:
    np.negative(v, out=v)
    np.exp(v, out=v)
    v += F32(1)
    np.reciprocal(v, out=v)


def _mean_stddev_normalization(v: np.ndarray) -> None:
    """``MeanStddevNormalization`` in float32, per row, in place: ``(v - mean) / sqrt(var + 1e-8)``."""
    n = F32(v.shape[1])
    mean = np.sum(v, axis=1, dtype=F32) / n
    v -= mean[:, None]
    var = np.sum(v * v, axis=1, dtype=F32) / n
    v *= (F32(1) / np.sqrt(var + F32(1e-8)))[:, None]


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
class LstmCell:
    x: dict  # gate -> Product
    aux: dict | None
    h: dict
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

    def _gate(self, g, x, aux, h, c, act):
        ln = self.ln.get(g)
        n = x.shape[0]
        acc = np.zeros((n, self.n_cell), F32) if ln is not None else np.repeat(self.bias[g][None, :], n, axis=0)
        if x.any():
            self.x[g].add_to(acc, x)
        if aux is not None and self.aux is not None and aux.any():
            self.aux[g].add_to(acc, aux)
        if h.any() or self.h[g].fc is None:
            self.h[g].add_to(acc, h)
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
        """x (B, I), aux (B, A) or None, h (B, n_output) and c (B, n_cell) states (updated), out (B, n_output)."""
        cifg = "i" not in self.x
        ig = None if cifg else self._gate("i", x, aux, h, c, _sigmoid)
        fg = self._gate("f", x, aux, h, c, _sigmoid)
        cg = self._gate("c", x, aux, h, None, self.act)
        c *= fg
        if cifg:
            np.subtract(F32(1), fg, out=fg)
            ig = fg
        cg *= ig
        c += cg
        if self.cell_clip > 0:
            np.clip(c, -self.cell_clip, self.cell_clip, out=c)
        og = self._gate("o", x, aux, h, c, _sigmoid)
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
                np.clip(r, -self.proj_clip, self.proj_clip, out=r)
            t = r
        h[...] = t
        out[...] = t


def _f32(t: TensorInfo | None):
    return None if t is None else t.data.astype(F32).reshape(-1)


def build_cell(ctx: OpContext, ins: list, asymmetric: bool, cell_clip: float, proj_clip: float,
               activation: int, use_layer_norm: bool, aux_w: list | None = None) -> LstmCell:
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

    def product(t: TensorInfo, k: int) -> Product:
        if len(t.shape) == 1:  # diagonal recurrent weights
            ctx.check(t.shape[0] == n_cell, f"{t.name}: diagonal weights must have n_cell entries")
            d = t.data.astype(F32) if t.dtype == np.float32 else \
                np.multiply(t.data.view(np.int8), F32(t.scale), dtype=F32)
            return Product(diag=d)
        ctx.check(t.shape == (n_cell, k) or (t is ins[PROJ_W] and t.shape == (n_output, n_cell)),
                  f"{t.name}: dims {t.shape} != ({n_cell}, {k})")
        ctx.check(t.dtype == wtype, f"{t.name}: type {t.type_name} != {w_o.type_name}")
        if hybrid:
            ctx.check(bool(t.quantization.scale), f"{t.name}: hybrid weights need a scale")
            return Product(fc=hybrid_matvec(t.data, t.scale, asymmetric))
        return Product(wt=np.ascontiguousarray(t.data.T, dtype=F32))

    gates = GATES[1:] if cifg else GATES
    xp = {g: product(ins[IN_W[g]], n_input) for g in gates}
    hp = {g: product(ins[REC_W[g]], n_output) for g in gates}
    aux = None
    if aux_w is not None:
        n_aux = aux_w[1].shape[1]
        aux = {g: product(aux_w[GATES.index(g)], n_aux) for g in gates}
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
        proj = product(pw, n_cell)
    else:
        ctx.check(n_output == n_cell, "without projection n_output must equal n_cell")
    if pb is not None:
        ctx.check(pb.shape == (n_output,) and pb.dtype == np.float32, "projection_bias must be FLOAT32 (n_output,)")
    return LstmCell(xp, aux, hp, peep, ln, bias, proj, _f32(pb), apply_activation_to_vector(activation),
                    float(cell_clip), float(proj_clip), n_cell, n_output)


def _check_states(ctx: OpContext, h: TensorInfo, c: TensorInfo, n_batch: int, cell: LstmCell):
    ctx.check(h is not None and h.is_variable and c is not None and c.is_variable,
              "output_state and cell_state must be variable tensors")
    ctx.check(h.size == n_batch * cell.n_output, "NumElements(output_state) != n_batch * n_output")
    ctx.check(c.size == n_batch * cell.n_cell, "NumElements(cell_state) != n_batch * n_cell")
    ctx.check(h.dtype == np.float32 and c.dtype == np.float32, "float LSTM states must be FLOAT32")


def _full_inputs(ctx: OpContext) -> tuple[list, bool]:
    n = len(ctx.inputs)
    ctx.check(n in (20, 24), f"The LSTM Full kernel expects 20 or 24 inputs. Got {n} inputs")
    ctx.check(len(ctx.outputs) == 1, "node->outputs->size != 1")
    ins = list(ctx.inputs) + [None] * (24 - n)
    return ins, ins[LN["f"]] is not None


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
            cell.step(x, None, h, c, out)
            return
        if not self.time_major:
            x, out = x.transpose(1, 0, 2), out.transpose(1, 0, 2)
        for t in range(x.shape[0]):
            cell.step(x[t], None, h, c, out[t])


def _float_or_hybrid(ctx: OpContext, ins: list, use_ln: bool, opts, n_batch: int) -> LstmCell:
    x = ins[0]
    ctx.check(x.dtype == np.float32, f"Type {x.type_name} is not currently supported.")
    cell = build_cell(ctx, ins, bool(opts.asymmetric_quantize_inputs), opts.cell_clip, opts.proj_clip,
                      opts.fused_activation_function, use_ln)
    _check_states(ctx, ins[OUT_STATE], ins[CELL_STATE], n_batch, cell)
    return cell


@register(BuiltinOperator.LSTM, stateful=True)
def prepare_lstm(ctx: OpContext):
    opts = ctx.options
    ctx.check(opts.kernel_type == 0, "litert_py: the basic LSTM kernel (kernel_type BASIC) is not implemented")
    ins, use_ln = _full_inputs(ctx)
    x = ins[0]
    ctx.check(len(x.shape) > 1, "input->dims->size > 1 was not true.")
    ctx.check(len(x.shape) == 2, "litert_py: LSTM input must be 2-D (batch, input)")
    n_batch = x.shape[0]
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
    cell = _float_or_hybrid(ctx, ins, use_ln, opts, n_batch)
    ctx.set_output_shape(0, x.shape[:-1] + (cell.n_output,))
    return LstmSequence(cell, tm)
