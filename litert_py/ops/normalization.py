"""L2_NORMALIZATION (float32, uint8, int8) and LOCAL_RESPONSE_NORMALIZATION (float32), over the last axis.

- L2_NORMALIZATION float32 (reference/l2normalization.h): per row ``x / max(sqrt(sum(x*x)), 1e-6)`` in float32.
  Quantized: the output must have scale 1/128 and zero point 128 (uint8) / 0 (int8); per row the int32 sum of
  squared differences ``acc`` gives ``(M, shift) = GetInvSqrtQuantizedMultiplierExp(acc, -1)`` and the output is
  ``clamp(128 + RDBPOT(SRDHM(128 * diff, M), -shift), 0, 255)`` (uint8, reference/l2normalization.h) or
  ``clamp(MBQM(diff, M, shift + 7), -128, 127)`` (int8, reference/integer_ops/l2normalization.h). Rank >= 1 and no
  fused activation (l2norm.cc Prepare).
- LOCAL_RESPONSE_NORMALIZATION float32 (reference_ops::LocalResponseNormalization): rank 4; for channel ``c``
  ``accum = sum(x[k]^2, k in [max(0, c - radius), min(depth, c + radius)))`` (float32, summed in channel order;
  the window ends BEFORE ``c + radius``, so radius 0 sums nothing; one vectorized add per window offset),
  ``out = x * f32(pow(bias + alpha * accum, -beta))``, the pow in double (the params struct holds doubles).
  LiteRT 2.3.0 has no integer path.

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
    radius: int
    bias: float  # the float32 options widened to double
    alpha: float
    beta: float

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        depth = x.shape[-1]
        with np.errstate(all="ignore"):
            sq = np.square(x)
            accum = np.zeros(x.shape, np.float32)
            # one vectorized add per window offset, in increasing channel order: the C++ float32 sum, bit for bit
            for k in range(max(-self.radius, 1 - depth), min(self.radius, depth)):
                c0, c1 = max(0, -k), min(depth, depth - k)
                accum[..., c0:c1] += sq[..., c0 + k:c1 + k]
            # LocalResponseNormalizationParams holds bias, alpha, beta as double: the multiplier is computed in double
            mult = accum.astype(np.float64)
            mult *= self.alpha
            mult += self.bias
            np.power(mult, -self.beta, out=mult)
            np.multiply(x, mult.astype(np.float32), out=out)  # ``const float multiplier``


@register(BuiltinOperator.L2_NORMALIZATION)
def prepare_l2_normalization(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1, 1)
    x, y = ctx.input(INPUT), ctx.outputs[OUTPUT]
    ctx.check(y.type in (_F32, _U8, _I8), "output->type == kTfLiteFloat32 || output->type == kTfLiteUInt8 || "
                                          "output->type == kTfLiteInt8 was not true.")
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
    prepared = LocalResponseNormFloat(int(o.radius), *(float(np.float32(v)) for v in (o.bias, o.alpha, o.beta)))
    return Noop() if x.size == 0 else prepared
