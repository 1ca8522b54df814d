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
integer, whatever BLAS's summation order), else in float64 (exact below 2**53). 8-bit layers with constant
weights and bias whose bound allows it (ops/conv/requant.py, checked per channel at prepare) fold the whole
requantization into the weights instead: `ConvQuantizedFolded` multiplies [im2col, 1] by
[(w - w_zp) * M * 2^(ls-31-rs); folded constant] in float64 and only clips and floors (ReLU-like layers and
layers without right shifts), or adds the ties-away sign term first; `DepthwiseConvQuantizedFolded` scales the
exact tap sums and adds the constant. Outputs of at most SMALL_EPILOGUE_VALUES values (streaming layers) take
`SmallFoldedEpilogue` (no reshapes, floor in place and a plain assignment: fewer costly numpy calls).
Otherwise the requantization epilogue (`litert_py.quant.Requantizer`) is
litert_py.quant.requantize's fused float64 form with its per-channel
constants made at prepare and its comparison turned into a copysign (6 passes, no masked ufunc), proven
exact for the static accumulator bound or checked against the data; else the library's own paths (int64, or
int32 accumulators that could overflow wrapped first as the C++ int32 sum does; the int64 fallback's
per-channel constants are made at prepare, `litert_py.quant.PerChannelMBQM`). Float CONV_2D with at most
PER_TAP_MAX_CHANNELS outputs and a large im2col runs one matmul per tap (`ConvFloatPerTap`); a float 1x1 stride-1
conv over a large output with at most POINTWISE_MAX_CHANNELS channels runs GEMM, bias and clamp per cache-sized
block of output rows (`ConvFloatPointwise`); one whose im2col is a
copy anyway (not 1x1 stride 1) adds its constant bias in the GEMM (`ConvFloatBiasFolded`), or, with few input
channels (KW*C <= 16) and a large output, builds the transposed im2col from channel-first phase planes
(`conv2d_planes.ConvFloatPlanes`). A float CONV_2D with one output pixel whose window is the whole unpadded input
(one batch; an SE block's 1x1 convs over a pooled pixel) is fully_connected_row.py's row FC: one np.dot of [x, 1]
with [filter rows; bias] and one clamp; two in a row link into one chain step (an SE pair: 6.2 -> 3.0 us). Float
DEPTHWISE_CONV_2D with a constant filter and bias is one np.einsum over the window view
(`depthwise_einsum.DepthwiseConvFloatEinsum`). Otherwise DEPTHWISE_CONV_2D sums the KH*KW taps, each a whole-tensor
multiply (the tap's weights tiled over the output width so the inner loops run over W*C contiguous values): the
float path adds them one by one in the reference's order (bit-exact with
BUILTIN_REF in the tests; padded taps add an exact 0, so, unlike the reference, which skips them, a padded tap
times an infinite weight gives NaN); with stride_w > 1 and depth multiplier 1 its tap views are unit-stride slices
of stride_h * stride_w phase planes of the padded input (`DepthwisePhaseTaps`, same sums); the exact integer paths
multiply the whole (KH, KW, N, OH, OW, O) window view once and reduce it on small layers (2 ufunc calls instead of
17 for 3x3), tap by tap on large ones.
Bound plans: the float paths (ConvFloat, ConvFloatPointwise, ConvFloatBiasFolded, conv2d_planes.ConvFloatPlanes,
depthwise_einsum.DepthwiseConvFloatEinsum, depthwise.DepthwiseConvFloat / DepthwiseConvFloatNoBias /
DepthwiseConvFloatBlocked) are bound_plan.BoundCalls: when ops/fusion.bind_steps binds the step's
arrays they list their numpy calls on them once (the reshaped A and output rows, the im2col copies' sources:
Im2Col.calls), and an invoke on those same arrays runs them without making views or looking attributes up first
(about 1.5 us per step inside real invokes: face detection 0.94-0.98x, image_example1.float32 0.93x whole-invoke,
alternated medians); called on other arrays (a delegate's fallback chain) they are bound to those first: one
path.
Measured (tools/bench_conv.py, 1 thread, a busy 2-core box): int8 conv 1x64x64x32->32 3x3 0.1-0.3x LiteRT's
reference kernel time, 1x1 conv 0.2-0.55x, depthwise 3x3 0.2-0.6x; the conv/pool nodes of the silabs int8
corpus models 0.15x (image_example1) and 0.5-0.8x (keyword_spotting_mobilenetv2, small layers where ~10 us of
numpy calls per node dominate).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...schema.model import BuiltinOperator
from ..activation_fusion import ClampLast, float_bounds
from ..bound_plan import BoundCalls, BoundCalls3, contiguous_source
from ..common import aligned_empty, clip_ufunc
from ..fully_connected_row import prepare_float_row
from ..registry import OpContext, register
from .common import (
    BIAS,
    EMPTY_OUTPUT,
    FILTER,
    IM2COL_BLOCK_BYTES,
    INPUT,
    OUTPUT,
    Geometry,
    bias_tile,
    check_bias,
    check_types,
    has_affine_quantization,
    window_geometry,
)
from .conv2d_planes import build_planes, planes_apply
from .conv2d_quantized import prepare_conv_quantized
from .conv_hybrid_bound import prepare_conv_hybrid_bound
from .im2col import Im2Col, gemm_calls, gemm_weights
from .taps import DepthwiseTaps

# -- CONV_2D --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ConvFloat(BoundCalls3, ClampLast):
    """Float CONV_2D through the im2col GEMM (Im2Col), then the bias (constant: tiled over whole output rows,
    ``bias_rows``; else the bias input) and the clamp. A bound_plan.BoundCalls3: the filter and bias inputs are
    identity-tested too (read through views made at bind where they are not constant)."""

    im2col: Im2Col
    weights: np.ndarray | None  # (G, KH*KW*Cg, Og) contiguous; None: the filter input, read at every invoke
    bias: np.ndarray | None  # constant bias tiled over the output width: (OW, O)
    dynamic_bias: bool  # the bias is not constant: added from the input at every invoke
    out_min: np.ndarray  # 0-d float32 (activation_fusion.float_bounds)
    out_max: np.ndarray
    bias_rows: tuple = ()  # the output's shape as rows of the bias's length

    def bound_calls(self, x: np.ndarray, f: np.ndarray, bias: np.ndarray, out: np.ndarray) -> tuple:
        """The op's numpy calls on these arrays: the GEMM (im2col.gemm_calls; a filter input's GEMM view made here,
        of a C-contiguous copy where a reshape would be one), the constant bias over ``bias_rows`` or the bias
        input, the clamp."""
        calls = []
        w = self.weights
        if w is None:
            groups = self.im2col.groups
            w = contiguous_source(f, calls).reshape(groups, out.shape[3] // groups, -1).transpose(0, 2, 1)
        calls += gemm_calls(self.im2col, x, w, out)
        if self.bias is not None:
            rows = out.reshape(self.bias_rows)
            calls.append((np.add, (rows, self.bias), {"out": rows}))
        elif self.dynamic_bias:
            calls.append((np.add, (out, contiguous_source(bias, calls).reshape(-1)), {"out": out}))
        calls.append((clip_ufunc, (out, self.out_min, self.out_max), {"out": out}))
        return tuple(calls)


#: `ConvFloatPointwise` runs a 1x1 conv in blocks of output rows of about this many bytes (cache-resident while
#: the bias and the clamp pass over them); taken when the output has at least two such blocks and at most
#: POINTWISE_MAX_CHANNELS channels (measured: 16 channels 10-17 % faster, 72-96 about 5 %, 24-28 5-10 % slower).
POINTWISE_BLOCK_BYTES = 128 << 10
POINTWISE_MAX_CHANNELS = 16


@dataclass(frozen=True, eq=False)
class ConvFloatPointwise(BoundCalls, ClampLast):
    """Float 1x1 stride-1 unpadded CONV_2D (groups 1, constant filter and bias) over a large output, in blocks of
    about POINTWISE_BLOCK_BYTES of output rows: GEMM, + bias, clamp per block, so that the two epilogue passes read
    the block while it is still in cache (128x128x16 -> 16: 222 -> 186 us, 64x64x16 -> 16: 59 -> 50 us, 1 thread).
    The same float operations as `ConvFloat` (each output: its BLAS dot product, then + bias, then the clamp):
    within the GEMM paths' tolerance; the bias and the clamp come after the sum, as in the reference."""

    blocks: tuple  # ((rows slice, bias tile for those rows), ...) of the (N*H*W, C) / (N*OH*OW, O) matrices
    weights: np.ndarray  # (C, O) float32 contiguous
    out_min: np.ndarray  # 0-d float32 (activation_fusion.float_bounds)
    out_max: np.ndarray

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """GEMM, + bias, clamp per block of rows of these arrays (their (M, C) / (M, O) views made here)."""
        calls = []
        a = contiguous_source(x, calls).reshape(-1, x.shape[3])
        c = out.reshape(-1, out.shape[3])
        w, lo, hi = self.weights, self.out_min, self.out_max
        for rows, bias in self.blocks:
            block = c[rows]
            calls.append((np.matmul, (a[rows], w), {"out": block}))
            calls.append((np.add, (block, bias), {"out": block}))
            calls.append((clip_ufunc, (block, lo, hi), {"out": block}))
        return tuple(calls)

    @staticmethod
    def build(geo: Geometry, f: np.ndarray, bias: np.ndarray, lo, hi) -> ConvFloatPointwise | None:
        """None unless the output holds at least two blocks of at most POINTWISE_MAX_CHANNELS channels."""
        m, o = geo.batches * geo.out_h * geo.out_w, geo.out_c
        step = max(1, POINTWISE_BLOCK_BYTES // (4 * o))
        if m < 2 * step or o > POINTWISE_MAX_CHANNELS:
            return None
        tile = np.ascontiguousarray(np.broadcast_to(np.asarray(bias, np.float32).reshape(1, o), (step, o)))
        blocks = tuple((slice(r, min(r + step, m)), tile[: min(step, m - r)]) for r in range(0, m, step))
        w = np.ascontiguousarray(f.reshape(o, geo.in_c).T, dtype=np.float32)
        return ConvFloatPointwise(blocks, w, lo, hi)


#: A float CONV_2D with at most this many output channels whose im2col matrix would exceed PER_TAP_MIN_BYTES
#: runs one matmul per filter tap instead (the im2col copy dominates a GEMM that narrow).
PER_TAP_MAX_CHANNELS = 4
PER_TAP_MIN_BYTES = 1 << 20


@dataclass(frozen=True, eq=False)
class ConvFloatPerTap(ClampLast):
    """Float CONV_2D with few output channels (groups 1, constant filter): out = sum over the taps, in the
    reference's (filter_y, filter_x) order, of tap_view (N, OH, OW, C) @ w_tap (C, O), then bias and clamp. A
    1-output-channel 3x3 conv over 256x256x8: 9.3 ms with a 19 MB im2col -> 1.6 ms. Float results: each tap's
    channel sum in BLAS order, as the im2col GEMM's is (not bit-exact with the reference's sequential sum)."""

    taps: DepthwiseTaps
    weights: np.ndarray  # (KH*KW, C, O) float32
    scratch: np.ndarray  # (N, OH, OW, O)
    bias: np.ndarray | None  # (OW, O)
    dynamic_bias: bool
    out_min: np.ndarray  # 0-d float32 (activation_fusion.float_bounds)
    out_max: np.ndarray

    def __call__(self, inputs, outputs):
        out, tmp, w = outputs[OUTPUT], self.scratch, self.weights
        views = self.taps(inputs[INPUT])
        np.matmul(views[0], w[0], out=out)
        for k in range(1, len(views)):
            np.matmul(views[k], w[k], out=tmp)
            np.add(out, tmp, out=out)
        if self.bias is not None:
            np.add(out, self.bias, out=out)
        elif self.dynamic_bias:
            np.add(out, inputs[BIAS].reshape(-1), out=out)
        clip_ufunc(out, self.out_min, self.out_max, out=out)


def one_window_row(geo: Geometry, groups: int) -> bool:
    """One output value per channel whose window is the whole unpadded input, one batch (an SE block's 1x1 convs
    over a pooled pixel, a classifier head): the im2col matrix is the input as one row."""
    g = geo
    return (
        groups == 1
        and g.batches == g.out_h == g.out_w == 1
        and (g.filter_h, g.filter_w) == (g.in_h, g.in_w)
        and (g.dilation_h == 1 or g.filter_h == 1)
        and (g.dilation_w == 1 or g.filter_w == 1)
        and not g.padded
    )


def _prepare_conv_float(ctx: OpContext, geo: Geometry, groups: int):
    f, bias = ctx.input(FILTER), ctx.optional_input(BIAS)
    act = ctx.options.fused_activation_function
    if one_window_row(geo, groups) and f.is_constant and (bias is None or bias.is_constant):
        # fully_connected_row.py's row FC ([x, 1] @ [filter rows; bias], one clamp), a chain with a next one
        weights = f.data.reshape(geo.out_c, -1)
        return prepare_float_row(
            ctx.input(INPUT).shape, weights, None if bias is None else bias.data, act, geo.out_shape
        )
    lo, hi = float_bounds(act)
    taps = geo.filter_h * geo.filter_w
    if (
        groups == 1
        and f.is_constant
        and taps > 1
        and geo.out_c <= PER_TAP_MAX_CHANNELS
        and geo.batches * geo.out_h * geo.out_w * taps * geo.in_c * 4 > PER_TAP_MIN_BYTES
    ):
        w = np.ascontiguousarray(f.data.reshape(geo.out_c, taps, geo.in_c).transpose(1, 2, 0), dtype=np.float32)
        return ConvFloatPerTap(
            DepthwiseTaps.build(geo, 1, np.float32),
            w,
            aligned_empty(geo.out_shape, np.float32),
            bias_tile(bias, geo.out_w),
            bias is not None and not bias.is_constant,
            lo,
            hi,
        )
    if (
        planes_apply(geo, groups)
        and f.is_constant
        and (bias is None or bias.is_constant)
        and (taps * geo.in_c + 1) * geo.batches * geo.out_h * geo.out_w * 4 <= IM2COL_BLOCK_BYTES
    ):
        return build_planes(geo, f.data.astype(np.float32), None if bias is None else bias.data, lo, hi)
    weights = gemm_weights(f.data, groups, np.float32) if f.is_constant else None
    input_is_a = geo.filter_h == geo.filter_w == geo.stride_h == geo.stride_w == 1 and not geo.padded
    if input_is_a and groups == 1 and f.is_constant and bias is not None and bias.is_constant:
        pointwise = ConvFloatPointwise.build(geo, f.data, bias.data, lo, hi)
        if pointwise is not None:
            return pointwise
    if groups == 1 and weights is not None and bias is not None and bias.is_constant and not input_is_a:
        folded = np.empty((1, weights.shape[1] + 1, geo.out_c), np.float32)
        folded[:, :-1] = weights
        folded[0, -1] = bias.data.reshape(-1)
        return ConvFloatBiasFolded(Im2Col.build(geo, 1, np.float32, ones=True), folded, lo, hi)
    tile, rows = _bias_rows(bias, geo)
    return ConvFloat(
        Im2Col.build(geo, groups, np.float32), weights, tile, bias is not None and not bias.is_constant, lo, hi, rows
    )


#: A constant bias is tiled over whole output rows of at least this many elements: numpy broadcasts a shorter
#: tile (one output row of OW*O values) over the rows at up to 2x the cost (64x64x24: 15 -> 8 us).
BIAS_ROW_ELEMENTS = 6144


def _bias_rows(bias, geo: Geometry) -> tuple[np.ndarray | None, tuple]:
    """The constant bias tiled over k output rows (k the smallest divisor of N*OH giving BIAS_ROW_ELEMENTS or
    more) and the output's shape as rows of that length."""
    if bias is None or bias.data is None:
        return None, ()
    row, count = geo.out_w * geo.out_c, geo.batches * geo.out_h
    k = next((k for k in range(1, count + 1) if count % k == 0 and k * row >= BIAS_ROW_ELEMENTS), count)
    tile = np.tile(np.asarray(bias.data, np.float32).reshape(-1), k * geo.out_w)
    return tile, (count // k, k * row)


@dataclass(frozen=True, eq=False)
class ConvFloatBiasFolded(BoundCalls, ClampLast):
    """Float CONV_2D (groups 1, constant filter and bias) whose im2col matrix is a copy anyway: the bias is
    one more GEMM row against a ones column of [im2col, 1], so the invoke is copy -> GEMM -> clamp (the bias
    pass is gone). Within the float tolerance, not bit-exact: BLAS adds the bias as one more term of its dot
    product, in its own order, where the reference adds it after the sum (tests/oracle.assert_close, relative
    1e-5 per term)."""

    im2col: Im2Col  # float32, border 0.0, last column ones
    weights: np.ndarray  # (1, KH*KW*C + 1, O) float32: the filter, then the bias row
    out_min: np.ndarray  # 0-d float32 (activation_fusion.float_bounds)
    out_max: np.ndarray

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The GEMM's numpy calls on these arrays (im2col.gemm_calls), then the clamp."""
        clamp = (clip_ufunc, (out, self.out_min, self.out_max), {"out": out})
        return (*gemm_calls(self.im2col, x, self.weights, out), clamp)


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
    check_types(ctx)
    if x.dtype in (np.int8, np.int16):
        ctx.check(
            has_affine_quantization(f),
            "filter must have affine quantization (LiteRT: filter->quantization.type != kTfLiteAffineQuantization)",
        )
        ctx.check(not any(f.quantization.zero_point), f"filter zero points must be 0, got {f.quantization.zero_point}")
    opt = ctx.options
    ctx.check(opt.stride_h > 0 and opt.stride_w > 0, f"strides must be positive, got {opt.stride_h}x{opt.stride_w}")
    ctx.check(
        opt.dilation_h_factor > 0 and opt.dilation_w_factor > 0,
        f"dilations must be positive, got {opt.dilation_h_factor}x{opt.dilation_w_factor}",
    )
    # conv.cc: "TODO(ahentz): At this point the optimized versions require 'bias'".
    ctx.check(len(ctx.inputs) == 3, "CONV_2D requires a bias input (LiteRT: has_bias was not true)")
    ctx.check(ctx.inputs[BIAS] is not None, "CONV_2D requires a bias: tensor at index 2 was optional but was expected")
    check_bias(ctx, o, one_d=False, int16_bias=("INT32", "INT64"))
    if x.dtype == np.int16:
        ctx.check(x.zero_point == 0, f"int16 input zero point must be 0, got {x.zero_point}")
        ctx.check(
            ctx.outputs[OUTPUT].zero_point == 0,
            f"int16 output zero point must be 0, got {ctx.outputs[OUTPUT].zero_point}",
        )
    geo = window_geometry(ctx, x.shape, o, kh, kw, checked=True)
    ctx.set_output_shape(OUTPUT, geo.out_shape)
    if x.dtype != np.float32:
        return prepare_conv_quantized(ctx, geo, groups)
    if f.dtype == np.float32:
        return EMPTY_OUTPUT if geo.empty else _prepare_conv_float(ctx, geo, groups)
    if f.type_name in ("INT8", "UINT8", "INT4"):
        return prepare_conv_hybrid_bound(ctx, geo, groups)
    # LiteRT does not check this and reads the filter's bytes as float32.
    raise ctx.fail(f"CONV_2D with FLOAT32 input needs a FLOAT32 filter, got a {f.type_name} filter")
