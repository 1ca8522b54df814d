"""TRANSPOSE_CONV (float32, uint8, int8 per-channel, int16x8, hybrid).

Sources matched (ai-edge-litert 2.3.0, BUILTIN_REF):
- LiteRT tflite/kernels/transpose_conv.cc Prepare: 3 or 4 inputs, 1-D INT32 output_shape of 4 elements, 4-D
  weights OHWI and input NHWC with the same channel count, output type = input type (FLOAT32 / UINT8 / INT8 /
  INT16), weights of the input type (INT8 for INT16 input), bias FLOAT32 / INT32 (uint8, int8) / INT64
  (int16; INT32 when quantized_bias_type is INT32, which also selects an int32 accumulator and the int32
  MultiplyByQuantizedMultiplier) with zero point 0 and NumElements == output channels; padding from
  ComputePaddingHeightWidth run on the *output* size, whose forward conv must give the input's height and
  width ("computed_input_height != SizeOfDimension(input, 1)"); multipliers and the clamp range from
  PopulateConvolutionQuantizationParams (shared with CONV_2D: per-channel f64 for int8/int16, the legacy
  f64(f32(s_in*s_w))/f64(s_out) for uint8).
- reference/transpose_conv.h (float; uint8 with input and filter offsets) and
  reference/integer_ops/transpose_conv.h (int8 with the input offset, int16 with an int64 accumulator):
  a scatter of input * filter into a zeroed accumulator over the output, + bias, then the float clamp, or
  MultiplyByQuantizedMultiplier (int32 double rounding; the int64 overload for int16x8) + output zero point
  and the activation clamp.
- Hybrid (float32 input, constant INT8 weights with one scale or one per output channel on dimension 0,
  float32 bias): transpose_conv.cc EvalHybrid quantizes each batch asymmetrically (tensor_utils
  AsymmetricQuantizeFloats, the NEON_2_SSE version like conv2d_quantized.py's hybrid paths) and
  reference/transpose_conv.h HybridTransposeConv scatters the *float* terms
  f32(f32((q - zp) * w) * s_w[o]) * sf[b] into the zeroed output in (in_y, in_x, in_channel) order, then
  + bias and the clamp. Reproduced bit for bit: the terms are made in one vectorized pass, then added tap by
  tap (filter_y, filter_x descending = input rows/columns ascending) and channel by channel
  (KH*KW*C whole-tensor adds), the reference's order for every output.

Vectorized: col2im (col2im.py, with the float32 prepared ops MediaPipe's Convolution2DTransposeBias shares).
One GEMM (N*H*W, C) @ (C, KH*KW*O) gives every tap's contribution, then an overlap-add of the KH*KW taps (each
a whole-tensor strided add) into a buffer covering the full scatter, from which the output window (the padding
removed) is taken. The integer paths run the same GEMM on exact integers in float64 (sums of int8*int8 /
int16*int8 products stay far below 2**53).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...schema import dtypes
from ...schema.model import BuiltinOperator, Padding
from ..common import clip_ufunc, float_activation_range
from ..registry import OpContext, PreparedOp, register
from .col2im import (
    BIAS,
    INPUT,
    OUTPUT,
    OUTPUT_SHAPE,
    WEIGHTS,
    TransposeConvFloat,
    col2im,
    float_tiles_op,
    transpose_geometry,
)
from .common import (
    EMPTY_OUTPUT,
    TYPE_NUMBER,
    Geometry,
    int16_bias_type,
    out_size,
    quantization_params,
    quantize_batches,
    requantizer_for,
)


@dataclass(frozen=True, eq=False)
class TransposeConvQuantized:
    """uint8 / int8 / int16x8: exact integer col2im in float64, + bias, then the conv requantization epilogue."""

    geo: Geometry
    input_zp: int
    filter_zp: int  # uint8 only
    weights: np.ndarray | None  # (C, KH*KW*O) float64 w - w_zp; None: from the weights input
    bias: np.ndarray | None  # (O,) float64 or int64 constant bias
    dynamic_bias: bool
    full: np.ndarray  # (N, Hf, Wf, O) float64 overlap-add buffer
    acc: np.ndarray  # (N, OH, OW, O) float64 or int64 accumulators
    requant: object  # litert_py.quant.Requantizer

    def __call__(self, inputs, outputs):
        geo = self.geo
        x = inputs[INPUT].reshape(-1, geo.in_c).astype(np.float64)
        if self.input_zp:
            x -= self.input_zp
        w = self.weights
        if w is None:
            w = inputs[WEIGHTS].transpose(3, 1, 2, 0).reshape(geo.in_c, -1).astype(np.float64) - self.filter_zp
        cols = np.matmul(x, w).reshape(geo.batches, geo.in_h, geo.in_w, geo.filter_h, geo.filter_w, geo.out_c)
        acc = self.acc
        np.copyto(acc, col2im(geo, cols, self.full), casting="unsafe")
        if self.bias is not None:
            acc += self.bias
        elif self.dynamic_bias and inputs[BIAS] is not None:
            acc += inputs[BIAS].astype(acc.dtype)
        self.requant(acc, outputs[OUTPUT])


@dataclass(frozen=True, eq=False)
class TransposeConvHybrid:
    geo: Geometry
    weights: np.ndarray  # (KH, KW, C, O) float32 filter values
    scale: np.ndarray  # (O,) float32 filter scales
    bias: np.ndarray | None  # (O,) float32 constant
    dynamic_bias: bool
    full: np.ndarray  # (N, Hf, Wf, O) float32 overlap-add buffer
    out_min: np.float32
    out_max: np.float32

    def __call__(self, inputs, outputs):
        g = self.geo
        q, sf = quantize_batches(inputs[INPUT], asymmetric=True)  # q - zp, exact in float32
        # terms[n, y, x, ky, kx, c, o] = f32(f32((q - zp) * w) * s_w[o]) * sf[n]; (q - zp) * w is exact
        terms = q[:, :, :, None, None, :, None] * self.weights
        terms *= self.scale
        terms *= sf.reshape(-1, 1, 1, 1, 1, 1, 1)
        full = self.full
        full.fill(0)
        hs, ws = (g.in_h - 1) * g.stride_h + 1, (g.in_w - 1) * g.stride_w + 1
        for ky in range(g.filter_h - 1, -1, -1):
            for kx in range(g.filter_w - 1, -1, -1):
                dst = full[:, ky : ky + hs : g.stride_h, kx : kx + ws : g.stride_w]
                for c in range(g.in_c):
                    np.add(dst, terms[:, :, :, ky, kx, c], out=dst)
        out = outputs[OUTPUT]
        np.copyto(out, full[:, g.pad_top : g.pad_top + g.out_h, g.pad_left : g.pad_left + g.out_w])
        if self.bias is not None:
            np.add(out, self.bias, out=out)
        elif self.dynamic_bias and inputs[BIAS] is not None:
            np.add(out, inputs[BIAS], out=out)
        clip_ufunc(out, self.out_min, self.out_max, out=out)


def _prepare_hybrid(ctx: OpContext, geo: Geometry | None):
    f, x, bias = ctx.input(WEIGHTS), ctx.input(INPUT), ctx.optional_input(BIAS)
    ctx.check(geo is not None, "hybrid TRANSPOSE_CONV needs a constant output_shape in litert_py")
    ctx.check(f.is_constant, "hybrid TRANSPOSE_CONV needs constant weights in litert_py")
    ctx.check(f.quantization.is_quantized, "hybrid TRANSPOSE_CONV weights must have affine quantization")
    scales = np.asarray(f.quantization.scale, np.float32)
    o_c = f.shape[0]
    ctx.check(
        scales.size == 1 or (scales.size == o_c and f.quantization.quantized_dimension == 0),
        f"hybrid TRANSPOSE_CONV needs 1 filter scale or {o_c} on dimension 0, got {scales.size} on dimension "
        f"{f.quantization.quantized_dimension}",
    )
    ctx.set_output_shape(OUTPUT, geo.out_shape)
    if 0 in geo.out_shape or x.size == 0:
        return EMPTY_OUTPUT
    lo, hi = float_activation_range(ctx.options.fused_activation_function)
    const_bias = None if bias is None or not bias.is_constant else bias.data.reshape(-1).astype(np.float32)
    return TransposeConvHybrid(
        geo,
        np.ascontiguousarray(f.data.transpose(1, 2, 3, 0), np.float32),
        np.broadcast_to(scales, (o_c,)).astype(np.float32),
        const_bias,
        bias is not None and not bias.is_constant,
        ctx.scratch((geo.batches, geo.full_h, geo.full_w, o_c), np.float32),
        lo,
        hi,
    )


def _check(ctx: OpContext):
    ctx.check_num((3, 4))
    shape_t, f, x = ctx.input(OUTPUT_SHAPE), ctx.input(WEIGHTS), ctx.input(INPUT)
    out = ctx.outputs[OUTPUT]
    ctx.check(len(shape_t.shape) == 1, f"output_shape must be 1-D, got shape {list(shape_t.shape)}")
    ctx.check(len(x.shape) == 4, f"input must be 4-D (NHWC), got shape {list(x.shape)}")
    ctx.check(len(f.shape) == 4, f"weights must be 4-D (OHWI), got shape {list(f.shape)}")
    ctx.check(
        x.dtype in (np.float32, np.uint8, np.int8, np.int16), f"Type {x.type_name} is unsupported by op TRANSPOSE_CONV."
    )
    ctx.check(out.type == x.type, f"output type {out.type_name} does not match input type {x.type_name}")
    ctx.check(shape_t.type_name == "INT32", f"output_shape must be INT32, got {shape_t.type_name}")
    ctx.check(shape_t.shape[0] == 4, f"output_shape must have 4 elements, got {shape_t.shape[0]}")
    ctx.check(
        x.shape[3] == f.shape[3], f"input channels ({x.shape[3]}) must equal the weights' last dim ({f.shape[3]})"
    )
    want = ("INT8",) if x.dtype == np.int16 else ("FLOAT32", "INT8") if x.dtype == np.float32 else (x.type_name,)
    ctx.check(f.type_name in want, f"weights type {f.type_name} does not match (expected {' or '.join(want)})")
    if x.dtype == np.int16:
        ctx.check(x.zero_point == 0 and out.zero_point == 0, "int16 input and output zero points must be 0")
        qbt = ctx.options.quantized_bias_type
        ctx.check(
            qbt in (TYPE_NUMBER["FLOAT32"], TYPE_NUMBER["INT32"], TYPE_NUMBER["INT64"]),
            f"quantized_bias_type must be INT32 or INT64, got {dtypes.type_name(qbt)}",
        )
    bias = ctx.optional_input(BIAS)
    if bias is not None:
        if x.dtype == np.int16:
            int16_bias_type(ctx, bias)
        else:
            want = {np.dtype(np.float32): "FLOAT32", np.dtype(np.uint8): "INT32", np.dtype(np.int8): "INT32"}[x.dtype]
            ctx.check(bias.type_name == want, f"bias type {bias.type_name} (expected {want})")
        if x.dtype in (np.int8, np.int16):
            ctx.check(bias.zero_point == 0, f"bias zero point must be 0, got {bias.zero_point}")
        ctx.check(
            int(np.prod(bias.shape)) == f.shape[0],
            f"bias has {int(np.prod(bias.shape))} elements, expected {f.shape[0]} (output channels)",
        )
    o = ctx.options
    ctx.check(o.stride_h > 0 and o.stride_w > 0, f"strides must be positive, got {o.stride_h}x{o.stride_w}")
    ctx.check(o.padding in (Padding.SAME, Padding.VALID), f"unknown padding {o.padding}")


def _static_geometry(ctx: OpContext) -> Geometry | None:
    shape_t, f, x = ctx.input(OUTPUT_SHAPE), ctx.input(WEIGHTS), ctx.input(INPUT)
    if not shape_t.is_constant:
        return None
    shape = [int(v) for v in np.asarray(shape_t.data).reshape(-1)]
    ctx.check(all(d >= 0 for d in shape), f"output_shape must not be negative, got {shape}")
    ctx.check(shape[0] == x.shape[0], f"output batch ({shape[0]}) must equal the input batch ({x.shape[0]})")
    ctx.check(shape[3] == f.shape[0], f"output channels ({shape[3]}) must equal the weights' first dim ({f.shape[0]})")
    o = ctx.options
    # transpose_conv.cc: the forward conv of the output must give the input's height and width.
    for axis, k, stride, name in ((1, f.shape[1], o.stride_h, "height"), (2, f.shape[2], o.stride_w, "width")):
        computed = out_size(o.padding, shape[axis], k, stride)
        ctx.check(
            computed == x.shape[axis],
            f"computed_input_{name} != SizeOfDimension(input, {axis}) ({computed} != {x.shape[axis]})",
        )
    return transpose_geometry(o.padding, x.shape, f.shape, shape, o.stride_h, o.stride_w)


@register(BuiltinOperator.TRANSPOSE_CONV)
def prepare_transpose_conv(ctx: OpContext) -> PreparedOp:
    _check(ctx)
    f, x, bias = ctx.input(WEIGHTS), ctx.input(INPUT), ctx.optional_input(BIAS)
    geo = _static_geometry(ctx)
    o = ctx.options
    if x.dtype == np.float32 and f.type_name == "INT8":
        return _prepare_hybrid(ctx, geo)
    if x.dtype == np.float32:
        if geo is None:
            ctx.set_output_dynamic(OUTPUT)
        else:
            ctx.set_output_shape(OUTPUT, geo.out_shape)
            if 0 in geo.out_shape or x.size == 0:
                return EMPTY_OUTPUT
        weights = f.data.transpose(3, 1, 2, 0).reshape(f.shape[3], -1).copy() if f.is_constant else None
        lo, hi = float_activation_range(o.fused_activation_function)
        const_bias = None if bias is None or not bias.is_constant else bias.data.reshape(-1).astype(np.float32)
        tiles = float_tiles_op(
            ctx, geo, weights, False if bias is not None and not bias.is_constant else const_bias, lo, hi
        )
        if tiles is not None:
            return tiles
        cols = full = None
        if geo is not None:
            cols = ctx.scratch((geo.batches * geo.in_h * geo.in_w, geo.filter_h * geo.filter_w * geo.out_c), np.float32)
            full = ctx.scratch((geo.batches, geo.full_h, geo.full_w, geo.out_c), np.float32)
        return TransposeConvFloat(
            geo,
            o.padding,
            weights,
            const_bias,
            bias is not None and not bias.is_constant,
            lo,
            hi,
            (o.stride_h, o.stride_w),
            cols,
            full,
        )
    ctx.check(geo is not None, "quantized TRANSPOSE_CONV needs a constant output_shape in litert_py")
    ctx.set_output_shape(OUTPUT, geo.out_shape)
    uint8 = x.dtype == np.uint8
    m, shift, lo, hi = quantization_params(ctx, x, f, bias, geo.out_c, legacy_uint8=uint8)
    f_zp = f.zero_point if uint8 else 0  # the int8 / int16 kernels ignore the filter zero point
    if 0 in geo.out_shape or x.size == 0:
        return EMPTY_OUTPUT
    # int16x8: an int64 accumulator and the int64 MultiplyByQuantizedMultiplier, unless quantized_bias_type
    # is INT32 (int32 accumulator and bias, the int32 one).
    int16 = x.dtype == np.int16 and o.quantized_bias_type != TYPE_NUMBER["INT32"]
    x_zp = 0 if x.dtype == np.int16 else x.zero_point
    acc_dtype = np.int64 if int16 else np.float64
    weights = None
    wmax = geo.filter_h * geo.filter_w * geo.in_c * 128
    if f.is_constant:
        weights = f.data.transpose(3, 1, 2, 0).reshape(geo.in_c, -1).astype(np.float64) - f_zp
        # the most a single output gathers: every tap of every input channel
        wmax = float(np.abs(f.data.astype(np.int64) - f_zp).sum(axis=(1, 2, 3)).max())
    dev = 32768 if x.dtype == np.int16 else 256 + abs(x_zp)
    bias_data = None
    bias_max = 0.0 if bias is None else 2.0 ** (63 if int16 else 31)
    if bias is not None and bias.is_constant:
        bias_data = bias.data.reshape(-1).astype(acc_dtype)
        bias_max = float(np.abs(bias.data.astype(np.float64)).max())
    requant = requantizer_for(
        ctx, m, shift, ctx.outputs[OUTPUT].zero_point, lo, hi, geo.out_shape, dev * wmax + bias_max, int64_acc=int16
    )
    return TransposeConvQuantized(
        geo,
        x_zp,
        f_zp,
        weights,
        bias_data,
        bias is not None and not bias.is_constant,
        ctx.scratch((geo.batches, geo.full_h, geo.full_w, geo.out_c), np.float64),
        np.empty(geo.out_shape, acc_dtype),
        requant,
    )
