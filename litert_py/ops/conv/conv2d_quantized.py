"""CONV_2D, quantized (uint8 / int8 / int16x8, bit-exact with BUILTIN_REF) and hybrid (float32 input, int8/int4
filter) prepared ops: `ConvQuantized`, `ConvQuantizedScaled`, `ConvQuantizedFolded`, `ConvQuantizedFoldedRows`,
`ConvHybrid`. The sources matched, the paths and the measured speed are described in conv2d.py, whose registered
prepare_conv_2d dispatches here; the im2col data movement (`Im2Col`) is shared with the float path there.

Issue 16 (int8 / uint8 outputs, constant filter and bias, groups 1; each choice made at prepare):

- `ConvQuantizedScaled`: an exact float32 GEMM of the C++ accumulators (a ones column against the offset row;
  every partial sum <= max|x| * sum|w - w_zp| + |offset| <= 2^24) and requant_trunc.ScaledEpilogue (float64 scale
  and constant, the ties-away term by copysign, the truncation through int16 into the output's uint8 view),
  proven exact per layer by the bound or, on the channels it misses (near-dead channels, right shifts >= 15), by
  the monotone step check. Chosen for large im2col matrices, K >= SCALED_MIN_K (1x1 layers: POINTWISE_SCALED_MIN_K:
  folded below it, so a depthwise before them can feed their rows), and where the folded bound fails
  (no-activation layers with near-dead channels: ResNet-8's, which took the Requantizer before: 0.6x their time).
  3x3 (KH > 1, KW*C >= 16) layers multiply `RowBands` (KH GEMMs over horizontal windows: a third of the copy);
  1-3 channel first layers the transposed im2col matrix (`Im2ColT`), and those with K >= 3 * O take this path
  (STEM_SCALED_MIN_K_PER_OUTPUT: the float32 copy and GEMM outweigh the epilogue's extra passes).
  Few-row layers with large weights (WIDE_MAX_ROWS, WIDE_MIN_WEIGHTS: late 1x1 layers, squeeze-excite gates) take
  it too, whose GEMM reads mostly weights (half the folded float64 bytes), and small outputs whose fold fails
  try it before the unfolded ConvQuantized (WIDE_MIN_K: squeeze-excite reductions 1152 -> 48, whose folded bound
  M * max|x| * sum|w| exceeds 2^53 units). Measured (tools/profile_ops.py, 1 thread, medians of 2 alternated runs,
  per step): EfficientNet-B0 int8 SE reductions 110-149 -> 43-49 us, SE expansions 56-61 -> 40-47 us, 4x4
  80/112 -> 480/672 layers 111-194 -> 88-179 us; MobileNet-V3-small int8 3x3 96 -> 576 115-133 -> 79-86 us,
  one-pixel 576 -> 144 76-80 -> 49-51 us; MobileNet-V2 int8 3x3 112 -> 1280 not faster (213-233 -> 243 us: the
  GEMM 175 -> 153 us, the ScaledEpilogue 18 -> 50 us).
- `ConvQuantizedFolded` / `ConvQuantizedFoldedRows` (the folded float64 GEMM, requant.py): from TRUNC_MIN_VALUES
  outputs (or where requant.py's epilogue broadcasts per-channel bounds) requant_trunc.TruncEpilogue (the values
  less a base made >= 0, truncated, clipped in int16, the base added modulo 256); 1-3 channel first layers take the
  transposed im2col matrix (`Im2ColT`), 1x1 layers over at most 8 channels keep [A, 1] transposed. Where that
  bound fails and requant.py would take its LateZeroPointEpilogue (more than SMALL_EPILOGUE_VALUES outputs) or
  its MixedEpilogue (any size), requant_trunc.fold_truncating_proven: the same TruncEpilogue (raw-accumulator
  channels rescaled first; small outputs its SmallRescaledEpilogue), exact by the monotone step check. Measured
  (se_mobilenet, 1 thread, per layer): 1x1 (16,16,24)->96 115 -> 50 us, (8,8,40)->120 41 -> 23 us,
  (8,8,40)->240 82 -> 40 us, one-pixel 30->120 gate (MixedEpilogue) 13.9 -> 3.4-3.9 us.
Measured (tools/profile_ops.py, CONV_2D time, min of 5 runs alternating with the base): ResNet-8 1.33-1.39x,
DS-CNN 1.48-1.61x, VWW MobileNet 1.27-1.30x faster.

Bound plans (ops/bound_plan.py): `ConvQuantizedScaled`, `ConvQuantizedFolded` and `ConvQuantizedFoldedRows` (its
view-reading and ring forms too), like depthwise_rows.DepthwiseConvQuantizedRows, depthwise_into_rows's fused
pairs, the 8-bit tables (table8.py) and activations_quantized.ActivationLut*, are bound_plan.BoundCalls:
ops/fusion.bind_steps hands them their arrays once per prepare and they list their numpy calls on them
(im2col.gemm_calls, requant.epilogue_calls: views made once, no nested epilogue call, no attribute reads) as
partial objects their __call__ runs when called with those same arrays (an identity test); other arrays (a
delegate's fallback chain) are bound the same way, then run: one path. Measured (1 thread, whole invokes, medians
of 10 alternated rounds in one process, the plans on vs off): keyword_spotting_mobilenetv2 0.91-0.93x,
bench_families' se_mobilenet 0.92-0.94x, resnet8 0.93-0.94x, vww_mobilenet 0.94x, ds_cnn_kws 0.95-0.98x,
inception 0.98x."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from ...quant import (
    Requantizer,
    dtype_range,
)
from ..bound_plan import BoundCalls
from ..common import aligned_empty, clip_ufunc, float_activation_range, small_gemm
from ..into_reshape import into_reshape
from ..registry import OpContext, TensorInfo
from .common import (
    BIAS,
    EMPTY_OUTPUT,
    FILTER,
    FLOAT32_EXACT,
    IM2COL_BLOCK_BYTES,
    INPUT,
    OUTPUT,
    Geometry,
    add_offset,
    exact_dtype,
    hybrid_scales,
    int16_bias_type,
    quantization_params,
    quantize_batches,
    quantize_batches_raw,
    requantizer_for,
    tile_over_width,
)
from .hybrid_sse import HybridSseFix
from .im2col import Im2Col, Im2ColT, RowBands, gemm_calls, gemm_weights, row_band_weights
from .requant import (
    SMALL_EPILOGUE_VALUES,
    FoldedEpilogue,
    LateZeroPointEpilogue,
    MixedEpilogue,
    epilogue_calls,
    fold_requantization,
)
from .requant_trunc import (
    FULL_CONSTANTS_MAX_VALUES,
    ProvenFolding,
    ScaledEpilogue,
    fold_truncating,
    fold_truncating_proven,
    scaled_epilogue,
)


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
            w = gemm_weights(inputs[FILTER], self.im2col.groups, self.gemm.dtype, self.filter_zp)
        if offset is None:
            colsum = w.sum(axis=1, dtype=np.float64).reshape(-1)
            offset = inputs[BIAS].reshape(-1).astype(self.acc.dtype) - self.input_zp * colsum.astype(self.acc.dtype)
        self.im2col.gemm(inputs[INPUT], w, self.gemm)
        add_offset(self.acc, self.gemm, offset)
        self.requant(self.acc, outputs[OUTPUT])


def prepare_conv_quantized(ctx: OpContext, geo: Geometry, groups: int):
    x, f, bias, out = ctx.input(INPUT), ctx.input(FILTER), ctx.input(BIAS), ctx.outputs[OUTPUT]
    uint8 = x.dtype == np.uint8
    expected = (np.uint8,) if uint8 else (np.int8,)  # INT4 filters are unpacked to int8
    ctx.check(
        f.dtype in expected,
        f"{x.type_name} CONV_2D needs a {'UINT8' if uint8 else 'INT8 or INT4'} filter, got {f.type_name}",
    )
    m, shift, lo, hi = quantization_params(ctx, x, f, bias, geo.out_c, legacy_uint8=uint8)
    int64_bias = x.dtype == np.int16 and int16_bias_type(ctx, bias) == "INT64"
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
    dtype = exact_dtype(max(-qmin, qmax) * wmax)  # |every partial sum of the GEMM| <= max|x| * sum|w'|
    weights = gemm_weights(f.data, groups, dtype, f_zp) if f.is_constant else None
    acc_dtype = np.int64 if int64_bias else np.float64
    offset = None
    if weights is not None and bias.is_constant:
        colsum = weights.sum(axis=1, dtype=np.float64).reshape(-1)  # exact: |sum| < 2**53
        if int64_bias:
            offset = bias.data.reshape(-1).astype(np.int64)  # the input zero point is 0
        else:
            offset = bias.data.reshape(-1).astype(np.float64) - x_zp * colsum
        offset = tile_over_width(offset, geo.out_w, acc_dtype)
        acc_bound = dev * wmax + float(np.abs(bias.data.astype(np.float64)).max())
    else:
        acc_bound = dev * wmax + 2.0**63 if int64_bias else dev * wmax + 2.0**31
    if offset is not None and not int64_bias and groups == 1:
        args = (geo, x, f, bias, f_zp, m, shift, out.zero_point, lo, hi, max(-qmin, qmax), acc_bound, out.dtype)
        prepared = exact_gemm_conv(args, dtype, k)
        if prepared is not None:
            return prepared
    gemm = aligned_empty(geo.out_shape, dtype)
    acc = gemm if dtype == acc_dtype else aligned_empty(geo.out_shape, acc_dtype)
    requant = requantizer_for(ctx, m, shift, out.zero_point, lo, hi, geo.out_shape, acc_bound, int64_acc=int64_bias)
    im2col = Im2Col.build(geo, groups, dtype, x_zp, src_dtype=x.dtype)
    return ConvQuantized(im2col, weights, offset, gemm, acc, requant, x_zp, f_zp)


def exact_gemm_conv(args: tuple, dtype, k: int):
    """The 8-bit CONV_2D (constant filter and bias, groups 1) as an exact GEMM: ConvQuantizedScaled (float32) or
    ConvQuantizedFolded / FoldedRows (float64), whichever the rules below prefer and whose exactness proof holds;
    None when neither does (the caller's unfolded kernel). ``args``: _prepare_conv_scaled's; ``dtype`` the exact
    GEMM type of the unfolded kernel (exact_dtype), ``k`` the GEMM depth (KH * KW * C)."""
    geo = args[0]
    scaled_first = _float32_gemm_cheaper(geo, dtype)
    prepared = _prepare_conv_scaled(*args) if scaled_first else None
    if prepared is None:
        prepared = _prepare_conv_folded(*args)
    small = int(np.prod(geo.out_shape)) <= SMALL_EPILOGUE_VALUES  # streaming layers: requant.py's small paths
    if (prepared is None or isinstance(prepared.epilogue, MixedEpilogue)) and not (scaled_first or small):
        prepared = _prepare_conv_scaled(*args) or prepared  # exact where the fold fails (near-dead channels)
    if prepared is None and not scaled_first and small and k >= WIDE_MIN_K:
        prepared = _prepare_conv_scaled(*args)  # small outputs: the float32 GEMM before the unfolded kernel
    return prepared


#: The folded GEMM runs in float64 on a float64 im2col matrix; ConvQuantizedScaled's in float32 where that is
#: exact. The float32 GEMM is preferred (measured on the issue 16 families, 1 BLAS thread):
#: - where the im2col matrix is a copy of at least FOLD_MAX_IM2COL_VALUES values and K >= FOLD_MAX_K_PER_OUTPUT * O
#:   (ResNet-8 3x3 layers K = 144..576, O = 16..64: 0.55-0.95x the folded time);
#: - outputs of more than SMALL_EPILOGUE_VALUES values with K >= SCALED_MIN_K (MobileNet 1x1 layers K = 128..256:
#:   0.5-0.85x; the float64 GEMM reads twice the weight bytes).
#: The folded path stays ahead for 1x1 layers with K < 64 (its TruncEpilogue makes 3 passes, the ScaledEpilogue 6)
#: and for first layers; without a ReLU-like clamp the two are even (ResNet-8 1x1 shortcuts: 0.95-1.05x).
FOLD_MAX_IM2COL_VALUES = 1 << 14
FOLD_MAX_K_PER_OUTPUT = 4
#: ... and where the im2col matrix is smaller but the GEMM makes at least SCALED_MIN_MACS multiply-adds (rows * K * O)
#: with K >= FOLD_MAX_K_PER_OUTPUT * O, not 1x1: a keyword spotter's 1-D temporal layers (TC-ResNet: 7-13 rows,
#: K = 216-432, O = 32-48), whose float64 product costs more than the ScaledEpilogue's extra passes (process CPU
#: time inside real invokes, tools/profile_ops.py, medians of 2 alternated runs per step: (7, 432) -> 48
#: 16.1-17.7 -> 13.5-14.4 us, (13, 288) -> 32 12.1-12.9 -> 12.0-12.2 us, (13, 216) -> 32 10.7-11.0 -> 10.0-11.1 us,
#: (7, 288) -> 48 9.8-11.2 -> 11.2 us). No layer of the zoo's and bench_families' other models changes path.
SCALED_MIN_MACS = 1 << 16
SCALED_MIN_K = 64
#: 1x1 stride-1 unpadded layers (ConvQuantizedFoldedRows when folded, which a depthwise before them can feed:
#: depthwise_into_rows.py) take the float32 GEMM from this K on. Measured inside real invokes (per step, medians
#: of 3 alternated runs, 1 thread): K = 64 folded and fused with its depthwise, DS-CNN 25x5x64 -> 64 pairs
#: 78-80 -> 69-71 us, VWW MobileNet 12x12x64 -> 64 pair 100 -> 84 us; at K = 128 even (6x6x128 pairs 67-71 ->
#: 67-68 us), at K = 256 slower (3x3x256 -> 256 60 -> 74 us).
POINTWISE_SCALED_MIN_K = 128
#: The folded FoldedEpilogue's 2 numpy calls (clip, casting floor; 3 up to requant.FLOOR_ASSIGN_MAX_VALUES: clip,
#: floor, assignment) against TruncEpilogue's 3 (clip, truncating conversion, uint8 add; about 0.6x the per-value
#: cost): even at about this many values (kws MobileNet layers).
TRUNC_MIN_VALUES = 4096
#: ConvQuantizedScaled multiplies RowBands (KH GEMMs over horizontal windows, about 1/KH of the im2col copy) when
#: the filter has several rows of at least this many values (KW * C); below, the im2col matrix.
BAND_MIN_COLUMNS = 16
#: First layers taking the transposed im2col matrix (Im2ColT) multiply it in ConvQuantizedScaled's float32 GEMM
#: (exact by its 2^24 bound, checked at prepare) rather than the folded float64 one when K >= this many times O: the
#: float32 copy and GEMM save more than the ScaledEpilogue's extra passes cost where the matrix (M*K) is large
#: against the output (M*O). Measured (tools/profile_ops.py, 1 thread): VWW MobileNet 3x3 stride-2 RGB stem
#: (K = 27, O = 8) 94-96 -> 84-88 us; slower on ResNet-8's (K = 27, O = 16: 49-52 -> 58-59 us) and DS-CNN's
#: (K = 40, O = 64: 27-29 -> 31-32 us), which stay folded.
STEM_SCALED_MIN_K_PER_OUTPUT = 3
#: Layers of at most WIDE_MAX_ROWS output pixels (late 1x1 layers, squeeze-excite gates, classifier convs) whose
#: GEMM has at least WIDE_MIN_WEIGHTS weights take the float32 GEMM: with few rows the product is bound by the bytes
#: of weights it reads (evicted from the caches by the layers before it), half of the folded float64 ones.
#: From 2^15 on: a 129 x 128 one-pixel layer fed by a streaming block's whole-window depthwise lost that fusion
#: (the depthwise writes only into ConvQuantizedFoldedRows): 5.6 -> 10.3 us; 576 -> 144 (83K weights) 76-80 ->
#: 49-51 us and EfficientNet's 4x4 80 -> 480 (39K) gain.
WIDE_MAX_ROWS = 16
WIDE_MIN_WEIGHTS = 1 << 15
#: Outputs of at most SMALL_EPILOGUE_VALUES values whose fold fails try ConvQuantizedScaled from this K on
#: before the unfolded ConvQuantized (squeeze-excite reductions 1152 -> 48).
WIDE_MIN_K = 64


#: Inputs of fewer channels than this are padded in the GEMM's float type (the input converted once, then a plain
#: copy of the windows) rather than in their own (the windows' short rows converted one by one): measured 0.8x on
#: 3-channel first layers, even or slightly slower from 16 channels on.
PAD_IN_FLOAT_BELOW_CHANNELS = 8
#: The folded GEMM of inputs of at most this many channels takes the transposed im2col matrix (Im2ColT): measured
#: 0.55-0.9x on 1-3 channel first layers (stride 1 and 2), even on a 3-channel stride-2 one.
TRANSPOSED_MAX_CHANNELS = 3
#: ConvQuantizedFoldedRows of 1x1 layers over at most this many input channels (and more than
#: SMALL_EPILOGUE_VALUES outputs) keeps [A, 1] transposed: the input is copied over whole channel planes instead of
#: 8-value rows (0.8-0.85x at 8 channels; slower from 16 on).
ROWS_TRANSPOSED_MAX_CHANNELS = 8


def _padded_type(geo: Geometry, src_dtype, dtype):
    """The type of the padded input buffer the windows are copied from (PAD_IN_FLOAT_BELOW_CHANNELS)."""
    return dtype if geo.in_c < PAD_IN_FLOAT_BELOW_CHANNELS else src_dtype


def _transposed_stem(geo: Geometry, itemsize: int) -> bool:
    """Whether the im2col matrix is laid out transposed (Im2ColT, TRANSPOSED_MAX_CHANNELS): first layers of at
    most that many channels, not 1x1 stride 1, whose matrix of ``itemsize``-byte values fits one block (the
    folded float64 GEMM's and ConvQuantizedScaled's float32 one; the latter's exactness is its own 2^24 bound)."""
    pointwise = geo.filter_h == geo.filter_w == geo.stride_h == geo.stride_w == 1
    k = geo.filter_h * geo.filter_w * geo.in_c
    small_enough = itemsize * (k + 1) * geo.batches * geo.out_h * geo.out_w <= IM2COL_BLOCK_BYTES
    return geo.in_c <= TRANSPOSED_MAX_CHANNELS and not pointwise and small_enough


def _float32_gemm_cheaper(geo: Geometry, dtype) -> bool:
    """Whether ConvQuantizedScaled's float32 GEMM is preferred over the folded float64 one: stems
    (STEM_SCALED_MIN_K_PER_OUTPUT), few rows of many weights (WIDE_MAX_ROWS, WIDE_MIN_WEIGHTS), large outputs from
    SCALED_MIN_K / POINTWISE_SCALED_MIN_K, and not-1x1 layers with K >= FOLD_MAX_K_PER_OUTPUT * O whose im2col
    matrix has FOLD_MAX_IM2COL_VALUES values or whose GEMM makes SCALED_MIN_MACS multiply-adds (1-D temporal
    layers)."""
    if dtype != np.float32:
        return False
    k = geo.filter_h * geo.filter_w * geo.in_c
    if _transposed_stem(geo, 4) and k >= STEM_SCALED_MIN_K_PER_OUTPUT * geo.out_c:
        return True
    rows = geo.batches * geo.out_h * geo.out_w
    if rows <= WIDE_MAX_ROWS and (k + 1) * geo.out_c >= WIDE_MIN_WEIGHTS:
        return True  # few rows, large weights: the GEMM reads its weights, half the bytes in float32
    pointwise = geo.filter_h == geo.filter_w == geo.stride_h == geo.stride_w == 1 and not geo.padded
    if rows * geo.out_c > SMALL_EPILOGUE_VALUES and k >= (POINTWISE_SCALED_MIN_K if pointwise else SCALED_MIN_K):
        return True
    large = rows * k >= FOLD_MAX_IM2COL_VALUES or rows * k * geo.out_c >= SCALED_MIN_MACS
    return not pointwise and k >= FOLD_MAX_K_PER_OUTPUT * geo.out_c and large


@dataclass(frozen=True, eq=False)
class ConvQuantizedScaled(BoundCalls):
    """CONV_2D uint8 / int8 (int8 / uint8 output, constant weights and bias, groups 1) as an exact float32 GEMM of
    the raw input values and a ones column against [w - w_zp; offset] (the C++ accumulators: |every partial sum|
    <= max|x| * sum|w - w_zp| + |offset| <= 2^24, checked at prepare) and the ScaledEpilogue (requant_trunc.py:
    float64 scale and constant, clip, truncation into the output's uint8 view), proven exact at prepare on every
    channel (its 2^53 bound, else its monotone step check). Chosen where the float32 GEMM is cheaper
    (_float32_gemm_cheaper: stems, and few-row layers of many weights, WIDE_MAX_ROWS / WIDE_MIN_WEIGHTS), and where
    the folded float64 GEMM's bound fails on some channel (near-dead channels of no-activation layers: their
    ScaledEpilogue costs less than the Requantizer; small outputs from WIDE_MIN_K on)."""

    im2col: Im2Col | RowBands  # float32 raw input values, border = the input zero point, last column ones
    weights: np.ndarray  # (1, K+1, O) (Im2Col) or (KH, KW*C+1, O) (RowBands) float32 w - w_zp and the offset row
    sums: np.ndarray  # (N, OH, OW, O) float32 GEMM output: the accumulators
    epilogue: ScaledEpilogue

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The op's numpy calls on ``x`` and ``out`` (im2col.gemm_calls, requant.epilogue_calls)."""
        return (*gemm_calls(self.im2col, x, self.weights, self.sums), *epilogue_calls(self.epilogue, self.sums, out))

    def feeding(self, consumer):
        """This op storing into the output of a RESHAPE copy that alone reads its output (ops/into_reshape.py)."""
        return into_reshape(self, consumer, self.sums.shape)


def _conv_folding(geo, x, f, bias, f_zp, m, shift, zero_point, lo, hi, max_abs_x, acc_bound):
    """(w, folding): the (K, O) int64 weights w - w_zp and fold_requantization's result (None when it fails)."""
    w, offset = _conv_offset(x, f, bias, f_zp)
    folding = fold_requantization(
        m, shift, zero_point, lo, hi, offset, np.abs(w).sum(axis=0), max_abs_x, acc_bound, geo.out_shape, x.dtype
    )
    return w, folding


def _conv_offset(x, f, bias, f_zp):
    """The (K, O) int64 weights w - w_zp and the (O,) int64 offset bias - x_zp * sum(w - w_zp)."""
    w = gemm_weights(f.data, 1, np.int64, f_zp)[0]  # (K, O) exact integers
    return w, bias.data.reshape(-1).astype(np.int64) - x.zero_point * w.sum(axis=0)


def _prepare_conv_scaled(geo, x, f, bias, f_zp, m, shift, zero_point, lo, hi, max_abs_x, acc_bound, out_dtype):
    """ConvQuantizedScaled, or None when the float32 GEMM is not exact or the ScaledEpilogue's proof fails."""
    w, offset = _conv_offset(x, f, bias, f_zp)
    bounds = max_abs_x * np.abs(w).sum(axis=0) + np.abs(offset)  # every partial sum, the ones column's included
    if int(bounds.max()) > FLOAT32_EXACT:
        return None
    epilogue = scaled_epilogue(m, shift, zero_point, lo, hi, bounds, geo.out_shape, out_dtype)
    if epilogue is None:
        return None
    bands_bytes = (
        4 * geo.batches * (geo.in_h + geo.filter_h * geo.dilation_h) * geo.out_w * (geo.filter_w * geo.in_c + 1)
    )
    if _transposed_stem(geo, 4):
        im2col = Im2ColT.build(geo, np.float32, x.zero_point, _padded_type(geo, x.dtype, np.float32), ones=True)
        weights = np.concatenate([w, offset[None]]).astype(np.float32)[None]
    elif geo.filter_h > 1 and geo.filter_w * geo.in_c >= BAND_MIN_COLUMNS and bands_bytes <= IM2COL_BLOCK_BYTES:
        im2col = RowBands.build(geo, np.float32, x.zero_point, _padded_type(geo, x.dtype, np.float32), ones=True)
        weights = row_band_weights(w, geo, offset, np.float32)
    else:
        im2col = Im2Col.build(
            geo, 1, np.float32, x.zero_point, src_dtype=_padded_type(geo, x.dtype, np.float32), ones=True
        )
        weights = np.concatenate([w, offset[None]]).astype(np.float32)[None]
    return ConvQuantizedScaled(im2col, weights, aligned_empty(geo.out_shape, np.float32), epilogue)


@dataclass(frozen=True, eq=False)
class ConvQuantizedFolded(BoundCalls):
    """CONV_2D uint8 / int8 with constant weights and bias whose requantization folds into the GEMM
    (litert_py.ops.conv.requant, exactness bound checked at prepare): one float64 GEMM of the raw input values
    plus a ones column against (w - w_zp) * scale[c] plus the constant row, then clip and floor."""

    im2col: Im2Col  # float64 raw input values, border = the input zero point, last column ones
    weights: np.ndarray  # (1, K+1, O) float64
    acc: np.ndarray  # (N, OH, OW, O) float64
    epilogue: FoldedEpilogue

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The op's numpy calls on ``x`` and ``out`` (im2col.gemm_calls, requant.epilogue_calls)."""
        return (*gemm_calls(self.im2col, x, self.weights, self.acc), *epilogue_calls(self.epilogue, self.acc, out))

    def feeding(self, consumer):
        """This op storing into the output of a RESHAPE copy that alone reads its output (ops/into_reshape.py)."""
        return into_reshape(self, consumer, self.acc.shape)


@dataclass(frozen=True, eq=False)
class ConvQuantizedFoldedRows(BoundCalls):
    """ConvQuantizedFolded when the im2col rows are the input's own rows (1x1 stride 1, or one window over the
    whole unpadded input; groups 1): the input is copied into the first K columns of [A, 1] and multiplied,
    without Im2Col's window logic (small streaming layers pay per Python call). The product is
    ``common.small_gemm``'s (np.dot for few rows; the folded GEMM is exact whatever the order: requant.py's
    bound)."""

    a: np.ndarray  # (M, K+1) float64, last column ones
    a_input: np.ndarray  # the first K columns of a, viewed with the input's shape (no reshape per invoke)
    weights: np.ndarray  # (K+1, O) float64
    acc: np.ndarray  # (N, OH, OW, O) float64, the epilogue's input
    acc_rows: np.ndarray  # (M, O) view of acc: the GEMM's output
    epilogue: FoldedEpilogue
    product: object  # np.dot or np.matmul (common.small_gemm); acc_rows is C-contiguous, float64

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The op's numpy calls on ``x`` and ``out``: the copy into the rows, then ``tail_calls``."""
        return ((np.copyto, (self.a_input, x), {}), *self.tail_calls(out))

    def tail_calls(self, out: np.ndarray) -> tuple:
        """The product and the epilogue's calls into ``out``."""
        product = (self.product, (self.a, self.weights), {"out": self.acc_rows})
        return (product, *epilogue_calls(self.epilogue, self.acc, out))

    def reading(self, index: tuple) -> ConvQuantizedFoldedRowsView:
        """This op reading its input as the view ``source[index]`` (ops/slice_views.py)."""
        return ConvQuantizedFoldedRowsView(*(getattr(self, f.name) for f in fields(self)), index)

    def reading_ring(self, ring: np.ndarray, head: np.ndarray, kept: np.ndarray) -> ConvQuantizedFoldedRowsRing:
        """This op reading its input ``ring[index]`` from a persistent ring buffer's array and shifting the array
        after copying it into its rows (ops/ring_buffer.py's RingBufferInPlace): ConvQuantizedFoldedRowsRing."""
        index = getattr(self, "index", (Ellipsis,))
        base = (getattr(self, f.name) for f in fields(ConvQuantizedFoldedRows))
        return ConvQuantizedFoldedRowsRing(*base, ring[index], head, kept)


@dataclass(frozen=True, eq=False)
class ConvQuantizedFoldedRowsView(ConvQuantizedFoldedRows):
    """ConvQuantizedFoldedRows whose input is ``source[index]``, a strided view of the tensor a chain of slicing
    steps would have copied it from (ops/slice_views.py): np.copyto copies the view's values into the GEMM's
    rows as it copied the slice's, so the result is the same, without the slice's copy."""

    index: tuple

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """ConvQuantizedFoldedRows's calls on the view ``x[index]`` (made once) and ``out``."""
        return super().bound_calls(x[self.index], out)

    def reading(self, index: tuple):  # already fused: not again
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class ConvQuantizedFoldedRowsRing(ConvQuantizedFoldedRows):
    """ConvQuantizedFoldedRows whose input is ``window``, a view of a persistent ring buffer's array (a streaming
    model's first layer over its input ring, ops/ring_buffer.py's RingBufferInPlace): np.copyto copies the
    window's values into the GEMM's rows, the one read of it, then the ring is shifted for the next invoke
    (``head[...] = kept``); the rows are those the concatenation tensor would have given."""

    window: np.ndarray
    head: np.ndarray
    kept: np.ndarray

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The window into the rows, the ring's shift (the window is read: ``head[...] = kept``, the variable's
        value), then ConvQuantizedFoldedRows's ``tail_calls`` into ``out``; ``x`` (the concatenation's tensor,
        not written: the ring holds its values) is not read."""
        shift = (np.copyto, (self.head, self.kept), {})
        return (np.copyto, (self.a_input, self.window), {}), shift, *self.tail_calls(out)

    def reading(self, index: tuple):  # already fused: not again
        raise NotImplementedError

    def reading_ring(self, ring, head, kept):  # already reading a ring: not again
        return None


def _prepare_conv_folded(
    geo: Geometry,
    x: TensorInfo,
    f: TensorInfo,
    bias: TensorInfo,
    f_zp: int,
    m,
    shift,
    zero_point: int,
    lo: int,
    hi: int,
    max_abs_x: int,
    acc_bound: float,
    out_dtype,
):
    """The folded prepared op, or None when requant.py's bound fails. Outputs of more than
    SMALL_EPILOGUE_VALUES values take requant_trunc.TruncEpilogue (ReLU-like or the sign path) where its
    bound holds on every channel and the layer has at least TRUNC_MIN_VALUES outputs or requant.py's
    epilogue is not the plain FoldedEpilogue (LateZeroPointEpilogue broadcasts per-channel bounds: 2-4x slower);
    small ones keep requant.py's small epilogues (streaming fusions). Where that bound fails, a large
    LateZeroPointEpilogue or any MixedEpilogue gives way to requant_trunc.fold_truncating_proven when its proof
    holds (small SmallLateZeroPointEpilogue layers keep theirs: 3.5 vs 5.1 us on a one-pixel 24->96 layer)."""
    x_zp = x.zero_point
    w, folding = _conv_folding(geo, x, f, bias, f_zp, m, shift, zero_point, lo, hi, max_abs_x, acc_bound)
    values = int(np.prod(geo.out_shape))
    trunc = None
    if values > SMALL_EPILOGUE_VALUES and (
        values >= TRUNC_MIN_VALUES or type(getattr(folding, "epilogue", None)) is not FoldedEpilogue
    ):
        offset = _conv_offset(x, f, bias, f_zp)[1]
        bounds = max_abs_x * np.abs(w).sum(axis=0) + np.abs(offset)
        trunc = fold_truncating(
            m, shift, zero_point, lo, hi, offset, bounds, acc_bound, out_dtype, out_shape=geo.out_shape
        )
    if trunc is None and type(getattr(folding, "epilogue", None)) in (LateZeroPointEpilogue, MixedEpilogue):
        offset = _conv_offset(x, f, bias, f_zp)[1]
        bounds = max_abs_x * np.abs(w).sum(axis=0) + np.abs(offset)
        args = (m, shift, zero_point, lo, hi, offset, bounds, acc_bound, geo.out_shape, out_dtype)
        trunc = fold_truncating_proven(*args)
    if trunc is not None:
        epilogue = trunc.epilogue if isinstance(trunc, ProvenFolding) else trunc.epilogue(geo.out_shape)
        scale, const = trunc.scale, trunc.const
    elif folding is None:
        return None
    else:
        scale, const, epilogue = folding.scale, folding.const, _per_value_half(folding.epilogue)
    weights = np.empty((1, w.shape[0] + 1, w.shape[1]))
    np.multiply(w, scale, out=weights[0, :-1])  # |w * M| < 2^40: exact
    weights[0, -1] = const
    padded_type = _padded_type(geo, x.dtype, np.float64)
    pointwise = geo.filter_h == geo.filter_w == geo.stride_h == geo.stride_w == 1
    if _transposed_stem(geo, 8):  # the same sums, another layout
        im2col_t = Im2ColT.build(geo, np.float64, x_zp, padded_type, ones=True)
        return ConvQuantizedFolded(im2col_t, weights, aligned_empty(geo.out_shape, np.float64), epilogue)
    im2col = Im2Col.build(geo, 1, np.float64, x_zp, src_dtype=padded_type, ones=True)
    if im2col.pointwise:
        a = im2col.blocks[0][4][0]
        a_input = a[:, :-1].reshape(geo.batches, geo.in_h, geo.in_w, geo.in_c)  # splits axes: a view
        if pointwise and geo.in_c <= ROWS_TRANSPOSED_MAX_CHANNELS and values > SMALL_EPILOGUE_VALUES:
            at = aligned_empty((geo.in_c + 1, a.shape[0]), np.float64)  # [A, 1] transposed: the same GEMM
            at[-1] = 1
            a = at.T
            a_input = at[:-1].reshape(geo.in_c, geo.batches, geo.in_h, geo.in_w).transpose(1, 2, 3, 0)
        assert np.shares_memory(a_input, a)
        acc = aligned_empty(geo.out_shape, np.float64)
        return ConvQuantizedFoldedRows(
            a, a_input, weights[0], acc, acc.reshape(a.shape[0], geo.out_c), epilogue, small_gemm(a.shape[0])
        )
    return ConvQuantizedFolded(im2col, weights, aligned_empty(geo.out_shape, np.float64), epilogue)


def _per_value_half(epilogue):
    """A FoldedEpilogue's sign-path ``half`` (a (OW*O,) row broadcast over its (rows, OW*O) scratch) as one value
    per output, up to requant_trunc.FULL_CONSTANTS_MAX_VALUES values: the same copysign without broadcasting
    (15x13x8 outputs 1.55 -> 1.13 us, 30x25x8 4.4 -> 3.3 us); other epilogues unchanged."""
    if type(epilogue) is not FoldedEpilogue or epilogue.half is None or epilogue.half.ndim != 1:
        return epilogue
    if epilogue.sign.size > FULL_CONSTANTS_MAX_VALUES or epilogue.sign.shape[-1] != epilogue.half.size:
        return epilogue
    half = aligned_empty(epilogue.sign.shape, np.float64)
    half[...] = epilogue.half
    return replace(epilogue, half=half)


@dataclass(frozen=True, eq=False)
class ConvHybrid:
    """CONV_2D with float input and int8 filter: per-batch input quantization, an exact integer GEMM, then
    float32 scaling in the reference's order, bias and the float clamp. A filter holding -128 in the SSE blocks
    adds the wheel's dot-product error (``sse_fix``, HybridSseFix) to the accumulators first."""

    im2col: Im2Col  # float32 holding the quantized input (q or q - zp), border 0
    weights: np.ndarray  # (G, Kg, Og)
    gemm: np.ndarray | None  # float64 GEMM output when the dot products may exceed 2**24; None: into the output
    filter_scale: np.float32  # per-tensor (symmetric) path
    channel_scale: np.ndarray | None  # (OW, O) float32: per-channel (asymmetric) path
    bias: np.ndarray | None  # (OW, O) float32; None: the bias input, read at every invoke
    out_min: np.float32
    out_max: np.float32
    sse_fix: HybridSseFix | None = None  # with a float64 ``gemm``

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        asymmetric = self.channel_scale is not None
        if self.sse_fix is None:
            q, sf = quantize_batches(x, asymmetric=asymmetric)
        else:
            raw, sf, zp = quantize_batches_raw(x, asymmetric)
            zp = np.zeros(x.shape[0], np.float32) if zp is None else zp
            q = raw - zp.reshape(-1, 1, 1, 1)
        if self.channel_scale is None:
            sf = sf * self.filter_scale  # scaling_factors[b] *= filter scale (float32)
        gemm = out if self.gemm is None else self.gemm
        self.im2col.gemm(q, self.weights, gemm)
        if self.sse_fix is not None:
            self.sse_fix.add(gemm, raw, zp)
        if gemm is not out:
            np.copyto(out, gemm, casting="same_kind")  # static_cast<float>(int32 acc): round to nearest even
        if self.channel_scale is not None:  # f32(f32(acc) * s_w[c]) * sf
            np.multiply(out, self.channel_scale, out=out)
        np.multiply(out, sf.reshape(-1, 1, 1, 1), out=out)
        np.add(out, inputs[BIAS].reshape(-1) if self.bias is None else self.bias, out=out)
        clip_ufunc(out, self.out_min, self.out_max, out=out)


def prepare_conv_hybrid(ctx: OpContext, geo: Geometry, groups: int):
    f, bias = ctx.input(FILTER), ctx.input(BIAS)
    scales = hybrid_scales(ctx, f)
    per_channel = groups != 1 or bool((scales != scales[0]).any())
    if per_channel:  # EvalHybridPerChannel reads s_w[output channel] (checks of ai-edge-litert 2.3.0)
        qd = f.quantization.quantized_dimension
        ctx.check(qd == 0, f"hybrid per-channel or grouped CONV_2D needs the filter quantized on dimension 0, got {qd}")
        ctx.check(
            scales.size == geo.out_c,
            f"hybrid per-channel or grouped CONV_2D needs {geo.out_c} filter scales, got {scales.size}",
        )
    if geo.empty:
        return EMPTY_OUTPUT
    wabs = int(np.abs(f.data.reshape(geo.out_c, -1).astype(np.int64)).sum(axis=1).max())
    dtype = exact_dtype((255 if per_channel else 127) * wabs)  # |q - zp| <= 255, |q| <= 127
    # measured on the wheel: only the per-tensor path (EvalHybrid) with a filter row count not a multiple of 4
    # runs the SSE dot product; 4k rows and the per-channel path compute the true products
    sse_fix = HybridSseFix.build(f.data, geo) if not per_channel and geo.out_c % 4 else None
    if sse_fix is not None:
        dtype = np.dtype(np.float64)  # the exact sums and the SSE error, integers far below 2^53
    lo, hi = float_activation_range(ctx.options.fused_activation_function)
    return ConvHybrid(
        Im2Col.build(geo, groups, np.float32),
        gemm_weights(f.data, groups, dtype),
        None if dtype == np.float32 else np.empty(geo.out_shape),
        scales[0],
        tile_over_width(scales, geo.out_w, np.float32) if per_channel else None,
        tile_over_width(bias.data, geo.out_w, np.float32) if bias.is_constant else None,
        lo,
        hi,
        sse_fix,
    )
