"""DEPTHWISE_CONV_2D: float32, quantized (int8 per-channel, uint8, int16x8) and hybrid. The paths, the sources
matched and the measured speed are described with CONV_2D in conv2d.py; the shared helpers are in common.py,
the taps in taps.py, the quantized and hybrid paths in depthwise_quantized.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...schema.model import BuiltinOperator
from ..activation_fusion import ClampLast, float_bounds
from ..bound_plan import BoundCalls, BoundCalls2, BoundCalls3, contiguous_source
from ..common import aligned_empty, clip_ufunc
from ..registry import OpContext, register
from .common import (
    BIAS,
    EMPTY_OUTPUT,
    FILTER,
    INPUT,
    INT4,
    INT16_MAX,
    OUTPUT,
    Geometry,
    bias_tile,
    check_bias,
    check_types,
    window_geometry,
)
from .conv_hybrid_bound import prepare_depthwise_hybrid_bound
from .depthwise_einsum import build_einsum
from .depthwise_quantized import prepare_depthwise_quantized
from .taps import DepthwisePhaseTaps, DepthwiseTaps, tap_weights

# -- DEPTHWISE_CONV_2D ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class DepthwiseConvFloat(BoundCalls3, ClampLast):
    """Float DEPTHWISE_CONV_2D with its filter or bias given as an input: a bound plan over the input, the filter
    and the bias (ops/bound_plan.BoundCalls3; `DepthwiseConvFloatNoBias` without a bias) reading the tensors
    through views made at bind: the fill, the taps' calls (taps.DepthwiseTaps.tap_calls), the bias, the clamp."""

    taps: DepthwiseTaps | DepthwisePhaseTaps
    weights: tuple | None  # per tap: (OW, C*m) tiled, or (C*m,); None: the filter input (a view made at bind)
    scratch: np.ndarray  # (N, OH, OW, C*m): one tap's products
    bias: np.ndarray | None  # (OW, C*m)
    dynamic_bias: bool
    out_min: np.ndarray  # 0-d float32 (activation_fusion.float_bounds)
    out_max: np.ndarray

    def bound_calls(self, x: np.ndarray, f: np.ndarray, *bias_out) -> tuple:
        """The op's numpy calls on ``x``, the filter ``f``, the bias (when the op has one) and the output: the
        reference's order, the sum over (filter_y, filter_x) from the first tap, then + bias, then the clamp."""
        *b, out = bias_out
        calls = list(self.taps.fill_calls(x))
        views = self.taps.tap_views(x)
        weights = self.weights
        if weights is None:  # (a view of the filter, or of a C-contiguous copy refreshed first)
            weights = contiguous_source(f, calls).reshape(len(views), -1)
        calls += DepthwiseTaps.tap_calls(views, weights, out, self.scratch)
        if self.bias is not None:
            calls.append((np.add, (out, self.bias, out), {}))
        elif self.dynamic_bias:
            calls.append((np.add, (out, b[0], out), {}))
        calls.append((clip_ufunc, (out, self.out_min, self.out_max, out), {}))
        return tuple(calls)


@dataclass(frozen=True, eq=False)
class DepthwiseConvFloatNoBias(BoundCalls2, DepthwiseConvFloat):
    """DepthwiseConvFloat without a bias: its plan bound over the input and the filter."""


#: A float depthwise output above 2x this many bytes is computed in blocks of output rows of about this size,
#: so that the tap loop's operands (out, one tap's products, the tap views) stay in the L2 cache: 128x128x16
#: 3x3 (1 MB) 1.8 -> 1.35 ms; outputs of 256-384 KB gain nothing.
DEPTHWISE_BLOCK_BYTES = 256 << 10


@dataclass(frozen=True, eq=False)
class DepthwiseConvFloatBlocked(BoundCalls, ClampLast):
    """Float DEPTHWISE_CONV_2D with constant weights (and constant or no bias) over blocks of output rows (one
    block for outputs up to 2x DEPTHWISE_BLOCK_BYTES): for each block the whole tap loop, the bias and the clamp,
    while its operands are in cache. Per output element the same operations in the same order as
    DepthwiseConvFloat (first tap, + each next tap, + bias, clamp): bit-identical. A bound plan
    (ops/bound_plan.BoundCalls)."""

    taps: DepthwiseTaps | DepthwisePhaseTaps
    weights: tuple  # per tap: (OW, C*m) tiled, or (C*m,)
    blocks: tuple  # (batch slice, output row slice) per block
    scratch: np.ndarray  # (N, OH, OW, C*m): one tap's products
    bias: np.ndarray | None  # (OW, C*m)
    out_min: np.ndarray  # 0-d float32 (activation_fusion.float_bounds)
    out_max: np.ndarray

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The op's numpy calls on ``x`` and ``out``: the fill of the padded buffer or phase planes, then per
        block the taps' calls (taps.DepthwiseTaps.tap_calls), the bias and the clamp."""
        calls = list(self.taps.fill_calls(x))
        views = self.taps.tap_views(x)
        for block in self.blocks:
            dst = out[block]
            calls += DepthwiseTaps.tap_calls([v[block] for v in views], self.weights, dst, self.scratch[block])
            if self.bias is not None:
                calls.append((np.add, (dst, self.bias, dst), {}))
            calls.append((clip_ufunc, (dst, self.out_min, self.out_max, dst), {}))
        return tuple(calls)


def _row_blocks(geo: Geometry) -> tuple:
    """(batch slice, output row slice) blocks of about DEPTHWISE_BLOCK_BYTES float32 values, or one block (the
    whole output) when the output is at most two blocks."""
    row_bytes = geo.out_w * geo.out_c * 4
    if geo.batches * geo.out_h * row_bytes <= 2 * DEPTHWISE_BLOCK_BYTES:
        return ((slice(None), slice(None)),)
    step = max(1, DEPTHWISE_BLOCK_BYTES // row_bytes)
    return tuple(
        (slice(n, n + 1), slice(r, min(r + step, geo.out_h)))
        for n in range(geo.batches)
        for r in range(0, geo.out_h, step)
    )


def _prepare_depthwise_float(ctx: OpContext, geo: Geometry, multiplier: int):
    f, bias = ctx.input(FILTER), ctx.optional_input(BIAS)
    lo, hi = float_bounds(ctx.options.fused_activation_function)
    if f.is_constant and (bias is None or bias.is_constant):
        fast = build_einsum(geo, multiplier, f.data, None if bias is None else bias.data, lo, hi)
        if fast is not None:
            return fast
    weights = tap_weights(f.data, geo, np.float32) if f.is_constant else None
    if multiplier == 1 and geo.stride_w > 1:
        taps = DepthwisePhaseTaps.build(geo, np.float32)
    else:
        taps = DepthwiseTaps.build(geo, multiplier, np.float32)
    if weights is not None and (bias is None or bias.is_constant):
        scratch = aligned_empty(geo.out_shape, np.float32)
        return DepthwiseConvFloatBlocked(taps, weights, _row_blocks(geo), scratch, bias_tile(bias, geo.out_w), lo, hi)
    kind = DepthwiseConvFloatNoBias if bias is None else DepthwiseConvFloat
    return kind(
        taps,
        weights,
        aligned_empty(geo.out_shape, np.float32),
        bias_tile(bias, geo.out_w),
        bias is not None and not bias.is_constant,
        lo,
        hi,
    )


@register(BuiltinOperator.DEPTHWISE_CONV_2D)
def prepare_depthwise_conv_2d(ctx: OpContext):
    ctx.check_num((2, 3))
    x, f = ctx.input(INPUT), ctx.input(FILTER)
    ctx.check(len(x.shape) == 4, f"input must be 4-D (NHWC), got shape {list(x.shape)}")
    ctx.check(len(f.shape) == 4, f"filter must be 4-D ([1, KH, KW, O]), got shape {list(f.shape)}")
    opt = ctx.options
    ctx.check(
        0 < opt.dilation_h_factor <= INT16_MAX and 0 < opt.dilation_w_factor <= INT16_MAX,
        f"dilations must be in 1..{INT16_MAX}, got {opt.dilation_h_factor}x{opt.dilation_w_factor}",
    )
    ctx.check(
        0 < opt.stride_h <= INT16_MAX and 0 < opt.stride_w <= INT16_MAX,
        f"strides must be in 1..{INT16_MAX}, got {opt.stride_h}x{opt.stride_w}",
    )
    n, h, w, c = x.shape
    one, kh, kw, o = f.shape
    ctx.check(h > 0 and w > 0 and c > 0, f"input height, width and channels must be positive: {list(x.shape)}")
    ctx.check(kh > 0 and kw > 0 and o > 0, f"filter dims must be positive: {list(f.shape)}")
    check_types(ctx)
    hybrid = x.dtype == np.float32 and f.type_name == "INT8"
    ctx.check(
        hybrid or f.type == x.type or x.dtype == np.int16 or f.type == INT4,
        f"filter type {f.type_name} does not match input type {x.type_name}",
    )
    if x.dtype == np.int16:
        ctx.check(x.zero_point == 0, f"int16 input zero point must be 0, got {x.zero_point}")
        ctx.check(
            ctx.outputs[OUTPUT].zero_point == 0,
            f"int16 output zero point must be 0, got {ctx.outputs[OUTPUT].zero_point}",
        )
    ctx.check(one == 1, f"filter must be [1, KH, KW, O], got shape {list(f.shape)}")
    ctx.check(o % c == 0, f"output channels ({o}) must be a multiple of the input channels ({c})")
    ctx.check(
        ctx.optional_input(BIAS) is not None or len(ctx.inputs) == 2,
        "DEPTHWISE_CONV_2D: tensor at index 2 (bias) was optional but was expected",
    )
    if len(ctx.inputs) == 3:
        check_bias(ctx, o, one_d=True, int16_bias=("INT64",))
    geo = window_geometry(ctx, x.shape, o, kh, kw, checked=True)
    ctx.set_output_shape(OUTPUT, geo.out_shape)
    if x.dtype != np.float32:
        return prepare_depthwise_quantized(ctx, geo, o // c)
    if hybrid:
        return prepare_depthwise_hybrid_bound(ctx, geo, o // c)
    ctx.check(
        f.dtype == np.float32 and f.type != INT4,
        f"DEPTHWISE_CONV_2D with FLOAT32 input and {f.type_name} filter is not supported (LiteRT fails at eval)",
    )
    return EMPTY_OUTPUT if geo.empty else _prepare_depthwise_float(ctx, geo, o // c)
