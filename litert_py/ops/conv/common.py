"""What CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV and the pooling ops share: the window geometry (padding.h),
the padded input buffer, the quantization parameters of the quantized convs (kernel_util.cc
PopulateConvolutionQuantizationParams), the requantization epilogue and the hybrid per-batch input
quantization. Sources and the design: conv2d.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...quant import (
    Requantizer,
    batch_quantize_floats,
    multiply_by_quantized_multiplier_int64_ok,
    quantize_multiplier_array,
)
from ...schema import dtypes
from ...schema.model import Padding
from ..bound_plan import run_calls
from ..common import aligned_full, quantized_activation_range
from ..registry import OpContext, TensorInfo

INPUT, FILTER, BIAS = 0, 1, 2
OUTPUT = 0
INT16_MAX = 32767
#: An im2col matrix larger than this is built and multiplied in blocks of output rows.
IM2COL_BLOCK_BYTES = 32 << 20
#: Depthwise weights are tiled over the output width (long inner loops) while the tiles stay below this.
DEPTHWISE_TILE_BYTES = 4 << 20
#: Integers up to these magnitudes are exact in float32 / float64 (so are all sums staying below them).
FLOAT32_EXACT = 2**24
INT4 = dtypes.TensorType.INT4
TYPE_NUMBER = {name: num for num, name in dtypes.TENSOR_TYPE_NAMES.items()}


# -- shared by the conv and pool families ---------------------------------------------------------------


def out_size(padding: int, in_size: int, filter_size: int, stride: int, dilation: int = 1) -> int | None:
    """ComputeOutSizeChecked (padding.h): the output size, or None where LiteRT reports an error."""
    if padding not in (Padding.SAME, Padding.VALID) or in_size < 0 or filter_size <= 0 or stride <= 0 or dilation <= 0:
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
    def full_h(self) -> int:
        """TRANSPOSE_CONV: rows of the overlap-add buffer (every input row's window, and the cropped output)."""
        return max((self.in_h - 1) * self.stride_h + self.filter_h, self.pad_top + self.out_h)

    @property
    def full_w(self) -> int:
        return max((self.in_w - 1) * self.stride_w + self.filter_w, self.pad_left + self.out_w)

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


def window_geometry(
    ctx: OpContext, in_shape, out_c: int, filter_h: int, filter_w: int, checked: bool, dilation: bool = True
) -> Geometry:
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
        ctx.check(
            not checked,
            f"invalid window: input {h}x{w}, filter {filter_h}x{filter_w}, stride {sh}x{sw}, "
            f"dilation {dh}x{dw}, padding {pad} (ComputePaddingHeightWidthChecked failed)",
        )
        return Geometry(n, h, w, c, 0, ow or 0, out_c, filter_h, filter_w, max(sh, 1), max(sw, 1), dh, dw)
    return Geometry(
        n,
        h,
        w,
        c,
        oh,
        ow,
        out_c,
        filter_h,
        filter_w,
        sh,
        sw,
        dh,
        dw,
        pad_before(h, filter_h, sh, dh, oh),
        pad_before(w, filter_w, sw, dw, ow),
    )


def padded_buffer(geo: Geometry, channels: int, dtype, pad_value) -> tuple[np.ndarray, tuple]:
    """A (N, Hp, Wp, channels) buffer whose border holds ``pad_value``, and the index of the input inside it."""
    hp = geo.pad_top + geo.in_h + geo.pad_bottom
    wp = geo.pad_left + geo.in_w + geo.pad_right
    buf = aligned_full((geo.batches, hp, wp, channels), pad_value, dtype)
    return buf, (slice(None), slice(geo.pad_top, geo.pad_top + geo.in_h), slice(geo.pad_left, geo.pad_left + geo.in_w))


class EmptyOutput:
    """The prepared op of a node whose output has no elements: nothing to compute."""

    def __call__(self, inputs, outputs):
        pass


EMPTY_OUTPUT = EmptyOutput()


# -- shared by the quantized and hybrid paths -----------------------------------------------------------


def exact_dtype(bound: float):
    """The cheaper float type in which integer sums of magnitude <= bound are exact."""
    return np.float32 if bound <= FLOAT32_EXACT else np.float64


def tile_over_width(values: np.ndarray, out_w: int, dtype) -> np.ndarray:
    """A per-channel vector tiled over the output width: NHWC ops on it run over whole (W, C) rows."""
    return np.ascontiguousarray(np.broadcast_to(np.asarray(values).reshape(-1), (out_w, values.size)), dtype=dtype)


def requantizer_for(
    ctx: OpContext,
    multiplier,
    shift,
    zero_point: int,
    lo: int,
    hi: int,
    out_shape,
    acc_bound: float,
    int64_acc: bool = False,
) -> Requantizer:
    """The epilogue for accumulators |acc| <= acc_bound of an NHWC output of ``out_shape``: the per-channel
    values tiled over the output width, so that it runs over whole (W, C) rows."""
    if int64_acc:
        # int64 products that overflow wrap as in C++; only a shift outside [-31, 14] is undefined there
        ctx.check(
            multiply_by_quantized_multiplier_int64_ok(shift, 0.0),
            f"int16 output multiplier too large for the int64 MultiplyByQuantizedMultiplier (shift "
            f"{int(np.max(shift))} > 14: s_in*s_w/s_out >= 2^14)",
        )
    out_w = out_shape[2]
    return Requantizer.build(
        np.tile(multiplier, out_w), np.tile(shift, out_w), zero_point, lo, hi, acc_bound, out_shape, int64_acc=int64_acc
    )


def has_affine_quantization(t: TensorInfo) -> bool:
    """TFLite's kTfLiteAffineQuantization: the tensor has at least one scale."""
    return t.quantization.is_quantized


def quantization_params(
    ctx: OpContext, x: TensorInfo, f: TensorInfo, bias: TensorInfo | None, out_c: int, legacy_uint8: bool
):
    """PopulateConvolutionQuantizationParams (kernel_util.cc): per-channel (M, shift) and the clamp range."""
    ctx.check(
        has_affine_quantization(x),
        "input must have affine quantization (LiteRT: input->quantization.type != kTfLiteAffineQuantization)",
    )
    ctx.check(
        has_affine_quantization(f),
        "filter must have affine quantization (LiteRT: filter->quantization.type != kTfLiteAffineQuantization)",
    )
    scales = np.asarray(f.quantization.scale, np.float32)
    ctx.check(scales.size in (1, out_c), f"filter has {scales.size} scales, expected 1 or {out_c} (output channels)")
    if scales.size > 1:
        ctx.check(
            x.dtype in (np.int8, np.int16),
            f"per-channel filter quantization needs an INT8 or INT16 input, got {x.type_name}",
        )
        ctx.check(
            f.dtype == np.int8, f"per-channel filter quantization needs an INT8 or INT4 filter, got {f.type_name}"
        )
        qd = f.quantization.quantized_dimension
        ctx.check(
            0 <= qd < len(f.shape) and f.shape[qd] == out_c,
            f"filter quantized_dimension {qd} does not have the {out_c} output channels (shape {list(f.shape)})",
        )
    out = ctx.outputs[OUTPUT]
    s_in, s_out = np.float32(x.scale), np.float32(out.scale)
    with np.errstate(all="ignore"):
        if legacy_uint8:
            # GetQuantizedConvolutionMultipler: the bias scale must be within 2% (of an output step) of
            # s_in * s_w, in double (when there is a bias); the multiplier itself uses the float32 product.
            s_w = scales[0]
            if bias is not None:
                # the bias's legacy scale: 0 for a bias quantized with several scales (TensorInfo.legacy_scale)
                diff = abs(np.float64(s_in) * np.float64(s_w) - np.float64(bias.legacy_scale))
                ctx.check(
                    bool(diff / np.float64(s_out) <= 0.02),
                    f"bias scale {bias.legacy_scale} differs from input scale * filter scale "
                    f"{float(s_in) * float(s_w)} by more than 2% of the output scale {float(s_out)}",
                )
            product = np.float64(s_in * s_w)
            ctx.check(bool(product >= 0), "input scale * filter scale must not be negative")
            real = np.full(out_c, product / np.float64(s_out))
        else:
            real = np.float64(s_in) * np.broadcast_to(scales.astype(np.float64), (out_c,)) / np.float64(s_out)
    try:
        m, shift = quantize_multiplier_array(real)
    except ValueError:
        raise ctx.fail(
            f"output multiplier s_in*s_w/s_out is not finite (input scale {float(s_in)}, output scale {float(s_out)})"
        ) from None
    lo, hi = quantized_activation_range(ctx, out)
    return m, shift, lo, hi


def quantized_weights(f: np.ndarray, filter_zp: int, dtype) -> np.ndarray:
    """The filter minus its zero point, in the (exact) float type of the accumulation."""
    return (f.astype(np.int32) - filter_zp).astype(dtype)


def bias_tile(bias, out_w: int) -> np.ndarray | None:
    """A constant bias tiled over the output width: adding it to NHWC output runs over whole (W, C) rows."""
    if bias is None or bias.data is None:
        return None
    return tile_over_width(bias.data, out_w, np.float32)


def int16_bias_type(ctx: OpContext, bias: TensorInfo) -> str:
    """The bias LiteRT's int16 CONV_2D reads: quantized_bias_type when set, else int64."""
    qbt = ctx.options.quantized_bias_type
    if qbt != TYPE_NUMBER["FLOAT32"]:
        ctx.check(
            qbt in (TYPE_NUMBER["INT32"], TYPE_NUMBER["INT64"]),
            f"quantized_bias_type must be INT32 or INT64, got {dtypes.type_name(qbt)}",
        )
        ctx.check(bias.type == qbt, f"bias type {bias.type_name} != quantized_bias_type {dtypes.type_name(qbt)}")
    # Without quantized_bias_type LiteRT's 16x8 kernel reads the bias as int64 whatever its type.
    ctx.check(
        bias.type == TYPE_NUMBER["INT64"] or qbt == TYPE_NUMBER["INT32"],
        "int16 CONV_2D with an INT32 bias needs quantized_bias_type INT32 (LiteRT reads the bias as INT64 otherwise)",
    )
    return bias.type_name


def quantize_batches(x: np.ndarray, asymmetric: bool):
    """Each batch of the float input quantized to int8 as LiteRT's x86 wheel does (BatchQuantizeFloats with
    the NEON routines through NEON_2_SSE; fully_connected.batch_quantize_floats): (q, float32 scaling factors)
    with q float32 in the input's shape, holding q - zp when asymmetric (exact integers in [-255, 255])."""
    q, sf, zp = quantize_batches_raw(x, asymmetric)
    if zp is not None:
        q -= zp.reshape((-1,) + (1,) * (q.ndim - 1))
    return q, sf


def quantize_batches_raw(x: np.ndarray, asymmetric: bool):
    """``batch_quantize_floats`` of each batch of ``x``: (q, float32 scaling factors, zero points or None), q
    float32 in x's shape holding the raw int8 values (``quantize_batches`` subtracts the zero points in place;
    the -128 SSE fix, hybrid_sse.HybridSseFix, reads the raw values)."""
    q, sf, zp = batch_quantize_floats(x.reshape(x.shape[0], -1), asymmetric)
    return q.reshape(x.shape), sf, zp


def hybrid_scales(ctx: OpContext, f: TensorInfo) -> np.ndarray:
    ctx.check(
        f.dtype == np.int8,
        f"hybrid {ctx.op_name} (FLOAT32 input) needs an INT8 or INT4 filter, got "
        f"{f.type_name} (LiteRT reads a UINT8 filter's bytes as int8)",
    )
    ctx.check(has_affine_quantization(f), f"hybrid {ctx.op_name}: the INT8 filter has no quantization scale")
    ctx.check(f.is_constant, f"hybrid {ctx.op_name}: the INT8 filter must be constant")
    return np.asarray(f.quantization.scale, np.float32)


_INPUT_TYPES = tuple(np.dtype(t) for t in (np.float32, np.uint8, np.int8, np.int16))


def check_types(ctx: OpContext) -> None:
    x, out = ctx.input(INPUT), ctx.outputs[OUTPUT]
    ctx.check(
        x.dtype in _INPUT_TYPES and x.type != INT4,
        f"Type {x.type_name} is unsupported by op {ctx.op_name} (input must be FLOAT32, UINT8, INT8 or INT16).",
    )
    ctx.check(out.type == x.type, f"output type {out.type_name} != input type {x.type_name}")


def check_bias(ctx: OpContext, out_c: int, one_d: bool, int16_bias: tuple[str, ...]) -> None:
    x, bias = ctx.input(INPUT), ctx.input(BIAS)
    if x.dtype == np.float32:
        ctx.check(bias.type == x.type, f"bias type {bias.type_name} != input type {x.type_name}")
    else:
        allowed = int16_bias if x.dtype == np.int16 else ("INT32",)
        ctx.check(
            bias.type_name in allowed,
            f"{x.type_name} {ctx.op_name} needs a {' or '.join(allowed)} bias, got {bias.type_name}",
        )
        ctx.check(bias.zero_point == 0, f"bias zero point must be 0, got {bias.zero_point}")
    if one_d:
        ctx.check(len(bias.shape) == 1, f"bias must be 1-D, got shape {list(bias.shape)}")
    ctx.check(bias.size == out_c, f"bias has {bias.size} elements, expected {out_c} (one per output channel)")


def offset_calls(acc: np.ndarray, sums: np.ndarray, offset) -> tuple:
    """``acc = sums + offset`` for the quantized convs' epilogue, as (function, args, kwargs) triples: int64
    accumulators take the exact integer sums (held in float) first, float64 ones add in one pass."""
    if acc.dtype == np.int64:
        return ((np.copyto, (acc, sums), {"casting": "unsafe"}), (np.add, (acc, offset, acc), {}))
    return ((np.add, (sums, offset, acc), {}),)


def add_offset(acc: np.ndarray, sums: np.ndarray, offset) -> None:
    """``offset_calls`` run at once (an offset made at every call)."""
    run_calls(offset_calls(acc, sums, offset))
