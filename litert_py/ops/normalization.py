"""L2_NORMALIZATION (float32, uint8, int8) and LOCAL_RESPONSE_NORMALIZATION (float32), over the last axis.

- L2_NORMALIZATION float32 (reference/l2normalization.h): per row ``x / max(sqrt(sum(x*x)), 1e-6)`` in float32.
  Quantized: the output must have scale 1/128 and zero point 128 (uint8) / 0 (int8); per row the int32 sum of
  squared differences ``acc`` gives ``(M, shift) = GetInvSqrtQuantizedMultiplierExp(acc, -1)`` and the output is
  ``clamp(128 + RDBPOT(SRDHM(128 * diff, M), -shift), 0, 255)`` (uint8, reference/l2normalization.h) or
  ``clamp(MBQM(diff, M, shift + 7), -128, 127)`` (int8, reference/integer_ops/l2normalization.h). Rank >= 1 and no
  fused activation (l2norm.cc Prepare).
- LOCAL_RESPONSE_NORMALIZATION float32: rank 4; TensorFlow's definition (tf.nn.local_response_normalization,
  tensorflow/core/kernels/lrn_op.cc): ``out[c] = x[c] / (bias + alpha * sum(x[k]^2, k in [c - r, c + r]))^beta``,
  the window *including* ``c + r``. LiteRT's default kernels (optimized_ops::LocalResponseNormalization, run by
  BUILTIN_WITHOUT_DEFAULT_DELEGATES and AUTO; XNNPACK does not claim LRN) compute exactly that; LiteRT's
  reference kernel (reference_ops::LocalResponseNormalization, BUILTIN_REF) sums ``[c - r, c + r)``, so with
  radius 0 it returns the input unchanged: a bug in the reference kernel, which litert_py does not follow
  (docs/litert-differences.md). The float32 arithmetic is the optimized kernel's, bit for bit where it can be:
  ``p = alpha * x^2``, a running window sum along the channels in the kernel's order (add ``p[c + r]``, store
  ``bias + sum``, subtract ``p[c - r]``; one vectorized step per channel over all rows), then
  ``x * (1 / d)`` for beta 1, ``x * (1 / sqrt(d))`` for beta 0.5 (exact), else ``x * d^-beta`` in float32 (Eigen's
  float pow: a few ulp from powf). A negative radius is refused (the default kernels abort on it). LiteRT
  2.3.0 has no integer LRN: its Prepare requires a float32 output, so int8 and uint8 models are refused.

Sources matched: tflite/kernels/l2norm.cc, local_response_norm.cc; internal/reference/l2normalization.h,
reference/integer_ops/l2normalization.h, reference/reference_ops.h (LocalResponseNormalization),
internal/common.h (GetInvSqrtQuantizedMultiplierExp).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..quant import (
    multiply_by_quantized_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    wrap32,
)
from ..quant.gemmlowp import get_inv_sqrt_quantized_multiplier_exp, inv_sqrt_multiplier_exp
from ..schema.dtypes import TensorType
from ..schema.model import BuiltinOperator
from .common import FEW_ROWS, Noop
from .registry import OpContext, PreparedOp, register

INPUT, OUTPUT = 0, 0
_F32, _U8, _I8 = TensorType.FLOAT32, TensorType.UINT8, TensorType.INT8
_EPSILON = np.float32(1e-6)
srdhm = saturating_rounding_doubling_high_mul
rdbpot = rounding_divide_by_pot


@dataclass(frozen=True, eq=False)
class L2NormFloat:
    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        norm = np.sqrt(np.einsum("...i,...i->...", x, x)[..., None])
        np.maximum(norm, _EPSILON, out=norm)
        np.divide(x, norm, out=out)


@dataclass(frozen=True, eq=False)
class L2NormQuantized:
    zero_point: int
    uint8: bool

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        diff = x.astype(np.int64) - self.zero_point
        acc = wrap32(np.einsum("...i,...i->...", diff, diff)[..., None])
        if acc.size <= FEW_ROWS:  # Python ints: numpy's per-call overhead dominates the vectorized form
            pairs = [get_inv_sqrt_quantized_multiplier_exp(a) for a in acc.ravel().tolist()]
            m = np.array([p[0] for p in pairs], np.int64).reshape(acc.shape)
            shift = np.array([p[1] for p in pairs], np.int64).reshape(acc.shape)
            if acc.size == 1:
                m, shift = pairs[0]
        else:
            m, shift = inv_sqrt_multiplier_exp(acc)
        if self.uint8:  # MultiplyByQuantizedMultiplierSmallerThanOneExp(128 * diff, M, shift), shift <= 0
            v = rdbpot(srdhm(128 * diff, m), -shift) + 128
            np.clip(v, 0, 255, out=v)
        else:
            v = multiply_by_quantized_multiplier(diff, m, shift + 7)
            np.clip(v, -128, 127, out=v)
        out[...] = v


@dataclass(frozen=True, eq=False)
class LocalResponseNormFloat:
    """optimized_ops::LocalResponseNormalization (TensorFlow's window [c - radius, c + radius])."""

    radius: int
    bias: np.float32
    alpha: np.float32
    beta: np.float32

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        depth, r = x.shape[-1], self.radius
        rows = x.reshape(-1, depth)
        # channel-major, zero-padded by r on both sides: one contiguous row per running-sum step
        padded = np.zeros((depth + 2 * r, rows.shape[0]), np.float32)
        with np.errstate(all="ignore"):
            np.multiply(np.square(rows).T, self.alpha, out=padded[r : r + depth])
            acc = np.zeros(rows.shape[0], np.float32)
            for i in range(2 * r):  # the kernel's sequential float32 sum of the first 2r entries
                acc += padded[i]
            denom = np.empty((depth, rows.shape[0]), np.float32)
            for i in range(depth):
                acc += padded[i + 2 * r]
                np.add(acc, self.bias, out=denom[i])
                acc -= padded[i]
            if self.beta == 1:
                np.reciprocal(denom, out=denom)
            elif self.beta == 0.5:
                np.sqrt(denom, out=denom)
                np.reciprocal(denom, out=denom)
            else:
                np.power(denom, -self.beta, out=denom)
            np.multiply(rows, denom.T, out=out.reshape(-1, depth))


@register(BuiltinOperator.L2_NORMALIZATION)
def prepare_l2_normalization(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1, 1)
    x, y = ctx.input(INPUT), ctx.outputs[OUTPUT]
    ctx.check(
        y.type in (_F32, _U8, _I8),
        "output->type == kTfLiteFloat32 || output->type == kTfLiteUInt8 || output->type == kTfLiteInt8 was not true.",
    )
    ctx.check(x.type == y.type, f"{x.type_name} != {y.type_name}")
    ctx.check(int(ctx.options.fused_activation_function) == 0, "params->activation != kTfLiteActNone")
    ctx.check(len(x.shape) >= 1, "NumDimensions(input) >= 1 was not true.")
    ctx.set_output_shape(OUTPUT, x.shape)
    if x.type == _F32:
        prepared = L2NormFloat()
    else:
        ctx.check(len(y.quantization.scale) >= 1 and len(x.quantization.scale) >= 1, "missing quantization")
        ctx.check(float(np.float32(y.scale)) == 1.0 / 128, f"output->params.scale != 1/128 ({y.scale})")
        want = 128 if y.type == _U8 else 0
        ctx.check(int(y.zero_point) == want, f"output->params.zero_point != {want} ({y.zero_point})")
        prepared = L2NormQuantized(int(x.zero_point), y.type == _U8)
    return Noop() if x.size == 0 else prepared


@register(BuiltinOperator.LOCAL_RESPONSE_NORMALIZATION)
def prepare_local_response_normalization(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1, 1)
    x, y = ctx.input(INPUT), ctx.outputs[OUTPUT]
    ctx.check(len(x.shape) == 4, f"NumDimensions(input) != 4 ({len(x.shape)} != 4)")
    ctx.check(y.type == _F32, f"Output type is {y.type_name}, requires float.")
    ctx.check(x.type == y.type, f"{x.type_name} != {y.type_name}")
    ctx.set_output_shape(OUTPUT, x.shape)
    o = ctx.options
    ctx.check(int(o.radius) >= 0, f"radius {o.radius} < 0 (LiteRT's default kernels abort on a negative radius)")
    prepared = LocalResponseNormFloat(int(o.radius), *(np.float32(v) for v in (o.bias, o.alpha, o.beta)))
    return Noop() if x.size == 0 else prepared
