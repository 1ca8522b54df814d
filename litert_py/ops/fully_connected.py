"""FULLY_CONNECTED: float32, quantized (int8, uint8, int16x8, int16x16) and hybrid (float32 input, int8 weights).

Modules: fully_connected.py (the op's checks and dispatch, the float32 path), fully_connected_quantized.py
(the integer paths and their checks), fully_connected_folded.py (the folded exact-GEMM integer kernel),
fully_connected_row.py (one float row, and chains), hybrid_fc.py (the hybrid path, also the matrix product
of the hybrid RNN, SVDF and LSTM kernels).

Paths (prepared ops):

- ``FullyConnectedFloat`` / ``FullyConnectedFloatDynamicWeights``: float32 (float16 weights arrive folded to
  float32 by DEQUANTIZE at prepare). One BLAS call. With constant weights and one input row,
  ``FullyConnectedFloatRow`` (fully_connected_row.py: bias folded into the product, chains fused into one step).
- ``FullyConnectedQuantized``: int8 (per-tensor weights with their zero point applied, or per-channel weights
  whose zero points are ignored), uint8 -> uint8 and uint8 -> int16 (legacy, uint8 weights with zero point),
  int16 activations with int8 (or INT4) weights and an int32 or int64 bias. LiteRT's reference kernel
  requantizes these in **double**, not with MultiplyByQuantizedMultiplier (LiteRT commit 921360770,
  "Make the fully_connected ref kernel do requant in float")::

      acc    = sum_k (w - zw)(x - zx) + bias            # int32 (wraps) or int64 accumulator
      eff[c] = f64(s_in) * f64(s_w[c]) / f64(s_out)      # per-tensor: s_w[0] for every c
      out    = clamp(int32(round_half_away(f64(acc) * eff[c])) + zo, act_min, act_max)

  (uint8 -> int16 clamps to ``[act_min - zo, act_max - zo]`` before adding ``zo``.) The tie probe
  (s_in 0.5, s_w 0.125, s_out 1, x = 7) gives 0 here and 1 with MBQM; the tests check it.
- ``FullyConnectedInt16x16``: int16 activations and int16 weights: int64 accumulator and the int64 overload
  of MultiplyByQuantizedMultiplier (tflite/kernels/internal/common.cc); the multiplier is
  ``f64(f32(s_in*s_w))/f64(s_out)`` per tensor, ``f64(s_in)*f64(s_w[c])/f64(s_out)`` per channel.
- ``FullyConnectedHybrid``: float32 input, int8 (INT4 unpacked, or uint8 *reinterpreted as int8*, as LiteRT
  does) weights, float32 bias. Each batch row is quantized (``batch_quantize_floats``: symmetric
  ``round(x * 127/max|x|)``, or asymmetric with the nudged zero point), the int32 dot products are exact,
  and the float32 output is ``bias + f32(dot) * f32(scale_row * w_scale[c])`` in LiteRT's order, then the
  activation (any fused activation: TANH and SIGN_BIT too). The x86-64 wheel runs the tensor_utils
  functions of optimized/neon_tensor_utils.cc (through NEON_2_SSE) and optimized/sse_tensor_utils.cc, not
  the portable ones, and three of their details change results; all are reproduced, and the output then
  equals BUILTIN_REF bit for bit (the tests compare exactly):
  * the row quantizers round the first ``depth & ~7`` values with ``trunc(v +- 0.5)``, the rest with
    roundf; the asymmetric one takes the scale as ``f64(f32(rmax - rmin)) / 255`` and adds the zero point
    to the *rounded* value (the portable code adds it in float first);
  * ``DotProdInt8x4x4`` moves the input's sign onto the weight with ``_mm_sign_epi8``, so in the 16-wide
    blocks a weight of -128 times a negative input counts as +128 (``SseMinus128Fix``);
  * ``SseReductionSumVector`` (row sums for asymmetric inputs) adds in int16 lanes that wrap for rows of
    more than ~2000 large weights (``sse_reduction_sum_vector``).
  Under the default XNNPACK delegate (resolver AUTO) hybrid FC uses XNNPACK's own input quantization: up to
  ~2% apart from the reference with symmetric inputs, ~1 ulp with asymmetric ones.

Sources matched (ai-edge-litert 2.3.0 = LiteRT tflite/kernels):
- tflite/kernels/fully_connected.cc: CheckTypes, PrepareImpl (bias length, per-channel rules, zero points,
  quantized_bias_type, output shape and keep_num_dims), Prepare (non-hybrid ops accept only NONE, RELU,
  RELU_N1_TO_1, RELU6), EvalQuantized (which kernel per input/weights/output type), EvalHybridDense.
- tflite/kernels/kernel_util.cc: GetQuantizedConvolutionMultipler (bias-scale check, product >= 0),
  CalculateActivationRangeQuantized.
- tflite/kernels/internal/reference/integer_ops/fully_connected.h and reference/fully_connected.h: the float
  requantization above; tflite/kernels/internal/portable_tensor_utils.{h,cc} (BatchQuantizeFloats,
  Apply*ToVector), tflite/kernels/internal/optimized/neon_tensor_utils.cc (NeonSymmetricQuantizeFloats,
  NeonAsymmetricQuantizeFloats, NeonMinMax, RoundToNearest), tflite/kernels/internal/optimized/
  sse_tensor_utils.cc (SseMatrixBatchVectorMultiplyAccumulateImpl, DotProdInt8x4x4, SseReductionSumVector).

Models LiteRT runs into garbage are rejected at prepare instead: an int64 bias with int8/uint8 input (read as
int32), an int32 bias for int16x8 unless quantized_bias_type is INT32 (read as int64), uint8 -> int16 without
a bias (null dereference), and input/weights/output type mixes the kernels reinterpret.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schema.model import ActivationFunctionType as Act
from ..schema.model import BuiltinOperator
from .activation_fusion import ClampLast, float_bounds
from .common import clip_ufunc, float_activation
from .fully_connected_quantized import prepare_quantized
from .fully_connected_row import prepare_float_row
from .hybrid_fc import prepare_hybrid
from .registry import OpContext, PreparedOp, register

INPUT, WEIGHTS, BIAS = 0, 1, 2
_CLIPPING_ACTIVATIONS = (Act.NONE, Act.RELU, Act.RELU_N1_TO_1, Act.RELU6)

# -------------------------------------------------------------------------------------------------------------
# Shapes
# -------------------------------------------------------------------------------------------------------------


def fc_output_shape(ctx: OpContext) -> tuple[tuple[int, ...], int]:
    """(output shape, batch rows) as FULLY_CONNECTED's Prepare computes them."""
    x, w = ctx.input(INPUT), ctx.input(WEIGHTS)
    ctx.check(len(w.shape) == 2, f"weights must be 2-D, got shape {list(w.shape)}")
    units, depth = w.shape
    if depth == 0:  # PrepareImpl: "generate the output shape early to avoid dividing by 0"
        if ctx.options.keep_num_dims:
            return tuple(x.shape[:-1]) + (units,), int(np.prod(x.shape[:-1], dtype=np.int64))
        batches = int(np.prod(x.shape[:-1], dtype=np.int64))
        return (batches, units), batches
    size = x.size
    ctx.check(size % depth == 0, f"input of {size} elements is not a multiple of the weights' input depth {depth}")
    batches = size // depth
    if ctx.options.keep_num_dims:
        ctx.check(
            len(x.shape) > 0 and x.shape[-1] == depth,
            f"keep_num_dims needs the last input dim ({x.shape[-1] if x.shape else '-'}) == {depth}",
        )
        return tuple(x.shape[:-1]) + (units,), batches
    return (batches, units), batches


def _act_name(code: int) -> str:
    try:
        return Act(code).name
    except ValueError:
        return str(code)


# -------------------------------------------------------------------------------------------------------------
# Float
# -------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class FullyConnectedFloat(ClampLast):
    weights_t: np.ndarray  # (depth, units), contiguous: x @ weights_t is one BLAS call
    bias: np.ndarray | None
    depth: int
    out_min: np.ndarray  # the fused activation's range (ActivationFunctionWithMinMax, NONE included), 0-d float32
    out_max: np.ndarray

    def __call__(self, inputs, outputs):
        out = outputs[0]
        out2d = out.reshape(-1, self.weights_t.shape[1])
        np.matmul(inputs[INPUT].reshape(-1, self.depth), self.weights_t, out=out2d)
        if self.bias is not None:
            out2d += self.bias
        clip_ufunc(out, self.out_min, self.out_max, out=out)


@dataclass(frozen=True, eq=False)
class FullyConnectedFloatDynamicWeights:
    """Weights that are not constant (e.g. computed by an earlier op): transposed on every invoke."""

    depth: int
    activation: object

    def __call__(self, inputs, outputs):
        out = outputs[0]
        w = inputs[WEIGHTS]
        out2d = out.reshape(-1, w.shape[0])
        np.matmul(inputs[INPUT].reshape(-1, self.depth), w.T, out=out2d)
        if len(inputs) > BIAS and inputs[BIAS] is not None:
            out2d += inputs[BIAS]
        if self.activation is not None:
            self.activation(out)


@dataclass(frozen=True, eq=False)
class FullyConnectedZeroDepth:
    """Weights with an input depth of 0: LiteRT's Eval writes zeros."""

    def __call__(self, inputs, outputs):
        outputs[0].fill(0)


# -------------------------------------------------------------------------------------------------------------
# Prepare
# -------------------------------------------------------------------------------------------------------------


@register(BuiltinOperator.FULLY_CONNECTED)
def prepare_fully_connected(ctx: OpContext) -> PreparedOp:
    ctx.check(len(ctx.inputs) in (2, 3), f"FULLY_CONNECTED takes 2 or 3 inputs, got {len(ctx.inputs)}")
    ctx.check(ctx.options.weights_format == 0, "Unhandled fully-connected weights format (shuffled).")
    x, w = ctx.input(INPUT), ctx.input(WEIGHTS)
    bias = ctx.optional_input(BIAS)
    out = ctx.outputs[0]
    act = ctx.options.fused_activation_function
    hybrid = x.dtype == np.float32 and w.dtype in (np.int8, np.uint8)
    if not hybrid:  # Prepare: only the hybrid path supports every fused activation
        ctx.check(
            act in _CLIPPING_ACTIVATIONS,
            f"Fused activation {_act_name(act)} is unsupported by "
            "FULLY_CONNECTED (only NONE, RELU, RELU_N1_TO_1, RELU6).",
        )
    shape, _ = fc_output_shape(ctx)
    if bias is not None:
        ctx.check(bias.size == w.shape[0], f"bias has {bias.size} elements, the weights {w.shape[0]} units")
    if x.dtype == np.float32 and w.dtype == np.float32:
        ctx.check(
            bias is None or bias.dtype == np.float32,
            f"bias of type {bias and bias.type_name} with float input; expected FLOAT32",
        )
        ctx.check(out.dtype == np.float32, f"float FULLY_CONNECTED needs a FLOAT32 output, got {out.type_name}")
        ctx.set_output_shape(0, shape)
        if w.shape[1] == 0:
            return FullyConnectedZeroDepth()
        activation = float_activation(ctx, act)
        depth = w.shape[1]
        if w.is_constant and (bias is None or bias.is_constant):
            if x.shape and int(np.prod(x.shape)) == depth and not x.dynamic:  # one input row: tiny float models
                return prepare_float_row(x.shape, w.data, None if bias is None else bias.data, act, shape)
            weights_t, bias_copy = np.ascontiguousarray(w.data.T), None if bias is None else bias.data.copy()
            return FullyConnectedFloat(weights_t, bias_copy, depth, *float_bounds(act))
        return FullyConnectedFloatDynamicWeights(depth, activation)
    if not hybrid and x.dtype not in (np.int8, np.uint8, np.int16):
        raise ctx.fail(f"FULLY_CONNECTED with input {x.type_name} and weights {w.type_name} is not supported")
    ctx.set_output_shape(0, shape)  # first: the kernels read ``out.shape`` (a re-allocation's, not the last one's)
    op = prepare_hybrid(ctx, x, w, bias, out) if hybrid else prepare_quantized(ctx, x, w, bias, out)
    return FullyConnectedZeroDepth() if w.shape[1] == 0 else op
