"""FULLY_CONNECTED: float32, quantized (int8, uint8, int16x8, int16x16) and hybrid (float32 input, int8 weights).

Paths (prepared ops):

- ``FullyConnectedFloat`` / ``FullyConnectedFloatDynamicWeights``: float32 (float16 weights arrive folded to
  float32 by DEQUANTIZE at prepare). One BLAS call.
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

Speed. Integer products are summed by BLAS in floating point, which is exact while every partial sum is an
integer below 2**24 (float32) or 2**53 (float64): prepare proves the bound from the constant weights
(``max|x - zx| * max_c sum_k |w_ck - zw| + max|bias|``) and picks float32 when it can. The weights are
stored transposed with their zero point already subtracted; the input's zero point is subtracted in the
same pass that converts it to float, so no correction terms remain:
``sum_k (x - zx)(w - zw) = (x - zx) @ (W - zw)^T``. The epilogue is a few in-place passes over the
(batch, units) result (multiply by ``eff``, clamp, round half away, add ``zo``, store into the int8/int16
output with ``out=``). When prepare cannot prove that the int32 accumulator never wraps and that the
rounded value fits int32 (huge biases, pathological scales), ``__call__`` takes a general int64 path that
reproduces the wrap and x86's INT32_MIN for out-of-range casts.

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

from ..quant import (
    SseMinus128Fix,
    dtype_range,
    multiply_by_quantized_multiplier_int64,
    multiply_by_quantized_multiplier_int64_ok,
    quantize_multiplier_array,
    round_away,
    sse_reduction_sum_vector,
    trunc_to_int32,
    wrap32,
)
from ..quant.hybrid import HALF_DOWN_F64
from ..schema.model import ActivationFunctionType as Act
from ..schema.model import BuiltinOperator
from .common import (  # noqa: F401  (re-exported)
    F32_EXACT,
    F64_EXACT,
    apply_activation_to_vector,
    clip_ufunc,
    float_activation,
    quantized_activation_range,
)
from .fully_connected_folded import FullyConnectedQuantizedFolded
from .hybrid_fc import FullyConnectedHybrid, hybrid_weights
from .registry import OpContext, PreparedOp, TensorInfo, register

INPUT, WEIGHTS, BIAS = 0, 1, 2

# TensorType numbers (schema.fbs) used by quantized_bias_type.
_FLOAT32, _INT32, _INT64 = 0, 2, 4
_INT4 = 17
_CLIPPING_ACTIVATIONS = (Act.NONE, Act.RELU, Act.RELU_N1_TO_1, Act.RELU6)

#: float32 / float64 represent every integer up to these exactly.
_I32_LIMIT = float(2**31 - 2)  # |t| below this: round_half_away(t) fits int32 with room for the product's ulp

# -------------------------------------------------------------------------------------------------------------
# Shapes and shared checks
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


def _scales(t: TensorInfo) -> np.ndarray:
    return np.asarray(t.quantization.scale, dtype=np.float32)


def _check_bias_scale(ctx: OpContext, x: TensorInfo, w: TensorInfo, bias: TensorInfo | None, out: TensorInfo):
    """GetQuantizedConvolutionMultipler (kernel_util.cc), the per-tensor path's checks."""
    if bias is not None:
        product = np.float64(x.scale) * np.float64(w.scale)
        diff = abs(product - np.float64(bias.scale))
        ctx.check(
            bool(diff / np.float64(out.scale) <= 0.02),
            f"bias scale {bias.scale} is not input scale * weights scale ({product}) "
            "(kernel_util.cc: scale_diff / output_scale <= 0.02)",
        )
    ctx.check(float(np.float32(x.scale) * np.float32(w.scale)) >= 0, "input_product_scale >= 0 was not true.")


def _bound(w_minus_zw: np.ndarray, max_abs_x: float, bias: np.ndarray | None) -> np.ndarray:
    """Per output channel, a bound on |acc| = |sum_k (x - zx)(w - zw) + bias| over all inputs (float64)."""
    b = np.abs(w_minus_zw, dtype=np.float64).sum(axis=1) * max_abs_x
    if bias is not None:
        b += np.abs(bias.astype(np.float64))
    return b


def _gemm_dtype(bound: np.ndarray):
    """float32 if every partial sum is an integer below 2**24, else float64 (None: not even float64 is exact)."""
    top = float(bound.max()) if bound.size else 0.0
    if top <= F32_EXACT:
        return np.dtype(np.float32)
    return np.dtype(np.float64) if top <= F64_EXACT else None


def _act_name(code: int) -> str:
    try:
        return Act(code).name
    except ValueError:
        return str(code)


def _max_abs_input(dtype, zero_point: int) -> int:
    lo, hi = dtype_range(dtype)
    return max(abs(lo - zero_point), abs(hi - zero_point))


# -------------------------------------------------------------------------------------------------------------
# Float
# -------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class FullyConnectedFloat:
    weights_t: np.ndarray  # (depth, units), contiguous: x @ weights_t is one BLAS call
    bias: np.ndarray | None
    depth: int
    activation: object

    def __call__(self, inputs, outputs):
        out = outputs[0]
        out2d = out.reshape(-1, self.weights_t.shape[1])
        np.matmul(inputs[INPUT].reshape(-1, self.depth), self.weights_t, out=out2d)
        if self.bias is not None:
            out2d += self.bias
        if self.activation is not None:
            self.activation(out)


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
# Quantized with float requantization (int8, uint8, int16x8)
# -------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class FullyConnectedQuantized:
    """int8 / uint8 / int16x8 FULLY_CONNECTED with LiteRT's reference float requantization (module docstring).

    ``weights_t`` is ``(W - zw)^T`` (depth, units) in ``weights_t.dtype`` (float32 or float64), proven exact at
    prepare for the fast path; ``bias`` is in the same dtype. ``exact`` False (or non-constant weights, then
    ``weights_t`` is None) selects the general int64 path.
    """

    weights_t: np.ndarray | None
    bias: np.ndarray | None
    bias_int: np.ndarray | None  # int64, for the general path
    x_zero_point: int
    w_zero_point: int  # applied to non-constant weights (0 for per-channel)
    eff: np.ndarray  # float64, (units,) or ()
    zo: int
    act_min: int
    act_max: int
    depth: int
    units: int
    acc_bits: int  # 32: the C++ accumulator is int32 and wraps; 64: int64
    clamp_before_zo: bool  # uint8 -> int16: clamp to [min - zo, max - zo], then add zo
    exact: bool

    def __call__(self, inputs, outputs):
        out2d = outputs[0].reshape(-1, self.units)
        x2 = inputs[INPUT].reshape(-1, self.depth)
        if not self.exact:
            self._general(x2, inputs, out2d)
            return
        wt = self.weights_t
        xf = np.subtract(x2, self.x_zero_point, dtype=wt.dtype) if self.x_zero_point else x2.astype(wt.dtype)
        acc = np.matmul(xf, wt)
        if self.bias is not None:
            acc += self.bias
        if acc.dtype == np.float64:
            t = np.multiply(acc, self.eff, out=acc)
        else:  # C++ multiplies double(acc) by the double eff: widen exactly first
            t = np.multiply(acc, self.eff, dtype=np.float64)
        # clamp(round(t) + zo, lo, hi) == round(clamp(t, lo - zo, hi - zo)) + zo: rounding is monotonic and the
        # bounds are integers; prepare proved round(t) fits int32, so C++'s cast and "+ zo" do not overflow.
        clip_ufunc(t, self.act_min - self.zo, self.act_max - self.zo, out=t)
        t += np.copysign(HALF_DOWN_F64, t)  # round half away = trunc(t +- h), see quant.hybrid.HALF_DOWN
        if self.zo:
            np.trunc(t, out=t)
            np.add(t, self.zo, out=out2d, casting="unsafe")
        else:
            np.copyto(out2d, t, casting="unsafe")  # the float -> int cast truncates

    def _general(self, x2, inputs, out2d):
        """Every C++ integer detail: int32 wrap of the accumulator, x86 INT32_MIN for out-of-range casts."""
        if self.weights_t is not None:
            wt = self.weights_t.astype(np.float64, copy=False)
            bias = self.bias_int
        else:
            wt = inputs[WEIGHTS].T.astype(np.float64) - self.w_zero_point
            b = inputs[BIAS] if len(inputs) > BIAS else None
            bias = None if b is None else b.astype(np.int64)
        # float64 holds these sums exactly: |terms| <= 2^16 * 2^8 and depth far below 2^29.
        acc = np.matmul(x2.astype(np.float64) - self.x_zero_point, wt).astype(np.int64)
        if bias is not None:
            acc += bias
        if self.acc_bits == 32:
            acc = wrap32(acc)
        with np.errstate(all="ignore"):
            r = trunc_to_int32(round_away(acc.astype(np.float64) * self.eff))
        if self.clamp_before_zo:
            r = np.clip(r, self.act_min - self.zo, self.act_max - self.zo) + self.zo
        else:
            r = np.clip(wrap32(r + self.zo), self.act_min, self.act_max)
        out2d[...] = r


def _fold_quantized(x: TensorInfo, wz: np.ndarray, bias_int, zx: int, eff, zo: int, act_min: int, act_max: int):
    """FullyConnectedQuantizedFolded (fully_connected_folded.py) for constant weights and bias when its GEMM is
    exact, else None."""
    units, depth = wz.shape
    row = -zx * wz.sum(axis=1)
    if bias_int is not None:
        row = row + bias_int
    lo, hi = dtype_range(x.dtype)
    ct = _gemm_dtype(np.abs(wz).sum(axis=1) * max(-lo, hi) + np.abs(row))
    if ct is None or units == 0 or depth == 0 or x.size % depth:
        return None
    return FullyConnectedQuantizedFolded.build(x.size // depth, wz, row, ct, eff, zo, act_min - zo, act_max - zo)


# -------------------------------------------------------------------------------------------------------------
# int16 x int16 (MultiplyByQuantizedMultiplier, int64 overload)
# -------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class FullyConnectedInt16x16:
    weights_t: np.ndarray | None  # float64 (W - zw)^T, or None when the weights are not constant
    bias: np.ndarray | None  # int64
    x_zero_point: int
    w_zero_point: int
    multiplier: np.ndarray  # int64, (units,) or ()
    shift: np.ndarray
    zo: int
    act_min: int
    act_max: int
    depth: int
    units: int

    def __call__(self, inputs, outputs):
        out2d = outputs[0].reshape(-1, self.units)
        x2 = inputs[INPUT].reshape(-1, self.depth)
        wt = self.weights_t
        bias = self.bias
        if wt is None:
            wt = inputs[WEIGHTS].T.astype(np.float64) - self.w_zero_point
            b = inputs[BIAS] if len(inputs) > BIAS else None
            bias = None if b is None else b.astype(np.int64)
        acc = np.matmul(x2.astype(np.float64) - self.x_zero_point, wt).astype(np.int64)  # exact below 2^53
        if bias is not None:
            acc += bias
        r = multiply_by_quantized_multiplier_int64(acc, self.multiplier, self.shift)
        out2d[...] = np.clip(wrap32(r + self.zo), self.act_min, self.act_max)


# -------------------------------------------------------------------------------------------------------------
# Hybrid (dynamic range): float input, int8 weights
# -------------------------------------------------------------------------------------------------------------


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
            return FullyConnectedFloat(
                np.ascontiguousarray(w.data.T), None if bias is None else bias.data.copy(), depth, activation
            )
        return FullyConnectedFloatDynamicWeights(depth, activation)
    if hybrid:
        op = _prepare_hybrid(ctx, x, w, bias, out)
    elif x.dtype in (np.int8, np.uint8, np.int16):
        op = _prepare_quantized(ctx, x, w, bias, out)
    else:
        raise ctx.fail(f"FULLY_CONNECTED with input {x.type_name} and weights {w.type_name} is not supported")
    ctx.set_output_shape(0, shape)
    return FullyConnectedZeroDepth() if w.shape[1] == 0 else op


def _per_channel(ctx: OpContext, x: TensorInfo, w: TensorInfo) -> bool:
    """PrepareImpl's per-channel rules: more than one scale; int8/int16 input; quantized_dimension 0."""
    n = len(w.quantization.scale)
    if n <= 1:
        return False
    ctx.check(x.dtype in (np.int8, np.int16), f"per-channel weights need INT8 or INT16 input, got {x.type_name}")
    ctx.check(w.dtype in (np.int8, np.int16), f"per-channel weights must be signed, got {w.type_name}")
    ctx.check(
        w.quantization.quantized_dimension == 0,
        f"per-channel weights must be quantized along dimension 0, got {w.quantization.quantized_dimension}",
    )
    ctx.check(n == w.shape[0], f"{n} weight scales for {w.shape[0]} units")
    return True


def _prepare_quantized(ctx: OpContext, x: TensorInfo, w: TensorInfo, bias: TensorInfo | None, out: TensorInfo):
    combos = {
        (np.int8, np.int8, np.int8),
        (np.uint8, np.uint8, np.uint8),
        (np.uint8, np.uint8, np.int16),
        (np.int16, np.int8, np.int16),
        (np.int16, np.int16, np.int16),
    }
    key = (x.dtype.type, w.dtype.type, out.dtype.type)
    ctx.check(
        key in combos,
        f"FULLY_CONNECTED with input {x.type_name}, weights {w.type_name} and output "
        f"{out.type_name} is not supported (LiteRT reinterprets one of them)",
    )
    ctx.check(
        bool(x.quantization.scale) and bool(w.quantization.scale),
        "quantized FULLY_CONNECTED needs affine quantization on the input and the weights",
    )
    if w.type == _INT4:
        ctx.check(all(z == 0 for z in w.quantization.zero_point), "Unsupported filter quantization zero-point value.")
    per_channel = _per_channel(ctx, x, w)
    if not per_channel:
        _check_bias_scale(ctx, x, w, bias, out)
    int16_io = x.dtype == np.int16 and out.dtype == np.int16
    if int16_io:
        ctx.check(x.zero_point == 0, f"input zero point must be 0 for INT16, got {x.zero_point}")
        ctx.check(out.zero_point == 0, f"output zero point must be 0 for INT16, got {out.zero_point}")
    acc_bits = _check_bias_type(ctx, x, w, bias, int16_io)
    act_min, act_max = quantized_activation_range(ctx, out)
    units, depth = w.shape
    zx = int(x.zero_point)
    zw = 0 if per_channel else int(w.zero_point)
    zo = int(out.zero_point)
    w_scales = _scales(w) if per_channel else np.float32(w.scale)
    if w.dtype == np.int16:
        return _prepare_int16x16(ctx, x, w, bias, out, per_channel, w_scales, zx, zw, zo, act_min, act_max)

    # eff[c] = f64(s_in) * f64(s_w[c]) / f64(s_out), as the reference kernel computes it per output
    with np.errstate(all="ignore"):
        eff = np.float64(np.float32(x.scale)) * np.asarray(w_scales, np.float64) / np.float64(np.float32(out.scale))
    if not (w.is_constant and (bias is None or bias.is_constant)):
        return FullyConnectedQuantized(
            None,
            None,
            None,
            zx,
            zw,
            eff,
            zo,
            act_min,
            act_max,
            depth,
            units,
            acc_bits,
            out.dtype == np.int16 and x.dtype == np.uint8,
            False,
        )
    wz = w.data.astype(np.float64) - zw  # (units, depth)
    bias_int = None if bias is None else bias.data.astype(np.int64).reshape(-1)
    bound = _bound(wz, _max_abs_input(x.dtype, zx), bias_int)
    ct = _gemm_dtype(bound)
    exact = (
        ct is not None
        and bool(np.all(np.isfinite(eff)))
        and (acc_bits == 64 or float(bound.max(initial=0)) < 2**31)
        and float(np.max(bound * eff, initial=0)) < _I32_LIMIT
    )
    ct = ct or np.dtype(np.float64)
    if exact and not (out.dtype == np.int16 and x.dtype == np.uint8):
        folded = _fold_quantized(x, wz, bias_int, zx, eff, zo, act_min, act_max)
        if folded is not None:
            return folded
    return FullyConnectedQuantized(
        np.ascontiguousarray(wz.T, dtype=ct),
        None if bias_int is None else bias_int.astype(ct),
        bias_int,
        zx,
        zw,
        eff,
        zo,
        act_min,
        act_max,
        depth,
        units,
        acc_bits,
        out.dtype == np.int16 and x.dtype == np.uint8,
        exact,
    )


def _check_bias_type(ctx: OpContext, x: TensorInfo, w: TensorInfo, bias: TensorInfo | None, int16_io: bool) -> int:
    """Bias dtype rules; returns the C++ accumulator width (32 or 64) of the float-requant kernels."""
    if bias is not None:
        ctx.check(
            bias.dtype in (np.int32, np.int64),
            f"bias must be INT32 or INT64 for quantized FULLY_CONNECTED, got {bias.type_name} "
            "(fully_connected.cc: is_optional_bias_int)",
        )
    if not int16_io:
        if x.dtype == np.uint8:
            ctx.check(
                bias is not None or ctx.outputs[0].dtype != np.int16,
                "uint8 -> int16 FULLY_CONNECTED needs a bias (LiteRT's reference kernel reads it unconditionally)",
            )
        ctx.check(
            bias is None or bias.dtype == np.int32,
            f"bias must be INT32 with {x.type_name} input, got {bias and bias.type_name} "
            "(LiteRT would read it as int32)",
        )
        return 32
    qbt = ctx.options.quantized_bias_type
    if qbt != _FLOAT32:
        ctx.check(qbt in (_INT32, _INT64), f"quantized_bias_type must be INT32 or INT64, got {qbt}")
        ctx.check(
            bias is None or bias.type == qbt,
            f"bias type {bias and bias.type_name} does not match quantized_bias_type {qbt}",
        )
    if w.dtype == np.int16:  # int16 weights: int32 bias unless quantized_bias_type says INT64
        want = np.int64 if qbt == _INT64 else np.int32
    else:  # int8 weights: int64 bias unless quantized_bias_type says INT32
        want = np.int32 if qbt == _INT32 else np.int64
    ctx.check(
        bias is None or bias.dtype == want,
        f"bias of type {bias and bias.type_name} with INT16 input and {w.type_name} weights needs "
        f"quantized_bias_type {'INT32' if want == np.int32 else 'INT64'} (LiteRT would read it as "
        f"{np.dtype(want).name})",
    )
    return 32 if want == np.int32 else 64


def _prepare_int16x16(ctx, x, w, bias, out, per_channel, w_scales, zx, zw, zo, act_min, act_max):
    s_in, s_out = np.float64(np.float32(x.scale)), np.float64(np.float32(out.scale))
    if per_channel:
        real = s_in * np.asarray(w_scales, np.float64) / s_out
    else:  # GetQuantizedConvolutionMultipler: the product in float32
        real = np.float64(np.float32(x.scale) * np.float32(w.scale)) / s_out
    ctx.check(bool(np.all(np.isfinite(real))), "non-finite output multiplier")
    m, shift = quantize_multiplier_array(real)
    units, depth = w.shape
    bound = depth * float(_max_abs_input(x.dtype, zx)) * float(_max_abs_input(w.dtype, zw))
    if bias is not None and bias.is_constant:
        bound += float(np.abs(bias.data.astype(np.float64)).max(initial=0))
    elif bias is not None:
        bound += 2.0**63 if bias.dtype == np.int64 else 2.0**31
    ctx.check(
        multiply_by_quantized_multiplier_int64_ok(shift, bound),
        f"output multiplier {np.max(real)} out of range for the int64 MultiplyByQuantizedMultiplier",
    )
    if w.is_constant and (bias is None or bias.is_constant):
        wt = np.ascontiguousarray(w.data.T.astype(np.float64) - zw)
        b = None if bias is None else bias.data.astype(np.int64).reshape(-1)
    else:
        wt, b = None, None
    return FullyConnectedInt16x16(wt, b, zx, zw, m, shift, zo, act_min, act_max, depth, units)


def _prepare_hybrid(ctx: OpContext, x: TensorInfo, w: TensorInfo, bias: TensorInfo | None, out: TensorInfo):
    ctx.check(out.dtype == np.float32, f"hybrid FULLY_CONNECTED needs a FLOAT32 output, got {out.type_name}")
    ctx.check(
        bias is None or bias.dtype == np.float32,
        f"bias must be FLOAT32 for hybrid FULLY_CONNECTED, got {bias and bias.type_name}",
    )
    ctx.check(bool(w.quantization.scale), "hybrid FULLY_CONNECTED needs quantized weights")
    if w.type == _INT4:
        ctx.check(all(z == 0 for z in w.quantization.zero_point), "Unsupported filter quantization zero-point value.")
    units, depth = w.shape
    scales = _scales(w)
    if scales.size > 1:  # VerifyPerChannelQuantization; the scale of row `c` is scales[c]
        ctx.check(
            w.quantization.quantized_dimension == 0 and scales.size == units,
            f"{scales.size} weight scales along dimension {w.quantization.quantized_dimension} for {units} units",
        )
        w_scale = scales
    else:
        w_scale = np.float32(scales[0])
    asym = bool(ctx.options.asymmetric_quantize_inputs)
    b = None if bias is None else (bias.data.astype(np.float32).reshape(-1) if bias.is_constant else None)
    ctx.check(bias is None or b is not None, "hybrid FULLY_CONNECTED needs a constant bias")
    activation = apply_activation_to_vector(ctx.options.fused_activation_function)
    if not w.is_constant:
        return FullyConnectedHybrid(None, None, None, np.asarray(w_scale), b, asym, depth, units, activation)
    wi = hybrid_weights(w.data)
    row_sums = sse_reduction_sum_vector(wi) if asym else None
    # |dot| <= 128 * L1 (+ 256 * 128 * #(-128 weights) <= 2 * 128 * L1 with the SSE quirk); asymmetric inputs
    # also subtract |zp * row_sum| <= 128 * max(L1, |row_sum|).
    l1 = np.abs(wi, dtype=np.float64).sum(axis=1)
    bound = 256.0 * l1 + (128.0 * np.maximum(l1, np.abs(row_sums)) if asym else 0.0)
    ct = _gemm_dtype(bound) or np.dtype(np.float64)
    wt = np.ascontiguousarray(wi.T, dtype=ct)
    return FullyConnectedHybrid(
        wt,
        None if row_sums is None else row_sums.astype(ct),
        SseMinus128Fix.build(wi, ct),
        np.asarray(w_scale),
        b,
        asym,
        depth,
        units,
        activation,
    )
