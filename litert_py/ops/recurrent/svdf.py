"""SVDF: float32, hybrid (float32 input, int8 weights) and integer (int8 input, int16 state).

Inputs: input (batch, input_size), weights_feature (num_filters, input_size), weights_time
(num_filters, memory_size), optional bias (num_units), activation_state (batch, memory_size * num_filters),
a variable tensor the op updates in place. ``num_units = num_filters / rank``. One step:

1. shift the whole state buffer left by one element (the last column of each filter row is then rewritten);
2. ``state[b, f, last] = W_f[f] . x[b]`` (float; hybrid: the row-quantized input's int32 dot product times
   ``f32(sf * s_wf)``, as FULLY_CONNECTED's hybrid path, which is reused here; integer:
   ``clamp16(mbqm(sum w (x - zi), M1, e1))``);
3. ``s[b, f] = sum_t w_time[f, t] * state[b, f, t]`` (hybrid: weights_time dequantized to float once);
4. ``out[b, u] = sum over the rank filters of unit u + bias``, then the fused activation (float/hybrid:
   ApplyActivationToVector) or ``clamp8(mbqm(acc, M2, e2) + zo)`` (integer; the op requires RELU, which
   the integer kernel does not apply beyond the int8 range).

``(M1, e1) = QM(f32(f32(s_in * s_wf) / s_state))``, ``(M2, e2) = QM(f32(f32(s_state * s_wt) / s_out))``.

Sources matched: LiteRT tflite/kernels/svdf.cc (Prepare checks, Eval dispatch, effective scales, hybrid
float_weights_time), tflite/kernels/internal/reference/svdf.h (EvalFloatSVDF, EvalHybridSVDF,
EvalIntegerSVDF, ApplyTimeWeightsBiasAndActivation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...quant import (
    SseMinus128Fix,
    quantize_multiplier,
    requantize_int64_inplace,
    sse_reduction_sum_vector,
    wrap32,
)
from ...schema.model import ActivationFunctionType as Act
from ...schema.model import BuiltinOperator
from ..common import apply_activation_to_vector
from ..hybrid_fc import FullyConnectedHybrid
from ..registry import OpContext, PreparedOp, register

INPUT, WEIGHTS_FEATURE, WEIGHTS_TIME, BIAS, STATE = range(5)


def _shift_state(state: np.ndarray) -> None:
    flat = state.reshape(-1)
    flat[:-1] = flat[1:].copy()


@dataclass(frozen=True, eq=False)
class SvdfFloat:
    wf_t: np.ndarray  # (input_size, num_filters) float32
    wt: np.ndarray  # (num_filters, memory) float32
    bias: np.ndarray | None
    rank: int
    num_filters: int
    memory: int
    activation: object

    def __call__(self, inputs, outputs):
        state = inputs[STATE]
        _shift_state(state)
        s3 = state.reshape(-1, self.num_filters, self.memory)
        s3[:, :, -1] = inputs[INPUT] @ self.wf_t
        self._finish(s3, inputs, outputs)

    def _finish(self, s3, inputs, outputs):
        scratch = np.einsum("bft,ft->bf", s3, self.wt, dtype=np.float32)
        out = outputs[0]
        np.sum(scratch.reshape(out.shape[0], -1, self.rank), axis=2, out=out)
        if self.bias is not None:
            out += self.bias
        if self.activation is not None:
            self.activation(out)


@dataclass(frozen=True, eq=False)
class SvdfHybrid(SvdfFloat):
    fc: FullyConnectedHybrid | None = None

    def __call__(self, inputs, outputs):
        state = inputs[STATE]
        _shift_state(state)
        s3 = state.reshape(-1, self.num_filters, self.memory)
        scratch = np.empty((s3.shape[0], self.num_filters), np.float32)
        self.fc([inputs[INPUT]], [scratch])
        s3[:, :, -1] = scratch
        self._finish(s3, inputs, outputs)


@dataclass(frozen=True, eq=False)
class SvdfInteger:
    wf_t: np.ndarray  # (input_size, num_filters) int64
    wt: np.ndarray  # (num_filters, memory) int64
    bias: np.ndarray | None  # int64 (num_units,)
    zi: int
    zo: int
    m1: int
    e1: int
    m2: int
    e2: int
    rank: int
    num_filters: int
    memory: int

    def __call__(self, inputs, outputs):
        state = inputs[STATE]
        _shift_state(state)
        s3 = state.reshape(-1, self.num_filters, self.memory)
        dot = (inputs[INPUT].astype(np.int64) - self.zi) @ self.wf_t
        requantize_int64_inplace(wrap32(dot), self.m1, self.e1, 0, -32768, 32767, s3[:, :, -1])
        scratch = wrap32(np.einsum("bft,ft->bf", s3.astype(np.int64), self.wt))
        out = outputs[0]
        acc = scratch.reshape(out.shape[0], -1, self.rank).sum(axis=2)
        if self.bias is not None:
            acc += self.bias
        requantize_int64_inplace(wrap32(acc), self.m2, self.e2, self.zo, -128, 127, out)


@register(BuiltinOperator.SVDF, stateful=True)
def prepare_svdf(ctx: OpContext) -> PreparedOp:
    ctx.check(len(ctx.inputs) == 5 and len(ctx.outputs) == 1, "SVDF takes 5 inputs and 1 output")
    x, wf, wt = ctx.input(INPUT), ctx.input(WEIGHTS_FEATURE), ctx.input(WEIGHTS_TIME)
    bias, state, out = ctx.optional_input(BIAS), ctx.input(STATE), ctx.outputs[0]
    ctx.check(x.dtype in (np.float32, np.int8), f"Type {x.type_name} is unsupported by op SVDF.")
    opts = ctx.options
    rank = int(opts.rank)
    ctx.check(len(x.shape) == 2 and len(wf.shape) == 2 and len(wt.shape) == 2, "SVDF needs 2-D input and weights")
    batch, num_filters, memory = x.shape[0], wf.shape[0], wt.shape[1]
    ctx.check(rank != 0, "rank != 0 was not true.")
    ctx.check(num_filters % rank == 0, "num_filters % rank == 0 was not true.")
    units = num_filters // rank
    ctx.check(x.shape[1] == wf.shape[1], "input->dims->data[1] != weights_feature->dims->data[1]")
    ctx.check(wt.shape[0] == num_filters, "weights_time->dims->data[0] != num_filters")
    if bias is not None:
        ctx.check(len(bias.shape) >= 1 and bias.shape[0] == units, "bias->dims->data[0] != num_units")
    ctx.check(
        len(state.shape) == 2 and state.shape[0] == batch and state.shape[1] == memory * num_filters,
        "the state must be (batch, memory_size * num_filters)",
    )
    ctx.check(state.is_variable, "the SVDF state must be a variable tensor")
    ctx.check(
        wf.is_constant and wt.is_constant and (bias is None or bias.is_constant),
        "litert_py's SVDF needs constant weights and bias",
    )
    ctx.set_output_shape(0, (batch, units))
    activation = opts.fused_activation_function
    if wf.dtype == np.float32:
        ctx.check(
            x.dtype == np.float32 and wt.dtype == np.float32 and state.dtype == np.float32 and out.dtype == np.float32,
            "float SVDF needs FLOAT32 input, weights, state and output",
        )
        b = None if bias is None else bias.data.astype(np.float32).reshape(-1)
        return SvdfFloat(
            np.ascontiguousarray(wf.data.T),
            wt.data.astype(np.float32),
            b,
            rank,
            num_filters,
            memory,
            apply_activation_to_vector(activation),
        )
    ctx.check(wf.dtype in (np.int8, np.uint8), f"Type {wf.type_name} not currently supported.")
    if x.dtype == np.float32:  # hybrid
        ctx.check(
            wt.dtype in (np.int8, np.uint8) and state.dtype == np.float32 and out.dtype == np.float32,
            "hybrid SVDF needs int8 weights_time and a FLOAT32 state and output",
        )
        ctx.check(bool(wf.quantization.scale) and bool(wt.quantization.scale), "hybrid SVDF needs quantized weights")
        wi = wf.data.view(np.int8)
        asym = bool(opts.asymmetric_quantize_inputs)
        wt_f = np.multiply(wt.data.view(np.int8), np.float32(wt.scale), dtype=np.float32)
        fc = FullyConnectedHybrid(
            np.ascontiguousarray(wi.T, dtype=np.float64),
            sse_reduction_sum_vector(wi).astype(np.float64) if asym else None,
            SseMinus128Fix.build(wi, np.float64),
            np.asarray(np.float32(wf.scale)),
            None,
            asym,
            wi.shape[1],
            num_filters,
            None,
        )
        b = None if bias is None else bias.data.astype(np.float32).reshape(-1)
        return SvdfHybrid(None, wt_f, b, rank, num_filters, memory, apply_activation_to_vector(activation), fc)
    # integer
    ctx.check(
        wf.dtype == np.int8
        and wt.dtype == np.int16
        and state.dtype == np.int16
        and out.dtype == np.int8
        and (bias is None or bias.dtype == np.int32),
        "integer SVDF needs int8 weights_feature, int16 weights_time and state, int32 bias, int8 output",
    )
    for t in (x, wf, state, wt, out):
        ctx.check(bool(t.quantization.scale), f"{t.name}: quantization.type != kTfLiteNoQuantization")
    ctx.check(activation == Act.RELU, "params->activation != kTfLiteActRelu")
    f32 = np.float32
    s1 = f32(f32(x.scale) * f32(wf.scale)) / f32(state.scale)
    s2 = f32(f32(state.scale) * f32(wt.scale)) / f32(out.scale)
    m1, e1 = quantize_multiplier(float(s1))
    m2, e2 = quantize_multiplier(float(s2))
    b = None if bias is None else bias.data.astype(np.int64).reshape(-1)
    return SvdfInteger(
        np.ascontiguousarray(wf.data.T.astype(np.int64)),
        wt.data.astype(np.int64),
        b,
        x.zero_point,
        out.zero_point,
        m1,
        e1,
        m2,
        e2,
        rank,
        num_filters,
        memory,
    )
