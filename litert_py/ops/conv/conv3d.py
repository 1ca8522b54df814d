"""CONV_3D and CONV_3D_TRANSPOSE (float32).

Sources matched (ai-edge-litert 2.3.0, BUILTIN_REF):
- tflite/kernels/conv3d.cc Prepare: 2 or 3 inputs, 5-D input NDHWC and filter DHWIO with the input channels
  equal to the filter's dim 3, FLOAT32 input, filter of the input type, bias FLOAT32 with as many elements
  as output channels; output size ComputeOutSize (padding.h) per spatial dim with stride and dilation, and
  ComputePadding3DValues' leading padding. reference/conv3d.h: per output the float32 sum over the in-input
  taps (filter_d, filter_y, filter_x, in_channel) of input * filter, + bias, ActivationFunctionWithMinMax.
- tflite/kernels/conv3d_transpose.cc Prepare: 3 or 4 inputs, 1-D INT32 output_shape of 5 elements,
  5-D input NDHWC and filter [D, H, W, O, I] with the input channels equal to filter dim 4, FLOAT32,
  bias of output-channel length; padding from ComputePadding3DValues run on the output size, whose forward
  conv must give the input's depth, height and width ("unused_out_depth != SizeOfDimension(input, 1)").
  reference/conv3d_transpose.h: a scatter of input * filter into the zeroed output (dilated taps), then
  bias and the activation clamp.

Vectorized: CONV_3D is one im2col GEMM (a strided window view of a zero-padded copy made at prepare);
CONV_3D_TRANSPOSE is col2im: one GEMM (N*D*H*W, I) @ (I, KD*KH*KW*O) and an overlap-add per kernel tap.
The float sums are in a different order from the reference's (tests use an accumulation-scaled tolerance).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import limits
from ...schema.model import BuiltinOperator, Padding
from ..common import clip_ufunc, float_activation_range
from ..registry import OpContext, PreparedOp, register
from .common import EMPTY_OUTPUT, out_size, pad_before

OUTPUT = 0


def _options(ctx: OpContext):
    o = ctx.options
    strides = (o.stride_d, o.stride_h, o.stride_w)
    dilations = (o.dilation_d_factor, o.dilation_h_factor, o.dilation_w_factor)
    ctx.check(all(s > 0 for s in strides), f"strides must be positive, got {list(strides)}")
    ctx.check(all(d > 0 for d in dilations), f"dilations must be positive, got {list(dilations)}")
    ctx.check(o.padding in (Padding.SAME, Padding.VALID), f"unknown padding {o.padding}")
    return o.padding, strides, dilations


def _bias(ctx: OpContext, index: int, out_c: int):
    bias = ctx.optional_input(index)
    if bias is not None:
        ctx.check(bias.type_name == "FLOAT32", f"bias type {bias.type_name} must be FLOAT32")
        ctx.check(
            int(np.prod(bias.shape)) == out_c,
            f"bias has {int(np.prod(bias.shape))} elements, expected {out_c} (output channels)",
        )
    return bias


# -- CONV_3D ------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Conv3DFloat:
    padded: np.ndarray  # (N, Dp, Hp, Wp, C), zero border
    interior: tuple
    window: np.ndarray  # (N, OD, OH, OW, KD, KH, KW, C) view of `padded`
    cols: np.ndarray  # (N*OD*OH*OW, KD*KH*KW*C)
    weights: np.ndarray | None  # (KD*KH*KW*C, O); None: the filter input
    bias: np.ndarray | None
    dynamic_bias: bool
    out_min: np.float32
    out_max: np.float32

    def __call__(self, inputs, outputs):
        out = outputs[OUTPUT]
        self.padded[self.interior] = inputs[0]
        np.copyto(self.cols.reshape(self.window.shape), self.window)
        w = self.weights
        if w is None:
            w = inputs[1].reshape(self.cols.shape[1], -1)
        np.matmul(self.cols, w, out=out.reshape(self.cols.shape[0], -1))
        if self.bias is not None:
            np.add(out, self.bias, out=out)
        elif self.dynamic_bias:
            np.add(out, inputs[2].reshape(-1), out=out)
        clip_ufunc(out, self.out_min, self.out_max, out=out)


@register(BuiltinOperator.CONV_3D)
def prepare_conv_3d(ctx: OpContext) -> PreparedOp:
    ctx.check_num((2, 3))
    x, f = ctx.input(0), ctx.input(1)
    ctx.check(len(x.shape) == 5, f"input must be 5-D (NDHWC), got shape {list(x.shape)}")
    ctx.check(len(f.shape) == 5, f"filter must be 5-D (DHWIO), got shape {list(f.shape)}")
    ctx.check(x.shape[4] == f.shape[3], f"input channels ({x.shape[4]}) must equal filter dim 3 ({f.shape[3]})")
    ctx.check(x.type_name == "FLOAT32", f"Type {x.type_name} is unsupported by op CONV_3D.")
    ctx.check(f.type == x.type, f"filter type {f.type_name} does not match input type {x.type_name}")
    ctx.check(ctx.outputs[OUTPUT].type == x.type, "output type must match the input type")
    padding, strides, dilations = _options(ctx)
    o_c = f.shape[4]
    bias = _bias(ctx, 2, o_c)
    n, c = x.shape[0], x.shape[4]
    ins, ks = x.shape[1:4], f.shape[0:3]
    outs = [out_size(padding, i, k, s, d) for i, k, s, d in zip(ins, ks, strides, dilations)]
    ctx.check(all(v is not None for v in outs), f"invalid window: input {list(ins)}, filter {list(ks)}")
    out_shape = (n, *outs, o_c)
    ctx.set_output_shape(OUTPUT, out_shape)
    if 0 in out_shape or x.size == 0:
        return EMPTY_OUTPUT
    pads = [pad_before(i, k, s, d, v) for i, k, s, d, v in zip(ins, ks, strides, dilations, outs)]
    ends = [
        max((v - 1) * s + (k - 1) * d + 1 - i - p, 0)
        for i, k, s, d, v, p in zip(ins, ks, strides, dilations, outs, pads)
    ]
    padded = ctx.scratch((n, *(i + p + e for i, p, e in zip(ins, pads, ends)), c), np.float32)
    interior = (slice(None), *(slice(p, p + i) for p, i in zip(pads, ins)))
    sn, sd, sh, sw, sc = padded.strides
    sp = (sd, sh, sw)
    window = np.lib.stride_tricks.as_strided(
        padded,
        (n, *outs, *ks, c),
        (sn, *(a * s for a, s in zip(sp, strides)), *(a * d for a, d in zip(sp, dilations)), sc),
        writeable=False,
    )
    k_len = int(np.prod(ks)) * c
    cols = ctx.scratch((n * int(np.prod(outs)), k_len), np.float32)
    weights = np.ascontiguousarray(f.data.reshape(k_len, o_c), np.float32) if f.is_constant else None
    lo, hi = float_activation_range(ctx.options.fused_activation_function)
    const_bias = bias.data.reshape(-1).astype(np.float32) if bias is not None and bias.is_constant else None
    return Conv3DFloat(
        padded, interior, window, cols, weights, const_bias, bias is not None and not bias.is_constant, lo, hi
    )


# -- CONV_3D_TRANSPOSE --------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Conv3DTransposeFloat:
    in_shape: tuple  # (N, D, H, W, I)
    kernel: tuple  # (KD, KH, KW)
    out_c: int
    strides: tuple
    dilations: tuple
    padding: int
    static_out: tuple | None  # the output shape when output_shape is constant
    weights: np.ndarray | None  # (I, KD*KH*KW*O); None: from the filter input
    bias: np.ndarray | None
    dynamic_bias: bool
    out_min: np.float32
    out_max: np.float32

    def __call__(self, inputs, outputs):
        x = inputs[2]
        if self.static_out is None:
            shape = tuple(int(v) for v in inputs[0])
            outputs[OUTPUT] = limits.new_array(shape, np.float32, "CONV_3D_TRANSPOSE's output")
        out = outputs[OUTPUT]
        if out.size == 0:
            return
        n, d, h, w, c = self.in_shape
        ks, o_c = self.kernel, self.out_c
        wts = self.weights
        if wts is None:
            wts = inputs[1].transpose(4, 0, 1, 2, 3).reshape(c, -1)
        cols = np.matmul(x.reshape(-1, c), wts).reshape(n, d, h, w, *ks, o_c)
        ins, outs = (d, h, w), out.shape[1:4]
        pads = [
            pad_before(v, k, s, dl, out_size(self.padding, v, k, s, dl) or 0)
            for v, k, s, dl in zip(outs, ks, self.strides, self.dilations)
        ]
        full = np.zeros(
            (
                n,
                *(
                    max((i - 1) * s + (k - 1) * dl + 1, p + v)
                    for i, k, s, dl, p, v in zip(ins, ks, self.strides, self.dilations, pads, outs)
                ),
                o_c,
            ),
            np.float32,
        )
        spans = [(i - 1) * s + 1 for i, s in zip(ins, self.strides)]
        sd, sh, sw = self.strides
        dd, dh, dw = self.dilations
        for kd in range(ks[0]):
            for kh in range(ks[1]):
                for kw in range(ks[2]):
                    a, b, e = kd * dd, kh * dh, kw * dw
                    dst = full[:, a : a + spans[0] : sd, b : b + spans[1] : sh, e : e + spans[2] : sw]
                    np.add(dst, cols[:, :, :, :, kd, kh, kw], out=dst)
        out[...] = full[:, pads[0] : pads[0] + outs[0], pads[1] : pads[1] + outs[1], pads[2] : pads[2] + outs[2]]
        if self.bias is not None:
            np.add(out, self.bias, out=out)
        elif self.dynamic_bias:
            np.add(out, inputs[3].reshape(-1), out=out)
        clip_ufunc(out, self.out_min, self.out_max, out=out)


@register(BuiltinOperator.CONV_3D_TRANSPOSE)
def prepare_conv_3d_transpose(ctx: OpContext) -> PreparedOp:
    ctx.check_num((3, 4))
    shape_t, f, x = ctx.input(0), ctx.input(1), ctx.input(2)
    ctx.check(shape_t.type_name == "INT32", f"output_shape must be INT32, got {shape_t.type_name}")
    ctx.check(
        len(shape_t.shape) == 1 and shape_t.shape[0] == 5,
        f"output_shape must be 1-D with 5 elements, got shape {list(shape_t.shape)}",
    )
    ctx.check(len(x.shape) == 5, f"input must be 5-D (NDHWC), got shape {list(x.shape)}")
    ctx.check(len(f.shape) == 5, f"filter must be 5-D (DHWOI), got shape {list(f.shape)}")
    ctx.check(x.type_name == "FLOAT32", f"Type {x.type_name} is unsupported by op CONV_3D_TRANSPOSE.")
    ctx.check(f.type == x.type, f"filter type {f.type_name} does not match input type {x.type_name}")
    ctx.check(ctx.outputs[OUTPUT].type == x.type, "output type must match the input type")
    ctx.check(x.shape[4] == f.shape[4], f"input channels ({x.shape[4]}) must equal filter dim 4 ({f.shape[4]})")
    padding, strides, dilations = _options(ctx)
    o_c = f.shape[3]
    bias = _bias(ctx, 3, o_c)
    static = None
    if shape_t.is_constant:
        static = tuple(int(v) for v in np.asarray(shape_t.data).reshape(-1))
        ctx.check(all(v >= 0 for v in static), f"output_shape must not be negative, got {list(static)}")
        ctx.check(
            static[0] == x.shape[0] and static[4] == o_c,
            f"output_shape {list(static)} must have the input's batch and the filter's {o_c} channels",
        )
        # conv3d_transpose.cc: the forward conv of the output must give the input's spatial dims.
        for axis, name in ((1, "depth"), (2, "height"), (3, "width")):
            computed = out_size(padding, static[axis], f.shape[axis - 1], strides[axis - 1], dilations[axis - 1])
            ctx.check(
                computed == x.shape[axis],
                f"unused_out_{name} != SizeOfDimension(input, {axis}) ({computed} != {x.shape[axis]})",
            )
        ctx.set_output_shape(OUTPUT, static)
        if 0 in static or x.size == 0:
            return EMPTY_OUTPUT
    else:
        ctx.set_output_dynamic(OUTPUT)
    weights = f.data.transpose(4, 0, 1, 2, 3).reshape(f.shape[4], -1).copy() if f.is_constant else None
    lo, hi = float_activation_range(ctx.options.fused_activation_function)
    const_bias = bias.data.reshape(-1).astype(np.float32) if bias is not None and bias.is_constant else None
    return Conv3DTransposeFloat(
        tuple(x.shape),
        tuple(f.shape[:3]),
        o_c,
        strides,
        dilations,
        padding,
        static,
        weights,
        const_bias,
        bias is not None and not bias.is_constant,
        lo,
        hi,
    )
