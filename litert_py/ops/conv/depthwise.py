"""DEPTHWISE_CONV_2D: float32, quantized (int8 per-channel, uint8, int16x8) and hybrid. The paths, the sources
matched and the measured speed are described with CONV_2D in conv.py; the shared helpers are in conv_common.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...schema.model import BuiltinOperator
from ..common import aligned_empty, aligned_full, clip_ufunc, float_activation_range, reshape_view
from ..registry import OpContext, register
from .common import (
    BIAS,
    DEPTHWISE_TILE_BYTES,
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
    padded_buffer,
    quantized_weights,
    tile_over_width,
    window_geometry,
)
from .depthwise_einsum import build_einsum
from .depthwise_quantized import prepare_depthwise_hybrid, prepare_depthwise_quantized
from .phases import phase_axis

# -- DEPTHWISE_CONV_2D ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class DepthwiseTaps:
    """The KH*KW strided views of an NHWC input that a depthwise conv multiplies by one filter tap each.

    With a depth multiplier m > 1, padding or ``copy`` (a type conversion), the input is first copied into a
    buffer allocated at prepare (channel c repeated m times, so output channel c*m + j lines up with input
    channel c; border = pad value); otherwise the views are slices of the input itself.
    """

    padded: np.ndarray | None  # (N, Hp, Wp, C*m)
    fill: np.ndarray | None  # where the input goes in `padded`: (N, H, W, C) or (N, H, W, C, m) for m > 1
    taps: tuple  # per tap, the index of its view in the source (input or `padded`)
    views: tuple | None  # the tap views of `padded`
    window: np.ndarray | None = None  # all the tap views of `padded` as one (KH, KW, N, OH, OW, C*m) view

    @staticmethod
    def build(geo: Geometry, multiplier: int, dtype, pad_value=0, copy: bool = False) -> DepthwiseTaps:
        g = geo
        taps = tuple(
            (
                slice(None),
                slice(ky * g.dilation_h, ky * g.dilation_h + (g.out_h - 1) * g.stride_h + 1, g.stride_h),
                slice(kx * g.dilation_w, kx * g.dilation_w + (g.out_w - 1) * g.stride_w + 1, g.stride_w),
            )
            for ky in range(g.filter_h)
            for kx in range(g.filter_w)
        )
        if not g.padded and multiplier == 1 and not copy:
            return DepthwiseTaps(None, None, taps, None)
        padded, interior = padded_buffer(g, g.in_c * multiplier, dtype, pad_value)
        fill = padded[interior]
        if multiplier > 1:
            fill = reshape_view(fill, (g.batches, g.in_h, g.in_w, g.in_c, multiplier))
        sn, sh, sw, sc = padded.strides
        window = np.ndarray(
            (g.filter_h, g.filter_w, g.batches, g.out_h, g.out_w, g.in_c * multiplier),
            padded.dtype,
            padded,
            0,
            (sh * g.dilation_h, sw * g.dilation_w, sn, sh * g.stride_h, sw * g.stride_w, sc),
        )
        return DepthwiseTaps(padded, fill, taps, tuple(padded[t] for t in taps), window)

    def __call__(self, x: np.ndarray):
        if self.padded is None:
            return [x[t] for t in self.taps]
        if self.fill.ndim == 5:
            self.fill[...] = x[..., None]
        else:
            self.fill[...] = x
        return self.views

    @staticmethod
    def accumulate(views, weights, out: np.ndarray, tmp: np.ndarray) -> None:
        """out = sum over the taps of view * weight, from the first tap in the reference's order."""
        np.multiply(views[0], weights[0], out=out)
        for k in range(1, len(views)):
            np.multiply(views[k], weights[k], out=tmp)
            np.add(out, tmp, out=out)

    def exact_sum(self, views, weights, out: np.ndarray, tmp: np.ndarray) -> None:
        """out = sum over the taps of view * weight for integer-valued sums that are exact in any order.
        ``weights``: per tap (OW, O) rows, or all stacked as (KH, KW, 1, 1, OW, O) with ``tmp`` of shape
        (KH, KW, N, OH, OW, O): then one multiply over the whole window view and one reduction, 2x faster
        than the tap loop on small layers (17 ufunc calls for 3x3 become 2)."""
        if isinstance(weights, np.ndarray) and weights.ndim == 6:
            np.multiply(self.window, weights, out=tmp)
            np.add.reduce(tmp.reshape((-1,) + out.shape), axis=0, out=out)
        else:
            self.accumulate(views, weights, out, tmp)


@dataclass(frozen=True, eq=False)
class DepthwisePhaseTaps:
    """DepthwiseTaps for strided windows (stride_w > 1, depth multiplier 1): the zero-padded input is split
    at every invoke into stride_h * stride_w phase planes (plane (py, px) holds the padded rows py, py + sh,
    ... and columns px, px + sw, ...), so every tap view is a unit-stride slice of one plane: the tap loops
    read rows of OW*C contiguous values instead of runs of C values every stride_w pixels (BlazeFace's
    stride-2 3x3 layers: 0.8-0.87x). The same values per tap, summed by the caller in the same order: results
    bit-identical to DepthwiseTaps."""

    fills: tuple  # ((plane region, input index), ...): where each phase's input elements go
    views: tuple  # per tap in (filter_y, filter_x) order, its (N, OH, OW, C) view of a plane

    @staticmethod
    def build(geo: Geometry, dtype) -> DepthwisePhaseTaps:
        g = geo
        hp, wp = g.pad_top + g.in_h + g.pad_bottom, g.pad_left + g.in_w + g.pad_right
        qh, rows = phase_axis(g.in_h, g.pad_top, hp, g.stride_h)
        qw, cols = phase_axis(g.in_w, g.pad_left, wp, g.stride_w)
        planes = aligned_full((g.stride_h, g.stride_w, g.batches, qh, qw, g.in_c), 0, dtype)  # border = 0.0
        fills = tuple(
            (planes[py, px][:, r[0], c[0]], (slice(None), r[1], c[1]))
            for py, r in enumerate(rows)
            if r is not None
            for px, c in enumerate(cols)
            if c is not None
        )
        views = []
        for ky in range(g.filter_h):
            py, oy = divmod(ky * g.dilation_h, g.stride_h)[::-1]
            for kx in range(g.filter_w):
                px, ox = divmod(kx * g.dilation_w, g.stride_w)[::-1]
                views.append(planes[py, px][:, oy : oy + g.out_h, ox : ox + g.out_w])
        return DepthwisePhaseTaps(fills, tuple(views))

    def __call__(self, x: np.ndarray):
        for dest, index in self.fills:
            np.copyto(dest, x[index])
        return self.views


def _tap_weights(f: np.ndarray, geo: Geometry, dtype, filter_zp: int = 0) -> tuple:
    """Per tap, the (w - w_zp) of the O output channels tiled over the output width (or (O,) when too big)."""
    per_tap = f.reshape(geo.filter_h * geo.filter_w, geo.out_c)
    per_tap = quantized_weights(per_tap, filter_zp, dtype) if filter_zp or f.dtype != dtype else per_tap
    tiled = per_tap.nbytes * geo.out_w <= DEPTHWISE_TILE_BYTES
    return tuple(tile_over_width(t, geo.out_w, dtype) if tiled else np.array(t, dtype) for t in per_tap)


#: Exact (integer) depthwise sums use one multiply over all taps and a reduction (DepthwiseTaps.exact_sum)
#: while KH*KW * output elements stay below this; the tap loop streams better above it.
DEPTHWISE_STACKED_ELEMENTS = 1 << 18


def _exact_tap_weights(f: np.ndarray, geo: Geometry, dtype, filter_zp: int = 0):
    """(w - w_zp) for DepthwiseTaps.exact_sum and its scratch: stacked (KH, KW, 1, 1, OW, O) on small layers,
    else per tap as _tap_weights."""
    size = geo.filter_h * geo.filter_w * int(np.prod(geo.out_shape))
    if size > DEPTHWISE_STACKED_ELEMENTS:
        return _tap_weights(f, geo, dtype, filter_zp), np.empty(geo.out_shape, dtype)
    w = quantized_weights(f.reshape(geo.filter_h, geo.filter_w, 1, 1, 1, geo.out_c), filter_zp, dtype)
    w = np.ascontiguousarray(np.broadcast_to(w, (geo.filter_h, geo.filter_w, 1, 1, geo.out_w, geo.out_c)))
    return w, np.empty((geo.filter_h, geo.filter_w) + geo.out_shape, dtype)


@dataclass(frozen=True, eq=False)
class DepthwiseConvFloat:
    taps: DepthwiseTaps | DepthwisePhaseTaps
    weights: tuple | None  # per tap: (OW, C*m) tiled, or (C*m,); None: the filter input, read at every invoke
    scratch: np.ndarray  # (N, OH, OW, C*m): one tap's products
    bias: np.ndarray | None  # (OW, C*m)
    dynamic_bias: bool
    out_min: np.float32
    out_max: np.float32

    def __call__(self, inputs, outputs):
        out = outputs[OUTPUT]
        views = self.taps(inputs[INPUT])
        weights = self.weights
        if weights is None:
            weights = inputs[FILTER].reshape(len(views), -1)
        # The reference's order: sum over (filter_y, filter_x) from the first tap, then + bias.
        DepthwiseTaps.accumulate(views, weights, out, self.scratch)
        if self.bias is not None:
            np.add(out, self.bias, out=out)
        elif self.dynamic_bias:
            np.add(out, inputs[BIAS], out=out)
        clip_ufunc(out, self.out_min, self.out_max, out=out)


#: A float depthwise output above 2x this many bytes is computed in blocks of output rows of about this size,
#: so that the tap loop's operands (out, one tap's products, the tap views) stay in the L2 cache: 128x128x16
#: 3x3 (1 MB) 1.8 -> 1.35 ms; outputs of 256-384 KB gain nothing.
DEPTHWISE_BLOCK_BYTES = 256 << 10


@dataclass(frozen=True, eq=False)
class DepthwiseConvFloatBlocked:
    """DepthwiseConvFloat (constant weights, constant or no bias) over blocks of output rows: for each block
    the whole tap loop, the bias and the clamp, while its operands are in cache. Per output element the same
    operations in the same order (first tap, + each next tap, + bias, clamp): bit-identical to
    DepthwiseConvFloat."""

    taps: DepthwiseTaps | DepthwisePhaseTaps
    weights: tuple  # per tap: (OW, C*m) tiled, or (C*m,)
    blocks: tuple  # (batch slice, output row slice) per block
    scratch: np.ndarray  # (N, OH, OW, C*m): one tap's products
    bias: np.ndarray | None  # (OW, C*m)
    out_min: np.float32
    out_max: np.float32

    def __call__(self, inputs, outputs):
        out, weights, bias, lo, hi = outputs[OUTPUT], self.weights, self.bias, self.out_min, self.out_max
        views = self.taps(inputs[INPUT])
        for block in self.blocks:
            dst = out[block]
            DepthwiseTaps.accumulate([v[block] for v in views], weights, dst, self.scratch[block])
            if bias is not None:
                np.add(dst, bias, out=dst)
            clip_ufunc(dst, lo, hi, out=dst)


def _row_blocks(geo: Geometry) -> tuple | None:
    """(batch slice, output row slice) blocks of about DEPTHWISE_BLOCK_BYTES float32 values, or None when the
    output is at most two blocks."""
    row_bytes = geo.out_w * geo.out_c * 4
    if geo.batches * geo.out_h * row_bytes <= 2 * DEPTHWISE_BLOCK_BYTES:
        return None
    step = max(1, DEPTHWISE_BLOCK_BYTES // row_bytes)
    return tuple(
        (slice(n, n + 1), slice(r, min(r + step, geo.out_h)))
        for n in range(geo.batches)
        for r in range(0, geo.out_h, step)
    )


def _prepare_depthwise_float(ctx: OpContext, geo: Geometry, multiplier: int):
    f, bias = ctx.input(FILTER), ctx.optional_input(BIAS)
    lo, hi = float_activation_range(ctx.options.fused_activation_function)
    if f.is_constant and (bias is None or bias.is_constant):
        fast = build_einsum(geo, multiplier, f.data, None if bias is None else bias.data, lo, hi)
        if fast is not None:
            return fast
    weights = _tap_weights(f.data, geo, np.float32) if f.is_constant else None
    if multiplier == 1 and geo.stride_w > 1:
        taps = DepthwisePhaseTaps.build(geo, np.float32)
    else:
        taps = DepthwiseTaps.build(geo, multiplier, np.float32)
    blocks = _row_blocks(geo)
    if blocks is not None and weights is not None and (bias is None or bias.is_constant):
        return DepthwiseConvFloatBlocked(
            taps, weights, blocks, aligned_empty(geo.out_shape, np.float32), bias_tile(bias, geo.out_w), lo, hi
        )
    return DepthwiseConvFloat(
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
        return prepare_depthwise_hybrid(ctx, geo, o // c)
    ctx.check(
        f.dtype == np.float32 and f.type != INT4,
        f"DEPTHWISE_CONV_2D with FLOAT32 input and {f.type_name} filter is not supported (LiteRT fails at eval)",
    )
    return EMPTY_OUTPUT if geo.empty else _prepare_depthwise_float(ctx, geo, o // c)
