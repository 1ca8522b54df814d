"""CONV_2D and DEPTHWISE_CONV_2D.

Paths, each its own prepared op (the checks, the output geometry and the data movement `Im2Col` /
`DepthwiseTaps` are shared):
- float32 (input, filter and bias float32; constant or not): `ConvFloat`, `DepthwiseConvFloat`.
- quantized, bit-exact with BUILTIN_REF: `ConvQuantized`, `DepthwiseConvQuantized` for
  int8 (int8 or int4 filter, per-channel or per-tensor scales, int32 bias), uint8 (legacy per-tensor, filter
  zero point, int32 bias) and int16x8 (int16 activations with zero point 0, int8/int4 filter, int64 bias ->
  the int64 MultiplyByQuantizedMultiplier, or int32 bias with quantized_bias_type INT32 -> the int32 one).
  Grouped CONV_2D included, every fused activation (clamp range from CalculateActivationRangeQuantized).
- hybrid (float32 input, constant int8/int4 filter, float32 bias): `ConvHybrid`, `DepthwiseConvHybrid`.

Sources matched (ai-edge-litert 2.3.0 = LiteRT tflite/kernels; where 2.3.0 differs from the LiteRT source
snapshot we follow what 2.3.0 does, found by running it):
- conv.cc Prepare: 2 or 3 inputs but the bias is required ("has_bias"), 4-D input and filter, positive
  dims, grouped conv (input channels a multiple of the filter's, output channels a multiple of the groups),
  bias of the input type (int32 for uint8/int8, int32/int64 for int16) with zero point 0 and NumElements ==
  output channels; int8/int16: the filter has affine quantization with all zero points 0; int16: input and
  output zero points 0, quantized_bias_type INT32/INT64 must match the bias type. LiteRT does not check a
  float32 input's filter type (a float16 filter is read as float32 bytes); we reject it.
- kernel_util.cc PopulateConvolutionQuantizationParams: input/filter affine quantization, per-channel
  scales only for int8/int16 inputs with int8/int4 filters (count == output channels == the filter's
  quantized dimension); multiplier per channel QuantizeMultiplier(f64(s_in) * f64(s_w[c]) / f64(s_out)),
  uint8: f64(f32(s_in * s_w)) / f64(s_out) after the bias-scale check |s_in*s_w - s_bias| / s_out <= 0.02.
- depthwise_conv.cc Prepare: bias optional (2 inputs) but never -1, filter [1, KH, KW, O], O a multiple of
  the input channels (the depth multiplier is O / C; 2.3.0 ignores the depth_multiplier option on every
  path), strides and dilations in 1..INT16_MAX, bias 1-D of length O (int64 for int16). The int8 kernel
  ignores the filter zero point (weights_offset = 0); uint8 uses it.
- padding.h ComputePaddingHeightWidthChecked (output size and leading padding; an invalid geometry fails).
- reference/conv.h, reference/integer_ops/conv.h (ConvPerChannel int8 and 16x8),
  reference/depthwiseconv_float.h, reference/depthwiseconv_uint8.h, reference/integer_ops/depthwise_conv.h:
  per output the sum over the in-image taps of (w - w_zp) * (x - x_zp) plus the bias, then
  MultiplyByQuantizedMultiplier (double rounding, common.cc), + output zero point, clamp.
  Float: a float32 sum over the taps (filter_y, filter_x, then channel) skipping taps outside the input,
  plus bias, then ActivationFunctionWithMinMax. Float CalculateActivationRange (kernel_util.h) only knows
  RELU, RELU_N1_TO_1 and RELU6: every other code clamps to [-FLT_MAX, FLT_MAX] (+-inf -> +-FLT_MAX).
- Hybrid, conv.cc EvalHybrid (one filter scale, groups 1): per-batch *symmetric* input quantization
  (tensor_utils SymmetricQuantizeFloats, which in the x86 wheel is the NEON version of neon_tensor_utils.cc
  through NEON_2_SSE: fully_connected.batch_quantize_floats, shared with FULLY_CONNECTED; ai-edge-litert 2.3.0
  agrees with it, not with the portable version, e.g. the asymmetric scale comes from the float32 difference
  max - min), scale f32(sf * s_w), optimized_ops.h HybridConv:
  out = f32(f32(dot) * scale) + bias, clamp. EvalHybridPerChannel (distinct per-channel scales, or a grouped
  conv): per-batch *asymmetric* quantization (NEON AsymmetricQuantizeFloats), reference/conv.h
  HybridConvPerChannel: out = f32(f32(f32(acc) * s_w[c]) * sf) + bias. Depthwise (always per-channel,
  asymmetric), reference/integer_ops/depthwise_conv.h DepthwiseConvHybridPerChannel:
  out = f32(acc) * f32(s_w[c] * sf) + bias. It reads one scale per output channel, past the end of a single
  scale (which LiteRT accepts on quantized dimension 0): litert_py refuses that unless there is one channel.
  The integer dot products are exact; the float results follow the reference's operation order.

Speed: weights are re-laid out at prepare. CONV_2D is one GEMM per invoke (a batched one over the groups
of a grouped conv) on an im2col matrix copied from a strided window view of the input, or of a padded
buffer allocated at prepare when the windows need padding; float 1x1 stride-1 convs use the input itself.
A matrix above IM2COL_BLOCK_BYTES is built and multiplied in blocks of output rows. The integer paths run
the same GEMM in BLAS on exact integers: the im2col matrix holds the raw input values (padding = the input
zero point, so a padded tap adds (w - w_zp) * (x_zp - x_zp) = 0 as the reference's skipped tap does) and
the constant part -x_zp * sum(w - w_zp) + bias is one per-channel float64 offset made at prepare. The GEMM
runs in float32 when max|x| * max_c sum|w - w_zp| <= 2**24 (every partial sum is then an exact float32
integer, whatever BLAS's summation order), else in float64 (exact below 2**53). The requantization epilogue
(`litert_py.quant.Requantizer`) is litert_py.quant.requantize's fused float64 form with its per-channel
constants made at prepare and its comparison turned into a copysign (6 passes, no masked ufunc), proven
exact for the static accumulator bound or checked against the data; else the library's own paths (int64, or
int32 accumulators that could overflow wrapped first as the C++ int32 sum does). DEPTHWISE_CONV_2D sums the
KH*KW taps, each a whole-tensor multiply (the tap's weights tiled over the output width so the inner loops run
over W*C contiguous values): the float path adds them one by one in the reference's order (bit-exact with
BUILTIN_REF in the tests; padded taps add an exact 0, so, unlike the reference, which skips them, a padded tap
times an infinite weight gives NaN); the exact integer paths multiply the whole (KH, KW, N, OH, OW, O) window
view once and reduce it on small layers (2 ufunc calls instead of 17 for 3x3), tap by tap on large ones.
Measured (tools/bench_conv.py, 1 thread, a busy 2-core box): int8 conv 1x64x64x32->32 3x3 0.1-0.3x LiteRT's
reference kernel time, 1x1 conv 0.2-0.55x, depthwise 3x3 0.2-0.6x; the conv/pool nodes of the silabs int8
corpus models 0.15x (image_example1) and 0.5-0.8x (keyword_spotting_mobilenetv2, small layers where ~10 us of
numpy calls per node dominate).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import PrepareError
from ..quant import (
    Requantizer,
    batch_quantize_floats,
    calculate_activation_range_quantized,
    dtype_range,
    multiply_by_quantized_multiplier_int64_ok,
    quantize_multiplier_array,
)
from ..schema import dtypes
from ..schema.model import BuiltinOperator, Padding
from .common import FLT_MAX, clip_ufunc, float_activation_range
from .registry import OpContext, TensorInfo, register

__all__ = ["FLT_MAX"]

INPUT, FILTER, BIAS = 0, 1, 2
OUTPUT = 0
INT16_MAX = 32767
#: An im2col matrix larger than this is built and multiplied in blocks of output rows.
IM2COL_BLOCK_BYTES = 32 << 20
#: Depthwise weights are tiled over the output width (long inner loops) while the tiles stay below this.
DEPTHWISE_TILE_BYTES = 4 << 20
#: Integers up to these magnitudes are exact in float32 / float64 (so are all sums staying below them).
FLOAT32_EXACT = 2**24
_INT4 = dtypes.TensorType.INT4
_TYPE = {name: num for num, name in dtypes.TENSOR_TYPE_NAMES.items()}

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


# -- shared by the quantized and hybrid paths -----------------------------------------------------------


def _exact_dtype(bound: float):
    """The cheaper float type in which integer sums of magnitude <= bound are exact."""
    return np.float32 if bound <= FLOAT32_EXACT else np.float64


def _tile(values: np.ndarray, out_w: int, dtype) -> np.ndarray:
    """A per-channel vector tiled over the output width: NHWC ops on it run over whole (W, C) rows."""
    return np.ascontiguousarray(np.broadcast_to(np.asarray(values).reshape(-1), (out_w, values.size)), dtype=dtype)


def _requantize(ctx: OpContext, multiplier, shift, zero_point: int, lo: int, hi: int, out_shape,
                acc_bound: float, int64_acc: bool = False) -> Requantizer:
    """The epilogue for accumulators |acc| <= acc_bound of an NHWC output of ``out_shape``: the per-channel
    values tiled over the output width, so that it runs over whole (W, C) rows."""
    if int64_acc:
        # int64 products that overflow wrap as in C++; only a shift outside [-31, 14] is undefined there
        ctx.check(multiply_by_quantized_multiplier_int64_ok(shift, 0.0),
                  f"int16 output multiplier too large for the int64 MultiplyByQuantizedMultiplier (shift "
                  f"{int(np.max(shift))} > 14: s_in*s_w/s_out >= 2^14)")
    out_w = out_shape[2]
    return Requantizer.build(np.tile(multiplier, out_w), np.tile(shift, out_w), zero_point, lo, hi, acc_bound,
                             out_shape, int64_acc=int64_acc)


def _quantized(t: TensorInfo) -> bool:
    """TFLite's kTfLiteAffineQuantization: the tensor has at least one scale."""
    return t.quantization.is_quantized


def _quantization_params(ctx: OpContext, x: TensorInfo, f: TensorInfo, bias: TensorInfo | None, out_c: int,
                         legacy_uint8: bool):
    """PopulateConvolutionQuantizationParams (kernel_util.cc): per-channel (M, shift) and the clamp range."""
    ctx.check(_quantized(x), "input must have affine quantization (LiteRT: input->quantization.type != "
                             "kTfLiteAffineQuantization)")
    ctx.check(_quantized(f), "filter must have affine quantization (LiteRT: filter->quantization.type != "
                             "kTfLiteAffineQuantization)")
    scales = np.asarray(f.quantization.scale, np.float32)
    ctx.check(scales.size in (1, out_c), f"filter has {scales.size} scales, expected 1 or {out_c} (output channels)")
    if scales.size > 1:
        ctx.check(x.dtype in (np.int8, np.int16), f"per-channel filter quantization needs an INT8 or INT16 input, "
                                                  f"got {x.type_name}")
        ctx.check(f.dtype == np.int8,
                  f"per-channel filter quantization needs an INT8 or INT4 filter, got {f.type_name}")
        qd = f.quantization.quantized_dimension
        ctx.check(0 <= qd < len(f.shape) and f.shape[qd] == out_c,
                  f"filter quantized_dimension {qd} does not have the {out_c} output channels (shape {list(f.shape)})")
    out = ctx.outputs[OUTPUT]
    s_in, s_out = np.float32(x.scale), np.float32(out.scale)
    with np.errstate(all="ignore"):
        if legacy_uint8:
            # GetQuantizedConvolutionMultipler: the bias scale must be within 2% (of an output step) of
            # s_in * s_w, in double (when there is a bias); the multiplier itself uses the float32 product.
            s_w = scales[0]
            if bias is not None:
                diff = abs(np.float64(s_in) * np.float64(s_w) - np.float64(bias.scale))
                ctx.check(bool(diff / np.float64(s_out) <= 0.02),
                          f"bias scale {bias.scale} differs from input scale * filter scale "
                          f"{float(s_in) * float(s_w)} by more than 2% of the output scale {float(s_out)}")
            product = np.float64(s_in * s_w)
            ctx.check(bool(product >= 0), "input scale * filter scale must not be negative")
            real = np.full(out_c, product / np.float64(s_out))
        else:
            real = np.float64(s_in) * np.broadcast_to(scales.astype(np.float64), (out_c,)) / np.float64(s_out)
    try:
        m, shift = quantize_multiplier_array(real)
    except ValueError:
        raise ctx.fail(f"output multiplier s_in*s_w/s_out is not finite (input scale {float(s_in)}, output scale "
                       f"{float(s_out)})") from None
    lo, hi = _activation_range(ctx, out)
    return m, shift, lo, hi


def _activation_range(ctx: OpContext, out: TensorInfo) -> tuple[int, int]:
    qmin, qmax = dtype_range(out.dtype)
    try:
        return calculate_activation_range_quantized(ctx.options.fused_activation_function, out.scale,
                                                    out.zero_point, qmin, qmax)
    except PrepareError as e:
        raise ctx.fail(str(e)) from None


def _quantized_weights(f: np.ndarray, filter_zp: int, dtype) -> np.ndarray:
    """The filter minus its zero point, in the (exact) float type of the accumulation."""
    return (f.astype(np.int32) - filter_zp).astype(dtype)


# -- CONV_2D --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Im2Col:
    """Lays the receptive fields of an NHWC input out as the rows of a (G, M, KH*KW*Cg) GEMM operand and
    multiplies it (`gemm`).

    Each block A, in a buffer allocated at prepare, holds the rows of output rows r0:r1 of batches n0:n1 (one
    block unless the matrix exceeds IM2COL_BLOCK_BYTES). Padding comes from a buffer allocated at prepare
    whose border holds the pad value (0.0 for float, the input zero point for quantized inputs); 1x1 stride-1
    convs use the input itself as A when it already has A's type. The padded buffer has the input's type
    (``src_dtype``); the copy into A converts.
    """

    geo: Geometry
    groups: int
    padded: np.ndarray | None  # (N, Hp, Wp, C) when the windows need padding
    interior: tuple | None  # where the input goes in `padded`
    window: np.ndarray | None  # (G, N, OH, OW, KH, KW, Cg) strided view of `padded`
    blocks: tuple  # ((n0, n1, r0, r1, A, A as (G, n, r, OW, KH, KW, Cg)), ...); A is None for 1x1 stride 1
    pointwise: bool = False  # 1x1 stride 1 unpadded, one block: A is the input converted (no window view)

    @staticmethod
    def build(geo: Geometry, groups: int, dtype, pad_value=0, src_dtype=None) -> Im2Col:
        g = geo
        src_dtype = np.dtype(dtype if src_dtype is None else src_dtype)
        cg = g.in_c // groups
        kg = g.filter_h * g.filter_w * cg
        if g.filter_h == g.filter_w == g.stride_h == g.stride_w == 1 and not g.padded and src_dtype == dtype:
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
            padded, interior = padded_buffer(g, g.in_c, src_dtype, pad_value)
            window = Im2Col._window(g, groups, padded)
        pointwise = g.filter_h == g.filter_w == g.stride_h == g.stride_w == 1 and not g.padded and len(blocks) == 1
        return Im2Col(geo, groups, padded, interior, window, tuple(blocks), pointwise)

    @staticmethod
    def _window(g: Geometry, groups: int, src: np.ndarray) -> np.ndarray:
        sn, sh, sw, sc = src.strides
        cg = g.in_c // groups
        shape = (groups, g.batches, g.out_h, g.out_w, g.filter_h, g.filter_w, cg)
        strides = (cg * sc, sn, sh * g.stride_h, sw * g.stride_w, sh * g.dilation_h, sw * g.dilation_w, sc)
        if src.flags.c_contiguous:  # the ndarray constructor is 5x cheaper than as_strided
            return np.ndarray(shape, src.dtype, src, 0, strides)
        return np.lib.stride_tricks.as_strided(src, shape, strides, writeable=False)

    def gemm(self, x: np.ndarray, weights: np.ndarray, out: np.ndarray) -> None:
        """out (N, OH, OW, O) = im2col(x) @ weights (G, Kg, Og), one GEMM per block, written in place
        (the output is contiguous: reshape is a view). Without the generator: small layers pay per call."""
        groups = self.groups
        og = weights.shape[2]
        if groups == 1:
            weights = weights[0]
        blocks = self.blocks
        a = blocks[0][4]
        if a is None:  # 1x1 stride 1: the input is the (G, M, Cg) matrix
            if groups == 1:
                np.matmul(x.reshape(-1, x.shape[3]), weights, out=out.reshape(-1, og))
            else:
                a = x.reshape(-1, groups, x.shape[3] // groups).transpose(1, 0, 2)
                np.matmul(a, weights, out=out.reshape(-1, groups, og).transpose(1, 0, 2))
            return
        if self.pointwise:
            np.copyto(a, x.reshape(1, -1, x.shape[3]) if groups == 1 else
                      x.reshape(-1, groups, x.shape[3] // groups).transpose(1, 0, 2))
            if groups == 1:
                np.matmul(a[0], weights, out=out.reshape(-1, og))
            else:
                np.matmul(a, weights, out=out.reshape(-1, groups, og).transpose(1, 0, 2))
            return
        if self.padded is not None:
            self.padded[self.interior] = x
            window = self.window
        else:
            window = self._window(self.geo, groups, x)
        for n0, n1, r0, r1, a, dest in blocks:
            np.copyto(dest, window if len(blocks) == 1 else window[:, n0:n1, r0:r1])
            if groups == 1:
                np.matmul(a[0], weights, out=out[n0:n1, r0:r1].reshape(-1, og))
            else:
                np.matmul(a, weights, out=out[n0:n1, r0:r1].reshape(-1, groups, og).transpose(1, 0, 2))


def _gemm_weights(f: np.ndarray, groups: int, dtype, filter_zp: int = 0) -> np.ndarray:
    """OHWI filter -> (G, KH*KW*Cg, Og): each group's GEMM right operand, contiguous."""
    o = f.shape[0]
    w = f.reshape(groups, o // groups, -1).transpose(0, 2, 1)
    if filter_zp or f.dtype != dtype:
        w = _quantized_weights(w, filter_zp, dtype)
    return np.ascontiguousarray(w, dtype=dtype)


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
        w = self.weights
        if w is None:
            w = inputs[FILTER].reshape(self.im2col.groups, out.shape[3] // self.im2col.groups, -1).transpose(0, 2, 1)
        self.im2col.gemm(inputs[INPUT], w, out)
        if self.bias is not None:
            np.add(out, self.bias, out=out)
        elif self.dynamic_bias:
            np.add(out, inputs[BIAS].reshape(-1), out=out)
        clip_ufunc(out, self.out_min, self.out_max, out=out)


def _bias_tile(bias, out_w: int) -> np.ndarray | None:
    """A constant bias tiled over the output width: adding it to NHWC output runs over whole (W, C) rows."""
    if bias is None or bias.data is None:
        return None
    return _tile(bias.data, out_w, np.float32)


def _prepare_conv_float(ctx: OpContext, geo: Geometry, groups: int):
    f, bias = ctx.input(FILTER), ctx.optional_input(BIAS)
    weights = _gemm_weights(f.data, groups, np.float32) if f.is_constant else None
    lo, hi = float_activation_range(ctx.options.fused_activation_function)
    return ConvFloat(Im2Col.build(geo, groups, np.float32), weights, _bias_tile(bias, geo.out_w),
                     bias is not None and not bias.is_constant, lo, hi)


@dataclass(frozen=True, eq=False)
class ConvQuantized:
    """CONV_2D uint8 / int8 / int16x8: an exact integer GEMM in BLAS (float32 or float64), the per-channel
    offset bias - x_zp * sum(w - w_zp), then the requantization into the output."""

    im2col: Im2Col  # raw input values, border = the input zero point
    weights: np.ndarray | None  # (G, Kg, Og) of w - w_zp; None: made from the filter input at every invoke
    offset: np.ndarray | None  # (OW, O) float64 (int64 with an int64 bias); None: made at every invoke
    gemm: np.ndarray  # (N, OH, OW, O) GEMM output
    acc: np.ndarray  # (N, OH, OW, O) accumulators: float64 (may be `gemm` itself) or int64 (int64 bias)
    requant: Requantizer
    input_zp: int
    filter_zp: int

    def __call__(self, inputs, outputs):
        w, offset = self.weights, self.offset
        if w is None:
            w = _gemm_weights(inputs[FILTER], self.im2col.groups, self.gemm.dtype, self.filter_zp)
        if offset is None:
            colsum = w.sum(axis=1, dtype=np.float64).reshape(-1)
            offset = inputs[BIAS].reshape(-1).astype(self.acc.dtype) - self.input_zp * colsum.astype(self.acc.dtype)
        self.im2col.gemm(inputs[INPUT], w, self.gemm)
        acc = self.acc
        if acc.dtype == np.int64:  # exact: the GEMM holds integers
            np.copyto(acc, self.gemm, casting="unsafe")
            acc += offset
        else:
            np.add(self.gemm, offset, out=acc)
        self.requant(acc, outputs[OUTPUT])


def _int16_bias_type(ctx: OpContext, bias: TensorInfo) -> str:
    """The bias LiteRT's int16 CONV_2D reads: quantized_bias_type when set, else int64."""
    qbt = ctx.options.quantized_bias_type
    if qbt != _TYPE["FLOAT32"]:
        ctx.check(qbt in (_TYPE["INT32"], _TYPE["INT64"]),
                  f"quantized_bias_type must be INT32 or INT64, got {dtypes.type_name(qbt)}")
        ctx.check(bias.type == qbt, f"bias type {bias.type_name} != quantized_bias_type {dtypes.type_name(qbt)}")
    # Without quantized_bias_type LiteRT's 16x8 kernel reads the bias as int64 whatever its type.
    ctx.check(bias.type == _TYPE["INT64"] or qbt == _TYPE["INT32"],
              "int16 CONV_2D with an INT32 bias needs quantized_bias_type INT32 (LiteRT reads the bias as INT64 "
              "otherwise)")
    return bias.type_name


def _prepare_conv_quantized(ctx: OpContext, geo: Geometry, groups: int):
    x, f, bias, out = ctx.input(INPUT), ctx.input(FILTER), ctx.input(BIAS), ctx.outputs[OUTPUT]
    uint8 = x.dtype == np.uint8
    expected = (np.uint8,) if uint8 else (np.int8,)  # INT4 filters are unpacked to int8
    ctx.check(f.dtype in expected, f"{x.type_name} CONV_2D needs a {'UINT8' if uint8 else 'INT8 or INT4'} filter, "
                                   f"got {f.type_name}")
    m, shift, lo, hi = _quantization_params(ctx, x, f, bias, geo.out_c, legacy_uint8=uint8)
    int64_bias = x.dtype == np.int16 and _int16_bias_type(ctx, bias) == "INT64"
    if geo.empty:
        return EMPTY_OUTPUT
    x_zp, f_zp = x.zero_point, f.zero_point if uint8 else 0
    qmin, qmax = dtype_range(x.dtype)
    k = geo.filter_h * geo.filter_w * f.shape[3]
    dev = max(qmax - x_zp, x_zp - qmin)  # max |x - x_zp|
    if f.is_constant:
        wabs = np.abs(f.data.reshape(geo.out_c, -1).astype(np.int64) - f_zp).sum(axis=1)
        wmax = int(wabs.max())
    else:
        wmax = k * (255 if uint8 else 128)
    dtype = _exact_dtype(max(-qmin, qmax) * wmax)  # |every partial sum of the GEMM| <= max|x| * sum|w'|
    weights = _gemm_weights(f.data, groups, dtype, f_zp) if f.is_constant else None
    acc_dtype = np.int64 if int64_bias else np.float64
    offset = None
    if weights is not None and bias.is_constant:
        colsum = weights.sum(axis=1, dtype=np.float64).reshape(-1)  # exact: |sum| < 2**53
        if int64_bias:
            offset = bias.data.reshape(-1).astype(np.int64)  # the input zero point is 0
        else:
            offset = bias.data.reshape(-1).astype(np.float64) - x_zp * colsum
        offset = _tile(offset, geo.out_w, acc_dtype)
        acc_bound = dev * wmax + float(np.abs(bias.data.astype(np.float64)).max())
    else:
        acc_bound = dev * wmax + 2.0**63 if int64_bias else dev * wmax + 2.0**31
    gemm = np.empty(geo.out_shape, dtype)
    acc = gemm if dtype == acc_dtype else np.empty(geo.out_shape, acc_dtype)
    requant = _requantize(ctx, m, shift, out.zero_point, lo, hi, geo.out_shape, acc_bound, int64_acc=int64_bias)
    return ConvQuantized(Im2Col.build(geo, groups, dtype, x_zp, src_dtype=x.dtype), weights, offset, gemm, acc,
                         requant, x_zp, f_zp)


def _quantize_batches(x: np.ndarray, asymmetric: bool):
    """Each batch of the float input quantized to int8 as LiteRT's x86 wheel does (BatchQuantizeFloats with
    the NEON routines through NEON_2_SSE; fully_connected.batch_quantize_floats): (q, float32 scaling factors)
    with q float32 in the input's shape, holding q - zp when asymmetric (exact integers in [-255, 255])."""
    n = x.shape[0]
    q, sf, zp = batch_quantize_floats(x.reshape(n, -1), asymmetric)
    if zp is not None:
        q -= zp[:, None]
    return q.reshape(x.shape), sf


@dataclass(frozen=True, eq=False)
class ConvHybrid:
    """CONV_2D with float input and int8 filter: per-batch input quantization, an exact integer GEMM, then
    float32 scaling in the reference's order, bias and the float clamp."""

    im2col: Im2Col  # float32 holding the quantized input (q or q - zp), border 0
    weights: np.ndarray  # (G, Kg, Og)
    gemm: np.ndarray | None  # float64 GEMM output when the dot products may exceed 2**24; None: into the output
    filter_scale: np.float32  # per-tensor (symmetric) path
    channel_scale: np.ndarray | None  # (OW, O) float32: per-channel (asymmetric) path
    bias: np.ndarray | None  # (OW, O) float32; None: the bias input, read at every invoke
    out_min: np.float32
    out_max: np.float32

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        q, sf = _quantize_batches(x, asymmetric=self.channel_scale is not None)
        if self.channel_scale is None:
            sf = sf * self.filter_scale  # scaling_factors[b] *= filter scale (float32)
        gemm = out if self.gemm is None else self.gemm
        self.im2col.gemm(q, self.weights, gemm)
        if gemm is not out:
            np.copyto(out, gemm, casting="same_kind")  # static_cast<float>(int32 acc): round to nearest even
        if self.channel_scale is not None:  # f32(f32(acc) * s_w[c]) * sf
            np.multiply(out, self.channel_scale, out=out)
        np.multiply(out, sf.reshape(-1, 1, 1, 1), out=out)
        np.add(out, inputs[BIAS].reshape(-1) if self.bias is None else self.bias, out=out)
        clip_ufunc(out, self.out_min, self.out_max, out=out)


def _hybrid_scales(ctx: OpContext, f: TensorInfo) -> np.ndarray:
    ctx.check(f.dtype == np.int8, f"hybrid {ctx.op_name} (FLOAT32 input) needs an INT8 or INT4 filter, got "
                                  f"{f.type_name} (LiteRT reads a UINT8 filter's bytes as int8)")
    ctx.check(_quantized(f), f"hybrid {ctx.op_name}: the INT8 filter has no quantization scale")
    ctx.check(f.is_constant, f"hybrid {ctx.op_name}: the INT8 filter must be constant")
    return np.asarray(f.quantization.scale, np.float32)


def _prepare_conv_hybrid(ctx: OpContext, geo: Geometry, groups: int):
    f, bias = ctx.input(FILTER), ctx.input(BIAS)
    scales = _hybrid_scales(ctx, f)
    per_channel = groups != 1 or bool((scales != scales[0]).any())
    if per_channel:  # EvalHybridPerChannel reads s_w[output channel] (checks of ai-edge-litert 2.3.0)
        qd = f.quantization.quantized_dimension
        ctx.check(qd == 0, f"hybrid per-channel or grouped CONV_2D needs the filter quantized on dimension 0, got {qd}")
        ctx.check(scales.size == geo.out_c, f"hybrid per-channel or grouped CONV_2D needs {geo.out_c} filter scales, "
                                            f"got {scales.size}")
    if geo.empty:
        return EMPTY_OUTPUT
    wabs = int(np.abs(f.data.reshape(geo.out_c, -1).astype(np.int64)).sum(axis=1).max())
    dtype = _exact_dtype((255 if per_channel else 127) * wabs)  # |q - zp| <= 255, |q| <= 127
    lo, hi = float_activation_range(ctx.options.fused_activation_function)
    return ConvHybrid(Im2Col.build(geo, groups, np.float32), _gemm_weights(f.data, groups, dtype),
                      None if dtype == np.float32 else np.empty(geo.out_shape), scales[0],
                      _tile(scales, geo.out_w, np.float32) if per_channel else None,
                      _tile(bias.data, geo.out_w, np.float32) if bias.is_constant else None, lo, hi)


_INPUT_TYPES = tuple(np.dtype(t) for t in (np.float32, np.uint8, np.int8, np.int16))


def _check_types(ctx: OpContext) -> None:
    x, out = ctx.input(INPUT), ctx.outputs[OUTPUT]
    ctx.check(x.dtype in _INPUT_TYPES and x.type != _INT4,
              f"Type {x.type_name} is unsupported by op {ctx.op_name} (input must be FLOAT32, UINT8, INT8 or INT16).")
    ctx.check(out.type == x.type, f"output type {out.type_name} != input type {x.type_name}")


def _check_bias(ctx: OpContext, out_c: int, one_d: bool, int16_bias: tuple[str, ...]) -> None:
    x, bias = ctx.input(INPUT), ctx.input(BIAS)
    if x.dtype == np.float32:
        ctx.check(bias.type == x.type, f"bias type {bias.type_name} != input type {x.type_name}")
    else:
        allowed = int16_bias if x.dtype == np.int16 else ("INT32",)
        ctx.check(bias.type_name in allowed,
                  f"{x.type_name} {ctx.op_name} needs a {' or '.join(allowed)} bias, got {bias.type_name}")
        ctx.check(bias.zero_point == 0, f"bias zero point must be 0, got {bias.zero_point}")
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
    if x.dtype in (np.int8, np.int16):
        ctx.check(_quantized(f), "filter must have affine quantization (LiteRT: filter->quantization.type != "
                                 "kTfLiteAffineQuantization)")
        ctx.check(not any(f.quantization.zero_point), f"filter zero points must be 0, got {f.quantization.zero_point}")
    opt = ctx.options
    ctx.check(opt.stride_h > 0 and opt.stride_w > 0, f"strides must be positive, got {opt.stride_h}x{opt.stride_w}")
    ctx.check(opt.dilation_h_factor > 0 and opt.dilation_w_factor > 0,
              f"dilations must be positive, got {opt.dilation_h_factor}x{opt.dilation_w_factor}")
    # conv.cc: "TODO(ahentz): At this point the optimized versions require 'bias'".
    ctx.check(len(ctx.inputs) == 3, "CONV_2D requires a bias input (LiteRT: has_bias was not true)")
    ctx.check(ctx.inputs[BIAS] is not None, "CONV_2D requires a bias: tensor at index 2 was optional but was expected")
    _check_bias(ctx, o, one_d=False, int16_bias=("INT32", "INT64"))
    if x.dtype == np.int16:
        ctx.check(x.zero_point == 0, f"int16 input zero point must be 0, got {x.zero_point}")
        ctx.check(ctx.outputs[OUTPUT].zero_point == 0,
                  f"int16 output zero point must be 0, got {ctx.outputs[OUTPUT].zero_point}")
    geo = window_geometry(ctx, x.shape, o, kh, kw, checked=True)
    ctx.set_output_shape(OUTPUT, geo.out_shape)
    if x.dtype != np.float32:
        return _prepare_conv_quantized(ctx, geo, groups)
    if f.dtype == np.float32:
        return EMPTY_OUTPUT if geo.empty else _prepare_conv_float(ctx, geo, groups)
    if f.type_name in ("INT8", "UINT8", "INT4"):
        return _prepare_conv_hybrid(ctx, geo, groups)
    # LiteRT does not check this and reads the filter's bytes as float32.
    raise ctx.fail(f"CONV_2D with FLOAT32 input needs a FLOAT32 filter, got a {f.type_name} filter")


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
            (slice(None), slice(ky * g.dilation_h, ky * g.dilation_h + (g.out_h - 1) * g.stride_h + 1, g.stride_h),
             slice(kx * g.dilation_w, kx * g.dilation_w + (g.out_w - 1) * g.stride_w + 1, g.stride_w))
            for ky in range(g.filter_h) for kx in range(g.filter_w))
        if not g.padded and multiplier == 1 and not copy:
            return DepthwiseTaps(None, None, taps, None)
        padded, interior = padded_buffer(g, g.in_c * multiplier, dtype, pad_value)
        fill = padded[interior]
        if multiplier > 1:
            fill = np.reshape(fill, (g.batches, g.in_h, g.in_w, g.in_c, multiplier), copy=False)
        sn, sh, sw, sc = padded.strides
        window = np.ndarray((g.filter_h, g.filter_w, g.batches, g.out_h, g.out_w, g.in_c * multiplier), padded.dtype,
                            padded, 0, (sh * g.dilation_h, sw * g.dilation_w, sn, sh * g.stride_h, sw * g.stride_w, sc))
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


def _tap_weights(f: np.ndarray, geo: Geometry, dtype, filter_zp: int = 0) -> tuple:
    """Per tap, the (w - w_zp) of the O output channels tiled over the output width (or (O,) when too big)."""
    per_tap = f.reshape(geo.filter_h * geo.filter_w, geo.out_c)
    per_tap = _quantized_weights(per_tap, filter_zp, dtype) if filter_zp or f.dtype != dtype else per_tap
    tiled = per_tap.nbytes * geo.out_w <= DEPTHWISE_TILE_BYTES
    return tuple(_tile(t, geo.out_w, dtype) if tiled else np.array(t, dtype) for t in per_tap)


#: Exact (integer) depthwise sums use one multiply over all taps and a reduction (DepthwiseTaps.exact_sum)
#: while KH*KW * output elements stay below this; the tap loop streams better above it.
DEPTHWISE_STACKED_ELEMENTS = 1 << 18


def _exact_tap_weights(f: np.ndarray, geo: Geometry, dtype, filter_zp: int = 0):
    """(w - w_zp) for DepthwiseTaps.exact_sum and its scratch: stacked (KH, KW, 1, 1, OW, O) on small layers,
    else per tap as _tap_weights."""
    size = geo.filter_h * geo.filter_w * int(np.prod(geo.out_shape))
    if size > DEPTHWISE_STACKED_ELEMENTS:
        return _tap_weights(f, geo, dtype, filter_zp), np.empty(geo.out_shape, dtype)
    w = _quantized_weights(f.reshape(geo.filter_h, geo.filter_w, 1, 1, 1, geo.out_c), filter_zp, dtype)
    w = np.ascontiguousarray(np.broadcast_to(w, (geo.filter_h, geo.filter_w, 1, 1, geo.out_w, geo.out_c)))
    return w, np.empty((geo.filter_h, geo.filter_w) + geo.out_shape, dtype)


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
        DepthwiseTaps.accumulate(views, weights, out, self.scratch)
        if self.bias is not None:
            np.add(out, self.bias, out=out)
        elif self.dynamic_bias:
            np.add(out, inputs[BIAS], out=out)
        clip_ufunc(out, self.out_min, self.out_max, out=out)


def _prepare_depthwise_float(ctx: OpContext, geo: Geometry, multiplier: int):
    f, bias = ctx.input(FILTER), ctx.optional_input(BIAS)
    weights = _tap_weights(f.data, geo, np.float32) if f.is_constant else None
    lo, hi = float_activation_range(ctx.options.fused_activation_function)
    return DepthwiseConvFloat(DepthwiseTaps.build(geo, multiplier, np.float32), weights,
                              np.empty(geo.out_shape, np.float32), _bias_tile(bias, geo.out_w),
                              bias is not None and not bias.is_constant, lo, hi)


@dataclass(frozen=True, eq=False)
class DepthwiseConvQuantized:
    """DEPTHWISE_CONV_2D uint8 / int8 / int16x8: per-tap exact multiply-accumulate (float32 or float64), the
    per-channel offset bias - x_zp * sum(w - w_zp), then the requantization into the output."""

    taps: DepthwiseTaps  # raw input values converted to the accumulation type, border = input zero point
    weights: tuple | np.ndarray | None  # w - w_zp for DepthwiseTaps.exact_sum; None: from the filter input
    offset: np.ndarray | None  # (OW, O) float64 (int64 with an int64 bias); None: made at every invoke
    sums: np.ndarray  # (N, OH, OW, O) tap sums
    scratch: np.ndarray  # one tap's products
    acc: np.ndarray  # (N, OH, OW, O) accumulators: float64 (may be `sums` itself) or int64 (int64 bias)
    requant: Requantizer
    input_zp: int
    filter_zp: int
    has_bias: bool
    zp_term: np.ndarray | None  # (O,) -x_zp * sum over the taps of (w - w_zp), for constant weights

    def __call__(self, inputs, outputs):
        views = self.taps(inputs[INPUT])
        weights, offset = self.weights, self.offset
        if weights is None:
            weights = _quantized_weights(inputs[FILTER].reshape(len(views), -1), self.filter_zp, self.sums.dtype)
        if offset is None:
            zp_term = self.zp_term
            if zp_term is None:
                zp_term = -self.input_zp * weights.sum(axis=0, dtype=np.float64)
            offset = zp_term.astype(self.acc.dtype)
            if self.has_bias:
                offset = offset + inputs[BIAS].astype(self.acc.dtype)
        self.taps.exact_sum(views, weights, self.sums, self.scratch)
        acc = self.acc
        if acc.dtype == np.int64:
            np.copyto(acc, self.sums, casting="unsafe")
            acc += offset
        else:
            np.add(self.sums, offset, out=acc)
        self.requant(acc, outputs[OUTPUT])


def _prepare_depthwise_quantized(ctx: OpContext, geo: Geometry, multiplier: int):
    x, f, bias, out = ctx.input(INPUT), ctx.input(FILTER), ctx.optional_input(BIAS), ctx.outputs[OUTPUT]
    expected = {np.dtype(np.uint8): ("UINT8",), np.dtype(np.int8): ("INT8", "INT4"), np.dtype(np.int16): ("INT8",)}
    ctx.check(f.type_name in expected[x.dtype], f"{x.type_name} DEPTHWISE_CONV_2D needs a "
                                                f"{' or '.join(expected[x.dtype])} filter, got {f.type_name}")
    uint8 = x.dtype == np.uint8
    m, shift, lo, hi = _quantization_params(ctx, x, f, bias, geo.out_c, legacy_uint8=uint8)
    if geo.empty:
        return EMPTY_OUTPUT
    int64_bias = x.dtype == np.int16
    x_zp, f_zp = x.zero_point, f.zero_point if uint8 else 0  # the int8 kernel ignores the filter zero point
    qmin, qmax = dtype_range(x.dtype)
    taps = geo.filter_h * geo.filter_w
    dev = max(qmax - x_zp, x_zp - qmin)
    if f.is_constant:
        wmax = int(np.abs(f.data.reshape(taps, geo.out_c).astype(np.int64) - f_zp).sum(axis=0).max())
    else:
        wmax = taps * (255 if uint8 else 128)
    dtype = _exact_dtype(max(-qmin, qmax) * wmax)
    if f.is_constant:
        weights, scratch = _exact_tap_weights(f.data, geo, dtype, f_zp)
    else:
        weights, scratch = None, np.empty(geo.out_shape, dtype)
    acc_dtype = np.int64 if int64_bias else np.float64
    offset = zp_term = None
    bias_max = 0.0 if bias is None else 2.0 ** (63 if int64_bias else 31)
    if weights is not None:
        zp_term = -x_zp * (f.data.reshape(taps, geo.out_c).astype(np.int64) - f_zp).sum(axis=0)
    if weights is not None and (bias is None or bias.is_constant):
        offset = zp_term
        if bias is not None:
            offset = offset + bias.data.astype(np.int64)
            bias_max = float(np.abs(bias.data.astype(np.float64)).max())
        offset = _tile(offset, geo.out_w, acc_dtype)
    sums = np.empty(geo.out_shape, dtype)
    acc = sums if dtype == acc_dtype else np.empty(geo.out_shape, acc_dtype)
    requant = _requantize(ctx, m, shift, out.zero_point, lo, hi, geo.out_shape, dev * wmax + bias_max,
                          int64_acc=int64_bias)
    return DepthwiseConvQuantized(DepthwiseTaps.build(geo, multiplier, dtype, x_zp, copy=True), weights, offset,
                                  sums, scratch, acc, requant, x_zp, f_zp, bias is not None, zp_term)


@dataclass(frozen=True, eq=False)
class DepthwiseConvHybrid:
    """DEPTHWISE_CONV_2D with float input and int8 filter: per-batch asymmetric input quantization (q - zp),
    exact per-tap sums, then f32(acc) * f32(s_w[c] * sf), bias and the float clamp."""

    taps: DepthwiseTaps  # float32 holding q - zp, border 0
    weights: tuple | np.ndarray  # for DepthwiseTaps.exact_sum
    sums: np.ndarray  # (N, OH, OW, O) float64 when the sums may exceed 2**24; else the output is used
    scratch: np.ndarray
    scale: np.ndarray  # (O,) float32 filter scales
    bias: np.ndarray | None  # (OW, O) float32
    dynamic_bias: bool
    out_min: np.float32
    out_max: np.float32

    def __call__(self, inputs, outputs):
        out = outputs[OUTPUT]
        q, sf = _quantize_batches(inputs[INPUT], asymmetric=True)
        views = self.taps(q)
        sums = out if self.sums is None else self.sums
        self.taps.exact_sum(views, self.weights, sums, self.scratch)
        if sums is not out:
            np.copyto(out, sums, casting="same_kind")
        np.multiply(out, self.scale * sf.reshape(-1, 1, 1, 1), out=out)  # f32(acc) * f32(s_w[c] * sf)
        if self.bias is not None:
            np.add(out, self.bias, out=out)
        elif self.dynamic_bias:
            np.add(out, inputs[BIAS], out=out)
        clip_ufunc(out, self.out_min, self.out_max, out=out)


def _prepare_depthwise_hybrid(ctx: OpContext, geo: Geometry, multiplier: int):
    f, bias = ctx.input(FILTER), ctx.optional_input(BIAS)
    scales = _hybrid_scales(ctx, f)
    qd = f.quantization.quantized_dimension
    ctx.check(0 <= qd < 4 and scales.size == f.shape[qd],
              f"hybrid DEPTHWISE_CONV_2D: {scales.size} filter scales for quantized dimension {qd} of "
              f"shape {list(f.shape)}")
    # DepthwiseConvHybridPerChannel reads s_w[output channel]: past the end of a single scale (garbage).
    ctx.check(scales.size == geo.out_c, f"hybrid DEPTHWISE_CONV_2D needs one filter scale per output channel "
                                        f"({geo.out_c}), got {scales.size} (LiteRT reads past the end of the scales)")
    if geo.empty:
        return EMPTY_OUTPUT
    taps = geo.filter_h * geo.filter_w
    wmax = int(np.abs(f.data.reshape(taps, geo.out_c).astype(np.int64)).sum(axis=0).max())
    dtype = _exact_dtype(255 * wmax)  # |q - zp| <= 255
    lo, hi = float_activation_range(ctx.options.fused_activation_function)
    weights, scratch = _exact_tap_weights(f.data, geo, dtype)
    return DepthwiseConvHybrid(
        DepthwiseTaps.build(geo, multiplier, np.float32, copy=True), weights,
        None if dtype == np.float32 else np.empty(geo.out_shape), scratch,
        np.broadcast_to(scales, (geo.out_c,)).astype(np.float32), _bias_tile(bias, geo.out_w),
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
    hybrid = x.dtype == np.float32 and f.type_name == "INT8"
    ctx.check(hybrid or f.type == x.type or x.dtype == np.int16 or f.type == _INT4,
              f"filter type {f.type_name} does not match input type {x.type_name}")
    if x.dtype == np.int16:
        ctx.check(x.zero_point == 0, f"int16 input zero point must be 0, got {x.zero_point}")
        ctx.check(ctx.outputs[OUTPUT].zero_point == 0,
                  f"int16 output zero point must be 0, got {ctx.outputs[OUTPUT].zero_point}")
    ctx.check(one == 1, f"filter must be [1, KH, KW, O], got shape {list(f.shape)}")
    ctx.check(o % c == 0, f"output channels ({o}) must be a multiple of the input channels ({c})")
    ctx.check(ctx.optional_input(BIAS) is not None or len(ctx.inputs) == 2,
              "DEPTHWISE_CONV_2D: tensor at index 2 (bias) was optional but was expected")
    if len(ctx.inputs) == 3:
        _check_bias(ctx, o, one_d=True, int16_bias=("INT64",))
    geo = window_geometry(ctx, x.shape, o, kh, kw, checked=True)
    ctx.set_output_shape(OUTPUT, geo.out_shape)
    if x.dtype != np.float32:
        return _prepare_depthwise_quantized(ctx, geo, o // c)
    if hybrid:
        return _prepare_depthwise_hybrid(ctx, geo, o // c)
    ctx.check(f.dtype == np.float32 and f.type != _INT4,
              f"DEPTHWISE_CONV_2D with FLOAT32 input and {f.type_name} filter is not supported (LiteRT fails at eval)")
    return EMPTY_OUTPUT if geo.empty else _prepare_depthwise_float(ctx, geo, o // c)
