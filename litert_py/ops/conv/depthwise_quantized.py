"""DEPTHWISE_CONV_2D, quantized (uint8 / int8 per-channel / int16x8, bit-exact with BUILTIN_REF) and hybrid (float32
input, int8 filter) prepared ops: `DepthwiseConvQuantized` (a filter or bias input), `DepthwiseConvQuantizedConstant`
(its bound plan for constant weights), `DepthwiseConvQuantizedFolded`, `DepthwiseConvWholeFolded` (whole_window.py),
`DepthwiseConvHybrid`. The sources matched, the paths and the measured speed are described with CONV_2D in conv2d.py;
depthwise.py's registered prepare_depthwise_conv_2d dispatches here, and the tap views (`DepthwiseTaps`) are shared with
the float path there. Constant-filter uint8 / int8 layers over more than depthwise_rows.ROWS_MIN_VALUES output values
(or stride-1 layers below that) whose requantization folds take depthwise_rows's `DepthwiseConvQuantizedRows` instead of
`DepthwiseConvQuantizedFolded` (1.5-2.5x faster on 3x3 layers). Both offer ``feeding``: with the pointwise CONV_2D that
alone reads their output they become one step (depthwise_into_rows.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ...quant import (
    Requantizer,
    dtype_range,
)
from ...schema.dtypes import TensorType
from ..bound_plan import BoundCalls, run_calls
from ..common import c_einsum, clip_ufunc, float_activation_range
from ..registry import OpContext, TensorInfo
from .common import (
    BIAS,
    EMPTY_OUTPUT,
    FILTER,
    INPUT,
    OUTPUT,
    Geometry,
    add_offset,
    bias_tile,
    exact_dtype,
    hybrid_scales,
    offset_calls,
    quantization_params,
    quantize_batches,
    quantized_weights,
    requantizer_for,
    tile_over_width,
)
from .conv2d_quantized import exact_gemm_conv
from .depthwise_into_rows import DepthwiseIntoRows, feeding
from .depthwise_rows import prepare_depthwise_rows
from .requant import (
    FoldedEpilogue,
    MixedEpilogue,
    epilogue_calls,
    fold_requantization,
)
from .taps import DepthwiseTaps, exact_tap_weights
from .whole_window import DepthwiseConvWholeFolded, tap_dot

#: Constant-filter exact depthwise sums with at least this many output channels take one np.einsum over the
#: window view (`EinsumTaps`): 1.1-3.5x faster than the stacked multiply + reduction or the tap loop from 48
#: channels on (4x4x96, 6x6x128, 25x5x64, 15x13x48 stride 2, 64x64x64), 1.3-4x slower at 8-32 channels.
EINSUM_MIN_CHANNELS = 48

#: Constant-filter layers whose requantization folds take DepthwiseConvQuantizedRows (depthwise_rows.py, 1.5-3x
#: faster) unless they are one whole-window output pixel; tests set this False to reach the paths below.
ROWS_PATH = True


#: EinsumTaps's einsum: the (KH, KW, N, OH, OW, O) window with the (KH, KW, OW, O) weights
EINSUM_SUBSCRIPTS = "ijnhwc,ijwc->nhwc"


@dataclass(frozen=True, eq=False)
class EinsumTaps:
    """DepthwiseTaps whose exact_sum is one np.einsum of the whole (KH, KW, N, OH, OW, O) window view of the
    padded buffer with the (KH, KW, OW, O) weights (tiled over the output width): one call, no products
    buffer. Exact: einsum adds in its own order, but every partial sum of the integer products is an integer
    of magnitude at most max|x| * sum|w - w_zp|, which prepare's exact_dtype keeps within the accumulation
    type's exact range (2^24 for float32, 2^53 for float64): any order gives the exact sum."""

    taps: DepthwiseTaps  # built with a padded buffer (copy=True): `window` is set

    def __call__(self, x: np.ndarray):
        return self.taps(x)  # fills the padded buffer

    def fill_calls(self, x: np.ndarray) -> tuple:
        return self.taps.fill_calls(x)

    def tap_views(self, x: np.ndarray):
        return self.taps.tap_views(x)

    def exact_sum_calls(self, views, weights: np.ndarray, out: np.ndarray, tmp=None) -> tuple:
        """The einsum, as a (function, args, kwargs) triple (DepthwiseTaps.exact_sum_calls's form)."""
        return ((c_einsum, (EINSUM_SUBSCRIPTS, self.taps.window, weights), {"out": out}),)

    def exact_sum(self, views, weights: np.ndarray, out: np.ndarray, tmp=None) -> None:
        run_calls(self.exact_sum_calls(views, weights, out, tmp))


def _exact_taps(geo: Geometry, multiplier: int, dtype, pad_value, f: np.ndarray, filter_zp: int = 0):
    """(taps, weights, scratch) for the exact tap sums of a constant filter: EinsumTaps from
    EINSUM_MIN_CHANNELS output channels on, else DepthwiseTaps with exact_tap_weights."""
    taps = DepthwiseTaps.build(geo, multiplier, dtype, pad_value, copy=True)
    if geo.out_c >= EINSUM_MIN_CHANNELS:
        w = quantized_weights(f.reshape(geo.filter_h, geo.filter_w, 1, geo.out_c), filter_zp, dtype)
        w = np.ascontiguousarray(np.broadcast_to(w, (geo.filter_h, geo.filter_w, geo.out_w, geo.out_c)))
        return EinsumTaps(taps), w, None
    weights, scratch = exact_tap_weights(f, geo, dtype, filter_zp)
    return taps, weights, scratch


@dataclass(frozen=True, eq=False)
class DepthwiseConvQuantized:
    """DEPTHWISE_CONV_2D uint8 / int8 / int16x8: per-tap exact multiply-accumulate (float32 or float64), the
    per-channel offset bias - x_zp * sum(w - w_zp), then the requantization into the output."""

    taps: DepthwiseTaps | EinsumTaps  # raw input values in the accumulation type, border = input zp
    weights: tuple | np.ndarray | None  # w - w_zp for taps.exact_sum; None: from the filter input
    offset: np.ndarray | None  # (OW, O) float64 (int64 with an int64 bias); None: made at every invoke
    sums: np.ndarray  # (N, OH, OW, O) tap sums
    scratch: np.ndarray | None  # one tap's products (None with EinsumTaps)
    acc: np.ndarray  # (N, OH, OW, O) accumulators: float64 (may be `sums` itself) or int64 (int64 bias)
    requant: Requantizer
    input_zp: int
    filter_zp: int
    has_bias: bool
    zp_term: np.ndarray | None  # (O,) -x_zp * sum over the taps of (w - w_zp), for constant weights

    def __call__(self, inputs, outputs):
        # a filter or bias input (offset None: DepthwiseConvQuantizedConstant runs the constant case)
        views = self.taps(inputs[INPUT])
        weights, zp_term = self.weights, self.zp_term
        if weights is None:
            weights = quantized_weights(inputs[FILTER].reshape(len(views), -1), self.filter_zp, self.sums.dtype)
        if zp_term is None:
            zp_term = -self.input_zp * weights.sum(axis=0, dtype=np.float64)
        offset = zp_term.astype(self.acc.dtype)
        if self.has_bias:
            offset = offset + inputs[BIAS].astype(self.acc.dtype)
        self.taps.exact_sum(views, weights, self.sums, self.scratch)
        add_offset(self.acc, self.sums, offset)
        self.requant(self.acc, outputs[OUTPUT])


@dataclass(frozen=True, eq=False)
class DepthwiseConvQuantizedConstant(BoundCalls, DepthwiseConvQuantized):
    """DepthwiseConvQuantized with constant weights and offset (int16x8, or 8-bit layers whose requantization does
    not fold): a bound plan (ops/bound_plan.BoundCalls) of the same calls, the Requantizer one call."""

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The op's numpy calls on ``x`` and ``out``: the fill, the taps' exact sums, the offset, the
        requantization."""
        taps = self.taps
        return (
            *taps.fill_calls(x),
            *taps.exact_sum_calls(taps.tap_views(x), self.weights, self.sums, self.scratch),
            *offset_calls(self.acc, self.sums, self.offset),
            *epilogue_calls(self.requant, self.acc, out),
        )


def prepare_depthwise_quantized(ctx: OpContext, geo: Geometry, multiplier: int):
    x, f, bias, out = ctx.input(INPUT), ctx.input(FILTER), ctx.optional_input(BIAS), ctx.outputs[OUTPUT]
    expected = {np.dtype(np.uint8): ("UINT8",), np.dtype(np.int8): ("INT8", "INT4"), np.dtype(np.int16): ("INT8",)}
    ctx.check(
        f.type_name in expected[x.dtype],
        f"{x.type_name} DEPTHWISE_CONV_2D needs a {' or '.join(expected[x.dtype])} filter, got {f.type_name}",
    )
    uint8 = x.dtype == np.uint8
    m, shift, lo, hi = quantization_params(ctx, x, f, bias, geo.out_c, legacy_uint8=uint8)
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
    dtype = exact_dtype(max(-qmin, qmax) * wmax)
    if f.is_constant:
        sum_taps, weights, scratch = _exact_taps(geo, multiplier, dtype, x_zp, f.data, f_zp)
    else:
        sum_taps = DepthwiseTaps.build(geo, multiplier, dtype, x_zp, copy=True)
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
        offset = tile_over_width(offset, geo.out_w, acc_dtype)
    if geo.in_c == 1 and offset is not None and x.dtype == np.int8:
        args = (geo, x, f, bias, f_zp, m, shift, out.zero_point, lo, hi, max(-qmin, qmax), dev * wmax + bias_max)
        conv = _one_channel_as_conv(args, out.dtype, dtype)
        if conv is not None:
            return conv
    if offset is not None and not int64_bias:
        folded = _prepare_depthwise_folded(
            geo,
            x,
            f,
            bias,
            f_zp,
            multiplier,
            m,
            shift,
            out.zero_point,
            lo,
            hi,
            max(-qmin, qmax),
            dev * wmax + bias_max,
            dtype,
        )
        if folded is not None:
            return folded
    sums = np.empty(geo.out_shape, dtype)
    acc = sums if dtype == acc_dtype else np.empty(geo.out_shape, acc_dtype)
    requant = requantizer_for(
        ctx, m, shift, out.zero_point, lo, hi, geo.out_shape, dev * wmax + bias_max, int64_acc=int64_bias
    )
    kind = DepthwiseConvQuantized if offset is None else DepthwiseConvQuantizedConstant
    return kind(
        sum_taps,
        weights,
        offset,
        sums,
        scratch,
        acc,
        requant,
        x_zp,
        f_zp,
        bias is not None,
        zp_term,
    )


def _one_channel_as_conv(args: tuple, out_dtype, dtype):
    """An int8 depthwise layer over one input channel (a first layer on a mono spectrogram or image, depth
    multiplier M) as the CONV_2D it is: output channel o holds ``sum over taps (x - x_zp) * f[0, ky, kx, o] +
    bias[o]``, the accumulator of a CONV_2D with filter ``f_conv[o, ky, kx, 0] = f[0, ky, kx, o]``, requantized by
    the same per-channel (M, shift) (reference_integer_ops/depthwise_conv.h DepthwiseConvPerChannel and conv.h
    ConvPerChannel: the same sums, MultiplyByQuantizedMultiplier, offset and clamp). So conv2d_quantized's exact
    GEMM paths apply, with their own exactness proofs: an im2col GEMM against the M filters, where the depthwise
    kernels would run M channels of one-channel windows (a 5x5 stride-2 layer 180x180x1 -> 88x88x8: ~2.3 ms as
    an einsum over the strided windows). None where neither GEMM path's proof holds (the depthwise kernels then).
    int8 only: uint8 (reference/depthwiseconv_uint8.h, its own rounding modes) and int16 (int64 bias) layers keep
    the depthwise kernels.
    ``args``: prepare_depthwise_quantized's (geo, x, f, bias or None, f_zp, m, shift, zero point, lo, hi, max|x|,
    accumulator bound)."""
    geo, x, f, bias, *rest = args
    o, kh, kw = geo.out_c, geo.filter_h, geo.filter_w
    data = np.ascontiguousarray(f.data.reshape(kh, kw, o).transpose(2, 0, 1)).reshape(o, kh, kw, 1)
    f_conv = replace(f, shape=(o, kh, kw, 1), data=data)
    if bias is None:
        bias = TensorInfo(-1, "", (o,), TensorType.INT32, data=np.zeros(o, np.int32))
    return exact_gemm_conv((geo, x, f_conv, bias, *rest, out_dtype), dtype, kh * kw)


@dataclass(frozen=True, eq=False)
class DepthwiseConvQuantizedFolded(BoundCalls):
    """DEPTHWISE_CONV_2D uint8 / int8 with constant weights (and bias) whose requantization folds
    (litert_py.ops.conv.requant, exactness bound checked at prepare): the exact tap sums of the raw input
    values times (w - w_zp) (float32 or float64 as DepthwiseConvQuantized), then sums * scale[c] + the folded
    per-channel constant in float64, clip and floor (4 passes after the sums instead of 7). Scaling the sums
    rather than the weights keeps the taps in float32 where they are exact there (half the bytes). A bound plan
    (ops/bound_plan.BoundCalls): ``accumulate_calls`` then the epilogue's calls, the one listing of its numpy
    calls, which DepthwiseIntoRows runs too."""

    taps: DepthwiseTaps | EinsumTaps  # raw input values, border = input zero point
    weights: tuple | np.ndarray  # w - w_zp for taps.exact_sum_calls
    scratch: np.ndarray | None
    sums: np.ndarray  # (N, OH, OW, O) tap sums
    scale: np.ndarray  # (OW, O) float64
    const: np.ndarray  # (OW, O) float64
    acc: np.ndarray  # (N, OH, OW, O) float64
    epilogue: FoldedEpilogue | MixedEpilogue

    def bound_calls(self, x: np.ndarray, out: np.ndarray) -> tuple:
        """The op's numpy calls on ``x`` and ``out`` (accumulate_calls, requant.epilogue_calls: a MixedEpilogue's
        Requantizer is one call)."""
        return (*self.accumulate_calls(x), *epilogue_calls(self.epilogue, self.acc, out))

    def accumulate_calls(self, x: np.ndarray) -> tuple:
        """The folded accumulators sums * scale + const of the input ``x`` into ``acc``, as (function, args,
        kwargs) triples: the fill of the padded buffer, the taps' exact sums (EinsumTaps's einsum, the stacked
        multiply and reduction, or the tap loop), the scale and the constant (|sum * M| < 2^53, the folding's
        bound: exact)."""
        taps, acc = self.taps, self.acc
        return (
            *taps.fill_calls(x),
            *taps.exact_sum_calls(taps.tap_views(x), self.weights, self.sums, self.scratch),
            (np.multiply, (self.sums, self.scale, acc), {}),
            (np.add, (acc, self.const, acc), {}),
        )

    def feeding(self, conv) -> DepthwiseIntoRows | None:
        """This op and ``conv``, the step that alone reads its output, as one DepthwiseIntoRows
        (depthwise_into_rows.py: the epilogue's integer values stored straight into a ConvQuantizedFoldedRows's
        float64 GEMM rows), or None when that module's bound is not checked (or for a MixedEpilogue)."""
        if isinstance(self.epilogue, MixedEpilogue):
            return None
        return feeding(self, self.epilogue, self.acc, conv)


def _prepare_depthwise_folded(
    geo: Geometry,
    x: TensorInfo,
    f: TensorInfo,
    bias: TensorInfo | None,
    f_zp: int,
    multiplier: int,
    m,
    shift,
    zero_point: int,
    lo: int,
    hi: int,
    max_abs_x: int,
    acc_bound: float,
    dtype,
):
    """The folded prepared op, or None when requant.py's bound fails."""
    taps = geo.filter_h * geo.filter_w
    w = f.data.reshape(taps, geo.out_c).astype(np.int64) - f_zp
    offset = -x.zero_point * w.sum(axis=0)
    if bias is not None:
        offset = offset + bias.data.reshape(-1).astype(np.int64)
    whole = (
        multiplier == 1
        and not geo.padded
        and geo.out_h == geo.out_w == 1
        and geo.dilation_h == geo.dilation_w == 1
        and (geo.filter_h, geo.filter_w) == (geo.in_h, geo.in_w)
    )
    if ROWS_PATH and not whole:
        rows = prepare_depthwise_rows(
            geo, x, multiplier, w, offset, (m, shift, zero_point, lo, hi, max_abs_x, acc_bound)
        )
        if rows is not None:
            return rows
    folding = fold_requantization(
        m, shift, zero_point, lo, hi, offset, np.abs(w).sum(axis=0), max_abs_x, acc_bound, geo.out_shape, x.dtype
    )
    if folding is None:
        return None
    if whole:
        products = np.empty((geo.batches, taps + 1, geo.out_c))
        products[:, taps] = folding.const
        taps_products = products[:, :taps].reshape(geo.batches, geo.in_h, geo.in_w, geo.in_c)  # a view
        assert np.shares_memory(taps_products, products)
        acc = np.empty(geo.out_shape)
        return DepthwiseConvWholeFolded(
            (w * folding.scale).reshape(geo.in_h, geo.in_w, geo.in_c),
            products,
            taps_products,
            acc,
            acc.reshape(geo.batches, geo.out_c),
            folding.epilogue,
            tap_dot(products, acc.reshape(geo.batches, geo.out_c)),
        )
    sum_taps, weights, scratch = _exact_taps(geo, multiplier, dtype, x.zero_point, f.data, f_zp)
    return DepthwiseConvQuantizedFolded(
        sum_taps,
        weights,
        scratch,
        np.empty(geo.out_shape, dtype),
        tile_over_width(folding.scale, geo.out_w, np.float64),
        tile_over_width(folding.const, geo.out_w, np.float64),
        np.empty(geo.out_shape),
        folding.epilogue,
    )


@dataclass(frozen=True, eq=False)
class DepthwiseConvHybrid:
    """DEPTHWISE_CONV_2D with float input and int8 filter: per-batch asymmetric input quantization (q - zp),
    exact per-tap sums, then f32(acc) * f32(s_w[c] * sf), bias and the float clamp."""

    taps: DepthwiseTaps | EinsumTaps  # float32 holding q - zp, border 0
    weights: tuple | np.ndarray  # for taps.exact_sum
    sums: np.ndarray  # (N, OH, OW, O) float64 when the sums may exceed 2**24; else the output is used
    scratch: np.ndarray | None
    scale: np.ndarray  # (O,) float32 filter scales
    bias: np.ndarray | None  # (OW, O) float32
    dynamic_bias: bool
    out_min: np.float32
    out_max: np.float32

    def __call__(self, inputs, outputs):
        out = outputs[OUTPUT]
        q, sf = quantize_batches(inputs[INPUT], asymmetric=True)
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


def prepare_depthwise_hybrid(ctx: OpContext, geo: Geometry, multiplier: int):
    f, bias = ctx.input(FILTER), ctx.optional_input(BIAS)
    scales = hybrid_scales(ctx, f)
    qd = f.quantization.quantized_dimension
    ctx.check(
        0 <= qd < 4 and scales.size == f.shape[qd],
        f"hybrid DEPTHWISE_CONV_2D: {scales.size} filter scales for quantized dimension {qd} of shape {list(f.shape)}",
    )
    # DepthwiseConvHybridPerChannel reads s_w[output channel]: past the end of a single scale (garbage).
    ctx.check(
        scales.size == geo.out_c,
        f"hybrid DEPTHWISE_CONV_2D needs one filter scale per output channel "
        f"({geo.out_c}), got {scales.size} (LiteRT reads past the end of the scales)",
    )
    if geo.empty:
        return EMPTY_OUTPUT
    taps = geo.filter_h * geo.filter_w
    wmax = int(np.abs(f.data.reshape(taps, geo.out_c).astype(np.int64)).sum(axis=0).max())
    dtype = exact_dtype(255 * wmax)  # |q - zp| <= 255
    lo, hi = float_activation_range(ctx.options.fused_activation_function)
    sum_taps, weights, scratch = _exact_taps(geo, multiplier, np.float32, 0, f.data)
    return DepthwiseConvHybrid(
        sum_taps,
        weights,
        None if dtype == np.float32 else np.empty(geo.out_shape),
        scratch,
        np.broadcast_to(scales, (geo.out_c,)).astype(np.float32),
        bias_tile(bias, geo.out_w),
        bias is not None and not bias.is_constant,
        lo,
        hi,
    )
