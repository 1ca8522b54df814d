"""L2_POOL_2D (float32).

Sources matched (ai-edge-litert 2.3.0, BUILTIN_REF): tflite/kernels/pooling.cc (GenericPrepare, shared with
AVERAGE/MAX_POOL_2D: one 4-D input, output type == input type, positive strides, the unchecked
ComputePaddingHeightWidth; L2Eval supports FLOAT32 only: "Type %s not currently supported.") and
tflite/kernels/internal/reference/pooling.h L2Pool: per output the float32 sum of val*val over the window's
in-input taps in (filter_y, filter_x) order from 0.f, divided by their count, std::sqrt, then
ActivationFunctionWithMinMax with the float CalculateActivationRange.

Vectorized: the squares are taken once over the whole input, then the taps (rectangles clipped to the input,
pooling.py's helpers) are added in the reference's order: bit-exact with the reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schema.model import BuiltinOperator
from .common import clip_ufunc, float_activation_range
from .conv.common import EMPTY_OUTPUT, window_geometry
from .pooling import axis_counts, pool_taps_2d
from .registry import OpContext, PreparedOp, register

INPUT = 0
OUTPUT = 0


@dataclass(frozen=True, eq=False)
class L2PoolFloat:
    taps: tuple  # ((output index, input index), ...) in (filter_y, filter_x) order
    count: np.float32 | np.ndarray  # taps inside the input: one count or (OH, OW, C)
    squares: np.ndarray  # scratch of the input's shape
    out_min: np.float32
    out_max: np.float32

    def __call__(self, inputs, outputs):
        x, out = inputs[INPUT], outputs[OUTPUT]
        sq = self.squares
        np.multiply(x, x, out=sq)
        out.fill(0)
        for o, i in self.taps:
            dst = out[o]
            np.add(dst, sq[i], out=dst)
        np.divide(out, self.count, out=out)
        np.sqrt(out, out=out)
        clip_ufunc(out, self.out_min, self.out_max, out=out)


@register(BuiltinOperator.L2_POOL_2D)
def prepare_l2_pool_2d(ctx: OpContext) -> PreparedOp:
    ctx.check_num(1)
    x, out = ctx.input(INPUT), ctx.outputs[OUTPUT]
    ctx.check(len(x.shape) == 4, f"input must be 4-D (NHWC), got shape {list(x.shape)}")
    ctx.check(out.type == x.type, f"output type {out.type_name} != input type {x.type_name}")
    o = ctx.options
    ctx.check(o.stride_h > 0 and o.stride_w > 0, f"strides must be positive, got {o.stride_h}x{o.stride_w}")
    geo = window_geometry(ctx, x.shape, x.shape[3], o.filter_height, o.filter_width, checked=False, dilation=False)
    ctx.set_output_shape(OUTPUT, geo.out_shape)
    ctx.check(x.dtype == np.float32, f"Type {x.type_name} not currently supported.")
    if geo.empty:
        return EMPTY_OUTPUT
    taps = pool_taps_2d(geo)
    counts = np.outer(
        axis_counts(geo.in_h, geo.out_h, geo.filter_h, geo.stride_h, geo.pad_top),
        axis_counts(geo.in_w, geo.out_w, geo.filter_w, geo.stride_w, geo.pad_left),
    )
    ctx.check(counts.min() > 0, "a pooling window lies entirely in the padding")
    if (counts == counts.flat[0]).all():
        count = np.float32(counts.flat[0])
    else:
        count = np.ascontiguousarray(np.broadcast_to(counts[:, :, None], geo.out_shape[1:]), dtype=np.float32)
    lo, hi = float_activation_range(o.fused_activation_function)
    return L2PoolFloat(tuple((oi, ii) for oi, ii, _ in taps), count, np.empty(x.shape, np.float32), lo, hi)
