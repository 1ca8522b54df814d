"""RNN, UNIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_RNN: float32 and hybrid.

One step of a cell (``RnnBatchStep``), for the whole batch at once (rows are independent, so this equals
LiteRT's per-row loops)::

    out = bias + W_in x [+ W_aux aux] + W_rec h        # accumulated in that order
    out = activation(out);  h = out

Float32: each term is a matrix product added to the running sum. Hybrid (int8 weights): each input (x, aux,
h) is quantized per batch row (``batch_quantize_floats`` of quant/hybrid.py, symmetric or asymmetric)
and each term is ``f32(dot) * f32(sf * s_w)`` exactly as FULLY_CONNECTED's hybrid path computes it (that
prepared op, ``FullyConnectedHybrid``, is reused, with its x86 SSE quirks). Hybrid ``RnnBatchStep`` starts from
the bias and skips a product whose input is all zeros (IsZeroVector over the call's batch x size: the whole step,
or one batch row where batch-major sequence ops step each row alone): such a term is -0.0 here, which adds
nothing (a -0.0 bias stays -0.0). The activation is ``ApplyActivationToVector``. The hidden state is a variable
tensor updated in place.

UNIDIRECTIONAL_SEQUENCE_RNN walks the time axis (``time_major``: input (T, B, I), else (B, T, I));
BIDIRECTIONAL_SEQUENCE_RNN runs a forward and a backward cell, with the aux input either cross-linked
(aux weights given) or, without aux weights, as the backward cell's input (time-major only: LiteRT's
batch-major loop reads ``input`` for the backward cell; reproduced). ``merge_outputs`` concatenates both
directions on the last axis of output 0. LiteRT's time-major *hybrid* BIDIRECTIONAL_SEQUENCE_RNN wraps the
two directional passes in an extra ``for (int t = 0; t < max_time; t++)`` loop, so each invoke runs the whole
sequence max_time times and the states advance max_time times: reproduced (the tests check it).

Speed (``RnnCell.run``): ``bias + W_in x [+ W_aux aux]`` is computed for every time step before the loop (hybrid:
one product over all rows, quantized one by one as per step; float32: the one-step BLAS call per step), then
each step adds one recurrent product (hybrid:
``common.StepHybridProduct``, FullyConnectedHybrid's arithmetic with fewer numpy calls) and the
activation, written straight into the output (TANH: eigen_math's ``tanh_work``, prepared scratch).
BIDIRECTIONAL_SEQUENCE_RNN with TANH steps both cells together (``run_pair``: one tanh over both sums).

Sources matched: LiteRT tflite/kernels/basic_rnn.cc, unidirectional_sequence_rnn.cc,
bidirectional_sequence_rnn.cc (Prepare checks, EvalFloat, the aux-input modes),
tflite/kernels/internal/kernel_utils.cc (RnnBatchStep float and hybrid).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...schema.model import BuiltinOperator
from ..common import apply_activation_to_vector
from ..eigen_math import tanh_inplace, tanh_work
from ..hybrid_fc import hybrid_matvec
from ..registry import OpContext, PreparedOp, TensorInfo, register
from .common import StepHybridProduct, bidirectional_views, check_aux_input
from .lstm_common import float_dot


@dataclass(frozen=True, eq=False)
class RnnCell:
    """One direction: float weights transposed ((in, units)), or hybrid prepared products."""

    w_in: object
    w_aux: object
    w_rec: object
    bias: np.ndarray
    activation: object
    hybrid: bool
    units: int
    per_row: bool = False  # hybrid batch-major sequence: LiteRT steps each batch row alone (IsZeroVector per row)

    def term(self, w, v):
        if not self.hybrid:
            return v @ w
        t = np.empty((v.shape[0], self.units), np.float32)
        w([v], [t])
        return t

    def __post_init__(self):
        object.__setattr__(self, "_rec", StepHybridProduct.of(self.w_rec) if self.hybrid else None)

    def _input_term(self, w, v3):
        """``W v`` of every step, (T, B, units): hybrid over all rows at once (row by row exact), float32 one
        product per step (the one-step BLAS call; one GEMM over all rows can round differently)."""
        n_steps, n_batch = v3.shape[:2]
        if self.hybrid:
            t = self.term(w, v3.reshape(n_steps * n_batch, -1)).reshape(n_steps, n_batch, self.units)
            # RnnBatchStep skips the product of an all-zero step input (IsZeroVector): -0.0 adds nothing
            zero = ~np.logical_or.reduce(v3 if self.per_row else v3.reshape(n_steps, -1), axis=-1)
            if zero.any():
                t[zero] = -0.0
            return t
        out = np.empty((n_steps, n_batch, self.units), np.float32)
        mm = float_dot(w)
        for t in range(n_steps):
            mm(v3[t], w, out=out[t])
        return out

    def _inputs(self, x3, aux3) -> np.ndarray:
        """``bias + W_in x [+ W_aux aux]`` of every step ((T, B, units) float32)."""
        pre = self._input_term(self.w_in, x3)
        np.add(self.bias, pre, out=pre)
        if aux3 is not None and self.w_aux is not None:
            pre += self._input_term(self.w_aux, aux3)
        return pre

    def _recurrent(self):
        """``(h, hs)`` -> ``hs = W_rec h`` for one step (hybrid: see ``_hybrid_recurrent``)."""
        rec = self._rec
        if rec is None:
            mm, w = float_dot(self.w_rec), self.w_rec
            return lambda h, hs: mm(h, w, hs)
        return self._hybrid_recurrent

    def _hybrid_recurrent(self, h, hs):
        """``hs = W_rec h`` (hybrid), -0.0 where RnnBatchStep skips the product (IsZeroVector of the state: the
        whole batch, or each row when ``per_row``), so that adding it leaves the sum as it is."""
        if not self._rec(h, hs, self.per_row):
            hs.fill(-0.0)

    def run(self, x3, aux3, h, out3, reverse: bool = False):
        """The whole sequence (x3 (T, B, I), aux3 (T, B, A) or None, out3 (T, B, U) time-major views), h the
        state (updated): per step ``act(bias + W_in x [+ W_aux aux] + W_rec h)``, summed in that order, with
        ``bias + W_in x [+ W_aux aux]`` of every step computed up front and one recurrent product per step."""
        n_steps, n_batch = x3.shape[:2]
        if n_steps == 0:
            return
        pre = self._inputs(x3, aux3)
        rec, act = self._rec, self.activation
        mm = float_dot(self.w_rec) if rec is None else None
        rec_step = None if rec is None else self._hybrid_recurrent
        hs = np.empty((n_batch, self.units), np.float32)
        # TANH on whole contiguous steps: Eigen's tanh with prepared scratch (tanh_inplace's arithmetic)
        tanh = tanh_work(n_batch * self.units) if act is tanh_inplace and out3[0].flags.c_contiguous else None
        h_prev = h
        for t in range(n_steps - 1, -1, -1) if reverse else range(n_steps):
            if rec is None:
                mm(h_prev, self.w_rec, out=hs)
            else:
                rec_step(h_prev, hs)
            dst = out3[t]
            np.add(pre[t], hs, out=dst)
            if tanh is not None:
                flat = dst.reshape(-1)
                tanh(flat, flat)
            elif act is not None:
                act(dst)
            h_prev = dst
        h[...] = h_prev


def _cell(
    ctx: OpContext,
    w: TensorInfo,
    rec: TensorInfo,
    bias: TensorInfo,
    aux_w: TensorInfo | None,
    asymmetric: bool,
    activation: int,
    allow_hybrid: bool,
    per_row: bool = False,
) -> RnnCell:
    ctx.check(w.dtype == rec.dtype, f"recurrent weights type {rec.type_name} != input weights type {w.type_name}")
    units = w.shape[0]
    ctx.check(
        bias.shape[0] == units and rec.shape == (units, units), "input_weights->dims->data[0] != bias->dims->data[0]"
    )
    ctx.check(bias.dtype == np.float32, f"bias must be FLOAT32, got {bias.type_name}")
    ctx.check(
        w.is_constant and rec.is_constant and bias.is_constant and (aux_w is None or aux_w.is_constant),
        "litert_py's RNN kernels need constant weights and bias",
    )
    act = apply_activation_to_vector(activation)
    b = bias.data.astype(np.float32).reshape(-1)
    if w.dtype == np.float32:
        ctx.check(aux_w is None or aux_w.dtype == np.float32, "aux weights must be FLOAT32")
        return RnnCell(
            np.ascontiguousarray(w.data.T),
            None if aux_w is None else np.ascontiguousarray(aux_w.data.T),
            np.ascontiguousarray(rec.data.T),
            b,
            act,
            False,
            units,
        )
    if w.dtype not in (np.int8, np.uint8):
        raise ctx.fail(f"Type {w.type_name} not currently supported.")
    ctx.check(allow_hybrid, f"litert_py: hybrid {ctx.op_name} is not implemented")
    for t in (w, rec) + ((aux_w,) if aux_w is not None else ()):
        ctx.check(bool(t.quantization.scale), f"{t.name}: hybrid weights need a scale")
    return RnnCell(
        hybrid_matvec(w.data, w.scale, asymmetric),
        None if aux_w is None else hybrid_matvec(aux_w.data, aux_w.scale, asymmetric),
        hybrid_matvec(rec.data, rec.scale, asymmetric),
        b,
        act,
        True,
        units,
        per_row,
    )


def _check_state(ctx: OpContext, h: TensorInfo, batch: int, units: int):
    ctx.check(len(h.shape) == 2 and h.shape == (batch, units), "hidden_state must be (batch_size, num_units)")
    ctx.check(h.dtype == np.float32, "hidden_state must be FLOAT32")
    ctx.check(h.is_variable, "hidden_state must be a variable tensor")


# -------------------------------------------------------------------------------------------------------------
# RNN
# -------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RnnStep:
    cell: RnnCell

    def __call__(self, inputs, outputs):
        x = inputs[0]
        self.cell.run(x.reshape(1, x.shape[0], -1), None, inputs[4], outputs[0][None])


@register(BuiltinOperator.RNN, stateful=True)
def prepare_rnn(ctx: OpContext) -> PreparedOp:
    ctx.check_num(5, 1)
    x, w, rec, bias, h = (ctx.input(i) for i in range(5))
    ctx.check(x.dtype == np.float32, f"input type {x.type_name} != FLOAT32")
    ctx.check(len(x.shape) == 2 and x.shape[1] == w.shape[1], "input->dims->data[1] != input_weights->dims->data[1]")
    o = ctx.options
    cell = _cell(ctx, w, rec, bias, None, bool(o.asymmetric_quantize_inputs), o.fused_activation_function, True)
    _check_state(ctx, h, x.shape[0], cell.units)
    ctx.set_output_shape(0, (x.shape[0], cell.units))
    return RnnStep(cell)


# -------------------------------------------------------------------------------------------------------------
# UNIDIRECTIONAL_SEQUENCE_RNN
# -------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SequenceRnn:
    cell: RnnCell
    time_major: bool

    def __call__(self, inputs, outputs):
        x, h, out = inputs[0], inputs[4], outputs[0]
        if not self.time_major:
            x, out = x.transpose(1, 0, 2), out.transpose(1, 0, 2)
        self.cell.run(x, None, h, out)


def _seq_dims(ctx: OpContext, x: TensorInfo, time_major: bool):
    ctx.check(len(x.shape) == 3, "NumDimensions(input) != 3")
    return (x.shape[1], x.shape[0]) if time_major else (x.shape[0], x.shape[1])  # batch, time


@register(BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN, stateful=True)
def prepare_unidirectional_sequence_rnn(ctx: OpContext) -> PreparedOp:
    ctx.check_num(5, 1)
    x, w, rec, bias, h = (ctx.input(i) for i in range(5))
    ctx.check(x.dtype == np.float32, f"input type {x.type_name} != FLOAT32")
    o = ctx.options
    tm = bool(o.time_major)
    batch, time = _seq_dims(ctx, x, tm)
    ctx.check(len(w.shape) == 2 and len(rec.shape) == 2 and len(bias.shape) == 1, "weights must be 2-D, bias 1-D")
    ctx.check(x.shape[2] == w.shape[1], "input_size != input_weights->dims->data[1]")
    cell = _cell(ctx, w, rec, bias, None, bool(o.asymmetric_quantize_inputs), o.fused_activation_function, True, not tm)
    _check_state(ctx, h, batch, cell.units)
    ctx.set_output_shape(0, (time, batch, cell.units) if tm else (batch, time, cell.units))
    return SequenceRnn(cell, tm)


# -------------------------------------------------------------------------------------------------------------
# BIDIRECTIONAL_SEQUENCE_RNN
# -------------------------------------------------------------------------------------------------------------


def run_pair(fw: RnnCell, bw: RnnCell, x_fw, x_bw, aux3, h_fw, h_bw, out_fw, out_bw) -> None:
    """``fw.run`` forward and ``bw.run`` backward. With TANH in both and equal sizes the passes step together,
    the forward step t with the backward step T-1-t: the cells share no state and tanh is elementwise, so one
    tanh over the stacked (2, B, units) sums gives each cell the numbers of its own pass, with half the calls."""
    n_steps, n_batch = x_fw.shape[:2]
    if not (fw.activation is tanh_inplace and bw.activation is tanh_inplace and fw.units == bw.units and n_batch):
        fw.run(x_fw, aux3, h_fw, out_fw)
        bw.run(x_bw, aux3, h_bw, out_bw, reverse=True)
        return
    if n_steps == 0:
        return
    pre, rec = (fw._inputs(x_fw, aux3), bw._inputs(x_bw, aux3)), (fw._recurrent(), bw._recurrent())
    acc = np.empty((2, n_batch, fw.units), np.float32)
    hs = np.empty_like(acc)
    tanh, flat, add, copyto = tanh_work(acc.size), acc.reshape(-1), np.add, np.copyto
    h_prev, outs = [h_fw, h_bw], (out_fw, out_bw)
    for s in range(n_steps):
        steps = ((0, s), (1, n_steps - 1 - s))
        for j, ts in steps:
            rec[j](h_prev[j], hs[j])
            add(pre[j][ts], hs[j], acc[j])
            h_prev[j] = acc[j]
        tanh(flat, flat)
        for j, ts in steps:
            copyto(outs[j][ts], acc[j])
    h_fw[...], h_bw[...] = acc[0], acc[1]


@dataclass(frozen=True, eq=False)
class BidirectionalSequenceRnn:
    fw: RnnCell
    bw: RnnCell
    time_major: bool
    merge: bool
    bw_reads_aux: bool  # time-major non-stacking mode: the backward cell's input is the aux input
    use_aux: bool

    def __call__(self, inputs, outputs):
        aux = inputs[9] if len(inputs) > 9 else None
        x, bw_x, real_aux, fw_out, bw_out = bidirectional_views(
            inputs[0], aux, outputs, self.fw.units, self.merge, self.bw_reads_aux, self.use_aux, self.time_major
        )
        fw_h, bw_h = inputs[4], inputs[8]
        n = x.shape[0]
        for _ in range(n if self.time_major and self.fw.hybrid else 1):  # LiteRT's EvalHybrid bug, see above
            run_pair(self.fw, self.bw, x, bw_x, real_aux, fw_h, bw_h, fw_out, bw_out)


@register(BuiltinOperator.BIDIRECTIONAL_SEQUENCE_RNN, stateful=True)
def prepare_bidirectional_sequence_rnn(ctx: OpContext) -> PreparedOp:
    o = ctx.options
    merge = bool(o.merge_outputs)
    ctx.check(len(ctx.inputs) == 12, f"node->inputs->size != 12 (got {len(ctx.inputs)})")
    ctx.check(len(ctx.outputs) == (1 if merge else 2), "node->outputs->size != (merge_outputs ? 1 : 2)")
    x = ctx.input(0)
    ctx.check(x.dtype == np.float32, f"input type {x.type_name} != FLOAT32")
    aux, fw_aux_w, bw_aux_w = ctx.optional_input(9), ctx.optional_input(10), ctx.optional_input(11)
    ctx.check((fw_aux_w is None) == (bw_aux_w is None), "aux_inputs_weights_or_none was not true.")
    use_aux = fw_aux_w is not None
    tm = bool(o.time_major)
    batch, time = _seq_dims(ctx, x, tm)
    asym, act = bool(o.asymmetric_quantize_inputs), o.fused_activation_function
    fw = _cell(ctx, ctx.input(1), ctx.input(2), ctx.input(3), fw_aux_w, asym, act, True, not tm)
    bw = _cell(ctx, ctx.input(5), ctx.input(6), ctx.input(7), bw_aux_w, asym, act, True, not tm)
    ctx.check(
        x.shape[2] == ctx.input(1).shape[1] and x.shape[2] == ctx.input(5).shape[1],
        "input->dims->data[2] != fw_input_weights->dims->data[1]",
    )
    _check_state(ctx, ctx.input(4), batch, fw.units)
    _check_state(ctx, ctx.input(8), batch, bw.units)
    check_aux_input(ctx, x, aux, use_aux)
    if use_aux:
        ctx.check(
            fw_aux_w.shape == (fw.units, aux.shape[2]) and bw_aux_w.shape == (bw.units, aux.shape[2]),
            "aux_input_weights must be (num_units, aux_input_size)",
        )
        # LiteRT's time-major loop offsets the aux input by s * input_size * batch: only the same size works.
        ctx.check(not tm or aux.shape[2] == x.shape[2], "litert_py: time-major aux input size != input size")
    bw_reads_aux = tm and aux is not None and not use_aux
    if bw_reads_aux:
        ctx.check(aux.shape[2] == x.shape[2], "the backward input (aux_input) must have the input's size")
    lead = (time, batch) if tm else (batch, time)
    if merge:
        ctx.set_output_shape(0, lead + (fw.units + bw.units,))
    else:
        ctx.set_output_shape(0, lead + (fw.units,))
        ctx.set_output_shape(1, lead + (bw.units,))
    return BidirectionalSequenceRnn(fw, bw, tm, merge, bw_reads_aux, use_aux)
