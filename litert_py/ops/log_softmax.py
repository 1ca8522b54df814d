"""LOG_SOFTMAX: float32 (reference/log_softmax.h) and quantized uint8 / int8 (LogSoftmaxPrepare in
activations.cc, reference/log_softmax.h, reference/integer_ops/log_softmax.h), bit-exact with the reference
kernels. Shares the gemmlowp helpers and checks of activations.py.

- LOG_SOFTMAX float32 (reference/log_softmax.h): ``x - max - log(sum(exp(x - max)))`` per last-axis row, float32.
  uint8 / int8 (LogSoftmaxPrepare + reference/log_softmax.h, reference/integer_ops/log_softmax.h, bit-exact): the
  output has scale 16/256 and zero point 255 / 127; ``PreprocessLogSoftmaxScalingExp(beta 1, s_in, 5)`` (Q5.26
  differences, reverse scaling divisor, diff_min); per row the Q12.19 sum of gemmlowp exps, its log by
  ``log_x_for_x_greater_than_or_equal_to_1<5>`` (common.h), then ``RDBPOT(diff_q5 - log_sum, 22) + type_max``
  above the adjusted diff_min, type_min below. Rank 0 is refused (LiteRT reads past the tensor).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..quant import (
    INT32_MAX,
    INT32_MIN,
    dtype_range,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    wrap32,
)
from ..quant import rounding_divide_by_pot as rdbpot
from ..quant import saturating_rounding_doubling_high_mul as srdhm
from ..quant.gemmlowp import clz32 as _clz32
from ..quant.gemmlowp import (
    exp_on_negative_values,
    one_over_one_plus_x_for_x_in_0_1,
    rdbpot_int,
    sat_pot,
    srdhm_int,
    wrap32_int,
)
from ..quant.gemmlowp import sat_shl_param as _sat_shl
from ..schema.dtypes import TensorType
from ..schema.model import BuiltinOperator
from .common import FEW_ROWS, Noop, check_equal, check_same_type, qparams, quantized_multiplier
from .registry import OpContext, PreparedOp, TensorInfo, register

INPUT, OUTPUT = 0, 0
_F32, _U8, _I8 = TensorType.FLOAT32, TensorType.UINT8, TensorType.INT8


# -- LOG_SOFTMAX ----------------------------------------------------------------------------------
# Float: reference/log_softmax.h per row ``x - max - log(sum(exp(x - max)))`` in float32. Quantized (uint8,
# int8): LogSoftmaxPrepare (PreprocessLogSoftmaxScalingExp with beta 1, Q5.26 differences, reverse scaling,
# diff_min) + reference/log_softmax.h (uint8) / reference/integer_ops/log_softmax.h (int8), the same arithmetic:
# the output is 255 / 127 (s_out 16/256) at each row's maximum.
_LOG_SQRT_HALF, _LOG_SQRT_SQRT_HALF, _LOG_2 = 1518500250, 1805811301, 1488522236
_ALPHA_N, _ALPHA_D, _ALPHA_I, _ALPHA_F = 117049297, 127690142, 1057819769, 638450708


def _sat32(v):
    return np.clip(v, INT32_MIN, INT32_MAX)


def log_x_ge_1(x, input_integer_bits: int):
    """common.h ``log_x_for_x_greater_than_or_equal_to_1_impl<5, input_integer_bits>`` on int64 arrays of
    positive int32 raw values; Q5.26 raw results."""
    shifted_quarter = rdbpot(np.int64(536870912), 6)
    hp1 = _clz32(x)
    r_a_tmp = np.left_shift(x, hp1 - 1)
    r_a_raw = sat_pot(srdhm(r_a_tmp, _LOG_SQRT_HALF), 1)
    z_a_adj = _sat32(sat_pot(input_integer_bits - hp1, 25) + shifted_quarter)
    z_b = srdhm(x, _LOG_SQRT_HALF)
    z_b_headroom = _clz32(z_b) - 1
    r_b_raw = _sat_shl(x, z_b_headroom)
    z_b_adj = _sat32(sat_pot(input_integer_bits - z_b_headroom, 25) - shifted_quarter)
    r = np.minimum(r_a_raw, r_b_raw)
    z_adj = np.maximum(z_a_adj, z_b_adj)
    s = r + _LOG_SQRT_SQRT_HALF
    p = np.where(s >= 0, (s + 1) // 2, -((-(s - 1)) // 2))  # RoundingHalfSum: (sum + sign) / 2, truncated
    q = wrap32(r - _LOG_SQRT_SQRT_HALF)
    q = wrap32(q + q)
    common_sq = srdhm(q, q)
    num = wrap32(srdhm(q, r) + srdhm(srdhm(q, common_sq), _ALPHA_N))
    inner = wrap32(wrap32(_ALPHA_I + q) + srdhm(_ALPHA_D, common_sq))
    denom_minus_one = wrap32(srdhm(p, inner) + srdhm(_ALPHA_F, q))
    recip = one_over_one_plus_x_for_x_in_0_1(denom_minus_one)
    num_scaled = rdbpot(num, 6)
    return sat_pot(wrap32(srdhm(z_adj, _LOG_2) + srdhm(num_scaled, recip)), 1)


def _sat_shl_int(x: int, e: int) -> int:
    return max(INT32_MIN, min(INT32_MAX, x << e))


def log_x_ge_1_int(x: int, input_integer_bits: int) -> int:
    """``log_x_ge_1`` for one Python int (same arithmetic; ~20x faster than the array version on one value)."""
    quarter = 8388608  # Rescale<6>(1/4)
    hp1 = 32 - x.bit_length()
    r_a_raw = _sat_shl_int(srdhm_int(x << (hp1 - 1), _LOG_SQRT_HALF), 1)
    z_a_adj = max(INT32_MIN, min(INT32_MAX, ((input_integer_bits - hp1) << 25) + quarter))
    z_b = srdhm_int(x, _LOG_SQRT_HALF)
    z_b_headroom = 32 - z_b.bit_length() - 1
    r_b_raw = _sat_shl_int(x, z_b_headroom)
    z_b_adj = max(INT32_MIN, min(INT32_MAX, ((input_integer_bits - z_b_headroom) << 25) - quarter))
    r, z_adj = min(r_a_raw, r_b_raw), max(z_a_adj, z_b_adj)
    t = r + _LOG_SQRT_SQRT_HALF
    p = (t + 1) // 2 if t >= 0 else -((1 - t) // 2)
    q = wrap32_int(r - _LOG_SQRT_SQRT_HALF)
    q = wrap32_int(q + q)
    common_sq = srdhm_int(q, q)
    num = wrap32_int(srdhm_int(q, r) + srdhm_int(srdhm_int(q, common_sq), _ALPHA_N))
    inner = wrap32_int(wrap32_int(_ALPHA_I + q) + srdhm_int(_ALPHA_D, common_sq))
    recip = one_over_one_plus_x_for_x_in_0_1(wrap32_int(srdhm_int(p, inner) + srdhm_int(_ALPHA_F, q)))
    return _sat_shl_int(wrap32_int(srdhm_int(z_adj, _LOG_2) + srdhm_int(rdbpot_int(num, 6), recip)), 1)


@dataclass(frozen=True, eq=False)
class LogSoftmaxFloat:
    """reference/log_softmax.h float: ``x - max - log(sum(exp(x - max)))`` over the last axis, float32."""

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        m = x.max(axis=-1, keepdims=True)
        np.subtract(x, m, out=out)
        s = np.exp(out).sum(axis=-1, keepdims=True, dtype=np.float32)
        np.subtract(out, np.log(s), out=out)


@dataclass(frozen=True, eq=False)
class LogSoftmaxQuantized:
    """The 8-bit reference kernel with every per-element quantity a function of ``d = max(row) - x`` tabulated:
    ``q5[d]`` (the Q5.26 difference), ``exp12[d]`` (its exp in Q12.19, 0 below diff_min). Per row: the Q5.26
    log of the summed exps, the adjusted diff_min, then ``RDBPOT(q5[d] - log_sum, 22) + type_max``."""

    q5: np.ndarray  # int64[256]
    exp12: np.ndarray  # int64[256]
    diff_min: int
    reverse: tuple[int, int]
    out_min: int
    out_max: int

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        d = np.subtract(x.max(axis=-1, keepdims=True), x, dtype=np.intp)
        total = self.exp12.take(d).sum(axis=-1, keepdims=True)  # at most 2^12 maximal rows fit (the C++ wraps)
        if total.size <= FEW_ROWS:
            m, shift = self.reverse
            logs = [log_x_ge_1_int(wrap32_int(t), 12) for t in total.ravel().tolist()]
            adj = [max(self.diff_min - 1, rdbpot_int(srdhm_int(wrap32_int(v + INT32_MIN), m), -shift)) for v in logs]
            log_sum = np.array(logs, np.int64).reshape(total.shape)
            adjusted = np.array(adj, np.int64).reshape(total.shape)
        else:
            log_sum = log_x_ge_1(wrap32(total), 12)
            adjusted = np.maximum(
                self.diff_min - 1, multiply_by_quantized_multiplier(wrap32(log_sum + INT32_MIN), *self.reverse)
            )
        q5 = self.q5.take(d)
        v = np.clip(rdbpot(wrap32(q5 - log_sum), 22) + self.out_max, self.out_min, self.out_max)
        out[...] = np.where(-d > adjusted, v, self.out_min)


def _prepare_log_softmax_quantized(ctx: OpContext, x: TensorInfo, y: TensorInfo):
    s_in, _ = qparams(ctx, x)
    s_out, zo = qparams(ctx, y)
    out_min, out_max = dtype_range(x.dtype)
    check_equal(ctx, zo, out_max, "output->params.zero_point")
    ctx.check(float(s_out) == 16.0 / 256, f"output->params.scale != 16.0 / 256 ({float(s_out)} != 0.0625)")
    real = min(float(s_in) * float(1 << 26), (1 << 31) - 1.0)
    ctx.check(real > 1.0, f"input_scale * 2^26 = {real} must be > 1 (QuantizeMultiplierGreaterThanOne; LiteRT aborts)")
    m, left_shift = quantized_multiplier(ctx, real, "input")
    reverse_real = float(1 << (31 - left_shift)) / m
    ctx.check(
        0.0 < reverse_real < 1.0,
        f"the reverse scaling divisor {reverse_real} must be in (0, 1) "
        "(QuantizeMultiplierSmallerThanOneExp; LiteRT aborts)",
    )
    reverse = quantize_multiplier(reverse_real)
    diff_min = -math.floor(31.0 * (1 << 26) / (1 << left_shift))
    diff = -np.arange(256, dtype=np.int64)
    valid = diff >= diff_min
    q5 = np.where(valid, multiply_by_quantized_multiplier(np.where(valid, diff, 0), m, left_shift), 0)
    exp12 = np.where(valid, rdbpot(exp_on_negative_values(q5, 5), 12), 0)
    return LogSoftmaxQuantized(q5.astype(np.int64), exp12.astype(np.int64), diff_min, reverse, out_min, out_max)


@register(BuiltinOperator.LOG_SOFTMAX)
def prepare_log_softmax(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1, 1)
    x, y = ctx.input(INPUT), ctx.outputs[OUTPUT]
    ctx.check(x.type in (_F32, _U8, _I8), f"Only float32, uint8 and int8 are supported currently, got {x.type_name}.")
    check_same_type(ctx, x, y)
    # rank 0: LiteRT reads a dimension that does not exist (garbage out); an empty last axis: it segfaults
    ctx.check(len(x.shape) >= 1, "LOG_SOFTMAX of a rank 0 tensor is not supported")
    ctx.check(
        x.type != _F32 or x.shape[-1] > 0 or 0 in x.shape[:-1],
        f"LOG_SOFTMAX float32 over an empty last dimension {list(x.shape)} (LiteRT reads outside the input: "
        "it segfaults or returns garbage)",
    )
    ctx.set_output_shape(OUTPUT, x.shape)
    prepared = LogSoftmaxFloat() if x.type == _F32 else _prepare_log_softmax_quantized(ctx, x, y)
    return Noop() if x.size == 0 else prepared
