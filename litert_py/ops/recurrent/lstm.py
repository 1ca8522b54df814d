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
    (act NONE: h = o * g, as LiteRT computes it: its output scratch, the cell gate's buffer, is never written)
    output[t] = h

Hybrid (int8 weights, float activations): x, aux and h are quantized per batch row every step
(``batch_quantize_floats``, symmetric or asymmetric) and each product is ``f32(dot) * f32(sf * s_w)``,
FULLY_CONNECTED's hybrid arithmetic (``FullyConnectedHybrid`` is reused, x86 SSE quirks included); peephole
weights are dequantized (``w * s``), the projection input ``o * act(c)`` is quantized the same way. An input
that is all zeros skips its product (identical up to the sign of zero).

Sequence ops walk the time axis (``time_major``: (T, B, I), else (B, T, I)). Rows are independent, so the
whole batch is stepped at once (LiteRT's batch-major loop runs one row at a time: same numbers).

Speed (``LstmCell.run`` / ``LstmIntegerCell.run``; ``LstmCell.step`` is ``run`` over one step, both go through
the one per-step function ``LstmCell._advance``):
the input-to-gate products do not depend on the recurrence, so ``0 + W_x x`` (all gates stacked) is computed for
every time step before the loop (hybrid: one product over the T*B rows, quantized and multiplied row by row
exactly as per step; float32: one BLAS call per step with the step's own (B, I) operand, since a GEMM over all
rows may sum in another order; integer: ``sat16(mbqm(W_x x + eff_x))`` for all steps), then ``bias +`` that and
``+ W_aux aux``; a step whose whole input (B rows) is zero skips its product as before. Each step then does one
recurrent product for all gates (integer: with per-column MBQM constants, in place), the gate nonlinearities
over stacked views, 0-d constants instead of numpy scalars (a scalar operand costs a ufunc call ~0.5 us), and
the hybrid recurrent / projection products through ``StepHybridProduct`` (ops/recurrent/common.py). The sparse
hybrid kernel computes each step's input products inside the loop (its products share the scaling-factor
scratch) and applies the gate sigmoids gate by gate. numpy 2.4's in-place float32 ``np.negative`` is wrong on a
strided (B, 1) view, so the sigmoid negates with ``* -1``.
The gate sigmoids and the tanh of the cell gate and state use eigen_math's prepared-scratch emulations
(``logistic_work`` / ``tanh_work``, the same arithmetic in fewer numpy calls). A plain float32 cell
(``LstmCell.plain``) runs the whole sequence as one bound plan (lstm_plan.py: every step's numpy calls made
once, no Python between them; one batch row: the gate sigmoids and the cell-gate tanh in one joint listing,
``eigen_math.LogisticTanhWork``, and the cell update's two products in one); a hybrid plain cell, or a sequence
longer than the plan, steps in ``lstm_cell._plain_run`` with the same per-step calls, and a bidirectional pair of
plain cells steps together (``lstm_cell.run_pair``: one activation pass over both directions' stacked buffers,
bit-identical).
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

Modules: lstm.py (the three ops, their checks, the sequence loops), lstm_cell.py (float32 / hybrid cell, sparse
hybrid product), lstm_plan.py (the plain cell's bound plan and per-step calls), lstm_build.py (building that
cell, state checks), lstm_integer.py (8x8_16 cell), lstm_integer_build.py (building it), lstm_common.py (input
indices, int16 fixed point, tables), lstm_basic.py (the BASIC kernel type), lstm_integer8.py (the 8x8_8 kernel
with 12 intermediates).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...schema.model import BuiltinOperator
from ..registry import OpContext, PreparedOp, register
from .common import bidirectional_views, check_aux_input
from .lstm_basic import prepare_basic_lstm
from .lstm_build import build_cell, check_state_sizes, check_states, full_inputs
from .lstm_cell import LstmCell, run_pair
from .lstm_common import CELL_STATE, OUT_STATE
from .lstm_integer8 import prepare_lstm_8x8_8
from .lstm_integer_build import build_integer_cell

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
    cell = build_cell(
        ctx,
        ins,
        bool(opts.asymmetric_quantize_inputs),
        opts.cell_clip,
        opts.proj_clip,
        opts.fused_activation_function,
        use_ln,
        allow_diagonal=ctx.builtin_code == BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM,
    )
    check_states(ctx, ins[OUT_STATE], ins[CELL_STATE], n_batch, cell)
    return cell


@register(BuiltinOperator.LSTM, stateful=True)
def prepare_lstm(ctx: OpContext) -> PreparedOp:
    opts = ctx.options
    if opts.kernel_type == 1:  # BASIC: 5 inputs, 4 outputs, its own kernel
        return prepare_basic_lstm(ctx)
    ins, use_ln = full_inputs(ctx)
    x = ins[0]
    ctx.check(len(x.shape) > 1, "input->dims->size > 1 was not true.")
    ctx.check(len(x.shape) == 2, "litert_py: LSTM input must be 2-D (batch, input)")
    n_batch = x.shape[0]
    if x.dtype == np.int8 and len(ctx.intermediates) == 12:  # the 8x8_8 integer kernel
        return prepare_lstm_8x8_8(ctx, ins, use_ln)
    if x.dtype == np.int8:
        cell = build_integer_cell(ctx, ins, opts, use_ln, ctx.outputs[0], False)
        check_state_sizes(ctx, ins, n_batch, cell)
    else:
        cell = _float_or_hybrid(ctx, ins, use_ln, opts, n_batch)
    ctx.set_output_shape(0, (n_batch, cell.n_output))
    return LstmSequence(cell, True)


@register(BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, stateful=True)
def prepare_unidirectional_sequence_lstm(ctx: OpContext) -> PreparedOp:
    opts = ctx.options
    ins, use_ln = full_inputs(ctx)
    x = ins[0]
    ctx.check(len(x.shape) > 1, "input->dims->size > 1 was not true.")
    ctx.check(len(x.shape) == 3, "litert_py: UNIDIRECTIONAL_SEQUENCE_LSTM input must be 3-D")
    tm = bool(opts.time_major)
    n_batch = x.shape[1] if tm else x.shape[0]
    if x.dtype == np.int8:
        cell = build_integer_cell(ctx, ins, opts, use_ln, ctx.outputs[0], not tm)
        check_state_sizes(ctx, ins, n_batch, cell)
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
            inputs[0],
            inputs[BIDI_AUX],
            outputs,
            self.fw.n_output,
            self.merge,
            self.bw_reads_aux,
            self.use_aux,
            self.time_major,
        )
        n_batch = x.shape[1]
        states = [
            (inputs[hi].reshape(n_batch, cell.n_output), inputs[ci].reshape(n_batch, cell.n_cell))
            for cell, (hi, ci) in ((self.fw, BIDI_FW_STATES), (self.bw, BIDI_BW_STATES))
        ]
        run_pair(self.fw, self.bw, x, bw_x, real_aux, states, fw_out, bw_out)


@register(BuiltinOperator.BIDIRECTIONAL_SEQUENCE_LSTM, stateful=True)
def prepare_bidirectional_sequence_lstm(ctx: OpContext) -> PreparedOp:
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
    check_aux_input(ctx, x, aux, use_aux)
    bw_reads_aux = aux is not None and not use_aux
    bw_x = aux if bw_reads_aux else x
    asym = bool(opts.asymmetric_quantize_inputs)
    cells = []
    for lo, states, aux_w, xin in ((1, BIDI_FW_STATES, fw_aux_w, x), (18, BIDI_BW_STATES, bw_aux_w, bw_x)):
        ins = (
            [xin]
            + [ctx.optional_input(k) for k in range(lo, lo + 17)]
            + [ctx.optional_input(states[0]), ctx.optional_input(states[1])]
            + [None] * 4
        )
        cell = build_cell(
            ctx,
            ins,
            asym,
            opts.cell_clip,
            opts.proj_clip,
            opts.fused_activation_function,
            False,
            aux_w if use_aux else None,
        )
        check_states(ctx, ins[OUT_STATE], ins[CELL_STATE], n_batch, cell)
        cells.append(cell)
    fw, bw = cells
    lead = x.shape[:2]
    if merge:
        ctx.set_output_shape(0, lead + (fw.n_output + bw.n_output,))
    else:
        ctx.set_output_shape(0, lead + (fw.n_output,))
        ctx.set_output_shape(1, lead + (bw.n_output,))
    return BidirectionalSequenceLstm(fw, bw, tm, merge, bw_reads_aux, use_aux)
