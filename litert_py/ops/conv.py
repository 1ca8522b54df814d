"""CONV_2D and DEPTHWISE_CONV_2D.

Paths: float32 (input, filter and bias float32; constant or not). The quantized paths (uint8, int8
per-channel, int16x8) and the hybrid ones (float input, int8 filter) are not written yet: prepare rejects
them with "... is not supported yet". Each path is its own prepared op; the checks, the output geometry and
the data movement (`Im2Col`, `DepthwiseTaps`, which take a pad value) are shared so a quantized path only
adds its GEMM / multiply-accumulate epilogue.

Sources matched (ai-edge-litert 2.3.0 = LiteRT tflite/kernels):
- tflite/kernels/conv.cc Prepare: 2 or 3 inputs but the bias is required ("has_bias"), 4-D input and
  filter, positive dims, grouped conv (input channels a multiple of the filter's, output channels a
  multiple of the groups), bias of the input type with NumElements == output channels. LiteRT does not
  check a float32 input's filter type (a float16 filter is read as float32 bytes); we reject it.
- tflite/kernels/depthwise_conv.cc Prepare: bias optional (2 inputs) but never -1, filter [1, KH, KW, O],
  O a multiple of the input channels (the depth multiplier is O / C; the depth_multiplier option is
  ignored), strides and dilations in 1..INT16_MAX, bias 1-D of length O.
- tflite/kernels/padding.h ComputePaddingHeightWidthChecked (output size and leading padding; C integer
  division; an invalid geometry fails prepare).
- tflite/kernels/internal/reference/conv.h, depthwiseconv_float.h: per output, a float32 sum over the taps
  (filter_y, filter_x, then channel) skipping taps outside the input, plus bias, then
  ActivationFunctionWithMinMax. Float CalculateActivationRange (kernel_util.h) only knows RELU,
  RELU_N1_TO_1 and RELU6: every other code (NONE, TANH, SIGN_BIT) clamps to [-FLT_MAX, FLT_MAX], so
  fused TANH/SIGN_BIT are ignored and +-inf become +-FLT_MAX (NaN passes). We reproduce that.

Speed: weights are re-laid out at prepare. CONV_2D is one GEMM per invoke (a batched one over the groups
of a grouped conv) on an im2col matrix copied from a strided window view of the input, or of a padded
buffer allocated at prepare when the windows need padding; 1x1 stride-1 convs use the input itself as
the GEMM operand. For 1x64x64x32->32 3x3 SAME this measured 0.78 ms against 0.88 ms for a sum of nine
per-tap GEMMs (the copy of the KH*KW*C columns costs less than KH*KW accumulation passes over the
output). A matrix above IM2COL_BLOCK_BYTES is built and multiplied in blocks of output rows.
DEPTHWISE_CONV_2D loops over the KH*KW taps, each a whole-tensor multiply and add, the tap's weights
tiled over the output width so the inner loops run over W*C contiguous floats (2x faster than (C,)
weights; an einsum over sliding windows and a gather + reduce measured slower). It adds the taps in the
reference's order (bit-exact with BUILTIN_REF in the tests); padded taps add an exact 0 (so, unlike the
reference, which skips them, a padded tap times an infinite weight gives NaN).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schema.model import BuiltinOperator, Padding
from .common import clip_ufunc, float_activation_range
from .registry import OpContext, register

INPUT, FILTER, BIAS = 0, 1, 2
OUTPUT = 0
INT16_MAX = 32767
#: An im2col matrix larger than this is built and multiplied in blocks of output rows.
IM2COL_BLOCK_BYTES = 32 << 20
#: Depthwise weights are tiled over the output width (long inner loops) while the tiles stay below this.
DEPTHWISE_TILE_BYTES = 4 << 20

# -- shared by the conv and pool families ---------------------------------------------------------------


def out_size(padding: int, in_size: int, filter_size: int, stride: int, dilation: int = 1) -> int | None:
    """ComputeOutSizeChecked (padding.h): the output size, or None where LiteRT reports an error."""
    if padding not in (Padding.SAME, Padding.VALID) or in_size < 0 or filter_size <= 0 or stride <= 0 \
            or dilation <= 0:
        return None
    eff = (filter_size - 1) * dilation + 1
    num = in_size + stride - 1 if padding == Padding.SAME else in_size + stride - eff
    value = num // stride if num >= 0 else -(-num // stride)  # C division truncates toward zero
    return value if value >= 0 else None


def pad_before(in_size: int, filter_size: int, stride: int, dilation: int, out: int) -> int:
    """ComputePaddingWithOffset (padding.h): the padding before the first element (the odd one goes after)."""
    eff = (filter_size - 1) * dilation + 1
    return max((out - 1) * stride + eff - in_size, 0) // 2


@dataclass(frozen=True)
class Geometry:
    """Shapes, strides and padding of a 2-D windowed op over an NHWC input (conv, depthwise conv, pool)."""

    batches: int
    in_h: int
    in_w: int
    in_c: int
    out_h: int
    out_w: int
    out_c: int
    filter_h: int
    filter_w: int
    stride_h: int = 1
    stride_w: int = 1
    dilation_h: int = 1
    dilation_w: int = 1
    pad_top: int = 0
    pad_left: int = 0

    @property
    def out_shape(self) -> tuple[int, int, int, int]:
        return self.batches, self.out_h, self.out_w, self.out_c

    @property
    def pad_bottom(self) -> int:
        """Rows past the input the last window reaches (0 when every window fits)."""
        eff = (self.filter_h - 1) * self.dilation_h + 1
        return max((self.out_h - 1) * self.stride_h + eff - self.in_h - self.pad_top, 0)

    @property
    def pad_right(self) -> int:
        eff = (self.filter_w - 1) * self.dilation_w + 1
        return max((self.out_w - 1) * self.stride_w + eff - self.in_w - self.pad_left, 0)

    @property
    def padded(self) -> bool:
        return bool(self.pad_top or self.pad_left or self.pad_bottom or self.pad_right)

    @property
    def empty(self) -> bool:
        return 0 in self.out_shape


def window_geometry(ctx: OpContext, in_shape, out_c: int, filter_h: int, filter_w: int, checked: bool,
                    dilation: bool = True) -> Geometry:
    """The output size and padding of a windowed op (ComputePaddingHeightWidth[Checked], padding.h).

    ``checked`` (conv, depthwise conv): an invalid geometry (filter larger than a VALID input, ...) fails
    prepare. Unchecked (pooling): LiteRT then quietly uses an output size of 0 for the failing dims (the
    width is computed first: when it fails, both are 0) and no padding.
    """
    o = ctx.options
    n, h, w, c = in_shape
    dh, dw = (o.dilation_h_factor, o.dilation_w_factor) if dilation else (1, 1)
    sh, sw = o.stride_h, o.stride_w
    ow = out_size(o.padding, w, filter_w, sw, dw)
    oh = out_size(o.padding, h, filter_h, sh, dh) if ow is not None else None
    if oh is None:
        pad = Padding(o.padding).name if o.padding in (0, 1) else o.padding
        ctx.check(not checked, f"invalid window: input {h}x{w}, filter {filter_h}x{filter_w}, stride {sh}x{sw}, "
                               f"dilation {dh}x{dw}, padding {pad} (ComputePaddingHeightWidthChecked failed)")
        return Geometry(n, h, w, c, 0, ow or 0, out_c, filter_h, filter_w, max(sh, 1), max(sw, 1), dh, dw)
    return Geometry(n, h, w, c, oh, ow, out_c, filter_h, filter_w, sh, sw, dh, dw,
                    pad_before(h, filter_h, sh, dh, oh), pad_before(w, filter_w, sw, dw, ow))


def padded_buffer(geo: Geometry, channels: int, dtype, pad_value) -> tuple[np.ndarray, tuple]:
    """A (N, Hp, Wp, channels) buffer whose border holds ``pad_value``, and the index of the input inside it."""
    hp = geo.pad_top + geo.in_h + geo.pad_bottom
    wp = geo.pad_left + geo.in_w + geo.pad_right
    buf = np.full((geo.batches, hp, wp, channels), pad_value, dtype=dtype)
    return buf, (slice(None), slice(geo.pad_top, geo.pad_top + geo.in_h),
                 slice(geo.pad_left, geo.pad_left + geo.in_w))


class EmptyOutput:
    """The prepared op of a node whose output has no elements: nothing to compute."""

    def __call__(self, inputs, outputs):
        pass


EMPTY_OUTPUT = EmptyOutput()


# -- CONV_2D --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Im2Col:
    """Lays the receptive fields of an NHWC input out as the rows of a (G, M, KH*KW*Cg) GEMM operand.

    Calling it with the input yields ``(A, n0, n1, r0, r1)``: A, in a buffer allocated at prepare, holds the
    rows of output rows r0:r1 of batches n0:n1 (one block unless the matrix exceeds IM2COL_BLOCK_BYTES).
    Padding comes from a buffer allocated at prepare whose border holds the pad value (0.0 for float, the
    input zero point for quantized inputs); 1x1 stride-1 convs use the input itself as A.
    """

    geo: Geometry
    groups: int
    padded: np.ndarray | None  # (N, Hp, Wp, C) when the windows need padding
    interior: tuple | None  # where the input goes in `padded`
    window: np.ndarray | None  # (G, N, OH, OW, KH, KW, Cg) strided view of `padded`
    blocks: tuple  # ((n0, n1, r0, r1, A, A as (G, n, r, OW, KH, KW, Cg)), ...); A is None for 1x1 stride 1

    @staticmethod
    def build(geo: Geometry, groups: int, dtype, pad_value=0) -> Im2Col:
        g = geo
        cg = g.in_c // groups
        kg = g.filter_h * g.filter_w * cg
        if g.filter_h == g.filter_w == g.stride_h == g.stride_w == 1 and not g.padded:
            return Im2Col(geo, groups, None, None, None, ((0, g.batches, 0, g.out_h, None, None),))
        row_bytes = g.out_w * kg * groups * np.dtype(dtype).itemsize
        if g.batches * g.out_h * row_bytes <= IM2COL_BLOCK_BYTES:
            spans = [(0, g.batches, 0, g.out_h)]
        else:
            step = max(1, IM2COL_BLOCK_BYTES // row_bytes)
            spans = [(n, n + 1, r, min(r + step, g.out_h)) for n in range(g.batches) for r in range(0, g.out_h, step)]
        cols = np.empty((groups, max((n1 - n0) * (r1 - r0) for n0, n1, r0, r1 in spans) * g.out_w, kg), dtype)
        blocks = []
        for n0, n1, r0, r1 in spans:
            a = cols[:, : (n1 - n0) * (r1 - r0) * g.out_w]
            dest = np.reshape(a, (groups, n1 - n0, r1 - r0, g.out_w, g.filter_h, g.filter_w, cg), copy=False)
            blocks.append((n0, n1, r0, r1, a, dest))
        padded = interior = window = None
        if g.padded:
            padded, interior = padded_buffer(g, g.in_c, dtype, pad_value)
            window = Im2Col._window(g, groups, padded)
        return Im2Col(geo, groups, padded, interior, window, tuple(blocks))

    @staticmethod
    def _window(g: Geometry, groups: int, src: np.ndarray) -> np.ndarray:
        sn, sh, sw, sc = src.strides
        cg = g.in_c // groups
        shape = (groups, g.batches, g.out_h, g.out_w, g.filter_h, g.filter_w, cg)
        strides = (cg * sc, sn, sh * g.stride_h, sw * g.stride_w, sh * g.dilation_h, sw * g.dilation_w, sc)
        if src.flags.c_contiguous:  # the ndarray constructor is 5x cheaper than as_strided
            return np.ndarray(shape, src.dtype, src, 0, strides)
        return np.lib.stride_tricks.as_strided(src, shape, strides, writeable=False)

    def __call__(self, x: np.ndarray):
        g = self.geo
        n0, n1, r0, r1, a, dest = self.blocks[0]
        if a is None:  # 1x1 stride 1: the input is the (G, M, Cg) matrix
            yield x.reshape(-1, self.groups, g.in_c // self.groups).transpose(1, 0, 2), n0, n1, r0, r1
            return
        if self.padded is not None:
            self.padded[self.interior] = x
            window = self.window
        else:
            window = self._window(g, self.groups, x)
        for n0, n1, r0, r1, a, dest in self.blocks:
            np.copyto(dest, window[:, n0:n1, r0:r1])
            yield a, n0, n1, r0, r1


@dataclass(frozen=True, eq=False)
class ConvFloat:
    im2col: Im2Col
    weights: np.ndarray | None  # (G, KH*KW*Cg, Og) contiguous; None: the filter input, read at every invoke
    bias: np.ndarray | None  # constant bias tiled over the output width: (OW, O)
    dynamic_bias: bool  # the bias is not constant: added from the input at every invoke
    out_min: np.float32
    out_max: np.float32

    def __call__(self, inputs, outputs):
        out = outputs[OUTPUT]
        g = self.im2col.geo
        groups = self.im2col.groups
        w = self.weights
        if w is None:
            f = inputs[FILTER]
            w = f.reshape(groups, g.out_c // groups, -1).transpose(0, 2, 1)
        og = g.out_c // groups
        for a, n0, n1, r0, r1 in self.im2col(inputs[INPUT]):
            # The arena's output is contiguous: reshape is a view, the GEMM writes the output in place.
            np.matmul(a, w, out=out[n0:n1, r0:r1].reshape(-1, groups, og).transpose(1, 0, 2))
        if self.bias is not None:
            np.add(out, self.bias, out=out)
        elif self.dynamic_bias:
            np.add(out, inputs[BIAS].reshape(-1), out=out)
        clip_ufunc(out, self.out_min, self.out_max, out=out)


def _bias_tile(bias, out_w: int) -> np.ndarray | None:
    """A constant bias tiled over the output width: adding it to NHWC output runs over whole (W, C) rows."""
    if bias is None or bias.data is None:
        return None
    return np.ascontiguousarray(np.broadcast_to(bias.data.reshape(-1), (out_w, bias.size)), dtype=np.float32)


def _prepare_conv_float(ctx: OpContext, geo: Geometry, groups: int):
    f, bias = ctx.input(FILTER), ctx.optional_input(BIAS)
    weights = None
    if f.is_constant:  # OHWI -> (G, KH*KW*Cg, Og): each group's GEMM right operand, contiguous
        og = geo.out_c // groups
        weights = np.ascontiguousarray(f.data.reshape(groups, og, -1).transpose(0, 2, 1), dtype=np.float32)
    lo, hi = float_activation_range(ctx.options.fused_activation_function)
    return ConvFloat(Im2Col.build(geo, groups, np.float32), weights, _bias_tile(bias, geo.out_w),
                     bias is not None and not bias.is_constant, lo, hi)


_INPUT_TYPES = tuple(np.dtype(t) for t in (np.float32, np.uint8, np.int8, np.int16))


def _check_types(ctx: OpContext) -> None:
    x, out = ctx.input(INPUT), ctx.outputs[OUTPUT]
    ctx.check(x.dtype in _INPUT_TYPES, f"Type {x.type_name} is unsupported by op {ctx.op_name} "
                                       "(input must be FLOAT32, UINT8, INT8 or INT16).")
    ctx.check(out.type == x.type, f"output type {out.type_name} != input type {x.type_name}")


def _check_bias(ctx: OpContext, out_c: int, one_d: bool) -> None:
    x, bias = ctx.input(INPUT), ctx.input(BIAS)
    if x.dtype == np.float32:
        ctx.check(bias.type == x.type, f"bias type {bias.type_name} != input type {x.type_name}")
    if one_d:
        ctx.check(len(bias.shape) == 1, f"bias must be 1-D, got shape {list(bias.shape)}")
    ctx.check(bias.size == out_c, f"bias has {bias.size} elements, expected {out_c} (one per output channel)")


@register(BuiltinOperator.CONV_2D)
def prepare_conv_2d(ctx: OpContext):
    ctx.check_num((2, 3))
    x, f = ctx.input(INPUT), ctx.input(FILTER)
    ctx.check(len(x.shape) == 4, f"input must be 4-D (NHWC), got shape {list(x.shape)}")
    ctx.check(len(f.shape) == 4, f"filter must be 4-D (OHWI), got shape {list(f.shape)}")
    n, h, w, c = x.shape
    o, kh, kw, cg = f.shape
    ctx.check(h > 0 and w > 0 and c > 0, f"input height, width and channels must be positive: {list(x.shape)}")
    ctx.check(o > 0 and kh > 0 and kw > 0 and cg > 0, f"filter dims must be positive: {list(f.shape)}")
    ctx.check(c % cg == 0, f"input channels ({c}) must be a multiple of the filter's input channels ({cg})")
    groups = c // cg
    ctx.check(o % groups == 0, f"output channels ({o}) must be a multiple of the number of groups ({groups})")
    _check_types(ctx)
    opt = ctx.options
    ctx.check(opt.stride_h > 0 and opt.stride_w > 0, f"strides must be positive, got {opt.stride_h}x{opt.stride_w}")
    ctx.check(opt.dilation_h_factor > 0 and opt.dilation_w_factor > 0,
              f"dilations must be positive, got {opt.dilation_h_factor}x{opt.dilation_w_factor}")
    # conv.cc: "TODO(ahentz): At this point the optimized versions require 'bias'".
    ctx.check(len(ctx.inputs) == 3, "CONV_2D requires a bias input (LiteRT: has_bias was not true)")
    ctx.check(ctx.inputs[BIAS] is not None, "CONV_2D requires a bias: tensor at index 2 was optional but was expected")
    _check_bias(ctx, o, one_d=False)
    geo = window_geometry(ctx, x.shape, o, kh, kw, checked=True)
    ctx.set_output_shape(OUTPUT, geo.out_shape)
    if x.dtype == np.float32:
        if f.dtype == np.float32:
            return EMPTY_OUTPUT if geo.empty else _prepare_conv_float(ctx, geo, groups)
        if f.type_name in ("INT8", "UINT8", "INT4"):
            raise ctx.fail(f"CONV_2D with FLOAT32 input and {f.type_name} filter (hybrid) is not supported yet")
        # LiteRT does not check this and reads the filter's bytes as float32.
        raise ctx.fail(f"CONV_2D with FLOAT32 input needs a FLOAT32 filter, got a {f.type_name} filter")
    raise ctx.fail(f"Type {x.type_name} CONV_2D is not supported yet")


# -- DEPTHWISE_CONV_2D ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class DepthwiseTaps:
    """The KH*KW strided views of an NHWC input that a depthwise conv multiplies by one filter tap each.

    With a depth multiplier m > 1 or padding, the input is first copied into a buffer allocated at prepare
    (channel c repeated m times, so output channel c*m + j lines up with input channel c; border = pad
    value); otherwise the views are slices of the input itself.
    """

    padded: np.ndarray | None  # (N, Hp, Wp, C*m)
    fill: np.ndarray | None  # where the input goes in `padded`: (N, H, W, C) or (N, H, W, C, m) for m > 1
    taps: tuple  # per tap, the index of its view in the source (input or `padded`)
    views: tuple | None  # the tap views of `padded`

    @staticmethod
    def build(geo: Geometry, multiplier: int, dtype, pad_value=0) -> DepthwiseTaps:
        g = geo
        taps = tuple(
            (slice(None), slice(ky * g.dilation_h, ky * g.dilation_h + (g.out_h - 1) * g.stride_h + 1, g.stride_h),
             slice(kx * g.dilation_w, kx * g.dilation_w + (g.out_w - 1) * g.stride_w + 1, g.stride_w))
            for ky in range(g.filter_h) for kx in range(g.filter_w))
        if not g.padded and multiplier == 1:
            return DepthwiseTaps(None, None, taps, None)
        padded, interior = padded_buffer(g, g.in_c * multiplier, dtype, pad_value)
        fill = padded[interior]
        if multiplier > 1:
            fill = np.reshape(fill, (g.batches, g.in_h, g.in_w, g.in_c, multiplier), copy=False)
        return DepthwiseTaps(padded, fill, taps, tuple(padded[t] for t in taps))

    def __call__(self, x: np.ndarray):
        if self.padded is None:
            return [x[t] for t in self.taps]
        if self.fill.ndim == 5:
            self.fill[...] = x[..., None]
        else:
            self.fill[...] = x
        return self.views


@dataclass(frozen=True, eq=False)
class DepthwiseConvFloat:
    taps: DepthwiseTaps
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
        np.multiply(views[0], weights[0], out=out)
        tmp = self.scratch
        for k in range(1, len(views)):
            np.multiply(views[k], weights[k], out=tmp)
            np.add(out, tmp, out=out)
        if self.bias is not None:
            np.add(out, self.bias, out=out)
        elif self.dynamic_bias:
            np.add(out, inputs[BIAS], out=out)
        clip_ufunc(out, self.out_min, self.out_max, out=out)


def _prepare_depthwise_float(ctx: OpContext, geo: Geometry, multiplier: int):
    f, bias = ctx.input(FILTER), ctx.optional_input(BIAS)
    weights = None
    if f.is_constant:
        per_tap = f.data.reshape(geo.filter_h * geo.filter_w, geo.out_c).astype(np.float32)
        tiled = per_tap.nbytes * geo.out_w <= DEPTHWISE_TILE_BYTES
        weights = tuple(np.ascontiguousarray(np.broadcast_to(t, (geo.out_w, geo.out_c))) if tiled else t.copy()
                        for t in per_tap)
    lo, hi = float_activation_range(ctx.options.fused_activation_function)
    return DepthwiseConvFloat(DepthwiseTaps.build(geo, multiplier, np.float32), weights,
                              np.empty(geo.out_shape, np.float32), _bias_tile(bias, geo.out_w),
                              bias is not None and not bias.is_constant, lo, hi)


@register(BuiltinOperator.DEPTHWISE_CONV_2D)
def prepare_depthwise_conv_2d(ctx: OpContext):
    ctx.check_num((2, 3))
    x, f = ctx.input(INPUT), ctx.input(FILTER)
    ctx.check(len(x.shape) == 4, f"input must be 4-D (NHWC), got shape {list(x.shape)}")
    ctx.check(len(f.shape) == 4, f"filter must be 4-D ([1, KH, KW, O]), got shape {list(f.shape)}")
    opt = ctx.options
    ctx.check(0 < opt.dilation_h_factor <= INT16_MAX and 0 < opt.dilation_w_factor <= INT16_MAX,
              f"dilations must be in 1..{INT16_MAX}, got {opt.dilation_h_factor}x{opt.dilation_w_factor}")
    ctx.check(0 < opt.stride_h <= INT16_MAX and 0 < opt.stride_w <= INT16_MAX,
              f"strides must be in 1..{INT16_MAX}, got {opt.stride_h}x{opt.stride_w}")
    n, h, w, c = x.shape
    one, kh, kw, o = f.shape
    ctx.check(h > 0 and w > 0 and c > 0, f"input height, width and channels must be positive: {list(x.shape)}")
    ctx.check(kh > 0 and kw > 0 and o > 0, f"filter dims must be positive: {list(f.shape)}")
    _check_types(ctx)
    hybrid = x.dtype == np.float32 and f.dtype == np.int8
    ctx.check(hybrid or f.type == x.type or x.dtype == np.int16,
              f"filter type {f.type_name} does not match input type {x.type_name}")
    ctx.check(one == 1, f"filter must be [1, KH, KW, O], got shape {list(f.shape)}")
    ctx.check(o % c == 0, f"output channels ({o}) must be a multiple of the input channels ({c})")
    ctx.check(ctx.optional_input(BIAS) is not None or len(ctx.inputs) == 2,
              "DEPTHWISE_CONV_2D: tensor at index 2 (bias) was optional but was expected")
    if len(ctx.inputs) == 3:
        _check_bias(ctx, o, one_d=True)
    geo = window_geometry(ctx, x.shape, o, kh, kw, checked=True)
    ctx.set_output_shape(OUTPUT, geo.out_shape)
    if x.dtype == np.float32 and not hybrid:
        return EMPTY_OUTPUT if geo.empty else _prepare_depthwise_float(ctx, geo, o // c)
    if hybrid:
        raise ctx.fail("DEPTHWISE_CONV_2D with float input and INT8 filter (hybrid) is not supported yet")
    raise ctx.fail(f"Type {x.type_name} DEPTHWISE_CONV_2D is not supported yet")
